"""A client of a Glance behind the Gateway's HTTPS listener: a TCP connection to the Gateway's
address, TLS with the route's hostname as SNI and Host, the certificate checked against the
listener's CA. What ``curl --resolve <hostname>:<port>:<address> --cacert <ca>`` does.

``paced_upload`` sends an image's body at a fixed rate (as a user's uplink would), hashing
what it sends, and reports how the request ended: the status, or the transport error that
cut it, and when.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import ssl
import time
from dataclasses import dataclass
from http import client as httpclient
from pathlib import Path
from typing import Any

CHUNK = 2**20


@dataclass(frozen=True)
class Gateway:
    address: str  # host:port of the listener
    ca: Path

    def connection(self, hostname: str, timeout: float = 60) -> httpclient.HTTPSConnection:
        host, port = self.address.rsplit(":", 1)
        context = ssl.create_default_context(cafile=str(self.ca))
        conn = httpclient.HTTPSConnection(
            hostname, int(port), context=context, timeout=timeout, blocksize=CHUNK
        )
        raw = socket.create_connection((host, int(port)), timeout=timeout)
        conn.sock = context.wrap_socket(raw, server_hostname=hostname)
        return conn

    def request(
        self,
        hostname: str,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> tuple[int, bytes]:
        """One request through the listener; the status and the body."""
        hdrs = dict(headers or {})
        data = body
        if body is not None and not isinstance(body, bytes):
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        conn = self.connection(hostname, timeout)
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def download(self, hostname: str, token: str, image_id: str) -> tuple[int, str, float]:
        """``GET /v2/images/<id>/file``: bytes read, their SHA-256 and the seconds."""
        conn = self.connection(hostname, timeout=300)
        started = time.monotonic()
        digest, size = hashlib.sha256(), 0
        try:
            conn.request("GET", f"/v2/images/{image_id}/file", headers={"X-Auth-Token": token})
            resp = conn.getresponse()
            assert resp.status == 200, f"{resp.status} {resp.read()[:200]!r}"
            while chunk := resp.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
        finally:
            conn.close()
        return size, digest.hexdigest(), time.monotonic() - started


@dataclass
class Download:
    """How a paced download ended."""

    size: int  # body bytes read
    sha256: str  # of those bytes
    seconds: float
    error: str  # the transport error that ended the body, if any ("": it ended cleanly)
    framing: dict[str, str]  # the answer's Content-Length, Transfer-Encoding, Content-MD5


def paced_download(
    gateway: Gateway, hostname: str, token: str, image_id: str, rate: float
) -> Download:
    """``GET /v2/images/<id>/file`` read at ``rate`` bytes a second (a slow client's
    downlink), until the body ends or the connection breaks."""
    conn = gateway.connection(hostname, timeout=600)
    digest, size, error = hashlib.sha256(), 0, ""
    started = time.monotonic()
    try:
        conn.request("GET", f"/v2/images/{image_id}/file", headers={"X-Auth-Token": token})
        resp = conn.getresponse()
        assert resp.status == 200, f"{resp.status} {resp.read()[:200]!r}"
        framing = {
            name: resp.getheader(name, "")
            for name in ("Content-Length", "Transfer-Encoding", "Content-MD5")
        }
        while True:
            try:
                chunk = resp.read(CHUNK)
            except (OSError, httpclient.HTTPException) as exc:
                error = f"{type(exc).__name__}: {exc}"
                break
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
            ahead = size / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)  # the client's downlink: pacing, not waiting on anything
    finally:
        conn.close()
    declared = framing["Content-Length"]
    if not error and declared and size < int(declared):
        # http.client's read(amt) returns b"" when the connection closes early.
        error = f"the connection closed after {size} of {declared} bytes"
    return Download(size, digest.hexdigest(), time.monotonic() - started, error, framing)


@dataclass
class Upload:
    """How a paced upload ended."""

    status: int | None  # the answer's status; None when the transport was cut first
    error: str  # the transport error, if any
    sent: int  # body bytes written before it ended
    seconds: float  # from the request line to the answer (or the error)
    sha256: str  # of the bytes sent
    answer: bytes = b""


def paced_upload(
    gateway: Gateway,
    hostname: str,
    token: str,
    image_id: str,
    size: int,
    rate: float,
    to: str = "file",
) -> Upload:
    """``PUT /v2/images/<id>/<to>`` of ``size`` random bytes with their Content-Length, sent
    at ``rate`` bytes a second. Where the server answers or cuts the connection before the
    last byte, what it said (or the error) and how many bytes had gone."""
    conn = gateway.connection(hostname, timeout=600)
    digest, sent = hashlib.sha256(), 0
    started = time.monotonic()
    error = ""
    try:
        conn.putrequest("PUT", f"/v2/images/{image_id}/{to}")
        conn.putheader("X-Auth-Token", token)
        conn.putheader("Content-Type", "application/octet-stream")
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        while sent < size:
            chunk = os.urandom(min(CHUNK, size - sent))
            digest.update(chunk)
            try:
                conn.send(chunk)
            except OSError as exc:  # the server answered early and closed, or reset
                error = f"{type(exc).__name__}: {exc}"
                break
            sent += len(chunk)
            ahead = sent / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)  # the client's uplink: pacing, not waiting on anything
        try:
            resp = conn.getresponse()
            return Upload(
                resp.status,
                error,
                sent,
                time.monotonic() - started,
                digest.hexdigest(),
                resp.read(),
            )
        except (OSError, httpclient.HTTPException) as exc:
            error = error or f"{type(exc).__name__}: {exc}"
            return Upload(None, error, sent, time.monotonic() - started, digest.hexdigest())
    finally:
        conn.close()
