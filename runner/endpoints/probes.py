"""Plain-HTTP endpoints: ``/healthz`` and ``/readyz`` on the health probe address,
``/metrics`` on the metrics address (controller-runtime's two listeners).

Each route is a function of the request's headers returning ``(status code, content type,
body)`` (``/metrics`` reads ``Accept`` to choose the exposition format); GET and HEAD are
answered, anything else is 405. Requests are not logged (probes come every few seconds).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from runner.settings import BindAddress

Route = Callable[[Mapping[str, str]], tuple[int, str, bytes]]

TEXT = "text/plain; charset=utf-8"


def check(ok: Callable[[], bool], name: str) -> Route:
    """A probe: 200 ``ok`` when ``ok()``, else 503 naming the failed check."""

    def route(headers: Mapping[str, str]) -> tuple[int, str, bytes]:
        if ok():
            return 200, TEXT, b"ok"
        return 503, TEXT, f"[-]{name} failed: not ready\n".encode()

    return route


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class EndpointServer:
    """Serves ``routes`` on ``address`` from a daemon thread; ``stop()`` closes it."""

    def __init__(self, address: BindAddress, routes: Mapping[str, Route], name: str) -> None:
        self.routes = dict(routes)
        self.name = name
        outer = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "c5c3-glance-runner"

            def do_GET(self) -> None:
                self._answer(body=True)

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def _answer(self, body: bool) -> None:
                route = outer.routes.get(self.path.split("?", 1)[0])
                if route is None:
                    code, content_type, payload = 404, TEXT, b"404 page not found\n"
                else:
                    try:
                        code, content_type, payload = route(self.headers)
                    except Exception as error:  # a broken check must not kill the server
                        code, content_type, payload = 500, TEXT, f"{error}\n".encode()
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if body:
                    self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server_class = _Server
        if ":" in address.host:

            class _Server6(_Server):
                address_family = socket.AF_INET6

            server_class = _Server6
        self._server = server_class((address.host, address.port), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"{name}-server",
            daemon=True,
        )

    @property
    def address(self) -> BindAddress:
        host, port = self._server.server_address[:2]
        return BindAddress(str(host), int(port))

    def start(self) -> EndpointServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
