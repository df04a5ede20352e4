"""Upgrading the operator while a Glance serves a client load, both ways users install it.

The previous release is a commit of this repository (there is no tagged release yet),
``PREVIOUS``: the last before the startup probe went to every 2 s, so that what the operator
renders changes on the upgrade. Its ``Dockerfile`` is built into
``ghcr.io/c5c3/glance-operator:0.1.0-<commit>`` on the Python base ``make images`` uses, and
loaded into the node.

* **kustomize**: the previous ``config/selfsigned`` applied with its image, a Glance of two
  replicas Ready, the load started, then this checkout's ``kubectl apply -k
  config/selfsigned``;
* **Helm**: this chart with ``image.tag`` of the previous image, the same Glance and load,
  then ``helm upgrade --reset-values``.

Either way the manager rolls; the new operator renders the API Deployment anew, exactly the
probe fields of the changelog's upgrade notes change, the API pods roll one at a time and
no request fails; every image the load uploaded reads back whole; the CRDs store
``v1alpha1`` and the stored Glance is still admitted (an update passes the webhook and the
CEL rules). ``test_helm.py`` shows the other case: a manager that rolls with nothing new to
render rolls no API pod. The module runs before test_operator.py and leaves no install
behind.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time

import pytest
from e2e.stack import DEMO_PASSWORD
from support.helm import find_helm

from cluster.conftest import MANAGER, OPERATOR_IMAGE, OPERATOR_NAMESPACE, ROOT, wait_until
from cluster.load import Load, lost_or_corrupted, make_sources
from cluster.objects import apply, conditions, get, glance_pods, sample_documents

PREVIOUS = "480b003"
"""The last commit before the startup probe asked every 2 s (changelog probes-startup-2s):
the one difference in what the operator renders since (tests/render/golden)."""
PROBE_FIELDS = {
    "startupProbe.periodSeconds": (10, 2),
    "startupProbe.failureThreshold": (30, 150),
    "readinessProbe.initialDelaySeconds": (10, None),
}
NAMESPACE = "upgrade-operator"
GLANCE = "glance"
CRDS = ("glances.glance.openstack.c5c3.io", "glancebackends.glance.openstack.c5c3.io")
HELM_NAMESPACE = "glance-operator-system"
HELM_MANAGER = "glance-operator-controller-manager"
READY_TIMEOUT = 600

pytestmark = pytest.mark.cluster


def git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def operator_build_command() -> list[str]:
    """``make images``' docker build of the operator image (its base and network)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "images.py"), "--dry-run"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    lines = [
        line.split("would run: ", 1)[1]
        for line in (done.stdout + done.stderr).splitlines()
        if "would run: " in line and f"-t {OPERATOR_IMAGE} ." in line
    ]
    assert len(lines) == 1, done.stdout + done.stderr
    return shlex.split(lines[0])


@pytest.fixture(scope="module")
def previous(node, images, tmp_path_factory, say):
    """The previous release's operator image (built from its commit and loaded into the
    node) and its checkout."""
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"],
                      check=False).returncode != 0:  # fmt: skip
        git("fetch", "--quiet", "origin", PREVIOUS)  # a shallow clone
    tree = tmp_path_factory.mktemp("previous") / PREVIOUS
    git("worktree", "add", "--detach", str(tree), PREVIOUS)
    try:
        tag = f"{OPERATOR_IMAGE}-{PREVIOUS}"
        command = operator_build_command()
        started = time.monotonic()
        done = subprocess.run(
            [*command[:-3], "-t", tag, "."], cwd=tree, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        say(f"[cluster] operator image of {PREVIOUS} built: {time.monotonic() - started:.1f}s")
        node.load_images([tag])
        yield tag, tree
    finally:
        git("worktree", "remove", "--force", str(tree))


def glance_ready(node) -> bool:
    glance = get(node, "glance", GLANCE, "-n", NAMESPACE)
    return conditions(glance).get("Ready", {}).get("status") == "True"


def api_template(node) -> dict:
    return get(node, "deployment", GLANCE, "-n", NAMESPACE)["spec"]["template"]


def uids(pods: list[dict]) -> set[str]:
    return {p["metadata"]["uid"] for p in pods}


def probe_changes(before: dict, after: dict) -> dict[str, tuple]:
    """The probe fields of the API container that differ: field -> (before, after)."""
    changed = {}
    old = before["spec"]["containers"][0]
    new = after["spec"]["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        for key in sorted(set(old.get(probe) or {}) | set(new.get(probe) or {})):
            was, now = (old.get(probe) or {}).get(key), (new.get(probe) or {}).get(key)
            if was != now:
                changed[f"{probe}.{key}"] = (was, now)
    return changed


def without_probes(template: dict) -> dict:
    out = {**template, "spec": {**template["spec"]}}
    out["spec"]["containers"] = [
        {k: v for k, v in c.items() if not k.endswith("Probe")}
        for c in template["spec"]["containers"]
    ]
    return out


def rolled_to_this_release(node, before: dict, pods_before: set[str]) -> bool:
    pods = glance_pods(node, NAMESPACE, GLANCE)
    return bool(
        probe_changes(before, api_template(node))
        and not pods_before & uids(pods)
        and len(pods) == 2
        and glance_ready(node)
    )


def check_upgraded(node, before: dict) -> None:
    """Exactly the probe fields the changelog's upgrade notes name changed; the CRDs store
    what they stored; the stored Glance is still admitted (an update passes the webhook
    and the CEL rules)."""
    after = api_template(node)
    assert probe_changes(before, after) == PROBE_FIELDS
    assert without_probes(after) == without_probes(before), "more than the probes changed"
    for crd in CRDS:
        assert get(node, "crd", crd)["status"]["storedVersions"] == ["v1alpha1"]
    node.kubectl("annotate", "glance", GLANCE, "-n", NAMESPACE, "upgraded=yes")


def start_glance(node, services, database: str) -> None:
    services.create_database(database)
    node.kubectl("create", "namespace", NAMESPACE)
    apply(node, sample_documents(services, NAMESPACE, database=database))
    wait_until("the Glance is Ready", lambda: glance_ready(node), READY_TIMEOUT, interval=2)


def start_load(node, services, tmp_path_factory) -> Load:
    service = get(node, "service", GLANCE, "-n", NAMESPACE)["spec"]["clusterIP"]
    load = Load(
        f"http://{service}:9292",
        services.keystone_token("demo", DEMO_PASSWORD, "demo"),
        make_sources(tmp_path_factory.mktemp("upgrade-load")),
        prefix="upgrade",
    ).start()
    wait_until("the load's first requests", lambda: len(load.requests) >= 4, 120)
    return load


def check_load(load: Load) -> str:
    requests = load.stop()
    failed = [f"{r.op}: {r.detail}" for r in load.failed()]
    assert not failed, failed
    assert load.uploaded, "the load uploaded nothing"
    lost = lost_or_corrupted(load.url, load.token, load.uploaded)
    assert not lost, lost
    return f"{len(requests)} requests, 0 failed, {len(load.uploaded)} images read back whole"


def delete_glance(node) -> None:
    node.kubectl("delete", "namespace", NAMESPACE, "--timeout=300s", check=False)


def upgrade_under_load(node, services, tmp_path_factory, database: str, upgrade) -> str:
    """A Glance Ready under the previous release, the load, ``upgrade()``, then the API
    pods rolled to what this release renders; the figures."""
    start_glance(node, services, database)
    before, pods_before = api_template(node), uids(glance_pods(node, NAMESPACE, GLANCE))
    load = start_load(node, services, tmp_path_factory)
    started = time.monotonic()
    try:
        upgrade()
        wait_until(
            "the API pods rolled to what this release renders",
            lambda: rolled_to_this_release(node, before, pods_before),
            READY_TIMEOUT,
            interval=2,
        )
        took = time.monotonic() - started
        time.sleep(5)  # the load on the new pods too, not only during the roll
    finally:
        figures = check_load(load)
    check_upgraded(node, before)
    return f"the API pods rolled {took:.0f} s after the upgrade began; {figures}"


def test_kustomize_apply_of_this_release_under_load(
    node, previous, services, tmp_path_factory, say
):
    tag, tree = previous
    built = node.kubectl("kustomize", str(tree / "config" / "selfsigned")).stdout
    assert OPERATOR_IMAGE + "\n" in built

    def rolled_out() -> None:
        node.kubectl("-n", OPERATOR_NAMESPACE, "rollout", "status", f"deployment/{MANAGER}",
                     "--timeout=300s")  # fmt: skip

    def upgrade() -> None:
        node.kubectl("apply", "-k", str(ROOT / "config" / "selfsigned"))
        rolled_out()
        manager = get(node, "deployment", MANAGER, "-n", OPERATOR_NAMESPACE)
        assert manager["spec"]["template"]["spec"]["containers"][0]["image"] == OPERATOR_IMAGE

    try:
        node.kubectl("apply", "-f", "-", input=built.replace(OPERATOR_IMAGE + "\n", tag + "\n"))
        rolled_out()
        figures = upgrade_under_load(
            node, services, tmp_path_factory, "glance_upgrade_kustomize", upgrade
        )
        say(f"[cluster] kubectl apply -k config/selfsigned over {PREVIOUS}'s: {figures}")
    finally:
        delete_glance(node)
        node.kubectl("delete", "-k", str(ROOT / "config" / "selfsigned"), "--ignore-not-found",
                     "--timeout=300s", check=False)  # fmt: skip


def test_helm_upgrade_of_this_release_under_load(node, previous, services, tmp_path_factory, say):
    """The previous release's image through this chart (``image.tag`` set), then ``helm
    upgrade --reset-values``: a value set at install (the tag here) is kept by a plain
    ``helm upgrade`` that sets none, so the old image would stay (docs/install.md)."""
    helm, found = find_helm()
    assert helm, found
    tag, _ = previous
    chart = str(ROOT / "charts" / "glance-operator")
    env = {"KUBECONFIG": str(node.kubeconfig), "HOME": "/tmp", "PATH": "/usr/bin:/bin"}

    def run(*args: str, check: bool = True) -> None:
        done = subprocess.run([helm, *args], capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0 or not check, f"helm {' '.join(args)}:\n{done.stderr}"

    def upgrade() -> None:
        run("upgrade", "glance-operator", chart, "-n", HELM_NAMESPACE, "--reset-values")
        node.kubectl("-n", HELM_NAMESPACE, "rollout", "status", f"deployment/{HELM_MANAGER}",
                     "--timeout=300s")  # fmt: skip
        manager = get(node, "deployment", HELM_MANAGER, "-n", HELM_NAMESPACE)
        assert manager["spec"]["template"]["spec"]["containers"][0]["image"] == OPERATOR_IMAGE

    try:
        run("install", "glance-operator", chart, "-n", HELM_NAMESPACE, "--create-namespace",
            "--set", f"image.tag={tag.rsplit(':', 1)[1]}", "--wait", "--timeout=5m")  # fmt: skip
        figures = upgrade_under_load(
            node, services, tmp_path_factory, "glance_upgrade_helm", upgrade
        )
        say(f"[cluster] helm upgrade over {PREVIOUS}'s image: {figures}")
    finally:
        delete_glance(node)
        run("uninstall", "glance-operator", "-n", HELM_NAMESPACE, check=False)
        node.kubectl("delete", "crd", *CRDS, "--ignore-not-found", check=False)
        node.kubectl("delete", "namespace", HELM_NAMESPACE, "--ignore-not-found",
                     "--timeout=300s", check=False)  # fmt: skip
