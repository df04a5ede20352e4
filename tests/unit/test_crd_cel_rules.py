"""Every CEL rule of both CRDs, read from the CRD files, judged both ways through ``admission.judge``.

The table (tests/support/crd_rule_cases.py) must cover every rule in the CRDs: adding a rule without a passing and a
failing case here fails ``test_every_crd_rule_has_a_case``. The same file's schema cases (invalid-CR cases the OpenAPI
schema refuses) are judged here too.
"""

from __future__ import annotations

import pytest
from support.builders import BACKEND, GLANCE, patched
from support.crd_rule_cases import RULES, SCHEMA_CASES

from ansible_collections.c5c3.glance.plugins.module_utils.admission import (
    cel_validation,
    openapi_schema,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import judge
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
)

CRDS = load_crds()
BASE = {"Glance": GLANCE, "GlanceBackend": BACKEND}


def _judge(kind: str, patch: dict, old_patch: dict | None):
    obj = patched(BASE[kind], patch)
    ctx = AdmissionContext()
    if old_patch is not None:
        ctx = AdmissionContext(operation="UPDATE", old=patched(BASE[kind], old_patch))
    return judge(CRDS[kind], obj, ctx)


def _cel_messages(verdict) -> list[tuple[str, str]]:
    return [(e.path, e.detail) for e in verdict.errors if e.origin == "cel"]


@pytest.mark.parametrize(
    ("kind", "path", "message", "good", "bad", "old"), RULES, ids=[r[2][:60] for r in RULES]
)
def test_crd_rule_passes_and_fails_through_the_real_crd(kind, path, message, good, bad, old):
    good_old, bad_old = old if old is not None else (None, None)
    assert (path, message) not in _cel_messages(_judge(kind, good, good_old))
    failing = _judge(kind, bad, bad_old)
    assert (path, message) in _cel_messages(failing), failing.messages()
    assert failing.stage == "schema" and not failing.allowed


@pytest.mark.parametrize(
    ("kind", "path", "message", "good", "bad"), SCHEMA_CASES, ids=[c[1] for c in SCHEMA_CASES]
)
def test_schema_case_passes_and_fails_through_the_real_crd(kind, path, message, good, bad):
    assert _judge(kind, good, None).allowed
    failing = _judge(kind, bad, None)
    assert failing.stage == "schema"
    assert failing.messages() == [f"{path}: {message}"]


def test_every_crd_rule_has_a_case():
    in_crds = {
        (kind, path, rule.get("message"))
        for kind, crd in CRDS.items()
        for path, rule in cel_validation.iter_rules(openapi_schema.version_schema(crd))
    }
    in_table = {(kind, path, message) for kind, path, message, *_ in RULES}
    assert in_crds == in_table


def test_transition_rules_do_not_run_on_create():
    verdict = judge(
        CRDS["GlanceBackend"], patched(BACKEND, {"spec": {"glanceRef": {"name": "other"}}})
    )
    assert verdict.allowed, verdict.messages()


def test_a_blocking_schema_error_skips_the_cel_rules_as_the_api_server_does():
    verdict = _judge(
        "Glance",
        {"spec": {"deployment": {"replicas": "three"}, "image": {"digest": "sha256:" + "0" * 64}}},
        None,
    )
    assert [str(e) for e in verdict.errors] == [
        'spec.deployment.replicas: Invalid value: "string": spec.deployment.replicas in body must be of type integer: "string"',
        '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
    ]
