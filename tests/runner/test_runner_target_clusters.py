"""Target clusters, the runner's part (reference-spec §2.11): ``python -m runner`` against an
API server (the test double, and a real kube-apiserver with ``KUBE_ASSETS_DIR``).

* every pass gets the runner's ``--clusters-namespace`` as ``clusters_namespace``;
* a registration Secret (labelled ``sigs.k8s.io/multicluster-runtime-kubeconfig=true`` in
  the clusters namespace, named like the cluster) created, changed or deleted wakes
  exactly the Glances whose ``spec.targetClusterRef.name`` is its name; a Secret without
  the label, one in another namespace, or one naming no Glance's cluster wakes nothing.

The watches file is the test's own: the Glance's playbook only writes down the
``clusters_namespace`` it got, so what the test sees is the runner's doing, not the Glance
pass's (which reads the target cluster: the playbooks' side).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from support.api_env import api_env as shared_api_env
from support.api_env import sample_documents
from support.target_clusters import (
    CHILD_KINDS,
    MAIN_FINALIZER,
    REMOTE_FINALIZER,
    USER_SECRETS,
    Clusters,
)
from test_runner_support import (
    GROUP_VERSION,
    RunnerProcess,
    ended,
    passes,
    reporting_runner,
    wait_until,
)

REGISTRATION_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"
KUBECONFIG_A = "YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmln"  # "apiVersion: v1\nkind: Config"
KUBECONFIG_B = "YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnCg=="

# Glance name -> the cluster it names (None: none).
GLANCES = {
    "glance-a": "cluster-a",
    "glance-a2": "cluster-a",
    "glance-b": "cluster-b",
    "glance-local": None,
}
NAMING_A = ["glance-a", "glance-a2"]


@pytest.fixture(params=[False, True], ids=["glances", "with-backends"])
def scene(api, tmp_path, request):
    """The Glances in the test's namespace (with ``with-backends``, a GlanceBackend of each
    named ``<glance>-s3``, and GlanceBackends watched), a clusters namespace of the test's
    own, and a runner watching both with its watches file."""
    backends = request.param
    clusters = f"{api.namespace}-clusters"
    api.ensure_namespace()
    api.ensure_namespace(clusters)
    [glance] = [d for d in sample_documents() if d["kind"] == "Glance"]
    [backend] = [d for d in sample_documents() if d["kind"] == "GlanceBackend"]
    for name, cluster in GLANCES.items():
        obj = copy.deepcopy(glance)
        obj["metadata"] = {"name": name, "namespace": api.namespace}
        if cluster is not None:
            obj["spec"]["targetClusterRef"] = {"name": cluster}
        api.client.create(obj)
        if backends:
            child = copy.deepcopy(backend)
            child["metadata"] = {"name": f"{name}-s3", "namespace": api.namespace}
            child["spec"]["glanceRef"] = {"name": name}
            api.client.create(child)
    kinds = ("Glance", "GlanceBackend") if backends else ("Glance",)
    env = {"WATCH_NAMESPACE": f"{api.namespace},{clusters}", "CLUSTERS_NAMESPACE": clusters}
    runner, reports = reporting_runner(api, tmp_path, kinds, env)
    runner.start()
    try:
        yield api, runner, clusters, reports, backends
    finally:
        runner.close()


def secret(name: str, namespace: str, data: str = KUBECONFIG_A, labelled: bool = True) -> dict:
    labels = {REGISTRATION_LABEL: "true"} if labelled else {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"kubeconfig": data},
    }


def wake(runner: RunnerProcess, change, event: str, backends: bool) -> None:
    """``change()``, then wait until it has woken the Glances naming cluster-a (one pass
    each, woken by the registration's ``event``) and, with ``backends``, their
    GlanceBackends (woken by their parent's cluster's ``event``), and those passes have
    ended; nothing else may have run."""
    kinds = {"glance": (NAMING_A, f"target cluster's {event} Secret")}
    if backends:
        kinds["glancebackend"] = (
            [f"{name}-s3" for name in NAMING_A],
            f"parent's target cluster's {event} Secret",
        )
    before = {controller: len(passes(runner, controller)) for controller in kinds}
    change()

    def woken():
        return all(
            sorted(name for name, _ in passes(runner, controller)[before[controller] :]) == names
            and ended(runner, controller) == len(passes(runner, controller))
            for controller, (names, _) in kinds.items()
        )

    wait_until(woken, timeout=120, what=f"woken by a registration's {event}: {kinds}")
    for controller, (_, reason) in kinds.items():
        new = passes(runner, controller)[before[controller] :]
        assert all(reasons == (reason,) for _, reasons in new), new


def test_a_registration_wakes_exactly_the_glances_naming_its_cluster(scene):
    api, runner, clusters, reports, backends = scene
    runner.wait_for("watching target cluster registrations", namespace=clusters)
    # The first passes (the workers start once every informer has synced, so one each):
    # each Glance by its own ADDED (and its backend's), each backend by its own, and every
    # pass got the setting.
    objects = {"glance": sorted(GLANCES)}
    if backends:
        objects["glancebackend"] = sorted(f"{name}-s3" for name in GLANCES)
    wait_until(
        lambda: all(
            sorted(name for name, _ in passes(runner, controller)) == names
            and ended(runner, controller) == len(names)
            for controller, names in objects.items()
        ),
        what=f"the first passes of {objects}",
    )
    for name in (name for names in objects.values() for name in names):
        assert (reports / name).read_text() == clusters, name
    assert not runner.find("pass failed")
    first = len(passes(runner))

    # None of these is cluster-a's registration: no label; the label, but in the Glances'
    # namespace (watched, but not the clusters namespace); registered, but no Glance names
    # the cluster.
    api.client.create(secret("cluster-a", clusters, labelled=False))
    api.client.create(secret("cluster-a", api.namespace))
    api.client.create(secret("cluster-z", clusters))
    api.client.patch("v1", "Secret", "cluster-a", api.namespace, {"data": {"x": "eQ=="}})

    # The label makes the first one a registration: the informer sees it ADDED (it enters
    # the selection). Its events come after those above, so they woke nothing.
    wake(
        runner,
        lambda: api.client.patch(
            "v1",
            "Secret",
            "cluster-a",
            clusters,
            {"metadata": {"labels": {REGISTRATION_LABEL: "true"}}},
        ),
        "ADDED",
        backends,
    )
    assert len(passes(runner)) == first + 2
    # A new kubeconfig.
    wake(
        runner,
        lambda: api.client.patch(
            "v1", "Secret", "cluster-a", clusters, {"data": {"kubeconfig": KUBECONFIG_B}}
        ),
        "MODIFIED",
        backends,
    )
    # Deregistered.
    wake(
        runner,
        lambda: api.client.delete("v1", "Secret", "cluster-a", clusters),
        "DELETED",
        backends,
    )
    # Registered again, then the label taken away: deregistered as well.
    wake(runner, lambda: api.client.create(secret("cluster-a", clusters)), "ADDED", backends)
    wake(
        runner,
        lambda: api.client.patch(
            "v1",
            "Secret",
            "cluster-a",
            clusters,
            {"metadata": {"labels": {REGISTRATION_LABEL: None}}},
        ),
        "DELETED",
        backends,
    )
    # cluster-b's Glance and the local one, and their backends, ran their first pass only.
    for controller, names in objects.items():
        by_name: dict[str, list[Any]] = {}
        for name, reasons in passes(runner, controller):
            by_name.setdefault(name, []).append(reasons)
        for name in names:
            if not name.startswith(tuple(NAMING_A)):
                assert len(by_name[name]) == 1, (name, by_name[name])
    assert all("ADDED Glance" in reasons for _, reasons in passes(runner)[: len(GLANCES)])
    assert not runner.find("pass failed")
    # The runner cached none of the kubeconfigs it watched.
    assert KUBECONFIG_A not in runner.log_tail(10**7)


@pytest.fixture
def no_clusters(api, tmp_path):
    """A runner with target clusters off (``--clusters-namespace=``, as the
    namespace-scoped install starts it), over the same Glances."""
    api.ensure_namespace()
    [glance] = [d for d in sample_documents() if d["kind"] == "Glance"]
    obj = copy.deepcopy(glance)
    obj["metadata"] = {"name": "glance-a", "namespace": api.namespace}
    obj["spec"]["targetClusterRef"] = {"name": "cluster-a"}
    api.client.create(obj)
    env = {"CLUSTERS_NAMESPACE": "ignored-by-the-flag"}
    runner, reports = reporting_runner(api, tmp_path, env=env, args=("--clusters-namespace=",))
    runner.start()
    try:
        yield api, runner, reports
    finally:
        runner.close()


def test_with_target_clusters_off_a_pass_gets_an_empty_clusters_namespace(no_clusters):
    api, runner, reports = no_clusters
    wait_until(lambda: ended(runner) == 1, what="the Glance's first pass")
    assert (reports / "glance-a").read_text() == ""
    assert not runner.find("watching target cluster registrations")
    # The runner's Secret informers: the dependents' and the metadata of the watched
    # namespace's alone, none in a clusters namespace.
    runner.wait_for("informers synced")
    secrets = [
        line["informer"]
        for line in runner.find("synced")
        if line.get("informer", "").startswith("Secret.")
    ]
    assert sorted(secrets) == [f"Secret.v1/metadata@{api.namespace}", f"Secret.v1@{api.namespace}"]


def test_a_namespace_scoped_runner_does_not_watch_another_namespaces_registrations(api, tmp_path):
    """``WATCH_NAMESPACE`` without the clusters namespace: no registration watch (its Role
    could not list there), and the log says why."""
    api.ensure_namespace()
    runner = reporting_runner(api, tmp_path)[0]
    runner.start()
    try:
        line = runner.wait_for(
            "target cluster registrations not watched: the clusters namespace is not a "
            "watched namespace"
        )
        assert line["clusters_namespace"] == "c5c3-clusters"
        assert line["namespaces"] == [api.namespace]
        runner.wait_for("informers synced")
        assert not runner.find("watching target cluster registrations")
    finally:
        runner.close()


# -- the whole operator across two real clusters ---------------------------------------------


@pytest.fixture
def real_api(request, tmp_path):
    """The management cluster only on the real kube-apiserver."""
    yield from shared_api_env("kube-apiserver", request, tmp_path, "runner-target")


def woken_by(runner, controller: str, reason: str) -> bool:
    """Whether a pass of ``controller`` has started that ``reason`` woke (alone, or
    coalesced with other wakes)."""
    return any(
        reason in (line.get("woken_by") or ())
        for line in runner.find("pass started", controller=controller)
    )


@pytest.mark.integration
def test_the_runner_reconciles_a_glance_into_its_target_cluster_and_sweeps_it(
    real_api, target_apiserver, tmp_path, say
):
    """``python -m runner`` with the collection's watches.yaml, the management cluster one
    real kube-apiserver, the target another: the Glance converges with its children in
    the target; losing its registration is reported at once (the registration watch), and
    getting it back converges again; deleting the Glance sweeps the target, and the
    runner does not release the finalizer under a deletion pass that waits.

    The registration carries a client certificate and key as ``-data`` (as most do): no
    pass of the runner leaves the key in its ``TMPDIR`` (a pod's /tmp)."""
    api = real_api
    c = Clusters(api, target_apiserver, tmp_path)
    c.scene()
    registration = c.kubeconfig(certificate=True)
    c.register(kubeconfig=registration)
    runner_tmp = tmp_path / "runner-tmp"
    runner_tmp.mkdir()
    runner = RunnerProcess(
        api,
        tmp_path,
        env={
            "WATCH_NAMESPACE": f"{api.namespace},{c.clusters_namespace}",
            "CLUSTERS_NAMESPACE": c.clusters_namespace,
            "TMPDIR": str(runner_tmp),
        },
    ).start()
    try:

        def deployed() -> bool:
            c.settle()
            return api.condition("Glance", "glance", "DeploymentReady").get("status") == "True"

        wait_until(deployed, timeout=180, interval=1.0, what="the Glance deployed in the target")
        backend = "glance-s3-default"

        def credentials(status: str) -> bool:
            return (
                api.condition("GlanceBackend", backend, "CredentialsReady").get("status") == status
            )

        wait_until(lambda: credentials("True"), timeout=60, what="the backend's credentials")
        remote = c.children(c.target)
        assert {kind for kind, _ in remote} == {kind for _, kind in CHILD_KINDS}
        assert c.children(api.client) == {}
        glance = c.glance()
        assert glance["metadata"]["finalizers"] == [MAIN_FINALIZER, REMOTE_FINALIZER]

        c.deregister()
        wait_until(
            lambda: c.secrets_ready().get("reason") == "TargetClusterUnavailable",
            timeout=60,
            what="TargetClusterUnavailable after the registration went",
        )
        wait_until(
            lambda: woken_by(runner, "glance", "target cluster's DELETED Secret"),
            timeout=60,
            what="a Glance pass woken by the registration's deletion",
        )
        # The backend, Ready, is woken too: nothing in the target is watched, and its next
        # resync would be hours away.
        wait_until(
            lambda: (
                api.condition("GlanceBackend", backend, "CredentialsReady").get("reason")
                == "TargetClusterUnavailable"
            ),
            timeout=60,
            what="the backend's TargetClusterUnavailable after the registration went",
        )
        # Woken by the deletion itself: the pass that set the condition may have been asked
        # for by another event first, the deletion's then coalescing into the next pass.
        wait_until(
            lambda: woken_by(runner, "glancebackend", "parent's target cluster's DELETED Secret"),
            timeout=60,
            what="a backend pass woken by its parent's registration's deletion",
        )
        c.register(kubeconfig=registration)
        wait_until(
            lambda: c.secrets_ready().get("status") == "True",
            timeout=60,
            what="SecretsReady again with the registration back",
        )
        wait_until(lambda: credentials("True"), timeout=60, what="the backend's credentials back")

        api.client.delete(GROUP_VERSION, "Glance", "glance", api.namespace)
        wait_until(lambda: c.glance() is None, timeout=120, what="the Glance gone")
        left = {
            key
            for key, obj in c.children(c.target).items()
            if not obj["metadata"].get("deletionTimestamp")
        }
        assert left == set(), left
        assert all(c.target.get("v1", "Secret", s, api.namespace) for s in USER_SECRETS)
        # The event is reported after the apply step that released the finalizers: the
        # Glance is gone a moment before it is written.
        wait_until(
            lambda: [e for e in api.list("Event") if e.get("reason") == "RemoteChildrenSwept"],
            timeout=60,
            what="the RemoteChildrenSwept event of the deletion pass",
        )
    finally:
        runner.close()
    targeted = len(passes(runner, "glance")) + len(passes(runner, "glancebackend"))
    key = base64.b64decode(registration["users"][0]["user"]["client-key-data"])
    body = key.split(b"-----")[2].strip()[:64]
    holding = [p for p in runner_tmp.rglob("*") if p.is_file() and body in p.read_bytes()]
    assert holding == [], f"{len(holding)} files hold the key after {targeted} passes"
    # 10 in the runs measured (the Glance's and its backend's passes, each of one to three
    # steps: a forked worker each, which left the key behind before)
    assert targeted >= 5
    say(f"[runner] {targeted} targeted passes; no file of its TMPDIR holds the client key")
