"""What the cluster did while a check ran, beside what the check saw, on one clock.

A chaos row's final check reads every image back through the Service. When one of those
reads fails on the transport (a reset, no route to the pod's address), the question is
what the cluster was doing at that second: a pod going away (deleted, evicted), the
Service's endpoints not yet following, a volume past its bound. ``Timeline`` samples the
Glance's API pods and the Service's EndpointSlices every two seconds in a thread (and,
for the volumes it is given, the kubelet's own measure of each pod's volume, from the
node's ``stats/summary``), writes a line whenever one of them changes, takes the lines the
check adds with :meth:`Timeline.mark`, and at the end the namespace's ``Evicted`` and
``Killing`` events. Every line carries the seconds since the timeline started.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from typing import Any

PERIOD = 2.0


def _since_epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class Timeline:
    def __init__(
        self, node, namespace: str, selector: str, service: str, volumes: tuple[str, ...] = ()
    ):
        self.node = node
        self.namespace = namespace
        self.selector = selector
        self.service = service
        self.volumes = volumes
        self.lines: list[tuple[float, str]] = []
        self._last: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = time.time()
        self.evictions: list[str] = []

    # -- the lines ------------------------------------------------------------------------

    def mark(self, text: str, at: float | None = None) -> None:
        """A line at ``at`` (``time.time()``; now when None)."""
        with self._lock:
            self.lines.append(((at if at is not None else time.time()) - self.started, text))

    def _changed(self, key: str, text: str) -> None:
        if self._last.get(key) != text:
            self._last[key] = text
            self.mark(f"{key}: {text}")

    def text(self) -> str:
        with self._lock:
            lines = sorted(self.lines)
        return "\n".join(f"{at:7.1f} s  {line}" for at, line in lines)

    # -- the samples ----------------------------------------------------------------------

    def _json(self, *args: str) -> Any:
        done = self.node.kubectl(*args, check=False)
        if done.returncode != 0:
            return None
        return json.loads(done.stdout)

    def _sample(self) -> None:
        pods = self._json("get", "pods", "-n", self.namespace, "-l", self.selector, "-o", "json")
        for pod in (pods or {}).get("items", []):
            meta, status = pod["metadata"], pod.get("status", {})
            ready = any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in status.get("conditions") or []
            )
            state = [status.get("phase", "?"), "Ready" if ready else "not Ready"]
            if meta.get("deletionTimestamp"):
                state.append("being deleted")
            if status.get("reason"):
                state.append(status["reason"])
            self._changed(f"pod {meta['name']} {status.get('podIP', '-')}", ", ".join(state))
        slices = self._json(
            "get", "endpointslices", "-n", self.namespace,
            "-l", f"kubernetes.io/service-name={self.service}", "-o", "json",
        )  # fmt: skip
        for piece in (slices or {}).get("items", []):
            endpoints = []
            for endpoint in piece.get("endpoints") or []:
                cond = endpoint.get("conditions") or {}
                flags = "".join(
                    flag for flag, on in (("R", cond.get("ready")), ("S", cond.get("serving")),
                                          ("T", cond.get("terminating"))) if on
                )  # fmt: skip
                endpoints.append(f"{','.join(endpoint.get('addresses', []))}[{flags or '-'}]")
            self._changed(f"endpoints {piece['metadata']['name']}", " ".join(sorted(endpoints)))
        if self.volumes:
            self._sample_volumes()

    def _sample_volumes(self) -> None:
        nodes = self._json("get", "nodes", "-o", "json") or {"items": []}
        for node in nodes["items"]:
            name = node["metadata"]["name"]
            summary = self._json("get", "--raw", f"/api/v1/nodes/{name}/proxy/stats/summary")
            for pod in (summary or {}).get("pods", []):
                if pod["podRef"]["namespace"] != self.namespace:
                    continue
                for volume in pod.get("volume") or []:
                    if volume.get("name") in self.volumes:
                        used = volume.get("usedBytes", 0) // 2**20
                        self._changed(f"volume {pod['podRef']['name']}/{volume['name']}",
                                      f"{used} MiB (the kubelet's measure)")  # fmt: skip

    def _events(self) -> None:
        events = self._json("get", "events", "-n", self.namespace, "-o", "json") or {"items": []}
        for event in events["items"]:
            if event.get("reason") not in ("Evicted", "Killing"):
                continue
            stamp = event.get("lastTimestamp") or event.get("eventTime")
            if not stamp or _since_epoch(stamp) < self.started:
                continue
            what = f"event {event['reason']} {event['involvedObject'].get('name')}: "
            self.mark(what + (event.get("message") or "")[:160], at=_since_epoch(stamp))
            if event["reason"] == "Evicted":
                self.evictions.append(what + (event.get("message") or "")[:160])

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._sample()
            except Exception as exc:  # a sample lost is a line, never the check's failure
                self.mark(f"sample failed: {type(exc).__name__}: {exc}"[:200])
            self._stop.wait(PERIOD)

    def __enter__(self) -> Timeline:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
        self._sample()
        self._events()
