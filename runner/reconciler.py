"""One reconcile of one object: read it, handle the finalizer, run the pass, decide what
follows. ansible-operator's ``reconcile.go`` sequence, minus status management (the
playbooks write their own status, ``manageStatus: false``):

1. **read** the object from the API server, not from a cache: the pass hands it to the
   playbook as ``_<group>_<kind>``, and our playbooks do not read it again, so it must be
   current (its ``resourceVersion`` guards the playbook's own finalizer write). Gone: done,
   and its private data dir is removed;
2. **finalizer**: being deleted without our finalizer: done ("resource is terminated").
   Not being deleted and the watch names a finalizer the object lacks: add it first (a
   merge patch carrying the resourceVersion), and run the pass with the updated object.
   The Glance pass adds the finalizer itself when it is missing; after the runner's add
   it finds it there and goes on, so one pass does what took two;
3. **run** the playbook (a deletion pass gets the finalizer's vars, ``glance_finalizing``);
4. **release** after a successful deletion pass that asked for no requeue: read the
   object again and remove the finalizer if it is still listed. Our playbook has
   released it already, and the object is usually gone: both are fine. A conflict is
   retried with a fresh read. Then ``on_released`` (the manager drops the object's metric
   series; ``on_gone`` does too when a read finds the object gone). A deletion pass that
   asks to come back (``requeue_after``, or ``requeue_after: 0``) is not done: a managed
   database Glance waiting for its Database, User and Grant to go (``FinalizingDatabase``,
   30 s), or one waiting for its target cluster. The finalizer stays, and the pass runs
   again when asked; the playbook releases the finalizer itself when it is done.
   ansible-operator removes it after every successful deletion pass, which here would let
   the object go before what the finalizer guards is cleaned up;
5. **decide** what follows (``controller.after_pass``).

Any API error on the way is an error result: backoff, as controller-runtime does with a
returned error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import ApiError
from runner import controller
from runner.controller import Requeue
from runner.kube.watches import Watch, reconcile_period
from runner.kube.workqueue import ObjectKey
from runner.logs import Log
from runner.passes.extravars import RunOutcome

RELEASE_ATTEMPTS = 3

log = Log("reconciler")


def wants_requeue(outcome: RunOutcome) -> bool:
    """Whether a pass asked to come back: ``requeue_after`` of N seconds, or 0 (at once).
    A deletion pass that asks is not done, and keeps its finalizer."""
    return outcome.requeue_after is not None or outcome.requeue


class PassExecutor(Protocol):
    def run(
        self, watch: Watch, key: ObjectKey, obj: Mapping[str, Any], cancel: threading.Event
    ) -> Any:
        """A ``runner.passes.playbook.PassRun``: outcome, status, cancelled, seconds."""

    def forget(self, watch: Watch, key: ObjectKey) -> None:
        """The object is gone: drop what is kept for it."""


@dataclass(frozen=True)
class Reconciled:
    """A reconcile's end: what the queue does next, or ``abandoned`` (cancelled mid-pass:
    the queue does nothing, the object is not counted)."""

    requeue: Requeue | None
    ran_pass: bool = False
    abandoned: bool = False


ABANDONED = Reconciled(None, ran_pass=True, abandoned=True)


class Reconciler:
    def __init__(
        self,
        watch: Watch,
        client: Any,
        executor: PassExecutor,
        default_reconcile_period: float,
        on_gone: Callable[[ObjectKey], None] | None = None,
        on_released: Callable[[ObjectKey], None] | None = None,
    ) -> None:
        self.watch = watch
        self.client = client
        self.executor = executor
        self.default_reconcile_period = default_reconcile_period
        self.on_gone = on_gone
        self.on_released = on_released
        self.api_version = (
            f"{watch.gvk.group}/{watch.gvk.version}" if watch.gvk.group else watch.gvk.version
        )
        self.controller = controller.controller_name(watch)

    def reconcile(
        self, key: ObjectKey, cancel: threading.Event, woken_by: Sequence[str] = ()
    ) -> Reconciled:
        """``woken_by``: why the queue handed out ``key`` (``WorkQueue.reasons``), logged
        with ``pass started``."""
        fields = {"controller": self.controller, "key": controller.describe(key)}
        try:
            obj = self._read(key)
            if obj is None:
                self._gone(key)
                return Reconciled(controller.DONE)
            step = controller.first_step(self.watch, obj)
            if step == controller.SKIP:
                log.debug("terminating without our finalizer, nothing to do", **fields)
                return Reconciled(controller.DONE)
            if step == controller.ADD_FINALIZER:
                obj = self._patch_finalizer(obj, add=True)
                log.info("finalizer added", finalizer=self.watch.finalizer.name, **fields)
            period = reconcile_period(
                self.watch,
                (obj.get("metadata") or {}).get("annotations"),
                self.default_reconcile_period,
            )
        except (ApiError, OSError, ValueError) as error:
            log.error("cannot start the pass", error=str(error), **fields)
            return Reconciled(controller.ERROR)
        if cancel.is_set():
            return ABANDONED
        finalizing = step == controller.FINALIZE
        meta = obj.get("metadata") or {}
        log.info(
            "pass started",
            generation=meta.get("generation"),
            resource_version=meta.get("resourceVersion"),
            finalizing=finalizing or None,
            woken_by=list(woken_by) or None,
            **fields,
        )
        run = self.executor.run(self.watch, key, obj, cancel)
        if run.cancelled:
            log.warning("pass abandoned", seconds=round(run.seconds, 3), **fields)
            return ABANDONED
        outcome: RunOutcome = run.outcome
        if outcome.succeeded and finalizing and not wants_requeue(outcome):
            try:
                self._release(key)
            except (ApiError, OSError) as error:
                log.error("cannot remove the finalizer", error=str(error), **fields)
                return Reconciled(controller.ERROR, ran_pass=True)
            if self.on_released is not None:
                self.on_released(key)
        elif outcome.succeeded and finalizing:
            log.debug(
                "finalizer kept: the deletion pass asked to come back",
                finalizer=self.watch.finalizer.name,
                **fields,
            )
        requeue = controller.after_pass(outcome, 0.0 if finalizing else period)
        self._log_outcome(run, requeue, fields)
        return Reconciled(requeue, ran_pass=True)

    # -- steps -----------------------------------------------------------------------------
    def _read(self, key: ObjectKey) -> dict[str, Any] | None:
        obj = self.client.get(
            self.api_version, self.watch.gvk.kind, key.name, key.namespace or None
        )
        if obj is not None:
            obj.setdefault("apiVersion", self.api_version)
            obj.setdefault("kind", self.watch.gvk.kind)
        return obj

    def _patch_finalizer(self, obj: dict[str, Any], add: bool) -> dict[str, Any]:
        patch = controller.finalizer_patch(obj, self.watch.finalizer.name, add)
        if patch is None:
            return obj
        meta = obj["metadata"]
        updated = self.client.patch(
            self.api_version, self.watch.gvk.kind, meta["name"], meta.get("namespace"), patch
        )
        updated.setdefault("apiVersion", self.api_version)
        updated.setdefault("kind", self.watch.gvk.kind)
        return updated

    def _release(self, key: ObjectKey) -> None:
        """Remove the finalizer after the deletion pass, unless the playbook did."""
        for attempt in range(1, RELEASE_ATTEMPTS + 1):
            obj = self._read(key)
            if obj is None:
                self._gone(key)
                return
            try:
                if controller.finalizer_patch(obj, self.watch.finalizer.name, add=False) is None:
                    return
                self._patch_finalizer(obj, add=False)
                log.info(
                    "finalizer removed",
                    controller=self.controller,
                    key=controller.describe(key),
                    finalizer=self.watch.finalizer.name,
                )
                return
            except ApiError as error:
                if error.not_found:
                    self._gone(key)
                    return
                if not error.conflict or attempt == RELEASE_ATTEMPTS:
                    raise
                time.sleep(0.05 * attempt)

    def _gone(self, key: ObjectKey) -> None:
        log.debug("gone", controller=self.controller, key=controller.describe(key))
        self.executor.forget(self.watch, key)
        if self.on_gone is not None:
            self.on_gone(key)

    @staticmethod
    def _log_outcome(run: Any, requeue: Requeue, fields: dict[str, Any]) -> None:
        outcome: RunOutcome = run.outcome
        stats = outcome.stats
        summary = {
            "result": requeue.result,
            "seconds": round(run.seconds, 3),
            "requeue_after": requeue.seconds if requeue.how != controller.RATE_LIMITED else None,
            "changed": stats.changed if stats else None,
            "status": run.status,
            "ident": run.ident,
            "warm": getattr(run, "warm", False),
            **fields,
        }
        if outcome.succeeded:
            log.info("pass finished", **summary)
            return
        failures = [
            {"task": task.task, "action": task.action, "message": task.message}
            for task in outcome.failed_tasks
        ]
        log.error(
            "pass failed",
            failures=failures or None,
            rc=run.rc,
            output=None if failures else run.stdout_tail[-2000:] or None,
            **summary,
        )
