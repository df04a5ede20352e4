"""An HTTPS server on the node's address that serves one image to web-download, under a CA of
its own that no image trusts: what a private mirror looks like to a Glance pod.

Each connection's TLS handshake runs in its own thread, so a client that refuses the
certificate is recorded (its address and OpenSSL's reason, e.g. ``TLSV1_ALERT_UNKNOWN_CA``)
instead of surfacing as a server error; each served request is recorded too.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from runner.endpoints import certificates

CHUNK = 2**20


@dataclass
class Seen:
    """What the server saw: refused handshakes and served requests, by client address."""

    refused: list[tuple[str, str]] = field(default_factory=list)
    served: list[tuple[str, str]] = field(default_factory=list)


class HttpsSource:
    """``https://<address>:<port><path>`` serving ``payload``; ``ca_pem`` is its CA."""

    def __init__(self, address: str, path: str, payload: bytes) -> None:
        now = datetime.datetime.now(datetime.UTC)
        start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(hours=2)
        ca, ca_key = certificates.make_ca("c5c3 test mirror CA", start, end, key_identifier=True)
        cert, key = certificates.issue(
            ca, ca_key, address, start, end, ips=[address], end_entity=True
        )
        self.ca_pem = certificates.cert_pem(ca)
        self.payload = payload
        self.seen = Seen()
        self._dir = tempfile.TemporaryDirectory(prefix="https-source-")
        chain, key_file = Path(self._dir.name, "chain.pem"), Path(self._dir.name, "key.pem")
        chain.write_bytes(certificates.cert_pem(cert))
        key_file.write_bytes(certificates.key_pem(key))
        key_file.chmod(0o600)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(chain, key_file)
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.served.append((self.client_address[0], self.path))
                if self.path != path:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                view = memoryview(payload)
                for offset in range(0, len(payload), CHUNK):
                    self.wfile.write(view[offset : offset + CHUNK])

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def finish_request(self, request: socket.socket, client_address: Any) -> None:
                request.settimeout(60)
                try:
                    tls = context.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError) as exc:
                    seen.refused.append((client_address[0], getattr(exc, "reason", str(exc))))
                    return
                try:
                    Handler(tls, client_address, self)
                finally:
                    tls.close()

        self.server = Server((address, 0), Handler)
        self.url = f"https://{address}:{self.server.server_port}{path}"
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
        self._dir.cleanup()
