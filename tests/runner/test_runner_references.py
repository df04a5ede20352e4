"""The Secrets and ConfigMaps a spec names wake the objects that read them (the reference's
``Watches(Secret)`` through its Glance and backend indexes): ``python -m runner`` against
the API double and a real kube-apiserver (``integration``).

* a Glance's database or service-user Secret, its policy ConfigMap, or the S3 credentials
  of a backend attached to it, created, written or deleted, wakes the Glance; the
  credentials Secret wakes the backend too;
* a Secret no spec names, and the Secrets of a Glance with a target cluster (it reads them
  there), wake nothing.

The watches file is the test's own, its playbook only writes down that it ran
(``test_runner_support.reporting_runner``): what the test sees is the runner's doing.
Without the watch such a change was seen at the next periodic pass (10 h by default): a
rotated database password, which mariadb-operator applies to the user at once, left the
pods on the old one until then.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from support.api_env import sample_documents
from test_runner_support import RunnerProcess, ended, passes, reporting_runner, wait_until

POLICY = "glance-policy"
FIRST = {"glance": ["edge", "glance"], "glancebackend": ["edge-s3", "s3-default"]}


@pytest.fixture
def scene(api, tmp_path):
    """The sample Glance (its Secrets, its backend, a policy ConfigMap it names and that
    does not exist yet), a Glance with a target cluster naming the same Secrets, with a
    backend of its own, and a runner watching both kinds."""
    api.ensure_namespace()
    for doc in sample_documents():
        doc["metadata"]["namespace"] = api.namespace
        if doc["kind"] == "Glance":
            doc["spec"]["policyOverrides"] = {"configMapRef": {"name": POLICY}}
            edge = copy.deepcopy(doc)
            edge["metadata"]["name"] = "edge"
            edge["spec"]["targetClusterRef"] = {"name": "edge"}
            api.client.create(edge)
        if doc["kind"] == "GlanceBackend":
            edge = copy.deepcopy(doc)
            edge["metadata"]["name"] = "edge-s3"
            edge["spec"]["glanceRef"] = {"name": "edge"}
            edge["spec"]["isDefault"] = True
            api.client.create(edge)
        api.client.create(doc)
    env = {"WATCH_NAMESPACE": api.namespace}
    runner = reporting_runner(api, tmp_path, ("Glance", "GlanceBackend"), env)[0].start()
    try:
        yield api, runner
    finally:
        runner.close()


def names(runner: RunnerProcess, controller: str, since: int = 0) -> list[str]:
    return sorted(name for name, _ in passes(runner, controller)[since:])


def settled(runner: RunnerProcess) -> bool:
    return all(ended(runner, c) == len(passes(runner, c)) for c in FIRST)


def wake(runner: RunnerProcess, change: Callable[[], Any], wanted: dict[str, list[str]], reason):
    """``change()``, then wait until it has woken exactly ``wanted`` (controller -> names),
    one pass each for ``reason``, and those passes have ended."""
    before = {c: len(passes(runner, c)) for c in FIRST}
    change()

    def woken() -> bool:
        return settled(runner) and all(
            names(runner, c, before[c]) == sorted(wanted.get(c, [])) for c in FIRST
        )

    wait_until(woken, timeout=120, what=f"{wanted} woken by {reason!r}")
    for controller in FIRST:
        new = passes(runner, controller)[before[controller] :]
        assert all(reasons == (reason,) for _, reasons in new), new


def test_the_inputs_a_spec_names_wake_what_reads_them(scene):
    api, runner = scene
    wait_until(
        lambda: settled(runner) and all(names(runner, c) == n for c, n in FIRST.items()),
        what=f"the first passes of {FIRST}",
    )
    secret = ("v1", "Secret")

    def write(name: str, value: str) -> Callable[[], Any]:
        return lambda: api.client.patch(*secret, name, api.namespace, {"stringData": {"x": value}})

    # A rotated database password: the Glance (not the targeted one, which reads the
    # Secret of its own cluster).
    wake(
        runner, write("glance-db", "rotated"), {"glance": ["glance"]}, "referenced MODIFIED Secret"
    )
    # A Secret no spec names: nothing (the next wake's exact count says so).
    unnamed = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "unnamed", "namespace": api.namespace},
        "stringData": {"x": "y"},
    }
    api.client.create(unnamed)
    # The S3 credentials: the backend, and the Glance it is attached to (which projects them).
    wake(
        runner,
        write("glance-s3", "rotated"),
        {"glance": ["glance"], "glancebackend": ["s3-default"]},
        "referenced MODIFIED Secret",
    )
    # The policy ConfigMap the spec names, created.
    policy = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": POLICY, "namespace": api.namespace},
        "data": {"policy.yaml": "{}"},
    }
    wake(
        runner,
        lambda: api.client.create(policy),
        {"glance": ["glance"]},
        "referenced ADDED ConfigMap",
    )
    wake(
        runner,
        lambda: api.client.delete(*secret, "glance-service-user", api.namespace),
        {"glance": ["glance"]},
        "referenced DELETED Secret",
    )
    assert names(runner, "glance").count("edge") == 1
    assert names(runner, "glancebackend").count("edge-s3") == 1
    assert not runner.find("pass failed")
