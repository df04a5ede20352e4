"""A client load through a Glance's Service, every request recorded, and the images checked.

``Load`` runs workers (two: as many as one API pod has uWSGI processes, so that however the
Service spreads them no request waits for a free process, and a failure is the fault's,
not the load's) that each loop over: create an image and upload it (16 to 64 MiB of
random bytes, ``PUT`` with Content-Length), download an image it uploaded and compare its
SHA-256, list the images. Every request is a ``Request`` (what, when, ok or why not). What
the load uploaded with a 204 it keeps (id and digest): :func:`lost_or_corrupted` asks the API
for each afterwards (active, the same bytes), and :func:`active_without_data` finds any
image the API calls ``active`` whose data cannot be read back whole.

``upload`` and ``download`` are the two transfers of ``test_transfer.py`` too.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http import client as httpclient
from pathlib import Path

from e2e.stack import http

CHUNK = 2**20
SIZES = (16 * 2**20, 32 * 2**20, 64 * 2**20)


def _connection(url: str, timeout: float) -> httpclient.HTTPConnection:
    parts = urllib.parse.urlsplit(url)
    return httpclient.HTTPConnection(parts.hostname, parts.port, timeout=timeout, blocksize=CHUNK)


def upload(
    url: str, token: str, image_id: str, source: Path, timeout: float = 300, to: str = "file"
) -> float:
    """``PUT /v2/images/<id>/<to>`` of ``source`` with its Content-Length (``file``: into
    the store; ``stage``: into the staging area of the pod that takes it, glance-direct);
    the seconds. AssertionError with the status and the body's start when not 204."""
    conn = _connection(url, timeout)
    started = time.monotonic()
    try:
        with source.open("rb") as body:
            conn.request(
                "PUT",
                f"/v2/images/{image_id}/{to}",
                body=body,
                headers={
                    "X-Auth-Token": token,
                    "Content-Type": "application/octet-stream",
                    "Content-Length": str(source.stat().st_size),
                },
            )
            resp = conn.getresponse()
            text = resp.read()
    finally:
        conn.close()
    assert resp.status == 204, f"{resp.status} {text[:200]!r}"
    return time.monotonic() - started


def download(url: str, token: str, image_id: str, timeout: float = 300) -> tuple[float, str]:
    """``GET /v2/images/<id>/file``: the seconds and the SHA-256 of what came back.
    AssertionError with the status and the body's start when the answer is not 200."""
    conn = _connection(url, timeout)
    started = time.monotonic()
    try:
        conn.request("GET", f"/v2/images/{image_id}/file", headers={"X-Auth-Token": token})
        resp = conn.getresponse()
        if resp.status != 200:
            raise AssertionError(f"{resp.status} {resp.read()[:200]!r}")
        digest = hashlib.sha256()
        while chunk := resp.read(CHUNK):
            digest.update(chunk)
    finally:
        conn.close()
    return time.monotonic() - started, digest.hexdigest()


@dataclass
class Request:
    op: str
    started: float
    ended: float
    ok: bool
    detail: str = ""


@dataclass
class Source:
    path: Path
    digest: str


def make_sources(directory: Path) -> list[Source]:
    """One file of random bytes per size of ``SIZES``."""
    out = []
    for size in SIZES:
        path = directory / f"load-{size // 2**20}m.raw"
        data = random.randbytes(size)
        path.write_bytes(data)
        out.append(Source(path, hashlib.sha256(data).hexdigest()))
    return out


@dataclass
class Load:
    url: str
    token: str
    sources: list[Source]
    workers: int = 2
    prefix: str = "load"
    downloads: bool = True
    """False: uploads and lists only (an image cache that must not fill takes no reads)."""
    requests: list[Request] = field(default_factory=list)
    uploaded: dict[str, str] = field(default_factory=dict)
    attempted: set[str] = field(default_factory=set)

    def __post_init__(self):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._names = itertools.count()

    # -- the workers ------------------------------------------------------------------------

    def _record(self, op: str, started: float, ok: bool, detail: str = "") -> None:
        with self._lock:
            self.requests.append(Request(op, started, time.monotonic(), ok, detail))

    def _do(self, op: str, action) -> object | None:
        started = time.monotonic()
        try:
            result = action()
        except Exception as exc:  # every failure is a recorded request, not a crash
            self._record(op, started, False, f"{type(exc).__name__}: {exc}"[:300])
            return None
        self._record(op, started, True)
        return result

    def _create(self) -> str:
        name = f"{self.prefix}-{next(self._names)}"
        body = {"name": name, "disk_format": "raw", "container_format": "bare"}
        created = http("POST", f"{self.url}/v2/images", body, {"X-Auth-Token": self.token})
        assert created.status == 201, f"{created.status} {created.body[:200]!r}"
        return created.json()["id"]

    def _upload(self, source: Source) -> None:
        image_id = self._do("create", self._create)
        if image_id is None:
            return
        with self._lock:
            self.attempted.add(image_id)
        if self._do("upload", lambda: upload(self.url, self.token, image_id, source.path)):
            with self._lock:
                self.uploaded[image_id] = source.digest

    def _download(self) -> None:
        with self._lock:
            known = list(self.uploaded.items())
        if not known:
            return
        image_id, digest = random.choice(known)

        def check():
            _, got = download(self.url, self.token, image_id)
            assert got == digest, f"image {image_id}: other bytes came back"
            return True

        self._do("download", check)

    def _list(self) -> None:
        def listed():
            resp = http(
                "GET", f"{self.url}/v2/images?limit=20", headers={"X-Auth-Token": self.token}
            )
            assert resp.status == 200, f"{resp.status} {resp.body[:200]!r}"
            return True

        self._do("list", listed)

    def _work(self, n: int) -> None:
        turn = n
        while not self._stop.is_set():
            step = turn % 3
            if step == 0:
                self._upload(self.sources[turn % len(self.sources)])
            elif step == 1:
                if self.downloads:
                    self._download()
            else:
                self._list()
            turn += 1
            if self._stop.wait(0.2):
                break

    def start(self) -> Load:
        for n in range(self.workers):
            thread = threading.Thread(target=self._work, args=(n,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> list[Request]:
        self._stop.set()
        for thread in self._threads:
            thread.join(360)
        self._threads.clear()
        self._stop.clear()
        return self.requests

    # -- what the requests say --------------------------------------------------------------

    def between(self, start: float, end: float) -> list[Request]:
        return [r for r in self.requests if r.started >= start and r.started < end]

    def failed(self) -> list[Request]:
        return [r for r in self.requests if not r.ok]


READ_TRIES = 4
"""Reads of one image the check makes before it calls the image unreadable."""
READ_PAUSE = 10.0
"""Seconds between them: a rollout's endpoints settle within that, real loss stays."""


@dataclass
class ReadBack:
    """One image read back whole, or why not: ``fault`` when the answer itself says the data
    is not there (a 404 or 410 on the file, 204, a whole body of other bytes), ``transport``
    the attempts that failed on the way (a reset, no route, a timeout, a body cut short, a
    5xx), each ``"<seconds since the first> <why>"``."""

    image_id: str
    whole: bool = False
    fault: str = ""
    transport: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if self.fault:
            return f"{self.image_id}: {self.fault}"
        return f"{self.image_id}: unreadable in {len(self.transport)} tries: " + "; ".join(
            self.transport
        )


def _read_once(url: str, token: str, image_id: str) -> tuple[int, int, str]:
    """``GET`` the file: status, bytes read, SHA-256. Transport errors propagate."""
    conn = _connection(url, 300)
    try:
        conn.request("GET", f"/v2/images/{image_id}/file", headers={"X-Auth-Token": token})
        resp = conn.getresponse()
        digest = hashlib.sha256()
        got = 0
        while chunk := resp.read(CHUNK):
            digest.update(chunk)
            got += len(chunk)
        return resp.status, got, digest.hexdigest()
    finally:
        conn.close()


def read_back(
    url: str,
    token: str,
    image_id: str,
    size: int | None = None,
    digest: str | None = None,
    tries: int = READ_TRIES,
    pause: float = READ_PAUSE,
) -> ReadBack:
    """Read ``image_id`` whole (``size`` bytes, ``digest`` where known), telling the data
    not being there (answered at once: the next read would say the same) from the transport
    failing on the way (tried again, ``tries`` times ``pause`` seconds apart, so a read that
    met a pod going away is read again once the Service has moved on, and only data that
    stays unreadable counts)."""
    out = ReadBack(image_id)
    first = time.monotonic()
    for attempt in range(tries):
        if attempt:
            time.sleep(pause)
        at = f"{time.monotonic() - first:.0f} s"
        try:
            status, got, sha = _read_once(url, token, image_id)
        except (OSError, httpclient.HTTPException) as exc:  # reset, no route, timeout, cut
            out.transport.append(f"{at} {type(exc).__name__}: {exc}"[:160])
            continue
        if status in (404, 410, 204):
            out.fault = f"the file answers {status}"
            return out
        if status >= 500 or (status == 200 and size is not None and got < size):
            out.transport.append(f"{at} {status}, {got} of {size} bytes")
            continue
        if status != 200:
            out.fault = f"the file answers {status}"
        elif size is not None and got != size:
            out.fault = f"{got} bytes of {size}"
        elif digest is not None and sha != digest:
            out.fault = "other bytes came back"
        else:
            out.whole = True
        return out
    return out


def lost_or_corrupted(
    url: str, token: str, uploaded: dict[str, str], retried: list[ReadBack] | None = None
) -> list[str]:
    """Each image the load uploaded (204) that is not active or does not come back whole
    (:func:`read_back`); the reads that needed more than one try go to ``retried``."""
    out = []
    for image_id, digest in uploaded.items():
        shown = http("GET", f"{url}/v2/images/{image_id}", headers={"X-Auth-Token": token})
        if shown.status != 200 or shown.json().get("status") != "active":
            out.append(f"{image_id}: {shown.status} {shown.body[:120]!r}")
            continue
        read = read_back(url, token, image_id, shown.json().get("size"), digest)
        if not read.whole:
            out.append(str(read))
        elif read.transport and retried is not None:
            retried.append(read)
    return out


def active_without_data(
    url: str, token: str, image_ids: set[str], retried: list[ReadBack] | None = None
) -> list[str]:
    """Each of ``image_ids`` the API calls active whose data does not come back at its size
    (:func:`read_back`); the reads that needed more than one try go to ``retried``."""
    out = []
    for image_id in sorted(image_ids):
        shown = http("GET", f"{url}/v2/images/{image_id}", headers={"X-Auth-Token": token})
        if shown.status != 200 or shown.json().get("status") != "active":
            continue
        read = read_back(url, token, image_id, shown.json().get("size"))
        if not read.whole:
            out.append(f"active, {read}")
        elif read.transport and retried is not None:
            retried.append(read)
    return out
