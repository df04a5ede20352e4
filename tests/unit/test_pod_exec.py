"""``kube.pod_exec``'s WebSocket against a scripted server on loopback: the upgrade it asks
for, the frames it reads (lengths of each size, a message in fragments, a ping), the
outcome on the error channel, a refusal. The real API server and kubelet run it in
tests/cluster/test_operator.py (``make diagnose`` on the node's Glance)."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
import urllib.parse

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeClient,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.pod_exec import (
    ExecResult,
    exec_in_pod,
)

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(opcode: int, payload: bytes, final: bool = True) -> bytes:
    """A server frame: unmasked."""
    first = (0x80 if final else 0) | opcode
    n = len(payload)
    if n < 126:
        return struct.pack("!BB", first, n) + payload
    if n < 1 << 16:
        return struct.pack("!BBH", first, 126, n) + payload
    return struct.pack("!BBQ", first, 127, n) + payload


def read_client_frame(conn: socket.socket) -> tuple[int, bytes]:
    def read(n: int) -> bytes:
        data = b""
        while len(data) < n:
            data += conn.recv(n - len(data))
        return data

    first, second = read(2)
    assert second & 0x80, "a client frame is masked"
    n = second & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", read(2))
    mask = read(4)
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(read(n)))
    return first & 0x0F, payload


class Server:
    """One connection: the request's head recorded, then ``answer(conn, key)``."""

    def __init__(self, answer):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.head = ""
        self.from_client: list[tuple[int, bytes]] = []
        self.thread = threading.Thread(target=self._serve, args=(answer,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self, answer) -> None:
        conn, _ = self.sock.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            self.head = data.split(b"\r\n\r\n")[0].decode()
            key = next(
                line.split(":", 1)[1].strip()
                for line in self.head.split("\r\n")
                if line.lower().startswith("sec-websocket-key:")
            )
            answer(self, conn, key)


def upgraded(conn: socket.socket, key: str) -> None:
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    conn.sendall(
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
        ).encode()
    )


def client_for(server: Server, tmp_path) -> KubeClient:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server.url}}],
                "users": [{"name": "u", "user": {"token": "t0ken", "as": "alice"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return KubeClient.from_environment(str(kubeconfig))


def test_a_command_s_output_and_exit_code_come_back_over_the_channels(tmp_path):
    failure = {
        "status": "Failure",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }

    def answer(server, conn, key):
        upgraded(conn, key)
        conn.sendall(frame(0x9, b"are you there"))
        server.from_client.append(read_client_frame(conn))  # the pong
        conn.sendall(frame(0x2, b"\x01" + b"o" * 300))  # a 16-bit length
        conn.sendall(frame(0x2, b"\x02warn", final=False) + frame(0x0, b"ing\n"))
        conn.sendall(frame(0x2, b"\x01" + b"p" * 70000))  # a 64-bit length
        conn.sendall(frame(0x2, b"\x03" + json.dumps(failure).encode()))
        conn.sendall(frame(0x8, struct.pack("!H", 1000)))
        server.from_client.append(read_client_frame(conn))  # the close answered

    server = Server(answer)
    result = exec_in_pod(
        client_for(server, tmp_path), "openstack", "glance-a", "glance-api", ["sh", "-c", "exit 3"]
    )
    assert result == ExecResult(b"o" * 300 + b"p" * 70000, b"warning\n", failure)
    assert result.exit_code == 3
    server.thread.join(timeout=30)  # it reads our answer to its close after we returned
    assert not server.thread.is_alive()
    assert server.from_client == [(0xA, b"are you there"), (0x8, struct.pack("!H", 1000))]
    request, *headers = server.head.split("\r\n")
    target = urllib.parse.urlsplit(request.split(" ")[1])
    assert target.path == "/api/v1/namespaces/openstack/pods/glance-a/exec"
    assert urllib.parse.parse_qsl(target.query) == [
        ("container", "glance-api"),
        ("stdout", "true"),
        ("stderr", "true"),
        ("command", "sh"),
        ("command", "-c"),
        ("command", "exit 3"),
    ]
    assert "Authorization: Bearer t0ken" in headers and "Impersonate-User: alice" in headers
    assert "Sec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io" in headers


def test_a_refused_upgrade_is_the_server_s_status(tmp_path):
    status = {
        "kind": "Status",
        "status": "Failure",
        "reason": "Forbidden",
        "code": 403,
        "message": 'pods "glance-a" is forbidden: User "alice" cannot create resource "pods/exec"',
    }

    def answer(server, conn, key):
        body = json.dumps(status).encode()
        conn.sendall(
            b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )

    server = Server(answer)
    with pytest.raises(ApiError) as refused:
        exec_in_pod(client_for(server, tmp_path), "openstack", "glance-a", "glance-api", ["true"])
    assert (refused.value.code, refused.value.message) == (403, status["message"])
