"""The offline judge and a real kube-apiserver give the same verdict on the same input.

The API server runs without our webhook here, so each object is sent with the webhook's
defaults already applied and compared with the offline schema and CEL steps: accepted or
refused, and for CEL rules the same path and message.
"""

from __future__ import annotations

import pytest
from kube_harness import ApiError
from support.builders import BACKEND, GLANCE, patched
from support.crd_rule_cases import RULES, SCHEMA_CASES

from ansible_collections.c5c3.glance.plugins.module_utils.admission import openapi_schema
from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import schema_and_cel
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    default_glance,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glancebackend_admission import (
    default_glancebackend,
)

pytestmark = pytest.mark.integration

CRDS = load_crds()
BASE = {"Glance": GLANCE, "GlanceBackend": BACKEND}
DEFAULT = {"Glance": default_glance, "GlanceBackend": default_glancebackend}
PLURAL = {"Glance": "glances", "GlanceBackend": "glancebackends"}


def collection(kind: str, namespace: str = "default") -> str:
    return f"/apis/glance.openstack.c5c3.io/v1alpha1/namespaces/{namespace}/{PLURAL[kind]}"


def offline(kind: str, obj: dict, old: dict | None = None) -> list[tuple[str, str]]:
    schema = openapi_schema.version_schema(CRDS[kind])
    stored = openapi_schema.apply_defaults(schema, obj)
    old_stored = openapi_schema.apply_defaults(schema, old) if old else None
    return [
        (e.path, e.detail) for e in schema_and_cel(schema, stored, old_stored) if e.origin == "cel"
    ]


def online(kube, kind: str, obj: dict, old: dict | None = None) -> list[str]:
    """The causes' messages of the API server's refusal, [] when it accepts."""
    try:
        if old is None:
            kube.client.create(collection(kind), obj, dry_run=True)
        else:
            name = obj["metadata"]["name"]
            try:
                stored = kube.client.create(collection(kind), old)
            except ApiError as exc:
                pytest.skip(f"the stored object of this case is not admissible itself: {exc}")
            try:
                body = dict(
                    obj,
                    metadata=dict(
                        obj["metadata"], resourceVersion=stored["metadata"]["resourceVersion"]
                    ),
                )
                kube.client.replace(f"{collection(kind)}/{name}", body, dry_run=True)
            finally:
                kube.client.delete(f"{collection(kind)}/{name}")
    except ApiError as exc:
        assert exc.code == 422, exc.status
        return [f"{c.get('field', '')}: {c.get('message', '')}" for c in exc.causes]
    return []


def build(kind: str, patch: dict) -> dict:
    obj = DEFAULT[kind](patched(BASE[kind], patch))
    obj["metadata"]["namespace"] = "default"
    return obj


@pytest.mark.parametrize(
    ("kind", "path", "message", "good", "bad", "old"), RULES, ids=[r[2][:60] for r in RULES]
)
def test_api_server_and_offline_judge_agree_on_each_cel_rule(
    kube, kind, path, message, good, bad, old
):
    good_old, bad_old = (build(kind, o) for o in old) if old is not None else (None, None)
    assert online(kube, kind, build(kind, good), good_old) == []
    assert (path, message) not in offline(kind, build(kind, good), good_old)
    assert (path, message) in offline(kind, build(kind, bad), bad_old)
    refused = online(kube, kind, build(kind, bad), bad_old)
    assert any(path in cause and message in cause for cause in refused), refused


@pytest.mark.parametrize(
    ("kind", "path", "message", "good", "bad"), SCHEMA_CASES, ids=[c[1] for c in SCHEMA_CASES]
)
def test_api_server_and_offline_judge_agree_on_each_schema_case(
    kube, kind, path, message, good, bad
):
    schema = openapi_schema.version_schema(CRDS[kind])
    for patch, expected in ((good, []), (bad, [f"{path}: {message}"])):
        obj = build(kind, patch)
        stored = openapi_schema.apply_defaults(schema, obj)
        assert [str(e) for e in schema_and_cel(schema, stored, None)] == expected
        assert online(kube, kind, obj) == expected


@pytest.mark.parametrize("kind", ["Glance", "GlanceBackend"])
def test_the_api_server_refuses_an_unknown_field_as_the_offline_judge_does(kube, kind):
    obj = build(kind, {"spec": {"bogusField": 1}})
    with pytest.raises(ApiError) as caught:
        kube.client.create(collection(kind), obj, dry_run=True)
    assert 'unknown field "spec.bogusField"' in caught.value.status.get("message", "")
    assert [
        str(e)
        for e in openapi_schema.unknown_fields(openapi_schema.version_schema(CRDS[kind]), obj)
    ] == ['unknown field "spec.bogusField"']


def test_the_api_server_stores_the_schema_defaults_the_offline_judge_applies(kube):
    glance = build("Glance", {"spec": {"apiServer": {"uwsgi": {}}}})
    stored = kube.client.create(collection("Glance"), glance, dry_run=True)
    schema = openapi_schema.version_schema(CRDS["Glance"])
    assert stored["spec"] == openapi_schema.apply_defaults(schema, glance)["spec"]


@pytest.mark.parametrize(
    ("methods", "paths"),
    [
        pytest.param(["glance-direct", "web-download"], [], id="opt-in"),
        pytest.param([], ["spec.importMethods"], id="empty"),
        pytest.param(["copy-image", "copy-image"], ["spec.importMethods[1]"], id="duplicate"),
        pytest.param(["web-download", "file-upload"], ["spec.importMethods[1]"], id="unknown"),
    ],
)
def test_the_api_server_and_offline_judge_agree_on_import_methods(kube, methods, paths):
    glance = build("Glance", {"spec": {"importMethods": methods}})
    schema = openapi_schema.version_schema(CRDS["Glance"])
    stored = openapi_schema.apply_defaults(schema, glance)
    found = sorted({e.path for e in schema_and_cel(schema, stored, None) if e.origin == "schema"})
    assert found == paths
    refused = online(kube, "Glance", glance)
    # An enum error also reports, without a field, that the CEL rules were skipped.
    fields = {cause.split(": ", 1)[0] for cause in refused} - {"", "<nil>"}
    assert sorted(fields) == paths, refused
