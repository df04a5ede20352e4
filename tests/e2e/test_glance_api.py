"""The rendered Glance, launched from its own objects, serves images through Keystone and S3.

One stack per session (``conftest.py``, ``stack.py``): the Glance API is the rendered
Deployment's uWSGI command with the rendered configuration, behind a real Keystone, on a
MariaDB schema the rendered db-sync Job created, storing into moto's S3 server. Images
stay small (moto keeps objects in memory), except for two 512 MiB transfers, one through
python-glanceclient (chunked, data generated on the fly) and one through the ``openstack``
CLI (Content-Length, from a file), whose throughput is printed, never asserted. Each is
deleted before the next test.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import random
import re
import signal
import time
from http.client import HTTPConnection
from pathlib import Path

import pytest
from e2e.glance_http import create_image
from e2e.stack import (
    ADMIN_PASSWORD,
    DEMO_PASSWORD,
    IMAGE_FILES,
    ROOT,
    S3_ACCESS_KEY,
    S3_SECRET_KEY,
    Stack,
    free_port,
    http,
)
from support.dockerfiles import ignore_patterns, ignored

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
SMALL_SIZE = 3 * MIB + 12345  # three full 1 MiB chunks and a partial one
LARGE_SIZE = 512 * MIB

# ---------------------------------------------------------------------------------------
# helpers


def _payload(path: Path, size: int, seed: int) -> dict[str, str]:
    data = random.Random(seed).randbytes(size)
    path.write_bytes(data)
    return {"md5": hashlib.md5(data).hexdigest(), "sha512": hashlib.sha512(data).hexdigest()}


def _json(proc) -> dict:
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def _ok(proc) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.decode() if isinstance(proc.stdout, bytes) else proc.stdout


def _table_value(table: str, key: str) -> str:
    """A value of glanceclient's ``| Property | Value |`` table."""
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] == key:
            return cells[1]
    raise AssertionError(f"no {key} in:\n{table}")


def glance_image(stack: Stack, image_id: str) -> dict:
    """The image record as the Glance API returns it (GET /v2/images/{id})."""
    resp = http(
        "GET",
        f"{stack.glance_url}/v2/images/{image_id}",
        headers={"X-Auth-Token": stack.demo_token()},
    )
    assert resp.status == 200, resp.body
    return resp.json()


def assert_hashes(image: dict, expected: dict[str, str]) -> None:
    assert image["checksum"] == expected["md5"]
    assert image["os_hash_algo"] == "sha512"
    assert image["os_hash_value"] == expected["sha512"]


# The S3 object of an image, through boto3 (e2e environment): its size, or null.
S3_OBJECT = """
import json, sys, boto3, botocore
req = json.loads(sys.stdin.read())
s3 = boto3.client("s3", endpoint_url=req["url"], aws_access_key_id=req["key"],
                  aws_secret_access_key=req["secret"], region_name="us-east-1")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket=req["bucket"]).get("Contents", [])]
try:
    head = s3.head_object(Bucket=req["bucket"], Key=req["image"])
    found = {"size": head["ContentLength"], "etag": head["ETag"]}
except botocore.exceptions.ClientError:
    found = None
print(json.dumps({"object": found, "keys": keys}))
"""


def s3_object(stack: Stack, image_id: str) -> dict:
    request = {
        "url": stack.s3_url,
        "key": S3_ACCESS_KEY,
        "secret": S3_SECRET_KEY,
        "bucket": stack.bucket,
        "image": image_id,
    }
    return stack.e2e_python(S3_OBJECT, request)


def chunked_put(port: int, token: str, image_id: str) -> HTTPConnection:
    """An open chunked ``PUT /v2/images/{id}/file``: the caller sends the chunks."""
    conn = HTTPConnection("127.0.0.1", port, timeout=120)
    conn.putrequest("PUT", f"/v2/images/{image_id}/file")
    conn.putheader("X-Auth-Token", token)
    conn.putheader("Content-Type", "application/octet-stream")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    return conn


def send_chunk(conn: HTTPConnection, data: bytes) -> None:
    conn.send(b"%x\r\n" % len(data) + data + b"\r\n")


# ---------------------------------------------------------------------------------------
# the API surface


def test_healthcheck_answers_200_without_a_token(stack):
    resp = http("GET", f"{stack.glance_url}/healthcheck")
    assert resp.status == 200, resp.body


def test_images_without_a_token_are_401_naming_the_keystone_public_endpoint(stack):
    resp = http("GET", f"{stack.glance_url}/v2/images")
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"] == f'Keystone uri="{stack.keystone_url}"'


def test_a_keystone_token_lists_images(stack):
    resp = http(
        "GET", f"{stack.glance_url}/v2/images", headers={"X-Auth-Token": stack.demo_token()}
    )
    assert resp.status == 200, resp.body
    assert resp.json()["images"] == [] or isinstance(resp.json()["images"], list)


def _healthcheck_disable_file(stack: Stack) -> str:
    """``disable_by_file_path`` of the rendered paste pipeline (a path in the pod)."""
    paste = configparser.ConfigParser(interpolation=None)
    paste.read_string(stack.rendered.find("ConfigMap")["data"]["glance-api-paste.ini"])
    return paste["app:healthcheck"]["disable_by_file_path"]


def test_the_rendered_disable_file_turns_the_healthcheck_to_503(stack):
    path = stack.remap.path(_healthcheck_disable_file(stack))
    path.touch()
    try:
        assert http("GET", f"{stack.glance_url}/healthcheck").status == 503
    finally:
        path.unlink()
    assert http("GET", f"{stack.glance_url}/healthcheck").status == 200


def test_the_healthcheck_disable_file_is_on_a_volume_the_pod_can_write(stack):
    pod_path = _healthcheck_disable_file(stack)
    container = stack.glance_container
    writable = [m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert any(pod_path.startswith(m.rstrip("/") + "/") for m in writable), (pod_path, writable)


def test_the_db_sync_job_loaded_the_metadata_definitions(stack):
    resp = http(
        "GET",
        f"{stack.glance_url}/v2/metadefs/namespaces?limit=100",
        headers={"X-Auth-Token": stack.demo_token()},
    )
    assert resp.status == 200, resp.body
    names = {ns["namespace"] for ns in resp.json()["namespaces"]}
    assert "OS::Compute::Hypervisor" in names, sorted(names)


def _metadef_checksums(stack: Stack) -> list[list[str]]:
    tables = [row[0] for row in stack.sql("SHOW TABLES LIKE 'metadef\\_%'")]
    assert len(tables) >= 6, tables
    return stack.sql("CHECKSUM TABLE " + ", ".join(sorted(tables)))


def test_a_db_sync_adds_the_definitions_a_namespace_lacks_and_keeps_an_admins_edits(stack):
    """The db-sync Job's ``load_metadefs --merge``, as a new release's db-sync runs it.

    A shipped definition the database lacks in an existing namespace (as after an older
    release that did not ship it: removed here with SQL, shipped namespaces are protected;
    without ``--merge`` it would never be loaded) comes back;
    what an admin changed in a shipped namespace stays; a further run writes nothing.
    """
    namespace = "OS::Compute::Libvirt"
    base = f"{stack.glance_url}/v2/metadefs/namespaces/{namespace}"
    admin = {"X-Auth-Token": stack.keystone_token("admin", ADMIN_PASSWORD, "admin")}
    shipped = http("GET", base, headers=admin)
    assert shipped.status == 200, shipped.body
    name = sorted(shipped.json()["properties"])[0]
    definition = shipped.json()["properties"][name]
    edited = "Edited by the cloud's admin: kept across db-sync."
    # Shipped namespaces are protected: the API refuses to delete their definitions.
    stack.sql(
        "DELETE p FROM metadef_properties p JOIN metadef_namespaces n ON p.namespace_id = n.id "
        f"WHERE n.namespace = '{namespace}' AND p.name = '{name}'"
    )
    body = {k: shipped.json()[k] for k in ("namespace", "display_name", "visibility")}
    try:
        resp = http("PUT", base, {**body, "description": edited}, admin)
        assert resp.status == 200, resp.body
        assert name not in http("GET", base, headers=admin).json().get("properties", {})

        stack.run_container("glance-db-sync", stack.rendered, stack.remap, "Job", "db-sync")
        now = http("GET", base, headers=admin).json()
        assert now["properties"][name] == definition
        assert now["description"] == edited
        checksums = _metadef_checksums(stack)
        stack.run_container("glance-db-sync", stack.rendered, stack.remap, "Job", "db-sync")
        assert _metadef_checksums(stack) == checksums
    finally:
        resp = http("PUT", base, {**body, "description": shipped.json()["description"]}, admin)
        assert resp.status == 200, resp.body


# ---------------------------------------------------------------------------------------
# the image schema: schema-image.json of the image


def test_glance_serves_the_image_schema_of_the_images_schema_image_json(stack):
    """The custom image properties are in the schema, and Glance enforces them."""
    token = stack.demo_token()
    resp = http("GET", f"{stack.glance_url}/v2/schemas/image", headers={"X-Auth-Token": token})
    assert resp.status == 200, resp.body
    served = resp.json()["properties"]
    shipped = json.loads(IMAGE_FILES["/etc/glance/schema-image.json"].read_text())
    for name, schema in shipped.items():
        # Glance adds "is_base": false to each custom property.
        assert name in served, name
        assert {key: served[name].get(key) for key in schema} == schema, name
    # kernel_id must be a UUID: refused with the file, accepted without it.
    resp = http(
        "POST",
        f"{stack.glance_url}/v2/images",
        {"name": "e2e-bad-kernel", "kernel_id": "not-a-uuid"},
        {"X-Auth-Token": token},
    )
    assert resp.status == 400, resp.body
    assert "Could not find schema properties file" not in stack.glance.log.read_text()


def test_the_image_and_the_harness_ship_the_same_image_files():
    """Every file the harness mirrors is COPYed by the Dockerfile from the same source, and
    its build context (images/glance) lets it in."""
    context = ROOT / "images" / "glance"
    dockerfile = (context / "Dockerfile").read_text()
    patterns = ignore_patterns(context / ".dockerignore")
    for image_path, source in IMAGE_FILES.items():
        relative = source.relative_to(context).as_posix()
        assert re.search(
            rf"^COPY {re.escape(relative)} {re.escape(image_path)}$", dockerfile, re.MULTILINE
        ), f"images/glance/Dockerfile does not COPY {relative} to {image_path}"
        assert not ignored(relative, patterns), f"the build context leaves out {relative}"


# ---------------------------------------------------------------------------------------
# upload, download, checksums, S3, delete: with each client


def _osc_create(stack, source, name: str, **options) -> str:
    """``openstack image create`` of a raw file; the new image's id."""
    command = ["openstack", "image", "create", "--disk-format", "raw"]
    command += ["--container-format", "bare", "--file", str(source), "-f", "json", name]
    return _json(stack.cli(*command, **options))["id"]


def test_openstack_cli_uploads_downloads_and_deletes_an_image_in_s3(stack, tmp_path):
    """openstacksdk uploads with Content-Length."""
    source = tmp_path / "osc.raw"
    expected = _payload(source, SMALL_SIZE, seed=1)
    image_id = _osc_create(stack, source, "e2e-osc")
    shown = glance_image(stack, image_id)
    assert shown["status"] == "active"
    assert shown["size"] == SMALL_SIZE
    assert shown["stores"] == "s3-default"
    assert_hashes(shown, expected)

    stored = s3_object(stack, image_id)
    assert stored["object"] is not None, f"no object {image_id} in {stored['keys']}"
    assert stored["object"]["size"] == SMALL_SIZE

    target = tmp_path / "osc.out"
    _ok(stack.cli("openstack", "image", "save", "--file", str(target), image_id))
    assert target.read_bytes() == source.read_bytes()

    _ok(stack.cli("openstack", "image", "delete", image_id))
    assert stack.cli("openstack", "image", "show", image_id).returncode != 0
    assert s3_object(stack, image_id)["object"] is None


def test_glanceclient_chunked_upload_downloads_and_deletes_an_image_in_s3(stack, tmp_path):
    """python-glanceclient uploads with Transfer-Encoding: chunked in 1 MiB chunks.

    Two steps (``image-create``, then ``image-upload``); the connection reuse after a
    chunked PUT is pinned by ``test_a_kept_alive_connection_survives_a_chunked_upload``.
    """
    source = tmp_path / "glance.raw"
    expected = _payload(source, SMALL_SIZE, seed=2)
    created = _ok(
        stack.cli(
            "glance",
            "image-create",
            "--name",
            "e2e-glanceclient",
            "--disk-format",
            "raw",
            "--container-format",
            "bare",
            text=True,
        )
    )
    image_id = _table_value(created, "id")
    _ok(stack.cli("glance", "image-upload", "--file", str(source), image_id))
    shown = glance_image(stack, image_id)
    assert shown["status"] == "active"
    assert shown["size"] == SMALL_SIZE
    assert_hashes(shown, expected)
    assert s3_object(stack, image_id)["object"]["size"] == SMALL_SIZE

    target = tmp_path / "glance.out"
    _ok(stack.cli("glance", "image-download", "--file", str(target), image_id))
    assert target.read_bytes() == source.read_bytes()

    _ok(stack.cli("glance", "image-delete", image_id))
    assert s3_object(stack, image_id)["object"] is None


def test_a_kept_alive_connection_survives_a_chunked_upload(stack):
    """After a chunked PUT the server keeps the connection or says ``Connection: close``."""
    token = stack.demo_token()
    image_id = create_image(stack.glance_url, token, "e2e-keepalive")
    conn = chunked_put(stack.glance_port, token, image_id)
    try:
        for _ in range(2):
            send_chunk(conn, random.randbytes(MIB))
        conn.send(b"0\r\n\r\n")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 204
        if (resp.getheader("Connection") or "").lower() != "close":
            conn.request("GET", f"/v2/images/{image_id}", headers={"X-Auth-Token": token})
            again = conn.getresponse()
            again.read()
            assert again.status == 200
    finally:
        conn.close()
        http("DELETE", f"{stack.glance_url}/v2/images/{image_id}", headers={"X-Auth-Token": token})


def test_chunks_larger_than_uwsgis_default_limit_are_accepted(stack):
    """4 MiB chunks: above uWSGI's 1 MiB default, within the rendered chunked-input limit."""
    token = stack.demo_token()
    image_id = create_image(stack.glance_url, token, "e2e-4mib-chunks")
    data = random.Random(4).randbytes(8 * MIB)
    conn = chunked_put(stack.glance_port, token, image_id)
    try:
        for offset in range(0, len(data), 4 * MIB):
            send_chunk(conn, data[offset : offset + 4 * MIB])
        conn.send(b"0\r\n\r\n")
        resp = conn.getresponse()
        assert resp.status == 204, resp.read()
    finally:
        conn.close()
    image = glance_image(stack, image_id)
    assert image["os_hash_value"] == hashlib.sha512(data).hexdigest()
    resp = http(
        "DELETE", f"{stack.glance_url}/v2/images/{image_id}", headers={"X-Auth-Token": token}
    )
    assert resp.status == 204


# ---------------------------------------------------------------------------------------
# 512 MiB through python-glanceclient (chunked) and S3 multipart: printed throughput

LARGE_TRANSFER = """
import hashlib, json, random, sys, time
from glanceclient import Client
from keystoneauth1 import session
from keystoneauth1.identity import v3

req = json.loads(sys.stdin.read())
size, seed, chunk = req["size"], req["seed"], 1024 * 1024


def client():
    # A new session (connection pool) per step keeps the steps independent.
    auth = v3.Password(auth_url=req["auth_url"], username="demo", password=req["password"],
                       project_name="demo", user_domain_id="default",
                       project_domain_id="default")
    return Client("2", session=session.Session(auth=auth), region_name="RegionOne")


class Generated:
    # The image data, made on the fly: never more than one chunk in memory.
    def __init__(self):
        self.rng, self.left = random.Random(seed), size

    def read(self, n=chunk):
        n = min(n, self.left)
        self.left -= n
        return self.rng.randbytes(n) if n else b""


md5, sha512, data = hashlib.md5(), hashlib.sha512(), Generated()
while block := data.read(chunk):
    md5.update(block)
    sha512.update(block)

image = client().images.create(name="e2e-512mib", disk_format="raw", container_format="bare")
started = time.monotonic()
client().images.upload(image["id"], Generated(), image_size=size)  # as `glance image-upload`
upload = time.monotonic() - started
record = client().images.get(image["id"])

started, received, digest = time.monotonic(), 0, hashlib.sha512()
for block in client().images.data(image["id"]):
    received += len(block)
    digest.update(block)
download = time.monotonic() - started
print(json.dumps({
    "id": image["id"], "upload_s": upload, "download_s": download, "received": received,
    "md5": md5.hexdigest(), "sha512": sha512.hexdigest(), "downloaded_sha512": digest.hexdigest(),
    "checksum": record["checksum"], "os_hash_value": record["os_hash_value"],
    "status": record["status"], "size": record["size"],
}))
"""


def test_512_mib_up_and_down_through_glanceclient_and_s3_multipart(stack, capsys):
    result = stack.e2e_python(
        LARGE_TRANSFER,
        {
            "size": LARGE_SIZE,
            "seed": 512,
            "auth_url": stack.keystone_url,
            "password": DEMO_PASSWORD,
        },
        timeout=1800,
    )
    try:
        assert result["status"] == "active"
        assert result["size"] == LARGE_SIZE
        assert result["checksum"] == result["md5"]
        assert result["os_hash_value"] == result["sha512"]
        assert result["received"] == LARGE_SIZE
        assert result["downloaded_sha512"] == result["sha512"]
        stored = s3_object(stack, result["id"])["object"]
        assert stored["size"] == LARGE_SIZE
        assert "-" in stored["etag"], f"not a multipart upload: {stored['etag']}"  # "<md5>-<parts>"
    finally:
        http(
            "DELETE",
            f"{stack.glance_url}/v2/images/{result['id']}",
            headers={"X-Auth-Token": stack.demo_token()},
        )
    with capsys.disabled():
        mib = LARGE_SIZE / MIB
        print(
            f"\n[e2e] 512 MiB via python-glanceclient -> uWSGI -> Glance -> S3 (moto): "
            f"upload {mib / result['upload_s']:.1f} MiB/s ({result['upload_s']:.1f}s), "
            f"download {mib / result['download_s']:.1f} MiB/s ({result['download_s']:.1f}s)"
        )


def _large_file(path: Path, size: int, seed: int) -> dict[str, str]:
    """``size`` bytes of ``random.Random(seed)`` written in 1 MiB blocks; their hashes."""
    rng, md5, sha512 = random.Random(seed), hashlib.md5(), hashlib.sha512()
    with path.open("wb") as out:
        for offset in range(0, size, MIB):
            block = rng.randbytes(min(MIB, size - offset))
            md5.update(block)
            sha512.update(block)
            out.write(block)
    return {"md5": md5.hexdigest(), "sha512": sha512.hexdigest()}


def _sha512_of(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as source:
        while block := source.read(MIB):
            digest.update(block)
    return digest.hexdigest()


def test_512_mib_up_and_down_through_the_openstack_cli_and_s3_multipart(stack, tmp_path, say):
    """openstacksdk uploads with Content-Length; the CLI's wall time, start-up included."""
    source, target = tmp_path / "512mib.raw", tmp_path / "512mib.out"
    expected = _large_file(source, LARGE_SIZE, seed=513)
    image_id = None
    try:
        started = time.monotonic()
        image_id = _osc_create(stack, source, "e2e-512mib-osc", timeout=1800)
        upload_s = time.monotonic() - started
        source.unlink()
        shown = glance_image(stack, image_id)
        assert shown["status"] == "active"
        assert shown["size"] == LARGE_SIZE
        assert_hashes(shown, expected)
        stored = s3_object(stack, image_id)["object"]
        assert stored["size"] == LARGE_SIZE
        assert "-" in stored["etag"], f"not a multipart upload: {stored['etag']}"

        started = time.monotonic()
        _ok(stack.cli("openstack", "image", "save", "--file", str(target), image_id, timeout=1800))
        download_s = time.monotonic() - started
        assert target.stat().st_size == LARGE_SIZE
        assert _sha512_of(target) == expected["sha512"]
    finally:
        source.unlink(missing_ok=True)
        target.unlink(missing_ok=True)
        if image_id is not None:
            _ok(stack.cli("openstack", "image", "delete", image_id))
    mib = LARGE_SIZE / MIB
    say(
        f"\n[e2e] 512 MiB via the openstack CLI -> uWSGI -> Glance -> S3 (moto): "
        f"upload {mib / upload_s:.1f} MiB/s ({upload_s:.1f}s), "
        f"download {mib / download_s:.1f} MiB/s ({download_s:.1f}s)"
    )


# ---------------------------------------------------------------------------------------
# the pod's lifecycle: SIGTERM from the kubelet


def test_sigterm_lets_an_in_flight_upload_finish(stack):
    """A second API from the same rendered container; SIGTERM while an upload streams."""
    port = free_port()
    proc = stack.launch_glance("glance-api-sigterm", port)
    token = stack.demo_token()
    image_id = create_image(f"http://127.0.0.1:{port}", token, "e2e-sigterm")
    conn = chunked_put(port, token, image_id)
    try:
        for i in range(8):
            send_chunk(conn, random.randbytes(MIB))
            time.sleep(0.25)
            if i == 2:
                os.kill(proc.popen.pid, signal.SIGTERM)  # the container's PID 1
        conn.send(b"0\r\n\r\n")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 204
        assert proc.popen.wait(30) == 0, proc.tail()
    finally:
        conn.close()
        proc.stop()
        http("DELETE", f"{stack.glance_url}/v2/images/{image_id}", headers={"X-Auth-Token": token})


# ---------------------------------------------------------------------------------------
# what the image must hold for what is rendered


# Distributions the rendered configuration makes glance-api import, which the e2e environment
# installs for it: the DSN's driver and keystonemiddleware's token cache.
RENDER_NEEDS = {
    "pymysql": "the rendered DSN is mysql+pymysql://",
    "python-memcached": "[keystone_authtoken] memcached_servers is always rendered, and "
    "keystonemiddleware's token cache then imports memcache: without it every "
    "authenticated request is a 500",
}


@pytest.mark.parametrize(
    "release", sorted(p.stem for p in (ROOT / "images/glance/requirements").glob("*.txt"))
)
def test_the_image_pins_what_the_rendered_configuration_imports(release):
    path = ROOT / "images" / "glance" / "requirements" / f"{release}.txt"
    pinned = {
        line.split("==")[0].split("[")[0].strip().lower().replace("_", "-")
        for line in path.read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    missing = {name: why for name, why in RENDER_NEEDS.items() if name not in pinned}
    assert not missing, f"{path.name} lacks {missing}"
