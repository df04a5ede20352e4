"""List and watch one kind (in one namespace or all), keep the objects, report each change.

client-go's reflector and informer, for threads, on the collection's ``KubeClient``
(``kubernetes.informer.SharedInformer`` gives no old object to a handler, reports every
object as changed on a relist, has no transform, backoff or synced signal: docs/runner.md,
"Why the informer and the Lease are not the library's"):

* **list, then watch** from the list's ``resourceVersion``; every event moves the kept
  ``resourceVersion`` on (``BOOKMARK`` events too), so a watch that ends (the server's
  ``timeoutSeconds``, a dropped connection) starts again where it stopped, with no relist
  and no event seen twice;
* **410 Gone** (the version is older than what the server keeps: an ``ERROR`` event or the
  watch request's answer) means relist: the new list is compared with the cache and the
  differences are reported as ``ADDED``, ``MODIFIED`` and ``DELETED``, as if watched;
* any other failure is logged and retried after a backoff (1 s doubling to 30 s, reset by
  a good list or watch), from the last version;
* ``synced`` is set once the first list has been reported (controller-runtime's
  ``WaitForCacheSync``).

The handler is called from the informer's thread, one event at a time, with
``(event, new, old)``: ``new`` is None for ``DELETED``, ``old`` None for ``ADDED``. A
``transform`` (client-go's ``SetTransform``) shrinks each object before it is kept and
before the handler sees it. With ``metadata_only`` the list and the watch ask the server for
``PartialObjectMetadata`` (client-go's metadata informer): the objects' data never arrives.

``stop()`` asks the thread to end; a watch blocked on a quiet stream notices at the next
event, bookmark or the end of the stream (``timeoutSeconds``), so stopping does not wait
for it; the thread is a daemon.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import ApiError
from runner.logs import Log

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
"""The watch event types an informer reports; a relist reports its differences as these."""

Handler = Callable[[str, "dict[str, Any] | None", "dict[str, Any] | None"], None]

MIN_WATCH_TIMEOUT = 300
"""client-go's reflector asks for ``timeoutSeconds`` between 5 and 10 minutes."""
BACKOFF_START = 1.0
BACKOFF_CAP = 30.0

log = Log("informer")


class _Gone(Exception):
    """The watch's resourceVersion is too old: relist."""


class Informer:
    def __init__(
        self,
        client: Any,
        api_version: str,
        kind: str,
        namespace: str | None,
        handler: Handler,
        *,
        label_selector: str | None = None,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        metadata_only: bool = False,
        watch_timeout: tuple[int, int] = (MIN_WATCH_TIMEOUT, 2 * MIN_WATCH_TIMEOUT),
        backoff: tuple[float, float] = (BACKOFF_START, BACKOFF_CAP),
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace or None
        self.handler = handler
        self.label_selector = label_selector or None
        self.transform = transform
        self.metadata_only = metadata_only
        """List and watch the objects' ``metadata`` alone (client-go's metadata informer):
        what a Secret holds never reaches the process."""
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.rng = rng or random.Random()
        self.synced = threading.Event()
        self.lists = 0
        self.watches = 0
        self._cache: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._resource_version = ""

    @property
    def name(self) -> str:
        where = self.namespace or "*"
        metadata = "/metadata" if self.metadata_only else ""
        return f"{self.kind}.{self.api_version}{metadata}@{where}"

    def start(self) -> Informer:
        self._thread = threading.Thread(target=self._run, name=f"informer {self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 0.0) -> None:
        self._stop.set()
        if self._thread is not None and timeout:
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def items(self) -> list[dict[str, Any]]:
        """The kept objects (as transformed)."""
        with self._lock:
            return list(self._cache.values())

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._cache.get((namespace, name))

    def _metadata_only(self) -> dict[str, bool]:
        return {"metadata_only": True} if self.metadata_only else {}

    # -- the loop --------------------------------------------------------------------------
    def _run(self) -> None:
        start, cap = self.backoff
        backoff = start
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                    backoff = start
                began = time.monotonic()
                if self._watch() == 0 and time.monotonic() - began < 1.0:
                    self._stop.wait(start)  # a stream that ends at once: do not spin
                backoff = start
            except _Gone:
                log.info(
                    "watch expired, listing again",
                    informer=self.name,
                    resource_version=self._resource_version,
                )
                need_list = True
            except Exception as error:  # the API server is away, refused us, or sent garbage
                if self._stop.is_set():
                    break
                log.warning(
                    "list or watch failed, retrying",
                    informer=self.name,
                    error=str(error),
                    retry_in=round(backoff, 3),
                )
                if isinstance(error, ApiError) and error.code == 410:
                    need_list = True
                self._stop.wait(backoff)
                backoff = min(backoff * 2, cap)

    def _list(self) -> None:
        answer = self.client.list_object(
            self.api_version,
            self.kind,
            self.namespace,
            label_selector=self.label_selector,
            **self._metadata_only(),
        )
        self.lists += 1
        listed: dict[tuple[str, str], dict[str, Any]] = {}
        for item in answer.get("items") or []:
            obj = self._shape(item)
            listed[_key(obj)] = obj
        with self._lock:
            before = self._cache
            self._cache = listed
            self._resource_version = str(
                (answer.get("metadata") or {}).get("resourceVersion") or ""
            )
        for key, obj in listed.items():
            old = before.get(key)
            if old is None:
                self._emit(ADDED, obj, None)
            elif _rv(old) != _rv(obj):
                self._emit(MODIFIED, obj, old)
        for key, old in before.items():
            if key not in listed:
                self._emit(DELETED, None, old)
        if not self.synced.is_set():
            self.synced.set()
            log.info("synced", informer=self.name, objects=len(listed))

    def _watch(self) -> int:
        """Watch until the stream ends; how many events it brought."""
        low, high = self.watch_timeout
        timeout = self.rng.randint(low, high) if high > low else low
        self.watches += 1
        stream = self.client.watch(
            self.api_version,
            self.kind,
            self.namespace,
            resource_version=self._resource_version or None,
            label_selector=self.label_selector,
            timeout_seconds=timeout,
            **self._metadata_only(),
        )
        events = 0
        try:
            for event in stream:
                if self._stop.is_set():
                    return events
                events += 1
                self._handle(event)
        except ApiError as error:
            if error.code == 410:
                raise _Gone from None
            raise
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        return events

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        raw = event.get("object") or {}
        if kind == "ERROR":
            if raw.get("code") == 410 or raw.get("reason") in ("Expired", "Gone"):
                raise _Gone
            raise RuntimeError(f"watch error: {raw.get('message') or raw}")
        version = str((raw.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            if version:
                self._resource_version = version
            return
        if kind not in (ADDED, MODIFIED, DELETED):
            return
        raw.setdefault("apiVersion", self.api_version)
        raw.setdefault("kind", self.kind)
        obj = self._shape(raw)
        key = _key(obj)
        with self._lock:
            old = self._cache.get(key)
            if kind == DELETED:
                self._cache.pop(key, None)
            else:
                self._cache[key] = obj
            if version:
                self._resource_version = version
        if kind == DELETED:
            self._emit(DELETED, None, old or obj)
        elif old is None:
            self._emit(ADDED, obj, None)
        else:
            self._emit(MODIFIED, obj, old)

    def _shape(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("apiVersion", self.api_version)
        obj.setdefault("kind", self.kind)
        return self.transform(obj) if self.transform else obj

    def _emit(self, event: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        try:
            self.handler(event, new, old)
        except Exception as error:  # a handler bug must not stop the informer
            log.error("event handler failed", informer=self.name, event=event, error=repr(error))


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
