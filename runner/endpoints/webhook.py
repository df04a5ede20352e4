# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The admission webhook server: HTTPS on the four paths of reference-spec §5.

``WebhookServer`` serves ``runner.endpoints.admission_review.Admission`` over TLS with the standard
library (``ThreadingHTTPServer`` + ``ssl``), the way controller-runtime's webhook server
does for the reference operator:

* the certificate is ``tls.crt``/``tls.key`` in the cert dir (controller-runtime's default
  ``/tmp/k8s-webhook-server/serving-certs``, port 9443); it is re-read for the next
  connection once either file changes (cert-manager rotates them in place), and a
  half-written pair keeps the previous certificate until it is whole again;
* bodies are capped (``MAX_BODY_BYTES``), a body that is not an AdmissionReview gets HTTP 400
  and an unknown path 404;
* every request is logged as one JSON line (uid, kind, namespace, name, operation,
  allowed, duration_ms, ...).

Cluster lookups are injected: ``kube_backend_lister(client)`` and
``kube_priority_class_lookup(client)`` adapt a ``KubeClient`` (or anything with the same
``list``/``get``). ``python -m runner.endpoints.webhook`` serves it alone until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import os
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from runner.endpoints.admission_review import (
    ROUTES,
    Admission,
    BackendLister,
    BadReview,
    PriorityClassLookup,
)

DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
DEFAULT_PORT = 9443
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
# The API server caps the bodies it accepts at 3 MiB; a review of our small custom
# resources (object and oldObject) stays far below it.
MAX_BODY_BYTES = 3 * 1024 * 1024
# How long a connection may sit in the TLS handshake, or idle between keep-alive requests.
CONNECTION_TIMEOUT = 30.0
STOP_GRACE = 5.0

BACKEND_API_VERSION = "glance.openstack.c5c3.io/v1alpha1"

# The logger keeps the name it had before runner/endpoints/: log queries and docs name it.
log = logging.getLogger("runner.webhook")


def log_event(message: str, level: int = logging.INFO, /, **fields: Any) -> None:
    """One JSON line: time, level, message and ``fields``."""
    line = {
        "ts": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        "level": logging.getLevelName(level).lower(),
        "logger": "webhook",
        "msg": message,
        **fields,
    }
    log.log(level, "%s", json.dumps(line, ensure_ascii=False, default=str))


# ---------------------------------------------------------------------------------------
# cluster lookups


def kube_backend_lister(client: Any) -> BackendLister:
    """The GlanceBackends of a namespace, read live through ``client`` (a ``KubeClient``)."""

    def list_glancebackends(namespace: str) -> list[dict[str, Any]]:
        return client.list(BACKEND_API_VERSION, "GlanceBackend", namespace)

    return list_glancebackends


def kube_priority_class_lookup(client: Any) -> PriorityClassLookup:
    """Whether a PriorityClass exists (``client.get`` answers None on 404)."""

    def priority_class_exists(name: str) -> bool:
        return client.get("scheduling.k8s.io/v1", "PriorityClass", name) is not None

    return priority_class_exists


# ---------------------------------------------------------------------------------------
# TLS


class CertificateWatcher:
    """The server's SSL context, rebuilt when ``tls.crt`` or ``tls.key`` changes on disk."""

    def __init__(self, cert_dir: str | os.PathLike[str]):
        self.cert_file = Path(cert_dir) / CERT_FILE
        self.key_file = Path(cert_dir) / KEY_FILE
        self._lock = threading.Lock()
        self._stamp = self._signature()
        self._context = self._build()  # a missing or broken pair at start is fatal
        self._failed: tuple | None = None
        self.loads = 1

    def _signature(self) -> tuple:
        # stat follows the ..data symlinks of a Secret volume; a swap changes the inode.
        out = []
        for path in (self.cert_file, self.key_file):
            st = path.stat()
            out.append((st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev))
        return tuple(out)

    def _build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def context(self) -> ssl.SSLContext:
        """The current context, reloaded first when the files changed since the last load."""
        with self._lock:
            try:
                stamp = self._signature()
            except OSError as exc:  # mid-rotation: a file is briefly absent
                log_event(
                    "certificate unreadable, keeping the loaded one",
                    logging.WARNING,
                    error=str(exc),
                )
                return self._context
            if stamp == self._stamp or stamp == self._failed:
                return self._context
            try:
                context = self._build()
            except (OSError, ssl.SSLError) as exc:
                # A pair caught half-written: keep serving the old one, retry on next change.
                self._failed = stamp
                log_event(
                    "certificate reload failed, keeping the loaded one",
                    logging.WARNING,
                    cert_file=str(self.cert_file),
                    error=str(exc),
                )
                return self._context
            self._context, self._stamp, self._failed = context, stamp, None
            self.loads += 1
            log_event("certificate reloaded", cert_file=str(self.cert_file))
            return self._context


# ---------------------------------------------------------------------------------------
# HTTP


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, admission: Admission, certificates: CertificateWatcher, **kw):
        self.admission = admission
        self.certificates = certificates
        self.max_body = kw.pop("max_body")
        self.connection_timeout = kw.pop("connection_timeout")
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Condition()
        super().__init__(address, _Handler)

    def get_request(self):
        sock, address = self.socket.accept()
        sock.settimeout(self.connection_timeout)
        # The handshake runs in the request's thread (_Handler.setup), not in this loop.
        wrapped = self.certificates.context().wrap_socket(
            sock, server_side=True, do_handshake_on_connect=False
        )
        with self._connections_lock:
            self._connections.add(wrapped)
        return wrapped, address

    def shutdown_request(self, request):
        with self._connections_lock:
            self._connections.discard(request)
            self._connections_lock.notify_all()
        super().shutdown_request(request)

    def close_connections(self, grace: float) -> None:
        """End every connection once its current request is answered, within ``grace``."""
        with self._connections_lock:
            for conn in list(self._connections):
                # Reads see EOF: an idle keep-alive connection ends now, a request being
                # answered (its body already read) still writes its response.
                # (socket.socket's shutdown: SSLSocket.shutdown would drop the TLS state.)
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(conn, socket.SHUT_RD)
            self._connections_lock.wait_for(lambda: not self._connections, timeout=grace)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        level = logging.INFO if isinstance(exc, ssl.SSLError | OSError) else logging.ERROR
        log_event(
            "connection failed",
            level,
            remote=f"{client_address[0]}:{client_address[1]}",
            error=repr(exc),
        )


def _status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "c5c3-glance-webhook"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # every request is logged once, as JSON, by _log

    def _send_json(self, code: int, payload: Mapping[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, start: float, code: int, reason: str, message: str, **fields: Any) -> None:
        self._send_json(code, _status_body(code, reason, message))
        self._log(start, code, message=message, **fields)

    def _log(self, start: float, http_status: int, **fields: Any) -> None:
        record = {
            "uid": None,
            "kind": None,
            "namespace": None,
            "name": None,
            "operation": None,
            "allowed": None,
            **fields,
        }
        log_event(
            "admission review",
            method=self.command,
            path=urlsplit(self.path).path,
            http_status=http_status,
            remote=f"{self.client_address[0]}:{self.client_address[1]}",
            duration_ms=round((time.monotonic() - start) * 1000, 3),
            **record,
        )

    def do_POST(self) -> None:
        start = time.monotonic()
        path = urlsplit(self.path).path
        route = ROUTES.get(path)
        if route is None:
            self._refuse(start, 404, "NotFound", f"no admission webhook is served at {path}")
            return
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            self._refuse(start, 411, "BadRequest", "a Content-Length is required")
            return
        try:
            size = int(length)
            if size < 0:
                raise ValueError(length)
        except ValueError:
            self.close_connection = True
            self._refuse(start, 400, "BadRequest", f"invalid Content-Length {length!r}")
            return
        if size > self.server.max_body:
            self.close_connection = True  # the body stays unread
            self._refuse(
                start,
                413,
                "RequestEntityTooLarge",
                f"the request body of {size} bytes exceeds the limit of "
                f"{self.server.max_body} bytes",
            )
            return
        body = self.rfile.read(size)
        if len(body) < size:
            self.close_connection = True
            self._log(start, 400, message="the connection ended inside the request body")
            return
        content_type = (self.headers.get("Content-Type") or "application/json").split(";")[0]
        if content_type.strip().lower() != "application/json":
            self._refuse(
                start,
                400,
                "BadRequest",
                f"contentType={content_type}, expected application/json",
            )
            return
        try:
            outcome = self.server.admission.review(route, body)
        except BadReview as exc:
            self._refuse(start, 400, "BadRequest", str(exc))
            return
        self._send_json(200, outcome.review)
        self._log(start, 200, **outcome.record)

    def _not_allowed(self) -> None:
        start = time.monotonic()
        self.close_connection = True
        code = 405 if urlsplit(self.path).path in ROUTES else 404
        reason = "MethodNotAllowed" if code == 405 else "NotFound"
        self._refuse(start, code, reason, f"{self.command} {urlsplit(self.path).path}: use POST")

    do_GET = do_PUT = do_PATCH = do_DELETE = _not_allowed


# ---------------------------------------------------------------------------------------
# the server


class WebhookServer:
    """The webhook on ``host:port`` over TLS from ``cert_dir``; ``start()``/``stop()``.

    ``list_glancebackends(namespace)`` feeds the GlanceBackend single-default check and
    ``priority_class_exists(name)`` the Glance PriorityClass check; either may be None,
    which skips its rule (as the reference does without a client).
    """

    def __init__(
        self,
        cert_dir: str | os.PathLike[str] = DEFAULT_CERT_DIR,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        list_glancebackends: BackendLister | None = None,
        *,
        priority_class_exists: PriorityClassLookup | None = None,
        crds: Mapping[str, Mapping[str, Any]] | None = None,
        catalogs: Mapping[str, Mapping[str, Any]] | None = None,
        max_body: int = MAX_BODY_BYTES,
        connection_timeout: float = CONNECTION_TIMEOUT,
    ):
        self.cert_dir = Path(cert_dir)
        self.host = host
        self.requested_port = port
        self.admission = Admission(crds, catalogs, list_glancebackends, priority_class_exists)
        self.max_body = max_body
        self.connection_timeout = connection_timeout
        self.certificates: CertificateWatcher | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def with_client(cls, client: Any, **kwargs: Any) -> WebhookServer:
        """A server whose lookups go to the cluster through ``client`` (a ``KubeClient``)."""
        return cls(
            list_glancebackends=kube_backend_lister(client),
            priority_class_exists=kube_priority_class_lookup(client),
            **kwargs,
        )

    @property
    def port(self) -> int:
        """The bound port (the real one when started on port 0)."""
        if self._server is None:
            return self.requested_port
        return self._server.server_address[1]

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> WebhookServer:
        if self._server is not None:
            raise RuntimeError("the webhook server is already started")
        self.certificates = CertificateWatcher(self.cert_dir)
        self._server = _Server(
            (self.host, self.requested_port),
            self.admission,
            self.certificates,
            max_body=self.max_body,
            connection_timeout=self.connection_timeout,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="webhook-server",
            daemon=True,
        )
        self._thread.start()
        log_event(
            "serving",
            address=self.host,
            port=self.port,
            cert_dir=str(self.cert_dir),
            paths=sorted(ROUTES),
        )
        return self

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop accepting, let answered requests finish (up to ``grace`` s), close."""
        server, thread = self._server, self._thread
        if server is None:
            return
        port = self.port
        server.shutdown()
        server.close_connections(grace)
        server.server_close()
        if thread is not None:
            thread.join(grace)
        self._server = self._thread = None
        log_event("stopped", port=port)

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------
# python -m runner.endpoints.webhook


def _cluster_client(kubeconfig: str | None) -> Any | None:
    try:
        from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
            KubeClient,
        )

        return KubeClient.from_environment(kubeconfig, origin="--kubeconfig")
    except Exception as exc:
        log_event(
            "no cluster client: the sibling single-default and PriorityClass checks are skipped",
            logging.WARNING,
            error=str(exc),
        )
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runner.endpoints.webhook",
        description="Serve the Glance and GlanceBackend admission webhooks over HTTPS.",
    )
    parser.add_argument("--cert-dir", default=DEFAULT_CERT_DIR, help="holds tls.crt and tls.key")
    parser.add_argument("--bind-address", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    parser.add_argument("--kubeconfig", help="for the cluster lookups (default: the environment)")
    parser.add_argument(
        "--no-cluster-lookups",
        action="store_true",
        help="skip the sibling single-default and PriorityClass checks (no cluster client)",
    )
    args = parser.parse_args(argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)

    client = None if args.no_cluster_lookups else _cluster_client(args.kubeconfig)
    options = {"cert_dir": args.cert_dir, "host": args.bind_address, "port": args.port}
    server = WebhookServer.with_client(client, **options) if client else WebhookServer(**options)

    stopping = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log_event("signal received, stopping", signal=signal.Signals(signum).name)
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            server.start()
        except (OSError, ssl.SSLError) as exc:
            log_event("cannot serve", logging.ERROR, cert_dir=args.cert_dir, error=str(exc))
            return 1
        while not stopping.wait(1.0):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
