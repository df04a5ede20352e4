# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""A command run in a container (``pods/exec``) over a WebSocket, as kubectl does since
Kubernetes 1.31.

The request is the API server's ``GET .../pods/<pod>/exec?command=...&container=...``
upgraded to a WebSocket (RFC 6455) with the subprotocol ``v5.channel.k8s.io`` (or
``v4.channel.k8s.io`` from an older server): every message is binary, its first byte the
channel - 1 standard output, 2 standard error, 3 the outcome as a ``Status`` (``Success``,
or ``Failure`` with the exit code among its causes). The command gets no standard input
and no terminal, so its arguments carry all it needs.

Why not the ``kubernetes`` package's ``stream``: it is not in the operator image
(``requirements-runtime.in``), and the connection here is the client's own - its TLS
context, its credential, its impersonation - with a deadline on the whole exchange. A
``proxy-url`` is not supported for it (the client's other requests go through one); the
call says so.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeClient,
)

SUBPROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455, section 1.3
STDOUT, STDERR, ERROR = 1, 2, 3
OUTPUT_LIMIT = 1 << 20
"""Bytes kept of each output stream; the rest is read and dropped."""


class ExecError(Exception):
    """The command could not be run (no upgrade, the connection broke, the deadline)."""


@dataclass
class ExecResult:
    stdout: bytes = b""
    stderr: bytes = b""
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int | None:
        """0 on ``Success``; the code a ``NonZeroExitCode`` failure names; None when the
        server said neither."""
        if self.status.get("status") == "Success":
            return 0
        for cause in (self.status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                try:
                    return int(cause.get("message"))
                except (TypeError, ValueError):
                    return None
        return None


def exec_in_pod(
    client: KubeClient,
    namespace: str,
    pod: str,
    container: str,
    command: list[str],
    timeout: float = 30.0,
) -> ExecResult:
    """Run ``command`` in ``container`` of ``pod``; its output and outcome. ``ApiError``
    when the server refuses the upgrade (403: ``create pods/exec`` is not granted),
    ``ExecError`` when the exchange fails or outlasts ``timeout`` seconds."""
    connection = client.connection
    if connection.proxy_for_requests():
        raise ExecError(
            f"exec through the proxy {connection.proxy_for_requests()} is not supported"
        )
    server = urllib.parse.urlsplit(connection.server)
    query = urllib.parse.urlencode(
        [("container", container), ("stdout", "true"), ("stderr", "true")]
        + [("command", part) for part in command]
    )
    path = client.url_path(
        f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(pod)}/exec"
    )
    deadline = time.monotonic() + timeout
    secure = server.scheme == "https"
    port = server.port or (443 if secure else 80)
    raw = socket.create_connection((server.hostname, port), timeout=timeout)
    try:
        sock: socket.socket = raw
        context = client.tls_context() if secure else None
        if context is not None:
            sock = context.wrap_socket(
                raw, server_hostname=connection.tls_server_name or server.hostname
            )
        client.requests += 1
        stream = _Stream(sock, deadline)
        _upgrade(stream, client, server.netloc, f"{path}?{query}")
        return _exchange(stream)
    except (OSError, ValueError) as exc:
        raise ExecError(f"exec in {namespace}/{pod} ({container}): {exc}") from exc
    finally:
        raw.close()


class _Stream:
    """A socket read to a deadline, with what was read past the last ask kept."""

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""

    def _fill(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the command did not finish in time")
        self.sock.settimeout(left)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self._fill()
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def read_head(self) -> bytes:
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > 65536:
                raise ValueError("the answer's head is too long")
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        return head

    def send(self, data: bytes) -> None:
        self.sock.settimeout(max(self.deadline - time.monotonic(), 0.1))
        self.sock.sendall(data)


def _upgrade(stream: _Stream, client: KubeClient, host: str, target: str) -> None:
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {target} HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        f"Sec-WebSocket-Protocol: {', '.join(SUBPROTOCOLS)}",
    ]
    lines += [f"{name}: {value}" for name, value in client.credential_headers().items()]
    stream.send(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = stream.read_head().decode("iso-8859-1").split("\r\n")
    code = int(head[0].split(" ", 2)[1])
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if code != 101:
        length = int(headers.get("content-length") or 0)
        body = stream.read(length) if length else b""
        try:
            status = json.loads(body) if body else None
        except ValueError:
            status = {"message": body.decode(errors="replace")[:300]}
        raise ApiError(code, status, "GET", target.split("?", 1)[0])
    accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
    if headers.get("sec-websocket-accept") != accept:
        raise ValueError("the server's Sec-WebSocket-Accept does not answer our key")


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client frame: final, masked (RFC 6455 5.3: every client frame is)."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


def _exchange(stream: _Stream) -> ExecResult:
    result = ExecResult()
    kept = {STDOUT: bytearray(), STDERR: bytearray()}
    message = bytearray()
    while True:
        first, second = stream.read(2)
        final, opcode = first & 0x80, first & 0x0F
        n = second & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", stream.read(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", stream.read(8))
        mask = stream.read(4) if second & 0x80 else b""
        payload = stream.read(n)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        if opcode == 0x8:  # close: answer it, and the exchange is over
            stream.send(_frame(0x8, payload[:2]))
            break
        if opcode == 0x9:  # ping
            stream.send(_frame(0xA, payload))
            continue
        if opcode not in (0x0, 0x1, 0x2):
            continue
        message += payload
        if not final:
            continue
        if message:
            channel, data = message[0], bytes(message[1:])
            if channel in kept:
                room = OUTPUT_LIMIT - len(kept[channel])
                kept[channel] += data[: max(room, 0)]
            elif channel == ERROR and data:
                result.status = json.loads(data)
        message = bytearray()
    result.stdout, result.stderr = bytes(kept[STDOUT]), bytes(kept[STDERR])
    return result
