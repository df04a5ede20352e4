"""The chaos check's read-back (tests/cluster/load.py ``read_back``) against a real HTTP
server on loopback that answers as a Glance pod does when it goes away mid-read, when the
data is not there, and when it is whole: a transport failure is read again, a missing
file is reported at once, data that stays unreadable is reported after its tries."""

from __future__ import annotations

import hashlib
import http.server
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from cluster.load import read_back

BODY = bytes(range(256)) * 4096  # 1 MiB
DIGEST = hashlib.sha256(BODY).hexdigest()


def whole(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(BODY)))
    handler.end_headers()
    handler.wfile.write(BODY)


def cut_short(handler: http.server.BaseHTTPRequestHandler) -> None:
    """A pod that goes away mid-body: the length promised, half of it sent, the socket shut."""
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(BODY)))
    handler.end_headers()
    handler.wfile.write(BODY[: len(BODY) // 2])
    handler.wfile.flush()
    handler.connection.shutdown(socket.SHUT_RDWR)


def reset(handler: http.server.BaseHTTPRequestHandler) -> None:
    """A connection reset before any answer (SO_LINGER 0: the close sends RST)."""
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    handler.connection.close()


def status(code: int) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(code)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


def other_bytes(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(BODY)))
    handler.end_headers()
    handler.wfile.write(bytes(len(BODY)))


@pytest.fixture
def pod() -> Iterator[tuple[str, list]]:
    """A server on 127.0.0.1 answering each GET with the next of the script the test sets;
    its URL and that script."""
    script: list[Callable] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            script.pop(0)(self)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert not script, f"answers left unasked: {len(script)}"


def test_a_read_cut_by_a_pod_going_away_is_read_again(pod):
    url, script = pod
    script += [cut_short, reset, whole]
    read = read_back(url, "t", "img", len(BODY), DIGEST, tries=4, pause=0)
    assert read.whole, read
    assert len(read.transport) == 2, read.transport
    assert f"{len(BODY) // 2} of {len(BODY)} bytes" in read.transport[0]
    assert "Error" in read.transport[1]


@pytest.mark.parametrize("code", [404, 410, 204])
def test_a_file_that_is_not_there_is_reported_at_once(pod, code):
    url, script = pod
    script += [status(code)]
    read = read_back(url, "t", "img", len(BODY), DIGEST, tries=4, pause=0)
    assert not read.whole
    assert read.fault == f"the file answers {code}", read
    assert "img: the file answers" in str(read)


def test_other_bytes_are_reported_at_once(pod):
    url, script = pod
    script += [other_bytes]
    read = read_back(url, "t", "img", len(BODY), DIGEST, tries=4, pause=0)
    assert not read.whole
    assert read.fault == "other bytes came back"


def test_data_that_stays_unreadable_is_reported_after_its_tries(pod):
    url, script = pod
    script += [cut_short, status(503), cut_short]
    read = read_back(url, "t", "img", len(BODY), DIGEST, tries=3, pause=0)
    assert not read.whole and not read.fault
    assert len(read.transport) == 3
    assert str(read).startswith("img: unreadable in 3 tries: ")


def test_nothing_listening_is_a_transport_failure():
    """A connection refused where no pod listens any more (as "no route to host" where its
    address is gone): read again, then reported."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    read = read_back(f"http://127.0.0.1:{port}", "t", "img", len(BODY), tries=2, pause=0)
    assert not read.whole and not read.fault
    assert all("ConnectionRefusedError" in why for why in read.transport), read.transport
