"""The runner's decisions without a server: which event wakes which key, the predicates,
the finalizer handling of a reconcile, and what follows a pass (requeue or backoff)."""

from __future__ import annotations

import copy
import dataclasses
import threading
from pathlib import Path
from typing import Any

import prometheus_client
import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import ApiError
from runner import controller as ctl
from runner.endpoints.metrics import (
    RESULT_ERROR,
    RESULT_REQUEUE,
    RESULT_REQUEUE_AFTER,
    RESULT_SUCCESS,
)
from runner.kube import informer as inf
from runner.kube.watches import GroupVersionKind, LabelSelector, load_watches
from runner.kube.workqueue import (
    HIGH_PRIORITY,
    LOW_PRIORITY,
    ManualClock,
    ObjectKey,
    WorkQueue,
    default_rate_limiter,
)
from runner.manager import Manager
from runner.passes.extravars import FailedTask, PlaybookStats, RunOutcome, run_outcome
from runner.reconciler import Reconciler
from runner.settings import parse_settings

ROOT = Path(__file__).resolve().parents[2]
GROUP = "glance.openstack.c5c3.io"
GLANCE_WATCH, BACKEND_WATCH = load_watches(ROOT / "watches.yaml")
WATCHED = {(w.gvk.group, w.gvk.kind): w for w in (GLANCE_WATCH, BACKEND_WATCH)}
FINALIZER = "glance.openstack.c5c3.io/finalizer"


def glance(**meta: Any) -> dict[str, Any]:
    metadata = {
        "name": "glance",
        "namespace": "openstack",
        "uid": "u1",
        "generation": 1,
        "resourceVersion": "10",
        **meta,
    }
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Glance",
        "metadata": metadata,
        "spec": {"openStackRelease": "2026.2"},
    }


def backend(parent: str = "glance", credentials: str | None = None, **spec: Any) -> dict:
    obj = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "GlanceBackend",
        "metadata": {"name": "s3", "namespace": "openstack", "generation": 1, "uid": "b1"},
        "spec": {"glanceRef": {"name": parent}, "isDefault": True, **spec},
    }
    if credentials is not None:
        obj["status"] = {"conditions": [{"type": "CredentialsReady", "status": credentials}]}
    return obj


def changed(obj: dict, **meta: Any) -> dict:
    new = copy.deepcopy(obj)
    new["metadata"].update(meta)
    return new


KEY = ObjectKey(GROUP, "Glance", "openstack", "glance")


# -- the watched kinds ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "new", "old", "wanted"),
    [
        (inf.ADDED, glance(), None, True),
        (inf.DELETED, None, glance(), True),
        (inf.MODIFIED, glance(generation=2), glance(), True),
        (inf.MODIFIED, glance(resourceVersion="11"), glance(), False),  # status write
        (inf.MODIFIED, glance(labels={"a": "b"}), glance(), False),
        (inf.MODIFIED, glance(finalizers=[FINALIZER]), glance(), False),  # our own add
        (inf.MODIFIED, glance(annotations={"a": "b"}), glance(), False),
        (inf.MODIFIED, glance(deletionTimestamp="2026-01-01T00:00:00Z"), glance(), True),
        (inf.MODIFIED, glance(uid="u2"), glance(), True),  # gone and back between looks
        (inf.MODIFIED, glance(generation=None), glance(generation=None), True),
        (inf.MODIFIED, glance(), None, True),
    ],
)
def test_primary_predicate_is_ansible_operators(event, new, old, wanted):
    assert ctl.primary_wants(GLANCE_WATCH, event, new, old) is wanted


def test_annotation_changes_count_when_the_watch_asks_for_them():
    watch = dataclasses.replace(GLANCE_WATCH, watch_annotations_changes=True)
    assert ctl.primary_wants(watch, inf.MODIFIED, glance(annotations={"a": "b"}), glance())


def test_the_selector_filters_every_event_of_the_watched_kind():
    watch = dataclasses.replace(GLANCE_WATCH, selector=LabelSelector({"team": "a"}))
    assert not ctl.primary_wants(watch, inf.ADDED, glance(), None)
    assert not ctl.primary_wants(watch, inf.MODIFIED, glance(generation=2), glance())
    assert not ctl.primary_wants(watch, inf.DELETED, None, glance())
    assert ctl.primary_wants(watch, inf.ADDED, glance(labels={"team": "a"}), None)


def test_the_key_is_group_kind_namespace_name():
    assert ctl.key_of(GLANCE_WATCH, glance()) == KEY
    assert ctl.describe(KEY) == "openstack/glance"
    assert ctl.controller_name(GLANCE_WATCH) == "glance"


# -- a GlanceBackend wakes its Glance -------------------------------------------------------


def parent(name: str = "glance") -> ObjectKey:
    return ObjectKey(GROUP, "Glance", "openstack", name)


@pytest.mark.parametrize(
    ("new", "old", "keys"),
    [
        (backend(), None, [parent()]),  # added
        (None, backend(), [parent()]),  # deleted
        (backend(isDefault=False), backend(), [parent()]),  # isDefault flipped
        (backend(credentials="True"), backend(credentials="False"), [parent()]),
        (backend(credentials="True"), backend(credentials="True"), []),  # ConfigProjected only
        (changed(backend(), deletionTimestamp="2026-01-01T00:00:00Z"), backend(), [parent()]),
        (backend("other"), backend("glance"), [parent("other"), parent("glance")]),
        (backend(parent=""), None, []),
    ],
)
def test_a_backend_event_wakes_its_parent_and_a_former_parent(new, old, keys):
    assert ctl.parent_keys(BACKEND_WATCH, new, old, WATCHED) == keys


def test_only_a_watched_parent_kind_is_woken():
    assert (
        ctl.parent_keys(BACKEND_WATCH, backend(), None, {(GROUP, "GlanceBackend"): BACKEND_WATCH})
        == []
    )
    assert ctl.parent_keys(GLANCE_WATCH, glance(), None, WATCHED) == []


# -- dependents ----------------------------------------------------------------------------


def deployment(**status: Any) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "glance",
            "namespace": "openstack",
            "resourceVersion": "5",
            "generation": 1,
            "labels": {"app.kubernetes.io/managed-by": "glance-operator"},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/v1alpha1",
                    "kind": "Glance",
                    "name": "glance",
                    "controller": True,
                }
            ],
            "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:00Z"}],
        },
        "spec": {"replicas": 1},
        "status": status,
    }


def bumped(obj: dict, path: tuple[str, ...] = (), value: Any = None) -> dict:
    """``obj`` with a new resourceVersion and ``value`` at ``path``."""
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = str(int(new["metadata"]["resourceVersion"]) + 1)
    if path:
        node = new
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return new


READY = {
    "observedGeneration": 1,
    "replicas": 1,
    "readyReplicas": 1,
    "updatedReplicas": 1,
    "availableReplicas": 1,
    "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "t1"}],
}


def rolling(ready: int, updated: int = 3) -> dict:
    """A Deployment of 3 replicas, its template labelled as the API, in a rollout."""
    obj = deployment(
        observedGeneration=1,
        replicas=3,
        updatedReplicas=updated,
        readyReplicas=ready,
        availableReplicas=ready,
        conditions=[{"type": "Available", "status": "True" if ready >= 2 else "False"}],
    )
    obj["spec"] = {
        "replicas": 3,
        "template": {"metadata": {"labels": {"app.kubernetes.io/component": "api"}}},
    }
    return obj


def job(*conditions: tuple[str, str], **status: Any) -> dict:
    obj = deployment()
    obj.update(apiVersion="batch/v1", kind="Job", spec={})
    obj["status"] = {"conditions": [{"type": t, "status": s} for t, s in conditions], **status}
    return obj


def cronjob(active: tuple[str, ...] = (), succeeded: str | None = None) -> dict:
    """The db-purge CronJob with the runs ``active`` and its last success."""
    obj = deployment()
    obj.update(apiVersion="batch/v1", kind="CronJob", spec={"schedule": "0 3 * * *"})
    status: dict = {"active": [{"kind": "Job", "name": n, "uid": f"uid-{n}"} for n in active]}
    if succeeded:
        status["lastSuccessfulTime"] = succeeded
    obj["status"] = status
    return obj


def route(accepted: str | None, generation: int = 1) -> dict:
    obj = deployment()
    obj.update(apiVersion="gateway.networking.k8s.io/v1", kind="HTTPRoute", spec={})
    conditions = (
        []
        if accepted is None
        else [{"type": "Accepted", "status": accepted, "observedGeneration": generation}]
    )
    obj["status"] = {"parents": [{"parentRef": {"name": "public"}, "conditions": conditions}]}
    return obj


@pytest.mark.parametrize(
    ("event", "new", "old", "wanted"),
    [
        (inf.ADDED, deployment(), None, False),  # the pass created it
        (inf.DELETED, None, deployment(), True),  # someone deleted it: recreate
        (inf.MODIFIED, bumped(deployment(), ("spec", "replicas"), 3), deployment(), True),
        (inf.MODIFIED, bumped(deployment(), ("metadata", "labels"), {}), deployment(), True),
        (inf.MODIFIED, deployment(), deployment(), False),  # same resourceVersion
        # a replica count that flips none of the pass's predicates: nothing to see
        (inf.MODIFIED, bumped(deployment(), ("status", "replicas"), 2), deployment(), False),
        (inf.MODIFIED, bumped(deployment(**READY)), deployment(), True),  # became ready
        # a rollout of 3: 1 then 2 of 3 ready changes nothing the pass reads; 3 of 3 does
        (inf.MODIFIED, bumped(rolling(ready=2)), rolling(ready=1), False),
        (inf.MODIFIED, bumped(rolling(ready=3)), rolling(ready=2), True),
        # every pod on the current template (the Service selector's latch) before any is ready
        (inf.MODIFIED, bumped(rolling(ready=0, updated=3)), rolling(ready=0, updated=2), True),
        (
            inf.MODIFIED,
            bumped(
                deployment(
                    **{
                        **READY,
                        "conditions": [
                            {"type": "Available", "status": "True", "lastUpdateTime": "t2"}
                        ],
                    }
                )
            ),
            deployment(**READY),
            False,  # a status heartbeat, not readiness
        ),
        (
            inf.MODIFIED,
            bumped(
                deployment(), ("metadata", "managedFields"), [{"manager": "m", "time": "later"}]
            ),
            deployment(),
            False,
        ),
        (inf.MODIFIED, bumped(job(("Complete", "True"))), job(), True),
        (inf.MODIFIED, bumped(job(("Failed", "True"))), job(), True),
        (inf.MODIFIED, bumped(job(active=1)), job(), False),
        # a db-purge run ends: it leaves the CronJob's active runs (success or failure)
        (inf.MODIFIED, bumped(cronjob(succeeded="t1")), cronjob(("run-1",)), True),
        (inf.MODIFIED, bumped(cronjob()), cronjob(("run-1",)), True),
        (
            inf.MODIFIED,
            bumped(cronjob(("run-1",)), ("status", "lastScheduleTime"), "t2"),
            cronjob(("run-1",)),
            False,
        ),
        (inf.MODIFIED, bumped(route("True")), route(None), True),
        (inf.MODIFIED, bumped(route("True", 2)), route("True", 1), True),
    ],
)
def test_dependent_predicate_and_readiness(event, new, old, wanted):
    compact_new = None if new is None else ctl.compact_dependent(new)
    compact_old = None if old is None else ctl.compact_dependent(old)
    assert ctl.dependent_wants(event, compact_new, compact_old) is wanted


def mounting(secret: str | None, resource_version: str = "5") -> dict:
    """A compact Deployment of the Glance ``glance`` mounting backends Secret ``secret``."""
    obj = deployment()
    obj["metadata"]["resourceVersion"] = resource_version
    if secret is not None:
        obj["spec"]["template"] = {
            "spec": {"volumes": [{"name": "backends", "secret": {"secretName": secret}}]}
        }
    return ctl.compact_dependent(obj)


@pytest.mark.parametrize(
    ("event", "new", "old", "wanted"),
    [
        (inf.ADDED, mounting("glance-backends-1"), None, True),
        (inf.ADDED, mounting(None), None, False),  # mounts no backends Secret
        (inf.MODIFIED, mounting("glance-backends-2", "6"), mounting("glance-backends-1"), True),
        (inf.MODIFIED, mounting("glance-backends-1", "6"), mounting("glance-backends-1"), False),
        (inf.MODIFIED, mounting(None, "6"), mounting("glance-backends-1"), True),
        (inf.DELETED, None, mounting("glance-backends-1"), True),
        (inf.DELETED, None, mounting(None), False),
    ],
)
def test_a_deployment_wakes_the_backends_when_its_backends_secret_changes(event, new, old, wanted):
    assert ctl.mount_change(event, new, old) is wanted


def test_the_children_of_an_owner_are_its_backends_in_its_namespace():
    elsewhere = backend()
    elsewhere["metadata"]["namespace"] = "other"
    second = backend()
    second["metadata"]["name"] = "s3-b"
    children = [backend(), backend(parent="another"), elsewhere, second, glance()]
    assert ctl.child_keys(KEY, WATCHED, children) == [
        ObjectKey(GROUP, "GlanceBackend", "openstack", "s3"),
        ObjectKey(GROUP, "GlanceBackend", "openstack", "s3-b"),
    ]
    assert ctl.child_keys(KEY, {(GROUP, "Glance"): GLANCE_WATCH}, children) == []


@pytest.mark.parametrize(
    ("requeue", "reason"),
    [
        (ctl.ERROR, ctl.WOKEN_BY_BACKOFF),
        (ctl.Requeue(ctl.AFTER, 10, "requeue_after"), ctl.WOKEN_BY_REQUEUE_AFTER),
        (ctl.Requeue(ctl.FORGET, 36000, "success"), ctl.WOKEN_BY_PERIOD),
    ],
)
def test_a_requeue_names_why_the_key_comes_back(requeue, reason):
    assert ctl.requeue_reason(requeue) == reason


@pytest.mark.parametrize(
    ("requeue", "priority"),
    [
        (ctl.ERROR, HIGH_PRIORITY),  # a retry
        (ctl.Requeue(ctl.RATE_LIMITED, None, "requeue"), HIGH_PRIORITY),  # requeue_after: 0
        (ctl.Requeue(ctl.AFTER, 10, "requeue_after"), LOW_PRIORITY),
        (ctl.Requeue(ctl.FORGET, 36000, "success"), LOW_PRIORITY),
    ],
)
def test_a_look_again_that_no_change_asked_for_waits_behind_events(requeue, priority):
    assert ctl.requeue_priority(requeue) == priority


def test_an_event_reason_names_the_event_the_kind_and_the_relation():
    assert ctl.event_reason("Glance", inf.MODIFIED) == "MODIFIED Glance"
    assert (
        ctl.event_reason("Job", inf.MODIFIED, "dependent", ctl.READINESS)
        == "dependent MODIFIED Job readiness"
    )


def test_a_compact_dependent_keeps_no_data():
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "openstack", "resourceVersion": "1"},
        "data": {"password": "c2VjcmV0"},
    }
    compact = ctl.compact_dependent(secret)
    assert "c2VjcmV0" not in repr(compact)
    assert set(compact) == {"apiVersion", "kind", "metadata", "digest", "readiness"}


def test_a_dependent_wakes_its_controlling_owner_only():
    assert ctl.owner_keys(deployment(), WATCHED) == [KEY]
    not_controller = deployment()
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    assert ctl.owner_keys(not_controller, WATCHED) == []
    foreign = deployment()
    foreign["metadata"]["ownerReferences"][0].update(apiVersion="apps/v1", kind="ReplicaSet")
    assert ctl.owner_keys(foreign, WATCHED) == []
    quiet = {
        **WATCHED,
        (GROUP, "Glance"): dataclasses.replace(GLANCE_WATCH, watch_dependent_resources=False),
    }
    assert ctl.owner_keys(deployment(), quiet) == []


def test_the_dependent_kinds_are_what_a_glance_pass_writes():
    kinds = ctl.dependent_kinds([GLANCE_WATCH])
    assert ("apps/v1", "Deployment") in kinds and ("batch/v1", "Job") in kinds
    assert ("v1", "Secret") in kinds and ("gateway.networking.k8s.io/v1", "HTTPRoute") in kinds
    assert len(kinds) == len(set(kinds))
    blacklisted = dataclasses.replace(
        GLANCE_WATCH, blacklist=(GroupVersionKind("", "v1", "Secret"),)
    )
    assert ("v1", "Secret") not in ctl.dependent_kinds(
        [blacklisted, dataclasses.replace(BACKEND_WATCH, watch_dependent_resources=False)]
    )
    assert (
        ctl.dependent_kinds([dataclasses.replace(GLANCE_WATCH, watch_dependent_resources=False)])
        == []
    )


# -- the finalizer ---------------------------------------------------------------------------

DELETING = "2026-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("watch", "meta", "step"),
    [
        (GLANCE_WATCH, {}, ctl.ADD_FINALIZER),
        (GLANCE_WATCH, {"finalizers": [FINALIZER]}, ctl.RUN),
        (GLANCE_WATCH, {"finalizers": [FINALIZER], "deletionTimestamp": DELETING}, ctl.FINALIZE),
        (GLANCE_WATCH, {"finalizers": ["other"], "deletionTimestamp": DELETING}, ctl.SKIP),
        (BACKEND_WATCH, {}, ctl.RUN),
        (BACKEND_WATCH, {"finalizers": ["other"], "deletionTimestamp": DELETING}, ctl.SKIP),
    ],
)
def test_how_a_pass_begins(watch, meta, step):
    assert ctl.first_step(watch, glance(**meta)) == step


def test_finalizer_patches_carry_the_resource_version():
    assert ctl.finalizer_patch(glance(finalizers=["other"]), FINALIZER, add=True) == {
        "metadata": {"finalizers": ["other", FINALIZER], "resourceVersion": "10"}
    }
    assert ctl.finalizer_patch(glance(finalizers=["other", FINALIZER]), FINALIZER, add=False) == {
        "metadata": {"finalizers": ["other"], "resourceVersion": "10"}
    }
    assert ctl.finalizer_patch(glance(finalizers=[FINALIZER]), FINALIZER, add=True) is None
    assert ctl.finalizer_patch(glance(), FINALIZER, add=False) is None


# -- what follows a pass ------------------------------------------------------------------------

STATS = PlaybookStats(ok=3)


@pytest.mark.parametrize(
    ("outcome", "period", "expected"),
    [
        (RunOutcome(STATS, (), None), 36000.0, ctl.Requeue(ctl.FORGET, 36000.0, RESULT_SUCCESS)),
        (RunOutcome(STATS, (), None), 0.0, ctl.Requeue(ctl.FORGET, None, RESULT_SUCCESS)),
        (RunOutcome(STATS, (), 30.0), 36000.0, ctl.Requeue(ctl.AFTER, 30.0, RESULT_REQUEUE_AFTER)),
        (
            RunOutcome(STATS, (), None, requeue=True),
            0.0,
            ctl.Requeue(ctl.RATE_LIMITED, None, RESULT_REQUEUE),
        ),
        (
            RunOutcome(STATS, (), 5.0, requeue=True),
            0.0,
            ctl.Requeue(ctl.RATE_LIMITED, None, RESULT_REQUEUE),
        ),
        (
            RunOutcome(STATS, (FailedTask("t", "a", "localhost", "boom"),), 30.0),
            0.0,
            ctl.Requeue(ctl.RATE_LIMITED, None, RESULT_ERROR),
        ),
        (
            RunOutcome(None, (), None),
            0.0,
            ctl.Requeue(ctl.RATE_LIMITED, None, RESULT_ERROR),
        ),  # killed
    ],
)
def test_what_follows_a_pass(outcome, period, expected):
    assert ctl.after_pass(outcome, period) == expected


def recap(requeue_after: Any) -> dict:
    return {
        "event": "playbook_on_stats",
        "event_data": {"ok": {"localhost": 1}, "artifact_data": {"requeue_after": requeue_after}},
    }


def test_requeue_after_zero_asks_to_come_back_at_once():
    outcome = run_outcome([recap(0)])
    assert outcome.requeue and outcome.requeue_after is None and outcome.succeeded
    assert not run_outcome([recap(30)]).requeue
    assert ctl.after_pass(outcome, 0.0).how == ctl.RATE_LIMITED


def test_backoff_doubles_from_5ms_to_the_30s_cap_and_a_success_resets_it():
    assert parse_settings([], environ={}, concurrency=1).max_backoff == 30.0
    clock = ManualClock()
    queue = WorkQueue(clock=clock, rate_limiter=default_rate_limiter(clock, cap=30.0))
    limiter = queue.rate_limiter.limiters[0]
    for _ in range(15):
        Manager._requeue(queue, KEY, ctl.ERROR)
    assert queue.retries(KEY) == 15
    assert limiter.when(KEY) == 30.0  # 5 ms * 2**15 is far beyond the cap
    Manager._requeue(queue, KEY, ctl.Requeue(ctl.AFTER, 10.0, RESULT_REQUEUE_AFTER))
    assert queue.retries(KEY) == 0
    assert limiter.when(KEY) == 0.005


def test_a_requeue_request_comes_back_after_its_delay_and_the_earliest_wins():
    clock = ManualClock()
    queue = WorkQueue(clock=clock, rate_limiter=default_rate_limiter(clock, cap=30.0))
    Manager._requeue(queue, KEY, ctl.Requeue(ctl.FORGET, 36000.0, RESULT_SUCCESS))
    Manager._requeue(queue, KEY, ctl.Requeue(ctl.AFTER, 10.0, RESULT_REQUEUE_AFTER))
    assert queue.get(timeout=0) is None
    clock.advance(10.0)
    assert queue.get(timeout=0) == KEY


# -- a reconcile, with a stub API and a stub playbook ----------------------------------------


class StubClient:
    """``get``/``patch`` over a dict of objects, recording the patches."""

    def __init__(self, *objects: dict) -> None:
        self.objects = {
            (o["metadata"]["namespace"], o["metadata"]["name"]): copy.deepcopy(o) for o in objects
        }
        self.patches: list[dict] = []
        self.conflicts = 0
        self.fail_reads = False

    def get(self, api_version, kind, name, namespace=None):
        if self.fail_reads:
            raise ApiError(500, {"message": "etcd is away"}, "GET", "/x")
        obj = self.objects.get((namespace, name))
        return copy.deepcopy(obj) if obj else None

    def patch(self, api_version, kind, name, namespace, patch):
        self.patches.append(copy.deepcopy(patch))
        live = self.objects.get((namespace, name))
        if live is None:
            raise ApiError(404, {"reason": "NotFound"}, "PATCH", "/x")
        if self.conflicts:
            self.conflicts -= 1
            live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
            raise ApiError(409, {"reason": "Conflict"}, "PATCH", "/x")
        if patch["metadata"]["resourceVersion"] != live["metadata"]["resourceVersion"]:
            raise ApiError(409, {"reason": "Conflict"}, "PATCH", "/x")
        live["metadata"]["finalizers"] = patch["metadata"]["finalizers"]
        live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
        if live["metadata"].get("deletionTimestamp") and not live["metadata"]["finalizers"]:
            del self.objects[(namespace, name)]
        return copy.deepcopy(live)


@dataclasses.dataclass
class StubRun:
    outcome: RunOutcome
    status: str = "successful"
    rc: int = 0
    ident: str = "1"
    seconds: float = 0.1
    cancelled: bool = False
    stdout_tail: str = ""


class StubPlaybook:
    """Records the objects it was run with; ``effect(obj)`` plays the playbook's writes."""

    def __init__(self, outcome: RunOutcome | None = None, effect=None, cancelled: bool = False):
        self.outcome = outcome or RunOutcome(STATS, (), None)
        self.effect = effect
        self.cancelled = cancelled
        self.runs: list[dict] = []
        self.forgotten: list[ObjectKey] = []

    def run(self, watch, key, obj, cancel):
        self.runs.append(copy.deepcopy(obj))
        if self.effect:
            self.effect(obj)
        return StubRun(self.outcome, cancelled=self.cancelled)

    def forget(self, watch, key):
        self.forgotten.append(key)


def reconcile(client, playbook, watch=GLANCE_WATCH, key=KEY):
    return Reconciler(watch, client, playbook, 36000.0).reconcile(key, threading.Event())


def test_a_glance_without_the_finalizer_gets_it_before_its_pass():
    client, playbook = StubClient(glance()), StubPlaybook(RunOutcome(STATS, (), 30.0))
    result = reconcile(client, playbook)
    assert client.patches == [{"metadata": {"finalizers": [FINALIZER], "resourceVersion": "10"}}]
    [ran] = playbook.runs
    assert ran["metadata"]["finalizers"] == [FINALIZER]  # the pass sees the updated object
    assert ran["metadata"]["resourceVersion"] == "11"
    assert result.requeue == ctl.Requeue(ctl.AFTER, 30.0, RESULT_REQUEUE_AFTER)


def test_a_refused_finalizer_write_is_an_error_and_no_pass_runs():
    client, playbook = StubClient(glance()), StubPlaybook()
    client.conflicts = 1
    assert reconcile(client, playbook).requeue == ctl.ERROR
    assert playbook.runs == []


def test_a_gone_object_is_done_and_forgotten():
    playbook = StubPlaybook()
    result = reconcile(StubClient(), playbook)
    assert result.requeue == ctl.DONE and not result.ran_pass
    assert playbook.runs == [] and playbook.forgotten == [KEY]


def test_an_unreadable_object_is_an_error():
    client = StubClient(glance())
    client.fail_reads = True
    assert reconcile(client, StubPlaybook()).requeue == ctl.ERROR


def test_terminating_without_our_finalizer_runs_nothing():
    playbook = StubPlaybook()
    result = reconcile(
        StubClient(glance(deletionTimestamp=DELETING, finalizers=["other"])), playbook
    )
    assert result.requeue == ctl.DONE and playbook.runs == []


def deleting() -> dict:
    return glance(deletionTimestamp=DELETING, finalizers=[FINALIZER, "other"])


def test_the_deletion_pass_runs_then_the_runner_releases_the_finalizer():
    client, playbook = StubClient(deleting()), StubPlaybook()
    result = reconcile(client, playbook)
    assert playbook.runs[0]["metadata"]["deletionTimestamp"] == DELETING
    assert client.patches == [{"metadata": {"finalizers": ["other"], "resourceVersion": "10"}}]
    assert result.requeue == ctl.Requeue(ctl.FORGET, None, RESULT_SUCCESS)  # no periodic pass


ASKS_NOTHING = {"event": "playbook_on_stats", "event_data": {"ok": {"localhost": 1}}}
"""The recap of a pass that set no ``requeue_after``."""


def test_a_deletion_pass_that_asks_to_come_back_keeps_the_finalizer():
    """A managed-database Glance's deletion pass (FinalizingDatabase) asks for 30 s: it is
    not done, so the runner leaves the finalizer, forgets nothing, and comes back then."""
    released: list[ObjectKey] = []
    client = StubClient(deleting())
    finalizing = run_outcome([recap(30)])  # the pass's set_stats, as the playbook says it
    result = Reconciler(
        GLANCE_WATCH, client, StubPlaybook(finalizing), 36000.0, on_released=released.append
    ).reconcile(KEY, threading.Event())
    assert client.patches == []
    assert client.objects[("openstack", "glance")]["metadata"]["finalizers"] == [
        FINALIZER,
        "other",
    ]
    assert released == []  # the metric series stay while the Glance does
    assert result.ran_pass
    assert result.requeue == ctl.Requeue(ctl.AFTER, 30.0, RESULT_REQUEUE_AFTER)


def test_a_deletion_pass_that_asks_to_come_back_at_once_keeps_the_finalizer():
    client = StubClient(deleting())
    result = reconcile(client, StubPlaybook(run_outcome([recap(0)])))
    assert client.patches == []
    assert result.requeue == ctl.Requeue(ctl.RATE_LIMITED, None, RESULT_REQUEUE)


def test_a_deletion_pass_that_asks_nothing_is_done_and_the_finalizer_released():
    released: list[ObjectKey] = []
    client = StubClient(deleting())
    result = Reconciler(
        GLANCE_WATCH,
        client,
        StubPlaybook(run_outcome([ASKS_NOTHING])),
        36000.0,
        on_released=released.append,
    ).reconcile(KEY, threading.Event())
    assert client.patches == [{"metadata": {"finalizers": ["other"], "resourceVersion": "10"}}]
    assert released == [KEY]
    assert result.requeue == ctl.Requeue(ctl.FORGET, None, RESULT_SUCCESS)


def test_the_deletion_pass_that_asked_to_wait_releases_on_the_pass_that_asks_nothing():
    """Waiting, then done: the first deletion pass asks for 30 s and keeps the finalizer;
    the next asks nothing and the runner releases it (the object goes)."""
    client = StubClient(glance(deletionTimestamp=DELETING, finalizers=[FINALIZER]))
    waiting = reconcile(client, StubPlaybook(run_outcome([recap(30)])))
    assert waiting.requeue.how == ctl.AFTER and client.objects
    done = reconcile(client, StubPlaybook(run_outcome([ASKS_NOTHING])))
    assert done.requeue.result == RESULT_SUCCESS
    assert client.objects == {}  # the last finalizer gone: the object with it


def test_the_release_tolerates_a_playbook_that_released_it_already():
    client = StubClient(deleting())

    def release(obj):  # the playbook removes the finalizer itself
        meta = client.objects[("openstack", "glance")]["metadata"]
        meta["finalizers"] = ["other"]
        meta["resourceVersion"] = "11"

    reconcile(client, StubPlaybook(effect=release))
    assert client.patches == []


def test_the_release_tolerates_an_object_already_gone():
    client = StubClient(glance(deletionTimestamp=DELETING, finalizers=[FINALIZER]))
    playbook = StubPlaybook(effect=lambda obj: client.objects.clear())
    result = reconcile(client, playbook)
    assert result.requeue.result == RESULT_SUCCESS and client.patches == []
    assert playbook.forgotten == [KEY]


def test_the_release_retries_a_conflict_with_a_fresh_read():
    client = StubClient(deleting())
    client.conflicts = 1
    result = reconcile(client, StubPlaybook())
    assert result.requeue.result == RESULT_SUCCESS
    assert [p["metadata"]["resourceVersion"] for p in client.patches] == ["10", "11"]
    assert client.objects[("openstack", "glance")]["metadata"]["finalizers"] == ["other"]


def test_a_failed_deletion_pass_keeps_the_finalizer():
    failed = RunOutcome(STATS, (FailedTask("t", "a", "localhost", "boom"),), None)
    client = StubClient(deleting())
    result = reconcile(client, StubPlaybook(failed))
    assert result.requeue == ctl.ERROR and client.patches == []


def test_an_abandoned_pass_leaves_the_queue_alone():
    result = reconcile(StubClient(glance(finalizers=[FINALIZER])), StubPlaybook(cancelled=True))
    assert result.abandoned and result.requeue is None


# -- the wiring: events into the queues -----------------------------------------------------------


def manager(tmp_path) -> Manager:
    settings = parse_settings(
        ["--watches-file", str(ROOT / "watches.yaml"), "--runner-dir", str(tmp_path)],
        environ={},
        concurrency=1,
    )
    return Manager(settings, StubClient(), (GLANCE_WATCH, BACKEND_WATCH), environ={})


def drain(manager: Manager, kind: str) -> list[ObjectKey]:
    queue = manager.controllers[(GROUP, kind)].queue
    out = []
    while (key := queue.get(timeout=0)) is not None:
        out.append(key)
        queue.done(key)
    return out


def test_events_reach_the_right_queues(tmp_path):
    m = manager(tmp_path)
    m._primary_handler(BACKEND_WATCH)(inf.ADDED, backend(), None)
    assert drain(m, "GlanceBackend") == [ObjectKey(GROUP, "GlanceBackend", "openstack", "s3")]
    assert drain(m, "Glance") == [KEY]
    m._dependent_handler(
        inf.MODIFIED,
        ctl.compact_dependent(bumped(deployment(**READY))),
        ctl.compact_dependent(deployment()),
    )
    m._dependent_handler(
        inf.MODIFIED,
        ctl.compact_dependent(bumped(deployment(**READY))),
        ctl.compact_dependent(deployment()),
    )
    assert drain(m, "Glance") == [KEY]  # coalesced
    m._primary_handler(GLANCE_WATCH)(inf.MODIFIED, glance(resourceVersion="12"), glance())
    assert drain(m, "Glance") == []


class Cached:
    """An informer's cache, as the manager reads it."""

    def __init__(self, *objects: dict) -> None:
        self.objects = list(objects)

    def items(self) -> list[dict]:
        return list(self.objects)


def test_a_deployment_mounting_a_new_backends_secret_wakes_its_glances_backends(tmp_path):
    m = manager(tmp_path)
    other = backend(parent="another")
    other["metadata"]["name"] = "other"
    m.child_informers.append(Cached(backend(), other))
    m._dependent_handler(inf.ADDED, mounting("glance-backends-1"), None)
    assert drain(m, "GlanceBackend") == [ObjectKey(GROUP, "GlanceBackend", "openstack", "s3")]
    assert drain(m, "Glance") == []  # a create wakes no owner
    m._dependent_handler(
        inf.MODIFIED, mounting("glance-backends-2", "6"), mounting("glance-backends-1")
    )
    assert drain(m, "GlanceBackend") == [ObjectKey(GROUP, "GlanceBackend", "openstack", "s3")]
    assert drain(m, "Glance") == [KEY]  # the owner sees its spec change too
    m._dependent_handler(
        inf.MODIFIED,
        ctl.compact_dependent(bumped(deployment(**READY))),
        ctl.compact_dependent(deployment()),
    )
    assert drain(m, "GlanceBackend") == []  # readiness: the owner's business
    assert drain(m, "Glance") == [KEY]


def test_a_pass_is_told_what_woke_it(tmp_path):
    m = manager(tmp_path)
    m._primary_handler(BACKEND_WATCH)(inf.ADDED, backend(), None)
    m._dependent_handler(
        inf.MODIFIED,
        ctl.compact_dependent(bumped(deployment(**READY))),
        ctl.compact_dependent(deployment()),
    )
    queue = m.controllers[(GROUP, "Glance")].queue
    key = queue.get(timeout=0)
    assert queue.reasons(key) == (
        "child ADDED GlanceBackend",
        "dependent MODIFIED Deployment readiness",
    )


def test_the_glance_handler_times_upgrade_phases_and_still_enqueues(tmp_path):
    m = manager(tmp_path)
    clock = iter([0.0, 100.0, 160.0, 200.0])
    m.upgrade_phases.clock = lambda: next(clock)

    class Synced:
        synced = threading.Event()

    Synced.synced.set()
    handle = m._glance_handler(GLANCE_WATCH, Synced())
    before = glance(resourceVersion="11")
    expanding = glance(resourceVersion="12", generation=2)
    expanding["status"] = {"installedRelease": "2026.1", "targetRelease": "2026.2"}
    before["status"] = dict(expanding["status"])
    expanding["status"]["upgradePhase"] = "Expanding"
    migrating = glance(resourceVersion="13", generation=2)
    migrating["status"] = dict(expanding["status"], upgradePhase="Migrating")
    m.upgrade_phases.seen(inf.ADDED, before, None)  # known before the upgrade began
    handle(inf.MODIFIED, expanding, before)
    assert drain(m, "Glance") == [KEY]  # the spec change still enqueues
    handle(inf.MODIFIED, migrating, expanding)
    phase_sum = m.metrics.registry.get_sample_value(
        "glance_operator_upgrade_phase_duration_seconds_sum",
        {"glance": KEY.name, "namespace": KEY.namespace, "phase": "Expanding"},
    )
    assert phase_sum == 60
    # The same events show the Glance's conditions (none yet: not Ready).
    ready = {"glance": KEY.name, "namespace": KEY.namespace}
    assert m.metrics.registry.get_sample_value("glance_operator_glance_ready", ready) == 0
    ready_now = glance(resourceVersion="14", generation=2)
    ready_now["status"] = dict(
        migrating["status"], conditions=[{"type": "Ready", "status": "True"}]
    )
    handle(inf.MODIFIED, ready_now, migrating)
    assert m.metrics.registry.get_sample_value("glance_operator_glance_ready", ready) == 1


def test_a_standby_is_ready_and_a_leader_only_once_synced(tmp_path):
    m = manager(tmp_path)
    assert not m.ready()
    m.started.set()
    assert m.ready()  # a standby: leader election is on by default
    m.leading.set()
    assert not m.ready()  # the leader's informers have not synced


def test_the_passes_of_all_kinds_share_the_process_wide_slots(tmp_path):
    from runner.manager import _SlotExecutor

    m = manager(tmp_path)
    assert m.slots.slots == 1  # --max-concurrent-reconciles, for both controllers together
    running, most = [], []
    lock = threading.Lock()

    class Slow(StubPlaybook):
        def run(self, watch, key, obj, cancel):
            with lock:
                running.append(key)
                most.append(len(running))
            threading.Event().wait(0.05)
            with lock:
                running.remove(key)
            return StubRun(self.outcome)

    counter = prometheus_client.Counter(
        "test_runs_total",
        "runs",
        ["controller", "status"],
        registry=prometheus_client.CollectorRegistry(),
    )
    glances = _SlotExecutor(Slow(), m.slots, counter, "glance")
    backends = _SlotExecutor(Slow(), m.slots, counter, "glancebackend")
    threads = [
        threading.Thread(
            target=executor.run,
            args=(GLANCE_WATCH, KEY._replace(name=str(i)), {}, threading.Event()),
        )
        for i, executor in enumerate([glances, backends, glances, backends])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert max(most) == 1 and len(most) == 4

    cancel = threading.Event()
    assert m.slots.acquire(HIGH_PRIORITY, threading.Event())  # every slot taken: a pass
    # waits; cancelling abandons it
    cancel.set()
    run = glances.run(GLANCE_WATCH, KEY, {}, cancel)
    m.slots.release()
    assert run.cancelled and run.status == "canceled"


def test_a_look_again_is_queued_low_and_a_retry_high_and_passes_wait_at_that_priority(
    tmp_path,
):
    m = manager(tmp_path)
    controller = m.controllers[(GROUP, "Glance")]
    queue, calls = controller.queue, []
    queue.add_after = lambda key, seconds, reason="", priority=HIGH_PRIORITY: calls.append(
        (key, reason, priority)
    )
    m._requeue(queue, KEY, ctl.Requeue(ctl.AFTER, 10, "requeue_after"))
    m._requeue(queue, KEY, ctl.Requeue(ctl.FORGET, 36000, "success"))
    m._requeue(queue, KEY, ctl.ERROR)
    assert calls == [
        (KEY, ctl.WOKEN_BY_REQUEUE_AFTER, LOW_PRIORITY),
        (KEY, ctl.WOKEN_BY_PERIOD, LOW_PRIORITY),
        (KEY, ctl.WOKEN_BY_BACKOFF, HIGH_PRIORITY),
    ]
    # The pass asks for its slot at the priority its key was handed out with.
    assert controller.reconciler.executor.priority_of == queue.priority


# -- target clusters: the registration Secrets -----------------------------------------------


def registration(name: str = "cluster-a", data: str = "a2luZDogQ29uZmln", **meta: Any) -> dict:
    """A target cluster's kubeconfig Secret in the clusters namespace, as the API sends it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": name,
            "namespace": "c5c3-clusters",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "labels": {ctl.REGISTRATION_LABEL: "true"},
            **meta,
        },
        "data": {"kubeconfig": data},
    }


def targeting(cluster: str | None, name: str = "glance", namespace: str = "openstack") -> dict:
    obj = glance(name=name, namespace=namespace)
    if cluster is not None:
        obj["spec"]["targetClusterRef"] = {"name": cluster}
    return obj


def test_the_registrations_are_watched_in_the_clusters_namespace_unless_off_or_unwatched():
    assert ctl.registrations_namespace("c5c3-clusters", (), WATCHED) == "c5c3-clusters"
    assert ctl.registrations_namespace("", (), WATCHED) is None  # --clusters-namespace=
    # The namespace-scoped install watches some namespaces only; its Role reaches no other.
    assert ctl.registrations_namespace("c5c3-clusters", ("openstack",), WATCHED) is None
    assert (
        ctl.registrations_namespace("c5c3-clusters", ("openstack", "c5c3-clusters"), WATCHED)
        == "c5c3-clusters"
    )
    backends_only = {k: w for k, w in WATCHED.items() if k[1] == "GlanceBackend"}
    assert ctl.registrations_namespace("c5c3-clusters", (), backends_only) is None


def test_a_registration_is_cached_without_its_kubeconfig():
    entry = ctl.compact_registration(registration())
    assert entry["metadata"] == {
        "name": "cluster-a",
        "namespace": "c5c3-clusters",
        "uid": "uid-cluster-a",
        "resourceVersion": "7",
    }
    assert "a2luZDogQ29uZmln" not in repr(entry) and "data" not in entry


@pytest.mark.parametrize(
    ("event", "new", "old", "wanted"),
    [
        (inf.ADDED, registration(), None, True),
        (inf.DELETED, None, registration(), True),  # deleted, or its label removed
        (inf.MODIFIED, registration(data="bmV3", resourceVersion="8"), registration(), True),
        (inf.MODIFIED, registration(uid="other", resourceVersion="8"), registration(), True),
        (
            inf.MODIFIED,
            registration(resourceVersion="8", annotations={"a": "b"}),
            registration(),
            False,
        ),
        (inf.MODIFIED, registration(), None, True),
    ],
)
def test_what_a_registration_change_is(event, new, old, wanted):
    compact = [ctl.compact_registration(o) if o else None for o in (new, old)]
    assert ctl.registration_change(event, *compact) is wanted


def test_a_cluster_wakes_the_glances_that_name_it_in_every_namespace():
    glances = [
        targeting("cluster-a"),
        targeting("cluster-a", name="second", namespace="tenant"),
        targeting("cluster-b", name="elsewhere"),
        targeting(None, name="local"),
        backend(),  # a backend names no cluster of its own
    ]
    assert ctl.target_cluster_keys("cluster-a", WATCHED, glances) == [
        KEY,
        ObjectKey(GROUP, "Glance", "tenant", "second"),
    ]
    assert ctl.target_cluster_keys("cluster-c", WATCHED, glances) == []
    assert ctl.target_cluster_keys("", WATCHED, [targeting("")]) == []


def test_a_registration_event_wakes_exactly_the_glances_naming_its_cluster(tmp_path):
    m = manager(tmp_path)
    m.referring_informers.append(
        Cached(
            targeting("cluster-a"),
            targeting("cluster-a", name="second", namespace="tenant"),
            targeting("cluster-b", name="elsewhere"),
            targeting(None, name="local"),
        )
    )
    both = [KEY, ObjectKey(GROUP, "Glance", "tenant", "second")]
    created = ctl.compact_registration(registration())
    m._registration_handler(inf.ADDED, created, None)
    assert sorted(drain(m, "Glance")) == sorted(both)
    assert drain(m, "GlanceBackend") == []
    rotated = ctl.compact_registration(registration(data="bmV3", resourceVersion="8"))
    m._registration_handler(inf.MODIFIED, rotated, created)
    queue = m.controllers[(GROUP, "Glance")].queue
    key = queue.get(timeout=0)
    assert queue.reasons(key) == ("target cluster's MODIFIED Secret",)
    queue.done(key)
    drain(m, "Glance")
    relabelled = ctl.compact_registration(registration(data="bmV3", resourceVersion="9"))
    m._registration_handler(inf.MODIFIED, relabelled, rotated)  # no data change
    assert drain(m, "Glance") == []
    m._registration_handler(inf.DELETED, None, relabelled)
    assert sorted(drain(m, "Glance")) == sorted(both)
    other = ctl.compact_registration(registration("cluster-c"))
    m._registration_handler(inf.ADDED, other, None)
    assert drain(m, "Glance") == []


def test_a_registration_event_wakes_the_backends_of_the_glances_naming_its_cluster(tmp_path):
    m = manager(tmp_path)
    m.referring_informers.append(
        Cached(targeting("cluster-a"), targeting("cluster-b", name="elsewhere"))
    )
    elsewhere = backend(parent="elsewhere")
    elsewhere["metadata"]["name"] = "s3-elsewhere"
    m.child_informers.append(Cached(backend(), elsewhere, backend(parent="gone")))
    m._registration_handler(inf.DELETED, None, ctl.compact_registration(registration()))
    queue = m.controllers[(GROUP, "GlanceBackend")].queue
    key = queue.get(timeout=0)
    assert key == ObjectKey(GROUP, "GlanceBackend", "openstack", "s3")
    assert queue.reasons(key) == ("parent's target cluster's DELETED Secret",)
    queue.done(key)
    assert drain(m, "GlanceBackend") == []
    assert drain(m, "Glance") == [KEY]
    # A cluster no Glance names wakes no backend either.
    m._registration_handler(inf.ADDED, ctl.compact_registration(registration("cluster-z")), None)
    assert drain(m, "GlanceBackend") == [] and drain(m, "Glance") == []


def test_the_manager_watches_registrations_only_where_it_may(tmp_path):
    def started(*argv: str) -> Manager:
        settings = parse_settings(
            ["--watches-file", str(ROOT / "watches.yaml"), "--runner-dir", str(tmp_path), *argv],
            environ={},
            concurrency=1,
        )
        m = Manager(settings, StubClient(), (GLANCE_WATCH, BACKEND_WATCH), environ={})
        m._watch_registrations()
        return m

    informer = started().registrations
    assert (informer.namespace, informer.kind, informer.api_version) == (
        "c5c3-clusters",
        "Secret",
        "v1",
    )
    assert informer.label_selector == "sigs.k8s.io/multicluster-runtime-kubeconfig=true"
    assert informer.transform is ctl.compact_registration
    assert started("--clusters-namespace=").registrations is None
    assert started("--watch-namespace=openstack").registrations is None
    assert started("--watch-namespace=openstack,c5c3-clusters").registrations is not None
    # Every pass gets the setting, empty or not.
    assert started().executor.runner_vars == {"clusters_namespace": "c5c3-clusters"}
    assert started("--clusters-namespace=").executor.runner_vars == {"clusters_namespace": ""}


def test_a_mariadb_resource_turning_ready_is_a_readiness_change():
    database = {"apiVersion": "k8s.mariadb.com/v1alpha1", "kind": "Database", "status": {}}
    ready = copy.deepcopy(database)
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert (ctl.readiness(database), ctl.readiness(ready)) == (False, True)
    assert ("k8s.mariadb.com/v1alpha1", "Grant") in ctl.DEPENDENT_KINDS


# -- the MariaDB of a managed database -------------------------------------------------------


def mariadb(
    name: str = "mariadb", ready: bool | None = None, namespace: str = "openstack", **meta: Any
) -> dict:
    """A mariadb-operator MariaDB, as the API sends it (``ready`` None: no status yet)."""
    obj = {
        "apiVersion": ctl.DATABASE_CLUSTER_API,
        "kind": "MariaDB",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            **meta,
        },
        "spec": {"replicas": 3, "storage": {"size": "1Gi"}},
    }
    if ready is not None:
        status = "True" if ready else "False"
        obj["status"] = {"conditions": [{"type": "Ready", "status": status}]}
    return obj


def managed(
    cluster: str | None, name: str = "glance", namespace: str = "openstack", target: str = ""
) -> dict:
    obj = targeting(target or None, name=name, namespace=namespace)
    obj["spec"]["database"] = {"clusterRef": {"name": cluster}} if cluster else {"host": "db"}
    return obj


def test_a_mariadb_is_cached_as_its_identity_and_readiness():
    entry = ctl.compact_readiness(mariadb(ready=True))
    assert entry == {
        "apiVersion": "k8s.mariadb.com/v1alpha1",
        "kind": "MariaDB",
        "metadata": {
            "name": "mariadb",
            "namespace": "openstack",
            "uid": "uid-mariadb",
            "resourceVersion": "7",
        },
        "readiness": True,
    }
    assert ctl.compact_readiness(mariadb())["readiness"] is False


@pytest.mark.parametrize(
    ("event", "new", "old", "wanted"),
    [
        (inf.ADDED, mariadb(), None, inf.ADDED),
        (inf.DELETED, None, mariadb(ready=True), inf.DELETED),
        (inf.MODIFIED, mariadb(ready=True, resourceVersion="8"), mariadb(), ctl.READINESS),
        (inf.MODIFIED, mariadb(ready=False, resourceVersion="8"), mariadb(ready=True), "readiness"),
        (inf.MODIFIED, mariadb(uid="again", resourceVersion="9"), mariadb(), ctl.READINESS),
        # Not Ready either way (no status, then Ready=False), a label: nothing the gate reads.
        (inf.MODIFIED, mariadb(ready=False, resourceVersion="8"), mariadb(), None),
        (inf.MODIFIED, mariadb(ready=True, labels={"a": "b"}), mariadb(ready=True), None),
    ],
)
def test_what_a_mariadb_change_is(event, new, old, wanted):
    compact = [ctl.compact_readiness(o) if o else None for o in (new, old)]
    assert ctl.readiness_change(event, *compact) == wanted


def test_a_mariadb_wakes_the_glances_of_its_namespace_that_name_it():
    glances = [
        managed("mariadb"),
        managed("mariadb", name="second"),
        managed("mariadb", name="tenant", namespace="tenant"),  # another namespace's MariaDB
        managed("other", name="other"),
        managed(None, name="brownfield"),
        managed("mariadb", name="edge", target="cluster-a"),  # its MariaDB is in the target
        backend(),
    ]
    assert ctl.database_cluster_keys(mariadb(), WATCHED, glances) == [
        KEY,
        ObjectKey(GROUP, "Glance", "openstack", "second"),
    ]
    assert ctl.database_cluster_keys(mariadb(namespace="tenant"), WATCHED, glances) == [
        ObjectKey(GROUP, "Glance", "tenant", "tenant")
    ]
    assert ctl.database_cluster_keys(mariadb("unnamed"), WATCHED, glances) == []


def test_a_mariadb_event_wakes_its_glances_with_the_reason(tmp_path):
    m = manager(tmp_path)
    m.referring_informers.append(Cached(managed("mariadb"), managed("other", name="other")))
    handler = m._gate_handler("MariaDB", ctl.DATABASE_CLUSTER, ctl.database_cluster_keys)
    queue = m.controllers[(GROUP, "Glance")].queue
    created = ctl.compact_readiness(mariadb())
    ready = ctl.compact_readiness(mariadb(ready=True, resourceVersion="8"))
    relabelled = ctl.compact_readiness(mariadb(ready=True, resourceVersion="9", labels={"a": "b"}))
    for event, new, old, reason in (
        (inf.ADDED, created, None, "database's ADDED MariaDB"),
        (inf.MODIFIED, ready, created, "database's MODIFIED MariaDB readiness"),
        (inf.DELETED, None, ready, "database's DELETED MariaDB"),
    ):
        handler(event, new, old)
        key = queue.get(timeout=0)
        assert (key, queue.reasons(key)) == (KEY, (reason,))
        queue.done(key)
        assert drain(m, "Glance") == []
    handler(inf.MODIFIED, relabelled, ready)
    assert drain(m, "Glance") == []
    assert drain(m, "GlanceBackend") == []


class ServingClient(StubClient):
    """A ``StubClient`` whose discovery answers ``serves`` from a set (or raises)."""

    def __init__(self, served: set[tuple[str, str]] | Exception) -> None:
        super().__init__()
        self.served = served

    def serves(self, api_version: str, kind: str) -> bool:
        if isinstance(self.served, Exception):
            raise self.served
        return (api_version, kind) in self.served


def test_the_manager_watches_the_gates_in_the_watched_namespaces_when_served(tmp_path):
    def informers(client, *argv: str, watches=(GLANCE_WATCH, BACKEND_WATCH)) -> list:
        settings = parse_settings(
            ["--watches-file", str(ROOT / "watches.yaml"), "--runner-dir", str(tmp_path), *argv],
            environ={},
            concurrency=1,
        )
        m = Manager(settings, client, watches, environ={})
        m._watch_gates(list(settings.watch_namespaces) or [None])
        return [(i.kind, i.namespace, i.transform) for i in m.informers]

    mariadb_only = ServingClient({(ctl.DATABASE_CLUSTER_API, "MariaDB")})
    compact = ctl.compact_readiness
    assert informers(mariadb_only) == [("MariaDB", None, compact)]
    assert informers(mariadb_only, "--watch-namespace=openstack,tenant") == [
        ("MariaDB", "openstack", compact),
        ("MariaDB", "tenant", compact),
    ]
    everything = ServingClient(
        {
            (ctl.DATABASE_CLUSTER_API, "MariaDB"),
            ("external-secrets.io/v1", "SecretStore"),
            ("external-secrets.io/v1", "ClusterSecretStore"),
        }
    )
    assert informers(everything) == [
        ("MariaDB", None, compact),
        ("SecretStore", None, compact),
        ("ClusterSecretStore", None, compact),
    ]
    # Some namespaces only: no cluster-scoped ClusterSecretStore (its Role may not list it).
    assert informers(everything, "--watch-namespace=openstack") == [
        ("MariaDB", "openstack", compact),
        ("SecretStore", "openstack", compact),
    ]
    assert informers(ServingClient(set())) == []
    assert informers(ServingClient(ApiError(503, {}, "GET", "/apis"))) == []
    assert informers(everything, watches=(BACKEND_WATCH,)) == []


# -- the Secrets and ConfigMaps a spec names -------------------------------------------------


def meta_only(kind: str, name: str, namespace: str = "openstack", rv: str = "7") -> dict:
    """A Secret or ConfigMap as a metadata informer hands it out."""
    return ctl.compact_reference(
        {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{name}",
                "resourceVersion": rv,
                "managedFields": [{"manager": "kubectl"}],
            },
        }
    )


def naming(name: str = "glance", target: str = "", **spec: Any) -> dict:
    obj = targeting(target or None, name=name)
    obj["spec"].update(
        database={"host": "db", "secretRef": {"name": f"{name}-db"}},
        serviceUser={"secretRef": {"name": f"{name}-user"}},
        **spec,
    )
    return obj


def credentials(name: str, parent: str, secret: str) -> dict:
    obj = backend(parent=parent)
    obj["metadata"]["name"] = name
    obj["spec"]["s3"] = {"credentialsSecretRef": {"name": secret}}
    return obj


def test_a_referenced_object_is_cached_as_its_identity_and_version():
    assert meta_only("Secret", "glance-db") == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "glance-db",
            "namespace": "openstack",
            "uid": "uid-glance-db",
            "resourceVersion": "7",
        },
    }


@pytest.mark.parametrize(
    ("event", "new", "old", "wanted"),
    [
        (inf.ADDED, meta_only("Secret", "a"), None, True),
        (inf.DELETED, None, meta_only("Secret", "a"), True),
        (inf.MODIFIED, meta_only("Secret", "a", rv="8"), meta_only("Secret", "a"), True),
        # A relist that finds it as it was.
        (inf.MODIFIED, meta_only("Secret", "a"), meta_only("Secret", "a"), False),
    ],
)
def test_what_a_referenced_objects_change_is(event, new, old, wanted):
    assert ctl.reference_change(event, new, old) is wanted


def test_a_referenced_object_wakes_what_reads_it():
    policy = {"configMapRef": {"name": "policy"}}
    glances = [
        naming(policyOverrides=policy),
        naming("edge", target="cluster-a", policyOverrides=policy),
        naming("other"),
    ]
    backends = [
        credentials("s3", "glance", "s3-keys"),
        credentials("edge-s3", "edge", "s3-keys"),
        credentials("orphan", "gone", "s3-keys"),
    ]
    glance_key = KEY

    def keys(kind: str, name: str, namespace: str = "openstack", watched=WATCHED) -> list:
        reference = meta_only(kind, name, namespace)
        return ctl.referenced_keys(reference, watched, glances, backends)

    def backend_key(name: str) -> ObjectKey:
        return ObjectKey(GROUP, "GlanceBackend", "openstack", name)

    assert keys("Secret", "glance-db") == [glance_key]
    assert keys("Secret", "glance-user") == [glance_key]
    assert keys("Secret", "other-db") == [ObjectKey(GROUP, "Glance", "openstack", "other")]
    assert keys("Secret", "edge-db") == []  # read in the target cluster
    # The S3 credentials: the Glance the backend is attached to, and the backends (not the
    # targeted Glance's; a backend whose parent is not there still reports it).
    assert keys("Secret", "s3-keys") == [glance_key, backend_key("s3"), backend_key("orphan")]
    assert keys("ConfigMap", "policy") == [glance_key]
    assert keys("ConfigMap", "glance-db") == []  # a ConfigMap of a Secret's name
    assert keys("Secret", "unnamed") == []
    assert keys("Secret", "glance-db", namespace="tenant") == []
    backends_only = {k: w for k, w in WATCHED.items() if k[1] == "GlanceBackend"}
    assert keys("Secret", "s3-keys", watched=backends_only) == [
        backend_key("s3"),
        backend_key("orphan"),
    ]


def test_a_referenced_objects_event_wakes_with_the_reason(tmp_path):
    m = manager(tmp_path)
    m.referring_informers.append(Cached(naming()))
    m.child_informers.append(Cached(credentials("s3", "glance", "s3-keys")))
    first = meta_only("Secret", "glance-db")
    m._reference_handler(inf.MODIFIED, meta_only("Secret", "glance-db", rv="8"), first)
    queue = m.controllers[(GROUP, "Glance")].queue
    key = queue.get(timeout=0)
    assert (key, queue.reasons(key)) == (KEY, ("referenced MODIFIED Secret",))
    queue.done(key)
    m._reference_handler(inf.MODIFIED, first, first)  # unchanged: nothing
    assert drain(m, "Glance") == []
    m._reference_handler(inf.DELETED, None, meta_only("Secret", "s3-keys"))
    assert drain(m, "Glance") == [KEY]
    assert drain(m, "GlanceBackend") == [ObjectKey(GROUP, "GlanceBackend", "openstack", "s3")]


def test_the_manager_watches_the_metadata_of_secrets_and_configmaps(tmp_path):
    settings = parse_settings(
        [
            "--watches-file",
            str(ROOT / "watches.yaml"),
            "--runner-dir",
            str(tmp_path),
            "--watch-namespace=openstack,tenant",
        ],
        environ={},
        concurrency=1,
    )
    m = Manager(settings, StubClient(), (GLANCE_WATCH, BACKEND_WATCH), environ={})
    m._watch_references(["openstack", "tenant"])
    assert [(i.kind, i.namespace, i.metadata_only, i.transform) for i in m.informers] == [
        ("Secret", "openstack", True, ctl.compact_reference),
        ("Secret", "tenant", True, ctl.compact_reference),
        ("ConfigMap", "openstack", True, ctl.compact_reference),
        ("ConfigMap", "tenant", True, ctl.compact_reference),
    ]


# -- the secret store of external-secrets ----------------------------------------------------


def store(kind: str = "ClusterSecretStore", name: str = "openbao-cluster-store", **meta) -> dict:
    obj = {
        "apiVersion": "external-secrets.io/v1",
        "kind": kind,
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "7", **meta},
    }
    return ctl.compact_readiness(obj)


def selecting(name: str, ref: dict | None = None, namespace: str = "openstack", target="") -> dict:
    obj = targeting(target or None, name=name, namespace=namespace)
    if ref is not None:
        obj["spec"]["secretStoreRef"] = ref
    return obj


def test_a_store_wakes_the_glances_it_gates():
    glances = [
        selecting("glance"),  # the default store
        selecting("tenant", namespace="tenant"),  # the default store, another namespace
        selecting("vault", {"name": "vault"}),  # a ClusterSecretStore by default kind
        selecting("local", {"kind": "SecretStore", "name": "vault"}),
        selecting("elsewhere", {"kind": "SecretStore", "name": "vault"}, namespace="tenant"),
        selecting("edge", target="cluster-a"),  # reads its store in the target
    ]

    def keys(obj: dict) -> list[tuple[str, str]]:
        return [(k.namespace, k.name) for k in ctl.secret_store_keys(obj, WATCHED, glances)]

    assert keys(store()) == [("openstack", "glance"), ("tenant", "tenant")]
    assert keys(store(name="vault")) == [("openstack", "vault")]
    assert keys(store("SecretStore", "vault", namespace="openstack")) == [("openstack", "local")]
    assert keys(store("SecretStore", "vault", namespace="tenant")) == [("tenant", "elsewhere")]
    assert keys(store(name="unused")) == []
    backends_only = {k: w for k, w in WATCHED.items() if k[1] == "GlanceBackend"}
    assert ctl.secret_store_keys(store(), backends_only, glances) == []


def test_a_stores_readiness_wakes_with_the_reason(tmp_path):
    m = manager(tmp_path)
    m.referring_informers.append(Cached(selecting("glance")))
    handler = m._gate_handler("ClusterSecretStore", ctl.SECRET_STORE, ctl.secret_store_keys)
    queue = m.controllers[(GROUP, "Glance")].queue
    created = store()
    ready = dict(store(resourceVersion="8"), readiness=True)
    for event, new, old, reason in (
        (inf.ADDED, created, None, "store's ADDED ClusterSecretStore"),
        (inf.MODIFIED, ready, created, "store's MODIFIED ClusterSecretStore readiness"),
    ):
        handler(event, new, old)
        key = queue.get(timeout=0)
        assert (key, queue.reasons(key)) == (KEY, (reason,))
        queue.done(key)
    handler(
        inf.MODIFIED, dict(ready, metadata={**ready["metadata"], "resourceVersion": "9"}), ready
    )
    assert drain(m, "Glance") == []
