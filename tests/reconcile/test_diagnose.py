"""``diagnose`` against a real kube-apiserver: what it reads, what it says, what it refuses.

The scene is made the way the cluster would make it: a Glance reconciled by real passes
(``playbooks/glance.yml``), then what the controllers and the kubelet would write, written
through the status subresources here (no scheduler, no kubelet, no Job controller run):
a Job failed, pods waiting on an image, unschedulable, evicted for a volume bound, a
container OOMKilled, probe events. The logs of containers cannot be read without a
kubelet: that the diagnosis says so, and goes on, is part of what is shown. What the logs
name (the database refusing a password, S3 a key) is ``tests/unit/test_diagnose_findings.py``'s on
written lines, and the node's on real ones.

Each diagnosis is one of the commands of docs/operations.md, run exactly as written (in
the namespace ``openstack`` it names, so on a kube-apiserver of this module's own: the
session's already holds a Glance there), or, where only the findings differ, the step in
this process.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from integration.kube_harness import assets_dir, started_apiserver
from support.api_env import STAMP, api_env, sample_documents
from support.playbook_run import run_playbook
from support.user_shell import run_as_user

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import step

pytestmark = pytest.mark.integration


DOC = COLLECTION_ROOT / "docs" / "operations.md"


def doc_commands() -> list[str]:
    """The lines of the ``sh`` blocks of the page's section "Diagnose a Glance"."""
    section = DOC.read_text().split("## Diagnose a Glance", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def real_apiserver():
    """This module's own kube-apiserver (``api_env`` asks for it by this name)."""
    with started_apiserver(load_crds().values()) as server:
        yield server


@pytest.fixture
def api(request, tmp_path):
    yield from api_env("kube-apiserver", request, tmp_path, "diagnose")


def run_doc_command(api, command: str, *extra: str) -> subprocess.CompletedProcess:
    """A command of the page, as a user types it in the checkout, on the test's cluster."""
    return run_as_user(" ".join([command, *extra]), api.kubeconfig)


def test_the_page_shows_the_commands_these_tests_run():
    assert doc_commands() == [
        "make diagnose GLANCE=openstack/glance",
        "ansible-playbook playbooks/diagnose.yml -e glance_name=glance -e glance_namespace=openstack",
        "kubectl apply -k config/diagnose",
        "kubectl -n openstack create rolebinding jane-diagnose --clusterrole=c5c3-glance-diagnose "
        "--user=jane",
    ]


def diagnose_run(api, kubeconfig: Path | None = None, **extra: Any):
    return run_playbook(
        "diagnose.yml",
        {"glance_name": "glance", "glance_namespace": api.namespace, **extra},
        kubeconfig=kubeconfig or api.kubeconfig,
    )


def in_process(api) -> dict[str, Any]:
    result = step.diagnose(
        {
            "name": "glance",
            "namespace": api.namespace,
            "kubeconfig": str(api.kubeconfig),
            "context": None,
            "request_timeout": 30.0,
            "clusters_namespace": "c5c3-clusters",
            "in_pod_checks": True,
            "check_timeout": 60.0,
        }
    )
    assert not result.get("failed"), result
    return result["report"]


def create_pod(api, name: str, labels: dict[str, str], status: dict[str, Any]) -> None:
    """A pod whose containers are those its ``status`` names, with that status."""
    containers = [
        {"name": cs["name"], "image": cs["image"]} for cs in status.get("containerStatuses") or []
    ] or [{"name": "glance-api", "image": "ghcr.io/c5c3/glance:nope"}]
    api.client.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": api.namespace, "labels": labels},
            "spec": {"containers": containers},
        }
    )
    api.client.patch("v1", "Pod", name, api.namespace, {"status": status}, subresource="status")


def create_event(api, pod: str, reason: str, message: str, count: int) -> None:
    api.client.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod}.{reason.lower()}.{count}", "namespace": api.namespace},
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": api.namespace},
            "reason": reason,
            "message": message,
            "type": "Warning",
            "count": count,
            "firstTimestamp": STAMP,
            "lastTimestamp": STAMP,
            "source": {"component": "kubelet"},
        }
    )


API_LABELS = {
    "app.kubernetes.io/name": "glance",
    "app.kubernetes.io/instance": "glance",
    "app.kubernetes.io/component": "api",
}


def waiting(reason: str, message: str) -> dict[str, Any]:
    return {
        "phase": "Pending",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [
            {
                "name": "glance-api",
                "image": "ghcr.io/c5c3/glance:nope",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": reason, "message": message}},
            }
        ],
    }


def test_a_failed_db_sync_is_named_first_by_the_commands_of_the_page(api):
    make, playbook = doc_commands()[:2]
    api = dataclasses.replace(api, namespace="openstack")  # the namespace the page names
    api.create_all(sample_documents())
    api.glance_pass()
    api.backend_pass("s3-default")

    # The db-sync Job runs: nothing is wrong yet.
    under_way = diagnose_run(api)
    assert under_way.ok, under_way.stdout[-3000:]
    assert under_way.result_of("c5c3.glance.diagnose")["lines"][0] == (
        f"Glance {api.namespace}/glance is on its way: the db-sync Job is running"
    )

    # Its pod fails, the Job controller gives up, the next pass reports it.
    create_pod(
        api,
        "glance-db-sync-x1",
        {"batch.kubernetes.io/job-name": "glance-db-sync"},
        {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "db-sync",
                    "image": "ghcr.io/c5c3/glance:2026.2",
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": 1,
                            "reason": "Error",
                            "startedAt": STAMP,
                            "finishedAt": STAMP,
                        }
                    },
                }
            ],
        },
    )
    api.settle(jobs="Failed")
    api.glance_pass()

    shown = run_doc_command(api, make)
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)
    lines = shown.stdout.strip().splitlines()
    assert lines[0] == (f"Glance {api.namespace}/glance is not healthy: the db-sync Job failed")
    job_line = next(line for line in lines if line.startswith("FAULT Job glance-db-sync:"))
    assert "failed: BackoffLimitExceeded: Job has reached the specified backoff limit" in job_line
    # No kubelet here: the API server has no log for the pod, and the diagnosis says so.
    assert "; its log is empty - fix: " in job_line
    assert (
        "fix: read the Job's log (its finding shows the last lines); fix what it names" in job_line
    )

    as_json = run_doc_command(api, make, "FORMAT=json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["state"] == "faulty" and report["first_cause"] == "db-sync-failed"
    assert [f["subject"] for f in report["findings"] if f["cause"] == "db-sync-failed"] == [
        f"Glance {api.namespace}/glance",
        "Job glance-db-sync",
    ]
    # The playbook says the same, in its own output; and neither wrote anything.
    before = api.resource_versions()
    played = run_doc_command(api, playbook)
    assert played.returncode == 0, played.stdout[-3000:]
    assert lines[0] in played.stdout
    assert api.resource_versions() == before


def test_what_the_kubelet_and_the_scheduler_say_of_the_api_pods_is_said_in_words(api):
    api.create_all(sample_documents())
    api.glance_pass()
    api.backend_pass("s3-default")
    api.settle()
    api.glance_pass()
    create_pod(
        api,
        "glance-a",
        API_LABELS,
        waiting("ImagePullBackOff", 'Back-off pulling image "ghcr.io/c5c3/glance:nope"'),
    )
    create_pod(
        api,
        "glance-b",
        API_LABELS,
        {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient memory.",
                }
            ],
        },
    )
    create_pod(
        api,
        "glance-c",
        API_LABELS,
        {
            "phase": "Failed",
            "reason": "Evicted",
            "message": 'Usage of EmptyDir volume "staging" exceeds the limit "32Mi". ',
        },
    )
    oom = waiting("CrashLoopBackOff", "back-off 40s restarting failed container")
    oom["containerStatuses"][0]["restartCount"] = 3
    oom["containerStatuses"][0]["lastState"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "OOMKilled",
            "startedAt": STAMP,
            "finishedAt": STAMP,
        }
    }
    create_pod(api, "glance-d", API_LABELS, oom)
    create_event(
        api,
        "glance-d",
        "Unhealthy",
        "Readiness probe failed: HTTP probe failed with statuscode: 503",
        7,
    )
    create_event(
        api, "glance-d", "Unhealthy", "Liveness probe failed: context deadline exceeded", 2
    )

    report = in_process(api)
    said = [(f["cause"], f["subject"], f["detail"]) for f in report["findings"]]
    pods = [s for s in said if s[1].startswith("Pod ")]
    assert pods == [
        (
            "image-pull",
            "Pod glance-a container glance-api",
            'ImagePullBackOff: ghcr.io/c5c3/glance:nope: Back-off pulling image "ghcr.io/c5c3/glance:nope"',
        ),
        (
            "unschedulable",
            "Pod glance-b",
            "Pending: 0/3 nodes are available: 3 Insufficient memory.",
        ),
        (
            "staging-bound",
            "Pod glance-c",
            'evicted: Usage of EmptyDir volume "staging" exceeds the limit "32Mi". ',
        ),
        (
            "oom-killed",
            "Pod glance-d container glance-api",
            "CrashLoopBackOff: ended OOMKilled (exit code 137), restarted 3 times",
        ),
        (
            "probe-failing",
            "Pod glance-d",
            "Liveness probe failed 2 times: Liveness probe failed: context deadline exceeded",
        ),
        (
            "probe-failing",
            "Pod glance-d",
            "Readiness probe failed 7 times: Readiness probe failed: HTTP probe failed with statuscode: 503",
        ),
    ]
    assert report["state"] == "faulty"
    assert report["first_cause"] == "image-pull"
    # No API pod runs its container: the checks from inside one were not made, and a note
    # says so (the node's Glance has them made: tests/cluster/test_operator.py).
    assert said[-1] == (
        "checks-not-made",
        f"Glance {api.namespace}/glance",
        "no API pod runs its glance-api container",
    )


def test_a_user_who_may_not_read_everything_is_told_which_permission_is_missing(api, tmp_path):
    api.create_all(sample_documents())
    rbac = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "glance-reader", "namespace": api.namespace},
            "rules": [
                {
                    "apiGroups": ["glance.openstack.c5c3.io"],
                    "resources": ["glances", "glancebackends"],
                    "verbs": ["get", "list"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "glance-reader", "namespace": api.namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "glance-reader",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}
            ],
        },
    ]
    for obj in rbac:
        api.client.create(obj)
    doc = yaml.safe_load(api.kubeconfig.read_text())
    doc["users"][0]["user"]["as"] = "reader"
    kubeconfig = tmp_path / "reader"
    kubeconfig.write_text(yaml.safe_dump(doc))
    kubeconfig.chmod(0o600)

    run = diagnose_run(api, kubeconfig)
    assert not run.ok
    assert run.result_of("c5c3.glance.diagnose")["msg"] == (
        f'diagnose needs "list pods" in the namespace {api.namespace} and may not (the API '
        f'server said: pods is forbidden: User "reader" cannot list resource "pods" in API '
        f'group "" in the namespace "{api.namespace}")'
    )


def test_the_diagnose_cluster_role_bound_as_the_page_shows_is_all_a_user_needs(api, tmp_path):
    """config/diagnose's ClusterRole, applied and bound to ``jane`` with the page's commands
    as written: diagnose as ``jane`` reads everything it needs and may exec into a pod."""
    api = dataclasses.replace(api, namespace="openstack")  # the namespace the page names
    kube_assets, why = assets_dir()  # kubectl, on the user's PATH (docs/cluster.md)
    assert kube_assets is not None, why
    if api.get("Glance", "glance") is None:  # the page's first test may have made it
        api.create_all(sample_documents())
    for command in doc_commands()[2:]:
        done = run_as_user(command, api.kubeconfig, path=(str(kube_assets),))
        assert done.returncode == 0, f"{command}:\n{done.stdout}{done.stderr}"
    doc = yaml.safe_load(api.kubeconfig.read_text())
    doc["users"][0]["user"]["as"] = "jane"
    kubeconfig = tmp_path / "jane"
    kubeconfig.write_text(yaml.safe_dump(doc))
    kubeconfig.chmod(0o600)

    run = diagnose_run(api, kubeconfig, diagnose_format="json")
    assert run.ok, run.result_of("c5c3.glance.diagnose")
    report = run.result_of("c5c3.glance.diagnose")["report"]
    notes = [f for f in report["findings"] if f["cause"] == "checks-not-made"]
    # No API pod runs here (no kubelet): that, not a permission, is why no check was made.
    assert [f["detail"] for f in notes] == ["no API pod runs its glance-api container"], notes
