"""The admission webhook over real HTTPS on 127.0.0.1, verified against a test CA.

Every validating answer is compared with what render's judge (``admission.judge``) says
about the same object: the same errors, in one Invalid denial worded as the API server
words it. Mutating answers are applied as RFC 6902 patches and compared with the library's
defaulted object.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import logging
import os
import queue
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml
from support.builders import BACKEND, DELETE, GLANCE, patched
from support.crd_rule_cases import RULES as CRD_RULES
from support.crd_rule_cases import SCHEMA_CASES
from support.fake_apiserver import FakeAPIServer
from support.tls import make_server_tls
from unit.test_glance_admission import CASES as GLANCE_RULE_CASES
from unit.test_glancebackend_admission import CASES as BACKEND_RULE_CASES

from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import judge
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
    default_glance,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glancebackend_admission import (
    default_glancebackend,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient
from runner.endpoints.admission_review import json_patch
from runner.endpoints.webhook import MAX_BODY_BYTES, WebhookServer, kube_backend_lister

CRDS = load_crds()
CATALOGS = load_catalogs()
BASE = {"Glance": GLANCE, "GlanceBackend": BACKEND}
DEFAULTERS = {"Glance": default_glance, "GlanceBackend": default_glancebackend}
GROUP = "glance.openstack.c5c3.io"
SAMPLES = sorted((COLLECTION_ROOT / "config" / "samples").glob("*.yaml"))
ROOT = Path(__file__).resolve().parents[2]


def path_of(kind: str, verb: str) -> str:
    return f"/{verb}-glance-openstack-c5c3-io-v1alpha1-{kind.lower()}"


# --- lookups the tests control ------------------------------------------------------------


class Lookups:
    """The cluster as the webhook sees it: GlanceBackends and PriorityClasses."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.backends: list[dict] = []
        self.list_error: Exception | None = None
        self.priority_classes: set[str] = set()
        self.priority_error: Exception | None = None
        self.listed: list[str] = []

    def list_glancebackends(self, namespace: str) -> list[dict]:
        self.listed.append(namespace)
        if self.list_error is not None:
            raise self.list_error
        return [b for b in self.backends if b["metadata"].get("namespace") == namespace]

    def priority_class_exists(self, name: str) -> bool:
        if self.priority_error is not None:
            raise self.priority_error
        return name in self.priority_classes

    def context(self, operation="CREATE", old=None) -> AdmissionContext:
        """What render's judge is given for the same cluster state."""
        return AdmissionContext(
            operation=operation,
            old=old,
            siblings=[b for b in self.backends if b["metadata"]["namespace"] == "openstack"],
            priority_class_exists=self.priority_class_exists,
            catalogs=CATALOGS,
        )


# --- HTTPS client ------------------------------------------------------------------------


def client_context(ca_file: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file))


def call(
    port: int,
    ca_file: Path,
    path: str,
    payload=None,
    *,
    body: bytes | None = None,
    method: str = "POST",
    headers: dict | None = None,
) -> tuple[int, dict]:
    conn = http.client.HTTPSConnection(
        "127.0.0.1", port, context=client_context(ca_file), timeout=20
    )
    try:
        if body is None and payload is not None:
            body = json.dumps(payload).encode()
        conn.request(
            method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
        )
        answer = conn.getresponse()
        data = answer.read()
        assert answer.getheader("Content-Type") == "application/json"
        return answer.status, json.loads(data)
    finally:
        conn.close()


def review(kind, obj, operation="CREATE", old=None, uid=None, namespace=None, request_kind=None):
    meta = (obj or old or {}).get("metadata") or {}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid or str(uuid.uuid4()),
            "kind": {"group": GROUP, "version": "v1alpha1", "kind": request_kind or kind},
            "resource": {
                "group": GROUP,
                "version": "v1alpha1",
                "resource": (request_kind or kind).lower() + "s",
            },
            "name": meta.get("name", ""),
            "namespace": namespace or meta.get("namespace", "openstack"),
            "operation": operation,
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
        },
    }


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_server_tls(tmp_path_factory.mktemp("webhook-tls"))


@pytest.fixture(scope="module")
def module_lookups():
    return Lookups()


@pytest.fixture(scope="module")
def server(tls, module_lookups):
    webhook = WebhookServer(
        tls.directory,
        "127.0.0.1",
        0,
        module_lookups.list_glancebackends,
        priority_class_exists=module_lookups.priority_class_exists,
    ).start()
    yield webhook
    webhook.stop()


@pytest.fixture
def lookups(module_lookups):
    module_lookups.reset()
    yield module_lookups
    module_lookups.reset()


class Webhook:
    """The module's server, a client verifying the test CA, and the lookups behind it."""

    def __init__(self, server, tls, lookups):
        self.server, self.tls, self.lookups = server, tls, lookups

    def post(self, path, payload=None, **kw):
        return call(self.server.port, self.tls.ca_file, path, payload, **kw)

    def validate(self, kind, obj, operation="CREATE", old=None, **kw) -> dict:
        status, answer = self.post(
            path_of(kind, "validate"), review(kind, obj, operation, old, **kw)
        )
        assert status == 200, answer
        assert answer["apiVersion"] == "admission.k8s.io/v1"
        assert answer["kind"] == "AdmissionReview"
        return answer["response"]

    def mutate(self, kind, obj, operation="CREATE", **kw) -> dict:
        status, answer = self.post(path_of(kind, "mutate"), review(kind, obj, operation, **kw))
        assert status == 200, answer
        return answer["response"]


@pytest.fixture
def webhook(server, tls, lookups):
    return Webhook(server, tls, lookups)


# --- what render says -------------------------------------------------------------------


def invalid_message(kind: str, name: str, messages: list[str]) -> str:
    """``apierrors.NewInvalid(...).Error()`` for these field errors."""
    unique = list(dict.fromkeys(messages))
    joined = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return f'{kind}.{GROUP} "{name}" is invalid: {joined}'


def assert_same_as_render(response, kind, obj, ctx):
    """The webhook's answer carries exactly the verdict of render's judge."""
    verdict = judge(CRDS[kind], obj, ctx)
    assert response["allowed"] is verdict.allowed, (response, verdict.messages())
    assert response.get("warnings", []) == verdict.warnings
    if verdict.allowed:
        assert response["status"]["code"] == 200
        return verdict
    status = response["status"]
    assert (status["code"], status["reason"], status["status"]) == (422, "Invalid", "Failure")
    assert status["message"] == invalid_message(kind, verdict.name, verdict.messages())
    assert status["details"]["kind"] == kind and status["details"]["group"] == GROUP
    assert status["details"]["name"] == verdict.name
    causes = [
        c["message"]
        if c["message"].startswith("unknown field")
        else f"{c.get('field') or '<nil>'}: {c['message']}"
        for c in status["details"]["causes"]
    ]
    assert causes == verdict.messages()
    return verdict


def decoded_patch(response) -> list[dict]:
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


def apply_patch(doc, ops):
    """RFC 6902 add/replace/remove, strict: a replace or remove needs an existing target."""
    doc = copy.deepcopy(doc)
    for op in ops:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
        if not tokens:
            assert op["op"] == "replace"
            doc = copy.deepcopy(op["value"])
            continue
        parent = doc
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        if isinstance(parent, list):
            last = len(parent) if last == "-" else int(last)
        if op["op"] == "add":
            if isinstance(parent, list):
                parent.insert(last, copy.deepcopy(op["value"]))
            else:
                parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "replace":
            assert isinstance(parent, list) or last in parent, op
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[last]
        else:
            raise AssertionError(f"unexpected op {op}")
    return doc


def sibling(name, glance="glance", default=True, deleting=False, namespace="openstack"):
    obj = patched(
        BACKEND,
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"glanceRef": {"name": glance}, "isDefault": default},
        },
    )
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
        obj["metadata"]["finalizers"] = ["glance.openstack.c5c3.io/backend"]
    return obj


def load_sample(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") in CRDS]


# --- every invalid input of the CRD rule table --------------------------------------------


@pytest.mark.parametrize(
    ("kind", "path", "message", "good", "bad", "old"), CRD_RULES, ids=[r[2][:60] for r in CRD_RULES]
)
def test_crd_rule_cases_are_judged_as_render_judges_them(
    webhook, kind, path, message, good, bad, old
):
    good_old, bad_old = old if old is not None else (None, None)
    for patch, old_patch in ((bad, bad_old), (good, good_old)):
        obj = patched(BASE[kind], patch)
        stored = None if old_patch is None else patched(BASE[kind], old_patch)
        operation = "CREATE" if stored is None else "UPDATE"
        response = webhook.validate(kind, obj, operation, stored)
        verdict = assert_same_as_render(
            response, kind, obj, webhook.lookups.context(operation, stored)
        )
        causes = [
            (c.get("field"), c["message"])
            for c in response.get("status", {}).get("details", {}).get("causes", [])
        ]
        rule_hit = (path, f'Invalid value: "object": {message}') in causes or any(
            f == path and m.endswith(message) for f, m in causes
        )
        if patch is bad:
            assert not response["allowed"] and rule_hit, causes
        else:
            assert not rule_hit
            assert verdict is not None


@pytest.mark.parametrize(
    ("kind", "path", "message", "good", "bad"), SCHEMA_CASES, ids=[c[1] for c in SCHEMA_CASES]
)
def test_schema_cases_are_denied_with_the_api_servers_cause(
    webhook, kind, path, message, good, bad
):
    for patch, expected in ((good, []), (bad, [(path, message)])):
        obj = patched(BASE[kind], patch)
        response = webhook.validate(kind, obj)
        assert_same_as_render(response, kind, obj, webhook.lookups.context())
        causes = response.get("status", {}).get("details", {}).get("causes", [])
        assert [(c.get("field"), c["message"]) for c in causes] == expected


# --- every webhook rule of the unit tables ------------------------------------------------


def _rule_cases():
    for rule, spec_patch, expected in GLANCE_RULE_CASES:
        yield "Glance", rule, {"spec": spec_patch}, expected
    for rule, patch, expected in BACKEND_RULE_CASES:
        yield "GlanceBackend", rule, patch, expected


RULE_CASES = list(_rule_cases())


@pytest.mark.parametrize(
    ("kind", "rule", "patch", "expected"),
    RULE_CASES,
    ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(RULE_CASES)],
)
def test_webhook_rule_cases_are_denied_with_renders_messages(webhook, kind, rule, patch, expected):
    obj = patched(BASE[kind], patch)
    response = webhook.validate(kind, obj)
    verdict = assert_same_as_render(response, kind, obj, webhook.lookups.context())
    assert response["allowed"] is (not expected)
    if expected and verdict.stage == "webhook":
        # Past the schema, the webhook rule's own wording reaches the client unchanged.
        messages = [
            f"{c.get('field')}: {c['message']}" for c in response["status"]["details"]["causes"]
        ]
        assert set(expected) <= set(messages)
        assert all(m in response["status"]["message"] for m in expected)


def test_the_rule_tables_reach_the_webhook_step_often_enough_to_matter():
    stages = [
        judge(CRDS[k], patched(BASE[k], p), AdmissionContext()).stage
        for k, _, p, e in RULE_CASES
        if e
    ]
    assert stages.count("webhook") >= 20


def test_several_errors_make_one_denial_in_the_api_servers_words(webhook):
    obj = patched(
        GLANCE,
        {
            "spec": {
                "extraConfig": {"keystone_authtoken": {"password": "x"}, "DEFAULT": {"": "y"}},
                "dbPurge": {"schedule": "* * *"},
            }
        },
    )
    response = webhook.validate("Glance", obj)
    assert not response["allowed"]
    assert response["status"]["message"] == (
        'Glance.glance.openstack.c5c3.io "glance" is invalid: ['
        'spec.dbPurge.schedule: Invalid value: "* * *": invalid cron expression: expected exactly 5 fields, found 3: [* * *], '
        'spec.extraConfig[DEFAULT]: Invalid value: "": extraConfig key must not be empty, '
        "spec.extraConfig[keystone_authtoken][password]: Forbidden: password is managed via spec.serviceUser.secretRef and must not be set in extraConfig (the middleware password is env-injected via OS_KEYSTONE_AUTHTOKEN__PASSWORD; a file override is ignored at runtime and leaks credential material into a namespace-readable ConfigMap), "
        'spec.extraConfig[DEFAULT][]: Invalid value: "": no such option in the glance 2026.2 option catalog]'
    )
    causes = response["status"]["details"]["causes"]
    assert [(c["reason"], c["field"]) for c in causes] == [
        ("FieldValueInvalid", "spec.dbPurge.schedule"),
        ("FieldValueInvalid", "spec.extraConfig[DEFAULT]"),
        ("FieldValueForbidden", "spec.extraConfig[keystone_authtoken][password]"),
        ("FieldValueInvalid", "spec.extraConfig[DEFAULT][]"),
    ]
    assert_same_as_render(response, "Glance", obj, webhook.lookups.context())


def test_a_single_error_is_not_bracketed(webhook):
    obj = patched(GLANCE, {"spec": {"dbPurge": {"retentionDays": 0}}})
    response = webhook.validate("Glance", obj)
    assert response["status"]["message"] == (
        'Glance.glance.openstack.c5c3.io "glance" is invalid: spec.dbPurge.retentionDays: '
        "Invalid value: 0: spec.dbPurge.retentionDays in body should be greater than or equal to 1"
    )


@pytest.mark.parametrize(
    "patch",
    [
        {"spec": {"deployment": "three"}},
        {"spec": "none"},
        {"metadata": {"name": 5}},
        {"spec": {"foo": 1, "image": {"bar": 2}}},
        {"metadata": {"name": "Glance_1"}},
        {"spec": {"image": {"tag": DELETE}, "deployment": {"replicas": "3"}}},
    ],
    ids=[
        "wrong-type-block",
        "wrong-type-spec",
        "wrong-type-name",
        "unknown-fields",
        "bad-name",
        "blocking-schema-error",
    ],
)
def test_malformed_objects_are_denied_as_render_denies_them(webhook, patch):
    obj = patched(GLANCE, patch)
    response = webhook.validate("Glance", obj)
    assert not response["allowed"]
    assert_same_as_render(response, "Glance", obj, webhook.lookups.context())


def test_an_unknown_field_is_named(webhook):
    response = webhook.validate("Glance", patched(GLANCE, {"spec": {"foo": 1}}))
    assert (
        response["status"]["message"]
        == 'Glance.glance.openstack.c5c3.io "glance" is invalid: unknown field "spec.foo"'
    )
    assert response["status"]["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'unknown field "spec.foo"', "field": "spec.foo"}
    ]


# --- samples ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples_are_allowed_without_warnings(webhook, path):
    docs = load_sample(path)
    webhook.lookups.backends = [d for d in docs if d["kind"] == "GlanceBackend"]
    # The cluster holds the PriorityClass a sample names (the full one names one).
    webhook.lookups.priority_classes = {
        d["spec"]["deployment"]["priorityClassName"]
        for d in docs
        if d["kind"] == "Glance" and "priorityClassName" in d["spec"].get("deployment", {})
    }
    assert {d["kind"] for d in docs} == {"Glance", "GlanceBackend"}
    for doc in docs:
        response = webhook.validate(doc["kind"], doc)
        assert response["allowed"] is True, response
        assert "warnings" not in response
        assert response["status"] == {"metadata": {}, "code": 200}
    assert webhook.lookups.listed  # the default backend was checked against its siblings


# --- mutation -----------------------------------------------------------------------------


MUTATION_CASES = [
    ("Glance", GLANCE),
    (
        "Glance",
        patched(
            GLANCE,
            {
                "spec": {
                    "logging": None,
                    "deployment": {"replicas": 0, "resources": {"requests": {}}},
                }
            },
        ),
    ),
    (
        "Glance",
        patched(
            GLANCE, {"spec": {"cache": {"backend": ""}, "apiServer": {"uwsgi": {"harakiri": 20}}}}
        ),
    ),
    (
        "Glance",
        patched(GLANCE, {"spec": {"serviceUser": {"username": "img", "secretRef": {"key": ""}}}}),
    ),
    ("GlanceBackend", BACKEND),
    ("GlanceBackend", patched(BACKEND, {"spec": {"s3": {"bucketURLFormat": ""}}})),
    *[(d["kind"], d) for p in SAMPLES for d in load_sample(p)],
]


@pytest.mark.parametrize(
    ("kind", "obj"), MUTATION_CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(MUTATION_CASES)]
)
def test_the_patch_gives_the_librarys_defaulted_object(webhook, kind, obj):
    response = webhook.mutate(kind, obj)
    assert response["allowed"] is True
    want = DEFAULTERS[kind](obj)
    if want == obj:
        assert "patch" not in response and "patchType" not in response
    else:
        assert apply_patch(obj, decoded_patch(response)) == want


def test_the_defaults_a_bare_glance_gets(webhook):
    patched_obj = apply_patch(GLANCE, decoded_patch(webhook.mutate("Glance", GLANCE)))
    spec = patched_obj["spec"]
    assert spec["deployment"] == {
        "replicas": 3,
        "resources": {
            "requests": {"memory": "512Mi", "cpu": "100m"},
            "limits": {"memory": "1Gi", "cpu": "500m"},
        },
    }
    assert spec["logging"] == {"format": "text", "level": "INFO", "debug": False}
    assert spec["cache"]["backend"] == "dogpile.cache.pymemcache"
    backend = apply_patch(BACKEND, decoded_patch(webhook.mutate("GlanceBackend", BACKEND)))
    assert backend["spec"]["s3"]["bucketURLFormat"] == "path"


@pytest.mark.parametrize("kind", ["Glance", "GlanceBackend"])
def test_an_object_that_needs_no_default_gets_no_patch(webhook, kind):
    response = webhook.mutate(kind, DEFAULTERS[kind](BASE[kind]), operation="UPDATE")
    assert response == {
        "uid": response["uid"],
        "allowed": True,
        "status": {"metadata": {}, "code": 200},
    }


def test_an_object_that_cannot_be_defaulted_passes_mutation_unchanged(webhook):
    response = webhook.mutate("Glance", patched(GLANCE, {"spec": {"deployment": "three"}}))
    assert response["allowed"] is True and "patch" not in response


def test_json_patch_escapes_pointer_tokens_and_replaces_changed_values():
    before = {"a/b": 1, "m~n": {"x": [1, 2]}, "gone": True, "same": {"k": False}}
    after = {"a/b": 2, "m~n": {"x": [1, 3], "y": None}, "same": {"k": False}, "new": 0}
    ops = json_patch(before, after)
    assert {"op": "replace", "path": "/a~1b", "value": 2} in ops
    assert {"op": "add", "path": "/m~0n/y", "value": None} in ops
    assert {"op": "remove", "path": "/gone"} in ops
    assert apply_patch(before, ops) == after
    assert json_patch({"debug": False}, {"debug": 0}) == [
        {"op": "replace", "path": "/debug", "value": 0}
    ]
    assert json_patch(after, copy.deepcopy(after)) == []


# --- create-only, update-only and conditional rules -----------------------------------------


def test_a_name_over_43_characters_is_refused_on_create_but_not_on_update(webhook):
    name = "g" * 44
    obj = patched(GLANCE, {"metadata": {"name": name}})
    created = webhook.validate("Glance", obj)
    assert created["allowed"] is False
    assert created["status"]["message"] == (
        f'Glance.glance.openstack.c5c3.io "{name}" is invalid: metadata.name: Invalid value: "{name}": '
        'name must be at most 43 characters: the db-purge CronJob appends "-db-purge" and Kubernetes '
        "caps CronJob names at 52 characters"
    )
    updated = webhook.validate("Glance", obj, "UPDATE", default_glance(obj))
    assert updated["allowed"] is True
    assert_same_as_render(
        updated, "Glance", obj, webhook.lookups.context("UPDATE", default_glance(obj))
    )


def test_lowering_retention_days_warns_on_update(webhook):
    old = default_glance(patched(GLANCE, {"spec": {"dbPurge": {"retentionDays": 30}}}))
    new = patched(old, {"spec": {"dbPurge": {"retentionDays": 7}}})
    response = webhook.validate("Glance", new, "UPDATE", old)
    assert response["allowed"] is True
    assert response["warnings"] == [
        "spec.dbPurge.retentionDays reduced 30 → 7: the next purge run hard-deletes the rows "
        "soft-deleted between 7 and 30 days ago, which cannot be undone"
    ]
    assert "warnings" not in webhook.validate("Glance", new)  # a create lowers nothing


def test_the_option_catalog_is_rechecked_on_update_only_when_its_inputs_change(webhook):
    legacy = patched(GLANCE, {"spec": {"extraConfig": {"bogus_section": {"a": "1"}}}})
    catalog_error = (
        'spec.extraConfig[bogus_section][a]: Invalid value: "a": no such section in the '
        "glance 2026.2 option catalog (sections registered by a loaded plugin must be declared via spec.plugins)"
    )
    created = webhook.validate("Glance", legacy)
    assert created["allowed"] is False and catalog_error in created["status"]["message"]
    # An unrelated update of an object stored before the catalog knew better is let through ...
    touched = patched(legacy, {"spec": {"deployment": {"replicas": 4}}})
    assert webhook.validate("Glance", touched, "UPDATE", legacy)["allowed"] is True
    # ... an update that changes extraConfig (or the release) is checked again.
    changed = patched(legacy, {"spec": {"extraConfig": {"bogus_section": {"a": "2"}}}})
    response = webhook.validate("Glance", changed, "UPDATE", legacy)
    assert response["allowed"] is False and catalog_error in response["status"]["message"]


def test_a_transition_rule_sees_the_old_object(webhook):
    old = default_glancebackend(BACKEND)
    moved = patched(old, {"spec": {"glanceRef": {"name": "other"}}})
    response = webhook.validate("GlanceBackend", moved, "UPDATE", old)
    assert response["allowed"] is False
    assert 'spec: Invalid value: "object": glanceRef is immutable' in response["status"]["message"]
    assert webhook.validate("GlanceBackend", moved)["allowed"] is True  # a create has no old


def test_an_update_without_old_object_is_a_bad_request(webhook):
    response = webhook.validate("Glance", GLANCE, "UPDATE", None)
    assert response["allowed"] is False
    assert (response["status"]["code"], response["status"]["reason"]) == (400, "BadRequest")


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
@pytest.mark.parametrize("verb", ["validate", "mutate"])
def test_delete_and_connect_are_always_allowed(webhook, operation, verb):
    bad = patched(GLANCE, {"spec": {"foo": 1}})
    status, answer = webhook.post(
        path_of("Glance", verb), review("Glance", None, operation, old=bad, uid="del-1")
    )
    assert status == 200
    assert answer["response"] == {
        "uid": "del-1",
        "allowed": True,
        "status": {"metadata": {}, "code": 200},
    }


# --- the sibling single-default check ------------------------------------------------------


def test_a_second_default_backend_of_the_same_glance_is_denied(webhook):
    webhook.lookups.backends = [sibling("s3-other")]
    response = webhook.validate("GlanceBackend", BACKEND)
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        'GlanceBackend.glance.openstack.c5c3.io "s3-default" is invalid: spec.isDefault: Invalid '
        'value: true: GlanceBackend "s3-other" attached to the same Glance "glance" is already marked isDefault; '
        "exactly one default store is allowed"
    )
    assert webhook.lookups.listed == ["openstack"]
    assert_same_as_render(response, "GlanceBackend", BACKEND, webhook.lookups.context())


@pytest.mark.parametrize(
    "siblings",
    [
        [sibling("s3-other", deleting=True)],
        [sibling("s3-other", glance="other-glance")],
        [sibling("s3-other", default=False)],
        [sibling("s3-default")],  # itself, on an update
        [sibling("s3-other", namespace="elsewhere")],
        [],
    ],
    ids=["being-deleted", "other-glance", "not-default", "itself", "other-namespace", "none"],
)
def test_backends_that_do_not_compete_are_ignored(webhook, siblings):
    webhook.lookups.backends = siblings
    assert webhook.validate("GlanceBackend", BACKEND)["allowed"] is True
    assert webhook.lookups.listed == ["openstack"]


def test_a_failing_list_is_an_internal_error(webhook):
    webhook.lookups.list_error = ConnectionRefusedError("apiserver unreachable")
    response = webhook.validate("GlanceBackend", BACKEND)
    assert response["allowed"] is False
    status = response["status"]
    assert (status["code"], status["reason"], status["status"]) == (500, "InternalError", "Failure")
    assert status["message"].startswith(
        "Internal error occurred: listing GlanceBackends for the single-default check: "
        "apiserver unreachable"
    )
    assert "namespace 'openstack'" in status["message"]


def test_a_non_default_backend_is_not_listed_for(webhook):
    webhook.lookups.list_error = ConnectionRefusedError("apiserver unreachable")
    response = webhook.validate("GlanceBackend", patched(BACKEND, {"spec": {"isDefault": False}}))
    assert response["allowed"] is True and webhook.lookups.listed == []


def test_without_a_lister_the_sibling_check_is_skipped(tls):
    with WebhookServer(tls.directory, "127.0.0.1", 0) as bare:
        status, answer = call(
            bare.port,
            tls.ca_file,
            path_of("GlanceBackend", "validate"),
            review("GlanceBackend", BACKEND),
        )
    assert status == 200 and answer["response"]["allowed"] is True


def test_kube_backend_lister_asks_the_client_for_the_namespaces_backends():
    class Client:
        def __init__(self):
            self.calls = []

        def list(self, api_version, kind, namespace=None, label_selector=None):
            self.calls.append((api_version, kind, namespace))
            return [sibling("s3-other")]

    client = Client()
    lister = kube_backend_lister(client)
    assert lister("openstack")[0]["metadata"]["name"] == "s3-other"
    assert client.calls == [("glance.openstack.c5c3.io/v1alpha1", "GlanceBackend", "openstack")]


# --- the PriorityClass lookup ---------------------------------------------------------------


def test_a_missing_priority_class_is_not_found_and_a_failing_lookup_an_internal_error(webhook):
    obj = patched(GLANCE, {"spec": {"deployment": {"priorityClassName": "glance-critical"}}})
    response = webhook.validate("Glance", obj)
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        'Glance.glance.openstack.c5c3.io "glance" is invalid: '
        'spec.deployment.priorityClassName: Not found: "glance-critical"'
    )
    assert response["status"]["details"]["causes"][0]["reason"] == "FieldValueNotFound"
    webhook.lookups.priority_classes = {"glance-critical"}
    assert webhook.validate("Glance", obj)["allowed"] is True
    webhook.lookups.priority_error = TimeoutError("read timed out")
    failed = webhook.validate("Glance", obj)["status"]
    assert (failed["code"], failed["reason"]) == (500, "InternalError")
    assert "failed to look up PriorityClass: read timed out" in failed["message"]
    assert "PriorityClass 'glance-critical'" in failed["message"]


def test_the_client_factory_wires_the_priority_class_lookup(tls):
    class Client:
        def list(self, api_version, kind, namespace=None, label_selector=None):
            return []

        def get(self, api_version, kind, name, namespace=None):
            assert (api_version, kind) == ("scheduling.k8s.io/v1", "PriorityClass")
            return {"metadata": {"name": name}} if name == "known" else None

    obj = patched(GLANCE, {"spec": {"deployment": {"priorityClassName": "unknown"}}})
    with WebhookServer.with_client(
        Client(), cert_dir=tls.directory, host="127.0.0.1", port=0
    ) as srv:
        _, denied = call(
            srv.port, tls.ca_file, path_of("Glance", "validate"), review("Glance", obj)
        )
        known = patched(obj, {"spec": {"deployment": {"priorityClassName": "known"}}})
        _, allowed = call(
            srv.port, tls.ca_file, path_of("Glance", "validate"), review("Glance", known)
        )
    assert denied["response"]["allowed"] is False
    assert allowed["response"]["allowed"] is True


# --- requests that are not what a path expects -----------------------------------------------


@pytest.mark.parametrize("verb", ["validate", "mutate"])
def test_a_request_for_the_other_kind_is_denied_naming_the_mismatch(webhook, verb):
    status, answer = webhook.post(path_of("Glance", verb), review("GlanceBackend", BACKEND))
    assert status == 200
    response = answer["response"]
    assert response["allowed"] is False
    assert (response["status"]["code"], response["status"]["reason"]) == (400, "BadRequest")
    assert response["status"]["message"] == (
        f"{path_of('Glance', verb)} admits glance.openstack.c5c3.io/v1alpha1, Kind=Glance, but the "
        "request is for glance.openstack.c5c3.io/v1alpha1, Kind=GlanceBackend"
    )


def test_an_object_of_the_other_kind_is_denied_naming_it(webhook):
    payload = review("Glance", BACKEND)  # request.kind says Glance, the object does not
    response = webhook.post(path_of("Glance", "validate"), payload)[1]["response"]
    assert response["allowed"] is False
    assert response["status"]["message"].endswith(
        "but the object is glance.openstack.c5c3.io/v1alpha1, Kind=GlanceBackend"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "the body is not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"[" * 100_000, "the body is not JSON"),
        (
            json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1beta1",
                    "kind": "AdmissionReview",
                    "request": {"uid": "x"},
                }
            ).encode(),
            "is not an admission.k8s.io/v1 AdmissionReview",
        ),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            "has no request",
        ),
        (
            json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {"operation": "CREATE"},
                }
            ).encode(),
            "has no uid",
        ),
        (json.dumps(GLANCE).encode(), "kind 'Glance'"),
    ],
    ids=["not-json", "not-object", "too-deep", "v1beta1", "no-request", "no-uid", "bare-object"],
)
def test_a_body_that_is_not_an_admission_review_is_a_400(webhook, body, message):
    status, answer = webhook.post(path_of("Glance", "validate"), body=body)
    assert status == 400
    assert (answer["kind"], answer["code"], answer["reason"]) == ("Status", 400, "BadRequest")
    assert message in answer["message"]


def test_an_unknown_path_is_a_404_and_get_a_405(webhook):
    status, answer = webhook.post(
        "/validate-glance-openstack-c5c3-io-v1alpha1-glancebackends",
        review("GlanceBackend", BACKEND),
    )
    assert (status, answer["reason"]) == (404, "NotFound")
    assert "/validate-glance-openstack-c5c3-io-v1alpha1-glancebackends" in answer["message"]
    status, answer = webhook.post(path_of("Glance", "validate"), method="GET")
    assert (status, answer["reason"]) == (405, "MethodNotAllowed")
    assert webhook.post("/healthz", method="GET")[0] == 404


def test_a_wrong_content_type_is_a_400(webhook):
    status, answer = webhook.post(
        path_of("Glance", "validate"),
        review("Glance", GLANCE),
        headers={"Content-Type": "text/plain"},
    )
    assert status == 400 and "expected application/json" in answer["message"]


def _raw_post(server, ca_file, path, headers, body=b""):
    conn = http.client.HTTPSConnection(
        "127.0.0.1", server.port, context=client_context(ca_file), timeout=20
    )
    try:
        conn.putrequest("POST", path)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        if body:
            conn.send(body)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def test_a_body_over_the_limit_is_refused_unread(webhook):
    status, answer = _raw_post(
        webhook.server,
        webhook.tls.ca_file,
        path_of("Glance", "validate"),
        {"Content-Length": str(MAX_BODY_BYTES + 1)},
    )
    assert (status, answer["reason"]) == (413, "RequestEntityTooLarge")
    assert str(MAX_BODY_BYTES) in answer["message"]
    assert MAX_BODY_BYTES == 3 * 1024 * 1024
    status, answer = _raw_post(
        webhook.server,
        webhook.tls.ca_file,
        path_of("Glance", "validate"),
        {"Content-Type": "application/json"},
    )
    assert (status, answer["code"]) == (411, 411)


def test_a_real_oversized_body_is_refused_and_the_limit_is_inclusive(tls):
    payload = json.dumps(review("Glance", GLANCE)).encode()
    with WebhookServer(tls.directory, "127.0.0.1", 0, max_body=len(payload)) as small:
        assert call(small.port, tls.ca_file, path_of("Glance", "validate"), body=payload)[0] == 200
        status, answer = call(
            small.port, tls.ca_file, path_of("Glance", "validate"), body=payload + b" "
        )
    assert status == 413 and answer["code"] == 413


# --- logging ---------------------------------------------------------------------------------


def _records(caplog, uid, deadline=5.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "runner.webhook"]
        found = [line for line in lines if line.get("uid") == uid]
        if found:
            return found
        time.sleep(0.02)
    return []


def test_every_request_is_one_json_log_line(webhook, caplog):
    caplog.set_level(logging.INFO, logger="runner.webhook")
    obj = patched(GLANCE, {"spec": {"dbPurge": {"retentionDays": 0}}})
    webhook.validate("Glance", obj, uid="log-uid-1")
    lines = _records(caplog, "log-uid-1")
    assert len(lines) == 1
    line = lines[0]
    assert {
        k: line[k]
        for k in (
            "uid",
            "kind",
            "namespace",
            "name",
            "operation",
            "allowed",
            "http_status",
            "code",
            "path",
        )
    } == {
        "uid": "log-uid-1",
        "kind": "Glance",
        "namespace": "openstack",
        "name": "glance",
        "operation": "CREATE",
        "allowed": False,
        "http_status": 200,
        "code": 422,
        "path": path_of("Glance", "validate"),
    }
    assert isinstance(line["duration_ms"], float) and 0 <= line["duration_ms"] < 20000
    assert "retentionDays" in line["message"]
    webhook.post("/nowhere", {"x": 1})
    end = time.monotonic() + 5
    while time.monotonic() < end and not any(
        '"/nowhere"' in r.getMessage() for r in caplog.records
    ):
        time.sleep(0.02)
    refused = [json.loads(r.getMessage()) for r in caplog.records if '"/nowhere"' in r.getMessage()]
    assert len(refused) == 1 and refused[0]["http_status"] == 404 and refused[0]["uid"] is None


# --- connections, certificates, lifecycle ----------------------------------------------------


def test_keep_alive_and_concurrent_requests(webhook):
    conn = http.client.HTTPSConnection(
        "127.0.0.1", webhook.server.port, context=client_context(webhook.tls.ca_file), timeout=20
    )
    try:
        for uid in ("ka-1", "ka-2", "ka-3"):
            conn.request(
                "POST",
                path_of("Glance", "validate"),
                json.dumps(review("Glance", GLANCE, uid=uid)),
                {"Content-Type": "application/json"},
            )
            answer = json.loads(conn.getresponse().read())
            assert answer["response"]["uid"] == uid and answer["response"]["allowed"] is True
    finally:
        conn.close()

    results: queue.Queue = queue.Queue()

    def one(i):
        obj = patched(
            GLANCE,
            {"metadata": {"name": f"glance-{i}"}, "spec": {"dbPurge": {"retentionDays": i % 2}}},
        )
        results.put((i, webhook.validate("Glance", obj, uid=f"c-{i}")))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    answers = dict(results.get_nowait() for _ in range(8))
    assert {i: a["allowed"] for i, a in answers.items()} == {i: i % 2 == 1 for i in range(8)}
    assert all(a["uid"] == f"c-{i}" for i, a in answers.items())


def _served_certificate(port: int, ca_file: Path) -> bytes:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        client_context(ca_file).wrap_socket(raw, server_hostname="127.0.0.1") as tls_sock,
    ):
        return tls_sock.getpeercert(binary_form=True)


def _der(cert_file: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert_file.read_text())


def test_the_certificate_is_reloaded_after_rotation(tmp_path):
    first = make_server_tls(tmp_path / "certs")
    old_ca = tmp_path / "old-ca.crt"
    old_ca.write_bytes(first.ca_pem)
    old_der = _der(first.cert_file)
    with WebhookServer(first.directory, "127.0.0.1", 0) as srv:
        assert _served_certificate(srv.port, old_ca) == old_der
        time.sleep(0.05)  # a new mtime, as a rotation minutes later has

        # A half-written pair (the certificate, not yet its key) keeps the old one in service.
        (first.directory / "tls.crt").write_text("-----BEGIN CERTIFICATE-----\ngarbage\n")
        assert _served_certificate(srv.port, old_ca) == old_der

        second = make_server_tls(tmp_path / "certs")  # new CA, certificate and key in place
        assert _der(second.cert_file) != old_der
        assert _served_certificate(srv.port, second.ca_file) == _der(second.cert_file)
        with pytest.raises(ssl.SSLCertVerificationError):
            _served_certificate(srv.port, old_ca)
        status, answer = call(
            srv.port, second.ca_file, path_of("Glance", "validate"), review("Glance", GLANCE)
        )
        assert status == 200 and answer["response"]["allowed"] is True
        assert srv.certificates.loads == 2


def test_a_missing_certificate_fails_start(tmp_path):
    with pytest.raises(FileNotFoundError):
        WebhookServer(tmp_path, "127.0.0.1", 0).start()


def test_stop_closes_idle_keep_alive_connections_promptly(tls):
    srv = WebhookServer(tls.directory, "127.0.0.1", 0).start()
    conn = http.client.HTTPSConnection(
        "127.0.0.1", srv.port, context=client_context(tls.ca_file), timeout=20
    )
    try:
        conn.request(
            "POST",
            path_of("Glance", "validate"),
            json.dumps(review("Glance", GLANCE)),
            {"Content-Type": "application/json"},
        )
        assert json.loads(conn.getresponse().read())["response"]["allowed"] is True
        port = srv.port
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 2.0
        assert not srv.running
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=1)
    finally:
        conn.close()


def test_python_m_runner_webhook_serves_until_sigterm(tmp_path):
    certs = make_server_tls(tmp_path / "certs")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / ".collections"), str(ROOT)]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runner.endpoints.webhook",
            "--cert-dir",
            str(certs.directory),
            "--bind-address",
            "127.0.0.1",
            "--port",
            "0",
            "--no-cluster-lookups",
        ],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()

    def next_event(msg, timeout=30.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            event = json.loads(line)
            if event["msg"] == msg:
                return event
        raise AssertionError(f"no {msg!r} line")

    try:
        serving = next_event("serving")
        port = serving["port"]
        assert port > 0 and sorted(serving["paths"]) == sorted(
            path_of(k, v) for k in ("Glance", "GlanceBackend") for v in ("mutate", "validate")
        )
        status, answer = call(
            port,
            certs.ca_file,
            path_of("GlanceBackend", "validate"),
            review("GlanceBackend", patched(BACKEND, {"metadata": {"name": "default"}})),
        )
        assert status == 200 and answer["response"]["allowed"] is False
        assert next_event("admission review")["allowed"] is False
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert next_event("stopped")["port"] == port
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_stop_lets_a_request_in_flight_finish(tls):
    entered, release = threading.Event(), threading.Event()

    def slow_lister(namespace):
        entered.set()
        assert release.wait(10)
        return []

    srv = WebhookServer(tls.directory, "127.0.0.1", 0, slow_lister).start()
    answers: queue.Queue = queue.Queue()
    client = threading.Thread(
        target=lambda: answers.put(
            call(
                srv.port,
                tls.ca_file,
                path_of("GlanceBackend", "validate"),
                review("GlanceBackend", BACKEND),
            )
        )
    )
    client.start()
    assert entered.wait(10)
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    time.sleep(0.3)  # stop() is now waiting for the connection
    assert stopper.is_alive()
    release.set()
    client.join(10)
    stopper.join(10)
    status, answer = answers.get_nowait()
    assert status == 200 and answer["response"]["allowed"] is True
    assert not stopper.is_alive() and not srv.running


# --- the cluster lookups against a live API ------------------------------------------------
# The sibling single-default check and the PriorityClass check, read through our client
# from the REST test double over HTTPS (the client the runner gives the webhook in a pod).


@pytest.fixture
def live(tmp_path):
    """The API double with one default backend, and a webhook that reads it live."""
    with FakeAPIServer(tmp_path / "api") as api:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        client = KubeClient.from_environment(str(kubeconfig))
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openstack"}})
        client.create(copy.deepcopy(BACKEND))  # s3-default, isDefault: true, of Glance "glance"
        tls = make_server_tls(tmp_path / "certs")
        server = WebhookServer.with_client(client, cert_dir=tls.directory, host="127.0.0.1", port=0)
        server.start()
        try:
            yield server, tls, client, api
        finally:
            server.stop()


def test_a_second_default_backend_is_refused_by_reading_the_live_siblings(live):
    server, tls, _, api = live
    api.reset_requests()
    _, answer = call(
        server.port,
        tls.ca_file,
        path_of("GlanceBackend", "validate"),
        review("GlanceBackend", sibling("s3-other")),
    )
    response = answer["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert (
        'GlanceBackend "s3-default" attached to the same Glance "glance" is already marked '
        "isDefault; exactly one default store is allowed"
    ) in response["status"]["message"]
    assert any(r.path.endswith("/namespaces/openstack/glancebackends") for r in api.requests)


def test_the_same_backend_is_allowed_once_the_other_is_no_longer_default(live):
    server, tls, client, _ = live
    client.patch(
        "glance.openstack.c5c3.io/v1alpha1",
        "GlanceBackend",
        "s3-default",
        "openstack",
        {"spec": {"isDefault": False}},
    )
    _, answer = call(
        server.port,
        tls.ca_file,
        path_of("GlanceBackend", "validate"),
        review("GlanceBackend", sibling("s3-other")),
    )
    assert answer["response"]["allowed"] is True


def test_a_priority_class_is_looked_up_live(live):
    server, tls, client, _ = live
    glance = patched(GLANCE, {"spec": {"deployment": {"priorityClassName": "glance-critical"}}})
    _, missing = call(
        server.port, tls.ca_file, path_of("Glance", "validate"), review("Glance", glance)
    )
    assert missing["response"]["allowed"] is False
    assert "glance-critical" in missing["response"]["status"]["message"]
    client.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "glance-critical"},
            "value": 1000,
        }
    )
    _, found = call(
        server.port, tls.ca_file, path_of("Glance", "validate"), review("Glance", glance)
    )
    assert found["response"]["allowed"] is True, found["response"].get("status")
