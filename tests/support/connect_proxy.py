"""A tiny HTTP ``CONNECT`` proxy on 127.0.0.1 for tests of a kubeconfig's ``proxy-url``.

It accepts ``CONNECT host:port``, connects to ``routes.get(host, host)`` on that port,
answers ``200 Connection established`` and copies bytes both ways until either side
closes. It records every tunnel it opened (the target as asked, the bytes carried), so a
test can say that the traffic went through it; any other method is refused with 405.
A route lets a kubeconfig name a host that does not resolve (``kube.invalid``), so the
API server is reachable through the proxy only.
"""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from dataclasses import dataclass
from typing import Any


@dataclass
class Tunnel:
    target: str
    bytes_up: int = 0
    bytes_down: int = 0


class ConnectProxy:
    def __init__(self, routes: dict[str, str] | None = None) -> None:
        self.routes = dict(routes or {})
        self.tunnels: list[Tunnel] = []
        self.refused: list[str] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer._handle(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ConnectProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def _handle(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = request_line.partition(" ")
        target = rest.split(" ", 1)[0]
        if method != "CONNECT":
            with self._lock:
                self.refused.append(request_line)
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = target.rpartition(":")
        try:
            upstream = socket.create_connection((self.routes.get(host, host), int(port)), 10)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        tunnel = Tunnel(target)
        with self._lock:
            self.tunnels.append(tunnel)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        with upstream:
            sockets = [client, upstream]
            while True:
                readable, _, _ = select.select(sockets, [], [], 60)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        upstream.sendall(data)
                        tunnel.bytes_up += len(data)
                    else:
                        client.sendall(data)
                        tunnel.bytes_down += len(data)
