"""The pass's API steps: one argument spec for the module and its action plugin.

``plugins/module_utils/passes/pass_steps.py`` holds the spec the gather, apply and report modules
and their action plugins validate against; each module's DOCUMENTATION (with the ``kube``
doc fragment) must describe exactly those options, types, defaults and choices, as
ansible-test's validate-modules would demand, and each action plugin must use its
module's spec and step.
"""

from __future__ import annotations

import importlib

import pytest
import yaml

from ansible_collections.c5c3.glance.plugins.doc_fragments.kube import ModuleDocFragment
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import ApiError
from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_steps as ps
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    job_uid_annotation,
    job_uid_suffix,
)

STEPS = {"gather": ps.GATHER_SPEC, "apply": ps.APPLY_SPEC, "report": ps.REPORT_SPEC}


def documented_options(name: str) -> dict:
    module = importlib.import_module(f"ansible_collections.c5c3.glance.plugins.modules.{name}")
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = dict(doc["options"])
    assert doc["extends_documentation_fragment"] == ["c5c3.glance.kube"]
    options.update(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"])
    return options


@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_module_documents_exactly_the_spec_its_action_plugin_validates(name):
    spec, documented = STEPS[name], documented_options(name)
    assert set(documented) == set(spec)
    for option, rules in spec.items():
        doc = documented[option]
        assert doc["type"] == rules["type"], option
        assert doc.get("required", False) == rules.get("required", False), option
        assert doc.get("default") == rules.get("default"), option
        assert doc.get("choices") == rules.get("choices"), option
        assert doc.get("elements") == rules.get("elements"), option


@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_action_plugin_runs_its_module_s_step(name):
    action = importlib.import_module(f"ansible_collections.c5c3.glance.plugins.action.{name}")
    assert action.ActionModule.SPEC is STEPS[name]
    assert action.ActionModule.STEP is getattr(ps, name)


@pytest.mark.parametrize(
    "finalizers, change, expected",
    [
        ([], "add", ["f"]),
        (["other"], "add", ["other", "f"]),
        (["f"], "add", None),
        (["other", "f"], "remove", ["other"]),
        (["other"], "remove", None),
    ],
    ids=["add", "add-after-others", "already-there", "remove", "already-gone"],
)
def test_the_finalizer_patch_carries_the_resource_version_read(finalizers, change, expected):
    reference = {"finalizers": finalizers, "resource_version": "42"}
    patch = ps.finalizer_patch(reference, change, "f")
    if expected is None:
        assert patch is None
    else:
        assert patch == {"metadata": {"finalizers": expected, "resourceVersion": "42"}}


def test_nothing_to_write_needs_no_cluster():
    reference = {"finalizers": ["f"], "resource_version": "1", "kind": "Glance", "name": "g"}
    params = {"actions": [{"verb": "none"}], "object": reference, "finalizer": None}
    params["finalizer_name"] = "f"
    assert ps.apply(params) == {
        "changed": False,
        "written": [],
        "api_requests": 0,
        "deferred": [],
    }
    report = {"object": reference, "status_patch": None, "events": []}
    assert ps.report(report)["api_requests"] == 0


class _Refusing:
    """A client whose every patch the API server refuses with ``status``."""

    def __init__(self, code: int, status: dict) -> None:
        self.code, self.status, self.patches = code, status, []

    def patch(self, *args):
        self.patches.append(args)
        raise ApiError(self.code, self.status, "PATCH", "/apis/glance.openstack.c5c3.io/...")


def test_a_refused_record_of_finished_jobs_is_deferred_with_the_reference_s_events():
    conflict = (
        'Operation cannot be fulfilled on glances.glance.openstack.c5c3.io "glance": the '
        "object has been modified; please apply your changes to the latest version and try again"
    )
    client = _Refusing(409, {"reason": "Conflict", "message": conflict})
    ref = {"api_version": "glance.openstack.c5c3.io/v1alpha1", "kind": "Glance"}
    ref |= {"name": "glance", "namespace": "openstack"}
    annotations = {
        "cobaltcore.c5c3.io/last-db-purge-job-uid": "u1",
        "cobaltcore.c5c3.io/last-db-sync-job-uid": "u2",
    }
    events = ps.record_finished(client, ref, annotations, "7")
    assert client.patches[0][4] == {
        "metadata": {"annotations": annotations, "resourceVersion": "7"}
    }
    assert events == [
        {
            "type": "Warning",
            "reason": reason,
            "message": f"Patching last-observed {kind} Job UID failed; metric emission "
            f"deferred to the next reconcile: {conflict}",
        }
        for kind, reason in (
            ("db-purge", "DBPurgeMetricEmissionDeferred"),
            ("db-sync", "DBSyncMetricEmissionDeferred"),
        )
    ]


@pytest.mark.parametrize(
    "key, kind",
    [
        ("cobaltcore.c5c3.io/last-db-purge-job-uid", "db-purge"),
        ("cobaltcore.c5c3.io/last-db-expand-job-uid", "db-expand"),
        ("cobaltcore.c5c3.io/last--job-uid", None),
        ("cobaltcore.c5c3.io/other", None),
    ],
)
def test_the_record_s_key_names_the_job_kind(key, kind):
    assert job_uid_suffix(key) == kind
    if kind is not None:
        assert job_uid_annotation(kind) == key
