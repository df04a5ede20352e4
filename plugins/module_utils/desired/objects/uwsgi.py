# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The uWSGI command of the API container (reference-spec §4.2), tuned for the image
upload path: its two HTTP fronts, timeouts, chunked-input limit and graceful SIGTERM
(docs/upload.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    http_keepalive_wanted,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    BACKENDS_DIR,
    CONFIG_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
)

# --- the uWSGI command (reference-spec §4.2) ---------------------------------------------
WSGI_SCRIPT = "/var/lib/openstack/bin/glance-wsgi-api"
UWSGI_DEFAULT_PROCESSES = 2
UWSGI_DEFAULT_THREADS = 1
UWSGI_LOG_FORMAT = (
    "%(method) %(uri) => generated %(rsize) bytes in %(msecs) msecs (%(proto) %(status))"
)
UWSGI_PYARGV = f"--config-dir {CONFIG_DIR} --config-dir {BACKENDS_DIR}"
# uWSGI parses each chunk of a chunked request body, with its size line and CRLF, into a
# buffer capped by --chunked-input-limit (default 1 MiB, core/chunked.c): a 1 MiB chunk,
# what python-glanceclient and Cinder send, does not fit and the upload fails with a 500.
# 16 MiB leaves room for clients with larger chunks; the buffer only grows to the largest
# chunk actually received, so the limit costs no memory on its own.
UWSGI_CHUNKED_INPUT_LIMIT = 16 * 1024 * 1024
# Without keep-alive (the default) the workers serve HTTP themselves (--http-socket) and
# every response says "Connection: close": each byte is copied once, and no idle
# connection can hold a worker (docs/upload.md). With keep-alive uWSGI's HTTP router
# (--http) holds the client connections, idle ones included, without a worker, and copies
# every byte once more through a buffer of this size (default: the page size, 4 KiB). 32
# KiB halves the router's CPU per byte moved; larger buffers gain little more and reset a
# chunked upload now and then (docs/upload.md).
UWSGI_HTTP_BUFFER_SIZE = 32 * 1024
UWSGI_CLOSE_EVERY_RESPONSE = "Connection: close"
# How long a request may stay silent in the middle (a client pausing mid-body or mid-
# download, or glance busy with the store without a byte moving) before uWSGI cuts it: the
# workers' --socket-timeout, which also bounds reading a chunked body (default 4 s: a
# client's short pause failed its upload), and the router's --http-timeout. Five minutes,
# the default stream idle timeout of Envoy, the gateway in front; the request's whole
# duration stays capped by harakiri and the HTTPRoute timeout (docs/upload.md).
UWSGI_TRANSFER_IDLE_TIMEOUT = 300
# With the router: what it allowed before the transfer timeout grew (its --http-timeout
# default): a new connection's request headers, and an idle kept-alive connection, get 60 s.
UWSGI_HEADERS_TIMEOUT = 60
UWSGI_KEEPALIVE_IDLE_TIMEOUT = 60

UWSGI_CLOSE_AFTER_CHUNKED = "contains:${HTTP_TRANSFER_ENCODING};chunked addheader:Connection: close"
UWSGI_GRACEFUL_SIGTERM = "unix_signal:15 gracefully_kill_them_all"


def uwsgi_keepalive(uwsgi: Mapping[str, Any]) -> int | None:
    """The idle seconds of HTTP keep-alive the uWSGI block asks for; None for none.

    Keep-alive is on when ``httpKeepAlive`` is true, or when it is unset and
    ``httpKeepAliveTimeout`` is given (``http_keepalive_wanted``, the webhook's default);
    off otherwise. Its idle timeout is ``httpKeepAliveTimeout`` when positive, else 60, at
    least 2 (uWSGI reads ``--http-keepalive=1`` as "on" without a timeout of its own).
    """
    if not http_keepalive_wanted(uwsgi):
        return None
    timeout = uwsgi.get("httpKeepAliveTimeout")
    timeout = timeout if isinstance(timeout, int) and timeout > 0 else None
    return max(timeout or UWSGI_KEEPALIVE_IDLE_TIMEOUT, 2)


def uwsgi_command(spec: Mapping[str, Any]) -> list[str]:
    """The uWSGI launch command of reference-spec §4.2, tuned for the image upload path.

    Two HTTP fronts (docs/upload.md). Without keep-alive (``uwsgi_keepalive``: the default)
    the workers serve HTTP themselves (``--http-socket``) and every response announces
    ``Connection: close``. With keep-alive uWSGI's HTTP router holds the connections
    (``--http``, its buffer size and header timeout, ``--http-keepalive=<idle seconds>``,
    chunked input through the router, the close announced after a chunked request); uWSGI
    2.0 has no ``--http-keepalive-timeout``, the reference's token: it refuses to start.
    Both: the transfer timeout, the chunked-input limit and the graceful SIGTERM.
    ``harakiri`` is emitted only when positive; processes and threads below 1 fall back to
    2 and 1.
    """
    uwsgi = (spec.get("apiServer") or {}).get("uwsgi") or {}
    processes = uwsgi.get("processes") or 0
    threads = uwsgi.get("threads") or 0
    processes = processes if processes >= 1 else UWSGI_DEFAULT_PROCESSES
    threads = threads if threads >= 1 else UWSGI_DEFAULT_THREADS
    keepalive = uwsgi_keepalive(uwsgi)
    if keepalive is None:
        # One request per connection, said in every response: a client (or the gateway)
        # never reuses a connection the worker has closed, and no idle connection holds
        # one of the pod's processes x threads request slots.
        command = [
            "uwsgi",
            "--http-socket",
            f":{API_PORT}",
            "--add-header",
            UWSGI_CLOSE_EVERY_RESPONSE,
            "--socket-timeout",
            str(UWSGI_TRANSFER_IDLE_TIMEOUT),
            "--chunked-input-limit",
            str(UWSGI_CHUNKED_INPUT_LIMIT),
        ]
    else:
        command = [
            "uwsgi",
            "--http",
            f":{API_PORT}",
            "--http-buffer-size",
            str(UWSGI_HTTP_BUFFER_SIZE),
            "--http-timeout",
            str(UWSGI_TRANSFER_IDLE_TIMEOUT),
            "--http-headers-timeout",
            str(UWSGI_HEADERS_TIMEOUT),
            "--socket-timeout",
            str(UWSGI_TRANSFER_IDLE_TIMEOUT),
            "--http-auto-chunked",
            "--http-chunked-input",
            "--chunked-input-limit",
            str(UWSGI_CHUNKED_INPUT_LIMIT),
            f"--http-keepalive={keepalive}",
            # uWSGI's HTTP router closes a connection after a chunked request without
            # saying so; the client's next request on it then fails. Announce the close.
            "--route-if",
            UWSGI_CLOSE_AFTER_CHUNKED,
        ]
    # uWSGI 2.0 takes SIGTERM as a brutal reload: in-flight uploads are cut and the master
    # exits 1. Make SIGTERM the graceful shutdown the kubelet expects (tests/e2e).
    command += ["--hook-master-start", UWSGI_GRACEFUL_SIGTERM]
    command += [
        "--log-master",
        "--log-format",
        UWSGI_LOG_FORMAT,
        "--wsgi-file",
        WSGI_SCRIPT,
        "--master",
        "--lazy-apps",
        "--need-app",
        "--processes",
        str(processes),
        "--threads",
        str(threads),
        "--pyargv",
        UWSGI_PYARGV,
    ]
    harakiri = uwsgi.get("harakiri")
    if harakiri is not None and harakiri > 0:
        command += ["--harakiri", str(harakiri)]
    return command
