"""The image upload path of the rendered launch: patient with slow clients, body never in memory.

On the session's stack (``conftest.py``), through the rendered uWSGI command
(``docs/upload.md``):

* an upload whose client stops sending for 10 s in the middle of the body (chunked, as
  python-glanceclient sends, and with Content-Length, as the ``openstack`` CLI sends)
  completes with the right checksum: uWSGI's default 4 s socket timeout cut it;
* a 2 GiB chunked upload, generated on the fly, completes with the right checksum while
  the resident memory of every uWSGI process (master, workers, the router if any) stays within
  256 MiB of what it was before: the body streams to S3, it is never buffered. The peak is
  printed, and so is moto's (it assembles a multipart object in memory; the image is
  deleted at once);
* the workers serve HTTP without a router (the default, no keep-alive): every response
  says ``Connection: close`` and the worker closes the connection, so clients that keep
  their end open (more of them than the pod has request slots) hold no worker, and the
  probe is answered within its timeout;
* ``httpKeepAliveTimeout`` is rendered as uWSGI understands it: the API starts (behind
  uWSGI's router, which keep-alive needs), and closes a kept-alive connection that stays
  idle longer than that.
"""

from __future__ import annotations

import hashlib
import random
import re
import socket
import time
from http.client import HTTPConnection

import pytest
from e2e.glance_http import create_image, delete_image, get_image
from e2e.procstat import RssSampler
from e2e.stack import Stack, free_port

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
PAUSE_S = 10
LARGE_SIZE = 2 * 1024 * MIB
RSS_GROWTH_BOUND = 256 * MIB


def _put(stack: Stack, token: str, image_id: str, size: int, chunked: bool) -> HTTPConnection:
    """An open ``PUT /v2/images/{id}/file`` of ``size`` bytes, as the clients send it.

    Chunked as python-glanceclient does, with the size in ``x-openstack-image-size``: without
    a size glance_store's S3 driver takes the single-part path, which holds the whole image
    in memory (docs/upload.md). Otherwise with ``Content-Length``, as the ``openstack`` CLI.
    """
    conn = HTTPConnection("127.0.0.1", stack.glance_port, timeout=120)
    conn.putrequest("PUT", f"/v2/images/{image_id}/file")
    conn.putheader("X-Auth-Token", token)
    conn.putheader("Content-Type", "application/octet-stream")
    if chunked:
        conn.putheader("Transfer-Encoding", "chunked")
        conn.putheader("x-openstack-image-size", str(size))
    else:
        conn.putheader("Content-Length", str(size))
    conn.endheaders()
    return conn


def _send(conn: HTTPConnection, block: bytes, chunked: bool) -> None:
    conn.send(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_an_upload_paused_mid_body_for_10_s_completes_with_its_checksum(stack, chunked, timed):
    token = stack.demo_token()
    image_id = create_image(
        stack.glance_url, token, f"e2e-paused-{'chunked' if chunked else 'length'}"
    )
    blocks = [random.Random(10 + i).randbytes(MIB) for i in range(8)]
    conn = _put(stack, token, image_id, 8 * MIB, chunked)
    try:
        for i, block in enumerate(blocks):
            if i == 4:
                time.sleep(PAUSE_S)  # the client stops sending in the middle of the body
            _send(conn, block, chunked)
        if chunked:
            conn.send(b"0\r\n\r\n")
        resp = conn.getresponse()
        assert resp.status == 204, resp.read()
        image = get_image(stack.glance_url, token, image_id)
        assert image["status"] == "active"
        assert image["size"] == 8 * MIB
        assert image["os_hash_value"] == hashlib.sha512(b"".join(blocks)).hexdigest()
    finally:
        conn.close()
        delete_image(stack.glance_url, token, image_id)


def test_a_2_gib_upload_streams_without_growing_the_api_processes(stack, say, timed):
    token = stack.demo_token()
    image_id = create_image(stack.glance_url, token, "e2e-2gib")
    moto = next(p for p in stack.processes if p.name == "moto")
    sha512, rng = hashlib.sha512(), random.Random(2048)
    conn = _put(stack, token, image_id, LARGE_SIZE, chunked=True)
    api = RssSampler(stack.glance.popen.pid)
    s3 = RssSampler(moto.popen.pid, interval=0.5)
    started = time.monotonic()
    try:
        with api, s3:
            for _ in range(LARGE_SIZE // MIB):  # 1 MiB chunks, as python-glanceclient sends
                block = rng.randbytes(MIB)
                sha512.update(block)
                _send(conn, block, chunked=True)
            conn.send(b"0\r\n\r\n")
            conn.sock.settimeout(600)  # glance completes the S3 multipart upload first
            resp = conn.getresponse()
            body = resp.read()
        assert resp.status == 204, body
        image = get_image(stack.glance_url, token, image_id)
        assert image["status"] == "active"
        assert image["size"] == LARGE_SIZE
        assert image["os_hash_value"] == sha512.hexdigest()
    finally:
        elapsed = time.monotonic() - started
        conn.close()
        delete_image(stack.glance_url, token, image_id)
        say(
            f"\n[e2e] 2 GiB chunked upload: {elapsed:.1f}s "
            f"({LARGE_SIZE / MIB / elapsed:.1f} MiB/s); uWSGI processes "
            f"{sum(api.baseline.values()) / MIB:.0f} MiB before, peak "
            f"{api.peak_total / MIB:.0f} MiB (largest growth of one process "
            f"{api.growth() / MIB:.0f} MiB, {api.samples} samples); moto "
            f"{sum(s3.baseline.values()) / MIB:.0f} MiB before, peak {s3.peak_total / MIB:.0f} MiB"
        )
    assert api.samples > 10, f"only {api.samples} RSS samples"
    assert api.growth() < RSS_GROWTH_BOUND, (
        f"a uWSGI process grew by {api.growth() / MIB:.0f} MiB during a 2 GiB upload: "
        f"{api.peak_per_process} (before: {api.baseline})"
    )


def _probe(stack: Stack, kind: str) -> dict:
    deployment = stack.rendered.find("Deployment")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "glance-api")[kind]


def test_clients_holding_their_connections_open_leave_the_probe_answered(stack, say):
    """More clients than request slots keep their connection open; the probes still answer.

    A worker that served a request on a connection kept alive would wait on it for the next
    request up to ``--socket-timeout`` (300 s) and serve nothing else (``--http11-socket``:
    two such connections left ``/healthcheck`` unanswered, docs/upload.md). The rendered
    launch says ``Connection: close`` and closes: the server's end is closed while the
    client's stays open, and the probe, as the kubelet sends it, answers in its timeout.
    The request log keeps its format.
    """
    uwsgi = stack.glance_command
    slots = int(uwsgi[uwsgi.index("--processes") + 1]) * int(uwsgi[uwsgi.index("--threads") + 1])
    held = []
    try:
        for _ in range(slots + 1):
            sock = socket.create_connection(("127.0.0.1", stack.glance_port), timeout=60)
            held.append(sock)
            sock.sendall(b"GET /versions HTTP/1.1\r\nHost: glance\r\n\r\n")
            answer = b""
            while block := sock.recv(65536):  # until the server closes its end
                answer += block
            head = answer.split(b"\r\n\r\n", 1)[0].lower()
            assert head.startswith(b"http/1.1 200"), answer[:200]
            assert b"\r\nconnection: close" in head, head
        for kind in ("livenessProbe", "readinessProbe"):
            probe = _probe(stack, kind)
            path, timeout = probe["httpGet"]["path"], probe["timeoutSeconds"]
            conn = HTTPConnection("127.0.0.1", stack.glance_port, timeout=timeout)
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                assert resp.status == 200, (kind, resp.status)
            finally:
                conn.close()
        say(f"\n[e2e] {len(held)} client connections held open: probes answered")
    finally:
        for sock in held:
            sock.close()
    # The request log keeps the reference's format (the master writes it, a moment later).
    logged = re.compile(
        r"^GET (/versions|/healthcheck) => generated \d+ bytes in \d+ msecs \(HTTP/1\.1 200\)$",
        re.MULTILINE,
    )
    deadline = time.monotonic() + 30
    while len(set(logged.findall(stack.glance.log.read_text(errors="replace")))) < 2:
        assert time.monotonic() < deadline, stack.glance.tail()
        time.sleep(0.2)


def test_the_keepalive_timeout_closes_an_idle_connection(stack, say, timed):
    """``httpKeepAliveTimeout: 2``: uWSGI starts with it and closes a connection idle > 2 s.

    The default idle timeout is 60 s: a close within the client's 30 s timeout is the 2 s.
    """

    def edit(docs):
        glance = next(d for d in docs if d["kind"] == "Glance")
        glance["spec"].setdefault("apiServer", {})["uwsgi"] = {"httpKeepAliveTimeout": 2}

    rendered, remap = stack.variant("keepalive-timeout", edit)
    port = free_port()
    proc = stack.launch_from("glance-api-keepalive-timeout", rendered, remap, port)
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for _ in range(2):  # kept alive: the second request goes over the same connection
            conn.request("GET", "/healthcheck")
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
            assert (resp.getheader("Connection") or "").lower() != "close"
        sock = conn.sock
        assert sock is not None, "the connection was not kept alive"
        idle = time.monotonic()
        assert sock.recv(1) == b"", "the server sent something on an idle connection"
        say(
            f"\n[e2e] httpKeepAliveTimeout 2: idle connection closed after "
            f"{time.monotonic() - idle:.1f}s"
        )
    finally:
        conn.close()
        proc.stop()
