"""Import plugins, the image cache and its maintenance sidecar, on the real stack.

Each scenario renders a variant of the stack's input (``Stack.variant``) and runs it as the
kubelet would, against the stack's MariaDB, Keystone and S3 server:

* **import plugins**: ``spec.importPlugins.conversion`` (raw) and ``injectMetadata``, with
  the import filter widened to a loopback HTTP server that serves a small qcow2 made by
  ``qemu-img``. A web-download import must land in S3 as raw (not the qcow2 magic, the
  size of the virtual disk, the very bytes of the disk) and carry the injected properties,
  except when the importer has a role of ``ignoreUserRoles`` (``admin`` by default).
* **image cache**: ``spec.imageCache`` with a small size limit. The second download is a
  cache hit as Glance records it (the cache directory holds the image after the first
  download; ``GET /v2/cache`` counts the hit). Then the ``cache-maintenance`` sidecar runs
  exactly as rendered (its ``/bin/sh`` loop, remapped like the API container): its first
  pass finds the cache over the high-water mark, the pruner shrinks it under the limit and
  the cleaner removes invalid and stalled files, and the loop reports no failure.

Each test prints its wall time (``[e2e] <test>: <s>``), also without ``-s``.
"""

from __future__ import annotations

import configparser
import hashlib
import os
import random
import subprocess
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from e2e.glance_http import (
    FileServer,
    create_image,
    delete_image,
    download,
    headers,
    s3_digest,
    upload,
    wait_active,
    web_download,
)
from e2e.stack import (
    ADMIN_PASSWORD,
    QEMU_IMG,
    Process,
    Rendered,
    Stack,
    debian_program,
    free_port,
    http,
    pod_container,
)

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
VIRTUAL_SIZE = 4 * MIB  # the disk inside the qcow2: small, moto keeps objects in RAM
QCOW2_MAGIC = b"QFI\xfb"
INJECTED = {"e2e_injected": "by-glance", "hw_vif_model": "virtio"}
CACHED_IMAGE_SIZE = 600 * 1024
CACHE_SIZE_LIMIT = "1Mi"  # image_cache_max_size = 1Mi // 10 * 8 = 838856: two images overflow it
SIDECAR_PASS_TIMEOUT = 120  # the loop sleeps 30 s before its first look at the cache


def glance_conf(rendered: Rendered) -> configparser.ConfigParser:
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string(rendered.find("ConfigMap")["data"]["glance-api.conf"])
    return conf


def mount_path(rendered: Rendered, container: str, volume: str) -> str:
    _, found = pod_container(rendered.find("Deployment"), container)
    (path,) = [m["mountPath"] for m in found["volumeMounts"] if m["name"] == volume]
    return path


# ---------------------------------------------------------------------------------------
# import plugins: conversion to raw and injected metadata


@pytest.fixture(scope="module")
def disk(tmp_path_factory) -> SimpleNamespace:
    """A 4 MiB raw disk (data at both ends, zeros between) and its qcow2 made by qemu-img."""
    work = tmp_path_factory.mktemp("disk")
    rng = random.Random(11)
    raw = bytearray(VIRTUAL_SIZE)
    raw[:MIB] = rng.randbytes(MIB)
    raw[-64 * 1024 :] = rng.randbytes(64 * 1024)
    (work / "disk.raw").write_bytes(raw)
    convert = [debian_program(QEMU_IMG), "convert", "-f", "raw", "-O", "qcow2"]
    subprocess.run(
        [*convert, str(work / "disk.raw"), str(work / "disk.qcow2")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    qcow2 = (work / "disk.qcow2").read_bytes()
    assert qcow2.startswith(QCOW2_MAGIC) and len(qcow2) < VIRTUAL_SIZE
    return SimpleNamespace(raw=bytes(raw), qcow2=qcow2)


@pytest.fixture(scope="module")
def import_glance(stack: Stack, disk, say):
    """A Glance with conversion (raw) and injectMetadata, allowed to fetch from loopback."""
    started = time.monotonic()
    server = FileServer(files={"/disk.qcow2": disk.qcow2, "/disk.raw": disk.raw})
    proc = None
    try:

        def edit(docs: list[dict[str, Any]]) -> None:
            spec = next(d for d in docs if d["kind"] == "Glance")["spec"]
            spec["importFiltering"] = {
                "allowedSchemes": ["http"],
                "allowedPorts": [server.port],
                "allowedHosts": ["127.0.0.1"],
            }
            spec["importPlugins"] = {
                "conversion": {"outputFormat": "raw"},
                "injectMetadata": {"properties": dict(INJECTED)},
            }

        rendered, remap = stack.variant("import-plugins", edit)
        port = free_port()
        proc = stack.launch_from("glance-api-import-plugins", rendered, remap, port)
        say(f"\n[e2e] import-plugins Glance rendered and up in {time.monotonic() - started:.1f}s")
        yield SimpleNamespace(
            url=f"http://127.0.0.1:{port}", rendered=rendered, remap=remap, server=server
        )
    finally:
        if proc is not None:
            proc.stop()
        server.stop()


def test_the_conversion_render_runs_qemu_img_under_the_images_python(import_glance):
    conf = glance_conf(import_glance.rendered)
    assert conf["image_import_opts"]["image_import_plugins"] == (
        "[image_conversion,inject_image_metadata]"
    )
    assert conf["image_conversion"]["output_format"] == "raw"
    # Under uWSGI sys.executable is not the environment's python: without this, qemu-img
    # (run through `python -m oslo_concurrency.prlimit`) fails every conversion.
    interpreter = conf["wsgi"]["python_interpreter"]
    assert interpreter == "/var/lib/openstack/bin/python"
    here = import_glance.remap.path(interpreter)
    assert os.access(here, os.X_OK), here


def test_web_download_converts_a_qcow2_image_to_raw_in_s3(stack, import_glance, disk, timed):
    url, token = import_glance.url, stack.demo_token()
    staging_pod_path = glance_conf(import_glance.rendered)["os_glance_staging_store"][
        "filesystem_store_datadir"
    ]
    # The staging store is the pod's staging volume (emptyDir), remapped like any mount.
    assert staging_pod_path == mount_path(import_glance.rendered, "glance-api", "staging")
    staging = import_glance.remap.path(staging_pod_path)
    assert staging.is_dir() and staging.is_relative_to(import_glance.remap.root)

    image_id = create_image(url, token, "e2e-qcow2-to-raw", disk_format="qcow2")
    try:
        resp = web_download(url, token, image_id, import_glance.server.url("/disk.qcow2"))
        assert resp.status == 202, resp.body
        image = wait_active(url, token, image_id)
        assert image["disk_format"] == "raw"
        assert image["container_format"] == "bare"
        assert image["size"] == VIRTUAL_SIZE
        assert image["virtual_size"] == VIRTUAL_SIZE
        assert image["os_hash_value"] == hashlib.sha512(disk.raw).hexdigest()

        stored = s3_digest(stack, stack.bucket, image_id)
        assert not bytes.fromhex(stored["head"]).startswith(QCOW2_MAGIC), stored
        assert stored["size"] == VIRTUAL_SIZE
        assert stored["sha256"] == hashlib.sha256(disk.raw).hexdigest()
        assert download(url, token, image_id) == disk.raw
        # Nothing of the import is left in the staging area.
        assert not [p.name for p in staging.iterdir() if p.name.startswith(image_id)]
    finally:
        delete_image(url, token, image_id)


def test_inject_metadata_properties_land_on_imports_of_roles_not_ignored(
    stack, import_glance, timed
):
    url = import_glance.url
    member = stack.demo_token()
    admin = stack.keystone_token("admin", ADMIN_PASSWORD, "admin")
    source = import_glance.server.url("/disk.raw")
    images: list[tuple[str, str]] = []
    try:
        for token, name in ((member, "e2e-injected"), (admin, "e2e-not-injected")):
            image_id = create_image(url, token, name)
            images.append((token, image_id))
            resp = web_download(url, token, image_id, source)
            assert resp.status == 202, resp.body
        injected = wait_active(url, member, images[0][1])
        assert {k: injected.get(k) for k in INJECTED} == INJECTED
        # ignoreUserRoles is not set: it resolves to [admin], whose imports stay untouched.
        untouched = wait_active(url, admin, images[1][1])
        assert not set(INJECTED) & set(untouched), untouched
    finally:
        for token, image_id in images:
            delete_image(url, token, image_id)


# ---------------------------------------------------------------------------------------
# the image cache and the cache-maintenance sidecar


def _children(pid: int) -> list[str]:
    """The command names of the processes whose parent is ``pid``."""
    names = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        close = text.rindex(")")
        if int(text[close + 2 :].split()[1]) == pid:
            names.append(text[text.index("(") + 1 : close])
    return names


def _du_kib(path: Path) -> int:
    """The sidecar's own measure of the cache (``du -sk`` without the work directories)."""
    out = subprocess.run(
        ["du", "-sk", "--exclude=incomplete", "--exclude=invalid", "--exclude=queue", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.split()[0])


def _cached(url: str, admin: str) -> dict[str, int]:
    """``GET /v2/cache`` (admin): image id -> hits."""
    resp = http("GET", f"{url}/v2/cache", headers=headers(admin))
    assert resp.status == 200, resp.body
    return {entry["image_id"]: entry["hits"] for entry in resp.json()["cached_images"]}


def _wait(what: str, check, timeout: float, sidecar: Process | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if sidecar is not None and sidecar.popen.poll() is not None:
            raise AssertionError(f"the sidecar exited while waiting for {what}\n{sidecar.tail()}")
        tail = sidecar.tail() if sidecar else ""
        assert time.monotonic() < deadline, f"{what}: not after {timeout}s\n{tail}"
        time.sleep(0.2)


def test_image_cache_hits_and_the_maintenance_sidecar_prunes_and_cleans(stack, timed, say):
    def edit(docs: list[dict[str, Any]]) -> None:
        spec = next(d for d in docs if d["kind"] == "Glance")["spec"]
        spec["imageCache"] = {"sizeLimit": CACHE_SIZE_LIMIT, "maintenanceInterval": "1m"}

    rendered, remap = stack.variant("image-cache", edit)
    conf = glance_conf(rendered)
    cache_pod_path = conf["DEFAULT"]["image_cache_dir"]
    assert cache_pod_path == mount_path(rendered, "glance-api", "image-cache")
    assert cache_pod_path == mount_path(rendered, "cache-maintenance", "image-cache")
    max_size = int(conf["DEFAULT"]["image_cache_max_size"])
    assert max_size == MIB // 10 * 8  # reference-spec §3.1: integer division first
    high_water_kib = max_size // 1024
    _, sidecar_container = pod_container(rendered.find("Deployment"), "cache-maintenance")
    assert f"high_water_kib={high_water_kib}\n" in sidecar_container["command"][-1]
    cache = remap.path(cache_pod_path)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    api = stack.launch_from("glance-api-image-cache", rendered, remap, port)
    member = stack.demo_token()
    admin = stack.keystone_token("admin", ADMIN_PASSWORD, "admin")
    images: list[str] = []
    sidecar = None
    try:
        data = {}
        for name in ("e2e-cached-first", "e2e-cached-second"):
            image_id = create_image(url, member, name)
            data[image_id] = random.Random(name).randbytes(CACHED_IMAGE_SIZE)
            upload(url, member, image_id, data[image_id])
            images.append(image_id)
        first, second = images

        # The first download fills the cache; Glance has it, with no hit yet.
        assert download(url, member, first) == data[first]
        # (glance moves the file into the cache, then records it: wait for the record)
        _wait("the first image in the cache", lambda: first in _cached(url, admin), 30)
        assert (cache / first).stat().st_size == CACHED_IMAGE_SIZE
        assert _cached(url, admin) == {first: 0}
        # The second download is served from the cache: Glance counts the hit.
        assert download(url, member, first) == data[first]
        assert _cached(url, admin) == {first: 1}
        # Another image, accessed later: the cache is now over its limit.
        assert download(url, member, second) == data[second]
        _wait("the second image in the cache", lambda: second in _cached(url, admin), 30)
        assert (cache / second).stat().st_size == CACHED_IMAGE_SIZE
        assert _cached(url, admin) == {first: 1, second: 0}
        assert _du_kib(cache) >= high_water_kib

        # What the cleaner must remove (invalid; stalled for longer than
        # image_cache_stall_time, 86400 s by default) and keep (a download in progress).
        invalid = cache / "invalid" / str(uuid.uuid4())
        stalled = cache / "incomplete" / str(uuid.uuid4())
        in_progress = cache / "incomplete" / str(uuid.uuid4())
        for path in (invalid, stalled, in_progress):
            path.write_bytes(b"x" * 1024)
        two_days_ago = time.time() - 2 * 86400
        os.utime(stalled, (two_days_ago, two_days_ago))

        # The sidecar, exactly as rendered: the first pass is due 30 s after it starts.
        sidecar = stack.start_container("cache-maintenance", rendered, remap, "cache-maintenance")
        started = time.monotonic()
        _wait(
            "a pruning and cleaning pass",
            lambda: not (cache / first).exists() and not invalid.exists() and not stalled.exists(),
            SIDECAR_PASS_TIMEOUT,
            sidecar,
        )
        # The pass is over when the loop sleeps again; it said nothing: no failure.
        _wait("the loop asleep again", lambda: _children(sidecar.popen.pid) == ["sleep"], 60)
        pass_s = time.monotonic() - started
        log = sidecar.log.read_text()
        assert "glance-cache-maintenance failed" not in log, sidecar.tail()
        assert "unmeasured" not in log, sidecar.tail()

        assert (cache / second).is_file()  # the most recently used image stays
        assert in_progress.exists()
        assert _cached(url, admin) == {second: 0}
        assert _du_kib(cache) < high_water_kib
        say(f"\n[e2e] cache-maintenance: first pass over {pass_s:.1f}s after the sidecar started")
    finally:
        if sidecar is not None:
            sidecar.stop()
        for image_id in images:
            delete_image(url, member, image_id)
        api.stop()
