"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Not ``kubernetes.leaderelection``: it cannot be stopped, never releases the Lease, and its
``LeaseLock`` uses the library's global client (docs/runner.md, "Why the informer and the
Lease are not the library's").

* **Identity**: the host name, ``_``, and a random UUID (controller-runtime's), so two
  processes on one host never share it.
* **Acquire**: every ``retry_period`` (jittered by up to 1.2 times more, client-go's
  ``JitterFactor``) the candidate reads the Lease; it takes it when it does not exist, has
  no holder, or its ``renewTime`` has not moved for ``leaseDurationSeconds`` *as observed
  locally* (client-go compares the record with the last one it saw and times the lease on
  its own clock, so clock skew between replicas does not matter). Taking it over counts
  ``leaseTransitions`` and sets ``acquireTime``. Writes are updates with the read
  ``resourceVersion``: two candidates cannot both win.
* **Renew**: the leader renews every ``retry_period``; when no renewal has succeeded for
  ``renew_deadline`` it has lost the lease and says so (``on_lost``): the runner then stops
  at once, as controller-runtime's manager exits, because another replica may be leader
  already.
* **Release** on graceful shutdown (``ReleaseOnCancel``): the holder is emptied and
  ``leaseDurationSeconds`` set to 1, so the next candidate takes over at its next try
  instead of waiting for the lease to run out.

Defaults are client-go's (15 s, 10 s, 2 s); the runner's flags change them. A
``LeaderElection`` Event on the Lease records each new leader (best effort).
"""

from __future__ import annotations

import datetime
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import ApiError
from runner.logs import Log

LEASE_API_VERSION = "coordination.k8s.io/v1"
JITTER_FACTOR = 1.2

log = Log("leader")


def new_identity() -> str:
    """``<hostname>_<uuid4>`` (controller-runtime's ``LeaderElectionID`` holder identity)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def micro_time(moment: datetime.datetime) -> str:
    """A ``metav1.MicroTime``: RFC 3339 with microseconds, UTC."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: Any,
        namespace: str,
        name: str,
        identity: str | None = None,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime.datetime] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity or new_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading
        self.on_lost = on_lost
        self.clock = clock
        self.wall_clock = wall_clock or (lambda: datetime.datetime.now(datetime.UTC))
        self.rng = rng or random.Random()
        self.leading = threading.Event()
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> LeaderElector:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()
        return self

    def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        """Stop competing; a leader releases the Lease (unless ``release`` is false)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if release and self.leading.is_set() and not self.lost.is_set():
            self.release()
        self.leading.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                break
            self._stop.wait(self.retry_period * (1 + self.rng.random() * JITTER_FACTOR))
        if self._stop.is_set():
            return
        self.leading.set()
        log.info(
            "leader election won", lease=f"{self.namespace}/{self.name}", identity=self.identity
        )
        self._record_event(f"{self.identity} became leader")
        if self.on_started_leading is not None:
            self.on_started_leading()
        last_renewal = self.clock()
        while not self._stop.wait(self.retry_period):
            if self.try_acquire_or_renew():
                last_renewal = self.clock()
                continue
            if self.clock() - last_renewal >= self.renew_deadline:
                self.lost.set()
                log.error(
                    "leader election lost",
                    lease=f"{self.namespace}/{self.name}",
                    identity=self.identity,
                )
                if self.on_lost is not None:
                    self.on_lost()
                return

    # -- one try ---------------------------------------------------------------------------
    def try_acquire_or_renew(self) -> bool:
        """client-go's ``tryAcquireOrRenew``: whether this candidate holds the Lease now."""
        now = self.wall_clock()
        try:
            lease = self.client.get(LEASE_API_VERSION, "Lease", self.name, self.namespace)
        except Exception as error:
            log.warning(
                "cannot read the Lease", lease=f"{self.namespace}/{self.name}", error=str(error)
            )
            return False
        spec_for_me = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
        }
        if lease is None:
            body = {
                "apiVersion": LEASE_API_VERSION,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**spec_for_me, "leaseTransitions": 0},
            }
            try:
                self._lease = self.client.create(body)
            except Exception as error:
                log.debug("cannot create the Lease", error=str(error))
                return False
            self._observe(self._lease.get("spec") or {})
            return True
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and self._valid(spec):
            return False
        new_spec = dict(spec_for_me)
        if holder == self.identity:
            new_spec["acquireTime"] = spec.get("acquireTime") or new_spec["acquireTime"]
            new_spec["leaseTransitions"] = spec.get("leaseTransitions") or 0
        else:
            new_spec["leaseTransitions"] = (spec.get("leaseTransitions") or 0) + 1
        updated = {**lease, "spec": new_spec}
        try:
            self._lease = self._update(updated)
        except Exception as error:
            log.debug("cannot update the Lease", error=str(error))
            return False
        self._observe(self._lease.get("spec") or {})
        return True

    def release(self) -> bool:
        """Give the Lease up: empty holder, 1 s duration (client-go's ``release``)."""
        try:
            lease = self.client.get(LEASE_API_VERSION, "Lease", self.name, self.namespace)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return False
            now = micro_time(self.wall_clock())
            spec = dict(lease.get("spec") or {})
            spec.update(
                {
                    "holderIdentity": "",
                    "leaseDurationSeconds": 1,
                    "renewTime": now,
                    "acquireTime": now,
                }
            )
            self._update({**lease, "spec": spec})
        except Exception as error:
            log.warning(
                "cannot release the Lease", lease=f"{self.namespace}/{self.name}", error=str(error)
            )
            return False
        log.info(
            "leader election released",
            lease=f"{self.namespace}/{self.name}",
            identity=self.identity,
        )
        return True

    def _observe(self, spec: dict[str, Any]) -> None:
        self._observed_spec = dict(spec)
        self._observed_at = self.clock()

    def _valid(self, spec: dict[str, Any]) -> bool:
        """The observed holder's lease has not run out on our clock."""
        duration = spec.get("leaseDurationSeconds") or self.lease_duration
        return self._observed_at + float(duration) > self.clock()

    def _update(self, lease: dict[str, Any]) -> dict[str, Any]:
        path = self.client.path(LEASE_API_VERSION, "Lease", self.namespace, self.name)
        return self.client.request("PUT", path, body=lease)

    def _record_event(self, message: str) -> None:
        lease = self._lease or {}
        meta = lease.get("metadata") or {}
        now = micro_time(self.wall_clock())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{self.name}.", "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": LEASE_API_VERSION,
                "kind": "Lease",
                "name": self.name,
                "namespace": self.namespace,
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": "LeaderElection",
            "message": message,
            "type": "Normal",
            "source": {"component": self.name},
            "firstTimestamp": now[:19] + "Z",
            "lastTimestamp": now[:19] + "Z",
            "count": 1,
            "reportingComponent": self.name,
            "reportingInstance": self.identity[:128],
        }
        try:
            self.client.create(event)
        except (ApiError, OSError) as error:
            log.debug("cannot record the leader election event", error=str(error))
