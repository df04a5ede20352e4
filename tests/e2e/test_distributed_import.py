"""Distributed import: two Glance API pods from one render, each with its own staging area.

``spec.importMethods`` opts in to glance-direct and glance-download; every API pod carries
``OS_DEFAULT__WORKER_SELF_REFERENCE_URL = http://$(POD_IP):9292``. Here the two pods are
two processes launched from the same rendered Deployment (``Stack.launch_from``) with
their own pod roots (so their own ``staging`` and ``tasks-work`` emptyDirs) and their own
loopback port; the harness's Remap turns each pod's ``<pod IP>:9292`` into
``127.0.0.1:<its port>``, so each process's ``worker_self_reference_url`` is its own
address. One MariaDB, one Keystone, one S3 server, as in a cluster.

* stage on A, import through B: B forwards the import to A, the image becomes ``active``,
  its bytes are in S3 with the right checksum and A's staging area is empty again;
* stage on A, delete through B: B forwards the delete, A's staged file is gone;
* glance-download from one to the other: a second Keystone region whose image endpoint
  is B, the import filter allowing B's address, an import on A becomes ``active`` with
  B's bytes;
* a container restart between stage and import keeps the data (same pod: same IP, same
  emptyDir); a pod replaced between stage and import loses it: what the user then sees
  and how to retry.

Each test prints its wall time (``[e2e] <test>: <s>``), also without ``-s``.
"""

from __future__ import annotations

import configparser
import hashlib
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from e2e.glance_http import create_image, delete_image, get_image, headers, s3_digest, upload
from e2e.glance_http import wait_active as wait_image_active
from e2e.stack import Process, Remap, Rendered, Stack, free_port, http, pod_container

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
METHODS = ["glance-direct", "web-download", "copy-image", "glance-download"]
SELF_URL_ENV = "OS_DEFAULT__WORKER_SELF_REFERENCE_URL"
STAGING = "/var/lib/glance/staging"
OTHER_REGION = "RegionTwo"
GONE_TIMEOUT = 60


def payload(seed: int, size: int = 2 * MIB) -> bytes:
    """``size`` bytes that differ per seed (cheap: moto keeps every object in RAM)."""
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // len(block) + 1))[:size]


def stage(url: str, token: str, image_id: str, data: bytes):
    """``PUT /v2/images/{id}/stage``: the glance-direct upload into this pod's staging area."""
    hdrs = headers(token, **{"Content-Type": "application/octet-stream"})
    return http("PUT", f"{url}/v2/images/{image_id}/stage", data, hdrs, timeout=120)


def import_call(url: str, token: str, image_id: str, method: dict[str, Any]):
    return http("POST", f"{url}/v2/images/{image_id}/import", {"method": method}, headers(token))


class Pod(SimpleNamespace):
    """One API pod here: its process, URL, pod root and staging directory."""

    proc: Process
    url: str
    remap: Remap
    staging: Path
    env: dict[str, str]

    def staged(self, image_id: str) -> bool:
        return (self.staging / image_id).exists()

    def log(self) -> str:
        return self.proc.log.read_text(errors="replace")


def launch(stack: Stack, rendered: Rendered, remap: Remap, name: str, port: int) -> Pod:
    proc = stack.launch_from(name, rendered, remap, port)
    here = replace(remap, port=port)
    _, container = pod_container(rendered.find("Deployment"), "glance-api")
    return Pod(
        proc=proc,
        url=f"http://127.0.0.1:{port}",
        remap=here,
        staging=here.path(STAGING),
        env=here.environment(rendered.container_env(container, here.downward_api)),
    )


def wait_gone(path: Path) -> None:
    deadline = time.monotonic() + GONE_TIMEOUT
    while path.exists():
        assert time.monotonic() < deadline, f"{path} still there after {GONE_TIMEOUT}s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def pair(stack: Stack, say):
    """Pods A and B of one render with glance-direct and glance-download opted in."""
    started = time.monotonic()
    port_a, port_b = free_port(), free_port()

    def edit(docs: list[dict[str, Any]]) -> None:
        spec = next(d for d in docs if d["kind"] == "Glance")["spec"]
        spec["importMethods"] = list(METHODS)
        # glance-download fetches from the other region's Glance through the import filter.
        spec["importFiltering"] = {
            "allowedSchemes": ["http"],
            "allowedPorts": [port_a, port_b],
            "allowedHosts": ["127.0.0.1"],
        }

    rendered, remap = stack.variant("distributed", edit)
    pods: list[Pod] = []
    try:
        for name, port in (("a", port_a), ("b", port_b)):
            pod_remap = replace(remap, root=stack.root / f"pod-distributed-{name}")
            pods.append(launch(stack, rendered, pod_remap, f"glance-api-distributed-{name}", port))
        say(f"\n[e2e] two distributed-import pods up in {time.monotonic() - started:.1f}s")
        yield SimpleNamespace(a=pods[0], b=pods[1], rendered=rendered, remap=remap)
    finally:
        for pod in pods:
            pod.proc.stop()


def test_one_render_gives_each_pod_its_own_url_and_staging_area(pair):
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string(pair.rendered.find("ConfigMap")["data"]["glance-api.conf"])
    assert conf["DEFAULT"]["enabled_import_methods"] == "[" + ",".join(METHODS) + "]"
    assert "worker_self_reference_url" not in conf["DEFAULT"]
    _, container = pod_container(pair.rendered.find("Deployment"), "glance-api")
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env[SELF_URL_ENV]["value"] == "http://$(POD_IP):9292"
    assert pair.a.env[SELF_URL_ENV] == pair.a.url
    assert pair.b.env[SELF_URL_ENV] == pair.b.url
    assert pair.a.staging != pair.b.staging
    assert pair.a.staging.is_dir() and pair.b.staging.is_dir()


def test_staged_on_a_imported_through_b_becomes_active_with_its_bytes_in_s3(
    stack, pair, say, timed
):
    token, data = stack.demo_token(), payload(1)
    image_id = create_image(pair.a.url, token, "e2e-stage-a-import-b")
    try:
        started = time.monotonic()
        resp = stage(pair.a.url, token, image_id, data)
        assert resp.status == 204, resp.body
        staged = time.monotonic() - started
        assert pair.a.staged(image_id) and not pair.b.staged(image_id)
        assert (pair.a.staging / image_id).read_bytes() == data
        assert get_image(pair.b.url, token, image_id)["status"] == "uploading"

        started = time.monotonic()
        resp = import_call(pair.b.url, token, image_id, {"name": "glance-direct"})
        assert resp.status == 202, resp.body
        image = wait_image_active(pair.b.url, token, image_id)
        imported = time.monotonic() - started
        say(f"\n[e2e] 2 MiB staged on A in {staged:.2f}s, imported through B in {imported:.2f}s")

        assert image["size"] == len(data)
        assert image["os_hash_value"] == hashlib.sha512(data).hexdigest()
        stored = s3_digest(stack, stack.bucket, image_id)
        assert stored["size"] == len(data)
        assert stored["sha256"] == hashlib.sha256(data).hexdigest()
        assert f"Proxying POST request to host {pair.a.url}" in pair.b.log()
        wait_gone(pair.a.staging / image_id)  # the import on A consumed the staged file
    finally:
        delete_image(pair.a.url, token, image_id)


def test_staged_on_a_deleted_through_b_leaves_nothing_on_a(stack, pair, timed):
    token = stack.demo_token()
    image_id = create_image(pair.a.url, token, "e2e-stage-a-delete-b")
    resp = stage(pair.a.url, token, image_id, payload(2))
    assert resp.status == 204, resp.body
    assert pair.a.staged(image_id)

    resp = http("DELETE", f"{pair.b.url}/v2/images/{image_id}", headers=headers(token))
    assert resp.status == 204, resp.body
    assert f"Proxying DELETE request to host {pair.a.url}" in pair.b.log()
    assert not pair.a.staged(image_id)
    resp = http("GET", f"{pair.a.url}/v2/images/{image_id}", headers=headers(token))
    assert resp.status == 404


def test_glance_download_from_the_other_region_becomes_active(stack, pair, say, timed):
    token, data = stack.demo_token(), payload(3)
    remove_region = stack.add_image_region(OTHER_REGION, pair.b.url)
    images: list[str] = []
    try:
        source = create_image(pair.b.url, token, "e2e-glance-download-source")
        images.append(source)
        upload(pair.b.url, token, source, data)
        # Keystone's token carries the new catalog: a fresh token after the region exists.
        token = stack.demo_token()
        target = create_image(pair.a.url, token, "e2e-glance-download-target")
        images.append(target)
        started = time.monotonic()
        resp = import_call(
            pair.a.url,
            token,
            target,
            {
                "name": "glance-download",
                "glance_image_id": source,
                "glance_region": OTHER_REGION,
                "glance_service_interface": "public",
            },
        )
        assert resp.status == 202, resp.body
        image = wait_image_active(pair.a.url, token, target)
        say(f"\n[e2e] 2 MiB glance-download B -> A in {time.monotonic() - started:.2f}s")
        assert image["size"] == len(data)
        assert image["os_hash_value"] == hashlib.sha512(data).hexdigest()
        stored = s3_digest(stack, stack.bucket, target)
        assert stored["sha256"] == hashlib.sha256(data).hexdigest()
        assert f"{pair.b.url}/v2/images/{source}/file" in pair.a.log()
        assert not pair.a.staged(target)
    finally:
        for image_id in images:
            delete_image(pair.a.url, token, image_id)
        remove_region()


def test_a_container_restart_keeps_the_staged_data_and_the_import_goes_on(stack, pair, timed):
    """The kubelet restarts a container in the same pod: same IP, same emptyDir."""
    token, data = stack.demo_token(), payload(5)
    image_id = create_image(pair.a.url, token, "e2e-stage-restart")
    try:
        assert stage(pair.a.url, token, image_id, data).status == 204
        pair.a.proc.stop()
        port = int(pair.a.url.rsplit(":", 1)[1])
        pair.a.proc = stack.launch_from(
            "glance-api-distributed-a-restarted", pair.rendered, pair.a.remap, port
        )
        # glance's start-up cleanup keeps staging files of images that are not deleted.
        assert pair.a.staged(image_id)
        resp = import_call(pair.b.url, token, image_id, {"name": "glance-direct"})
        assert resp.status == 202, resp.body
        image = wait_image_active(pair.b.url, token, image_id)
        assert image["os_hash_value"] == hashlib.sha512(data).hexdigest()
    finally:
        delete_image(pair.a.url, token, image_id)


def test_a_pod_replaced_between_stage_and_import_loses_the_staged_data(stack, pair, say, timed):
    """What a user sees when the pod that staged an image goes away, and how to retry.

    A third pod C stages (its own port and pod root); C is then stopped and its pod root,
    the emptyDir, removed, as the kubelet does when a pod is replaced. Its URL is gone.
    """
    token, data = stack.demo_token(), payload(4)
    root_c = stack.root / "pod-distributed-c"
    c = launch(
        stack,
        pair.rendered,
        replace(pair.remap, root=root_c),
        "glance-api-distributed-c",
        free_port(),
    )
    image_id = create_image(c.url, token, "e2e-stage-lost")
    try:
        resp = stage(c.url, token, image_id, data)
        assert resp.status == 204, resp.body
        c.proc.stop()
        assert c.staged(image_id)
        for path in sorted(c.staging.iterdir()):
            path.unlink()  # the emptyDir goes with the pod

        image = get_image(pair.b.url, token, image_id)
        assert image["status"] == "uploading", image
        outcome = {"image": image["status"]}
        resp = import_call(pair.b.url, token, image_id, {"name": "glance-direct"})
        outcome["import through B"] = resp.status
        assert b"Stage host is unavailable" in resp.body, resp.body
        resp = stage(pair.b.url, token, image_id, data)
        outcome["stage again"] = resp.status
        assert get_image(pair.b.url, token, image_id)["status"] == "uploading"
        resp = http("DELETE", f"{pair.b.url}/v2/images/{image_id}", headers=headers(token))
        outcome["delete through B"] = resp.status
        say(f"\n[e2e] staging pod gone: {outcome}")
        # The import is forwarded to the dead address: 504 (the image shim's guard; glance
        # alone answers 500 and never lets the image be deleted). Staging again is refused,
        # the image is no longer queued. Deleting works and lets the user start over.
        assert outcome == {
            "image": "uploading",
            "import through B": 504,
            "stage again": 409,
            "delete through B": 204,
        }
        assert f"Proxying DELETE request to host {c.url}" in pair.b.log()
        gone = http("GET", f"{pair.b.url}/v2/images/{image_id}", headers=headers(token))
        assert gone.status == 404
        image_id = None

        retry = create_image(pair.b.url, token, "e2e-stage-retried")
        try:
            assert stage(pair.b.url, token, retry, data).status == 204
            assert import_call(pair.a.url, token, retry, {"name": "glance-direct"}).status == 202
            wait_image_active(pair.a.url, token, retry)
        finally:
            delete_image(pair.a.url, token, retry)
    finally:
        if image_id is not None:
            delete_image(pair.b.url, token, image_id)
