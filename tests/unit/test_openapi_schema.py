"""The structural-schema engine against small schemas: each rule passes and fails as kube-apiserver."""

from __future__ import annotations

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission import openapi_schema as oas

QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
}

SCHEMA = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["release"],
            "properties": {
                "release": {"type": "string", "pattern": r"^\d{4}\.[12]$"},
                "name": {"type": "string", "minLength": 1, "maxLength": 8},
                "cluster": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 8,
                    "pattern": "^[a-z]+$",
                },
                "replicas": {"type": "integer", "format": "int32", "minimum": 1, "default": 3},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "format": {"type": "string", "enum": ["text", "json"], "default": "text"},
                "enabled": {"type": "boolean"},
                "size": QUANTITY,
                "hosts": {
                    "type": "array",
                    "maxItems": 2,
                    "minItems": 1,
                    "items": {"type": "string"},
                },
                "labels": {
                    "type": "object",
                    "maxProperties": 2,
                    "minProperties": 1,
                    "additionalProperties": {"type": "string"},
                },
                "plugins": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["section"],
                    "items": {
                        "type": "object",
                        "required": ["section"],
                        "properties": {"section": {"type": "string"}, "extra": {"type": "string"}},
                    },
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "logging": {
                    "type": "object",
                    "properties": {
                        "level": {"type": "string", "default": "INFO"},
                        "debug": {"type": "boolean"},
                    },
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}


def messages(errors):
    return [str(e) for e in errors]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"release": "2026.2"}, []),
        (
            {"release": "2026.3"},
            [
                r"""spec.release: Invalid value: "2026.3": spec.release in body should match '^\d{4}\.[12]$'"""
            ],
        ),
        ({}, ["spec.release: Required value"]),
        (
            {"release": "2026.1", "replicas": 0},
            [
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
            ],
        ),
        (
            {"release": "2026.1", "port": 65536},
            [
                "spec.port: Invalid value: 65536: spec.port in body should be less than or equal to 65535"
            ],
        ),
        (
            {"release": "2026.1", "replicas": "3"},
            [
                'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'
            ],
        ),
        (
            {"release": "2026.1", "enabled": 1},
            [
                'spec.enabled: Invalid value: "integer": spec.enabled in body must be of type boolean: "integer"'
            ],
        ),
        (
            {"release": "2026.1", "replicas": True},
            [
                'spec.replicas: Invalid value: "boolean": spec.replicas in body must be of type integer: "boolean"'
            ],
        ),
        (
            {"release": "2026.1", "format": "xml"},
            ['spec.format: Unsupported value: "xml": supported values: "text", "json"'],
        ),
        (
            {"release": "2026.1", "name": ""},
            ['spec.name: Invalid value: "": spec.name in body should be at least 1 chars long'],
        ),
        (
            {"release": "2026.1", "name": "ninechars"},
            ["spec.name: Too long: may not be more than 8 bytes"],
        ),
        # A string's checks stop at the first failure, maxLength, minLength, then pattern.
        (
            {"release": "2026.1", "cluster": ""},
            [
                'spec.cluster: Invalid value: "": spec.cluster in body should be at least 1 chars long'
            ],
        ),
        (
            {"release": "2026.1", "cluster": "NINECHARS"},
            ["spec.cluster: Too long: may not be more than 8 bytes"],
        ),
        (
            {"release": "2026.1", "cluster": "Edge"},
            ["spec.cluster: Invalid value: \"Edge\": spec.cluster in body should match '^[a-z]+$'"],
        ),
        (
            {"release": "2026.1", "hosts": ["a", "b", "c"]},
            ["spec.hosts: Too many: 3: must have at most 2 items"],
        ),
        (
            {"release": "2026.1", "hosts": []},
            ["spec.hosts: Invalid value: 0: spec.hosts in body should have at least 1 items"],
        ),
        (
            {"release": "2026.1", "hosts": ["a", 1]},
            [
                'spec.hosts[1]: Invalid value: "integer": spec.hosts[1] in body must be of type string: "integer"'
            ],
        ),
        (
            {"release": "2026.1", "labels": {"a": "1", "b": "2", "c": "3"}},
            ["spec.labels: Too many: 3: must have at most 2 items"],
        ),
        (
            {"release": "2026.1", "labels": {}},
            [
                "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"
            ],
        ),
        (
            {"release": "2026.1", "labels": {"a": 1}},
            [
                'spec.labels[a]: Invalid value: "integer": spec.labels[a] in body must be of type string: "integer"'
            ],
        ),
        ({"release": "2026.1", "size": "10Gi"}, []),
        ({"release": "2026.1", "size": 1024}, []),
        (
            {"release": "2026.1", "size": "10 GB"},
            [
                'spec.size: Invalid value: "10 GB": spec.size in body should match \''
                + QUANTITY["pattern"]
                + "'"
            ],
        ),
        (
            {"release": "2026.1", "size": [1]},
            [
                'spec.size: Invalid value: "array": spec.size in body must be of type integer-or-string: "array"'
            ],
        ),
        ({"release": "2026.1", "plugins": [{"section": "a"}, {"section": "b"}]}, []),
        (
            {"release": "2026.1", "plugins": [{"section": "a"}, {"section": "a", "extra": "x"}]},
            ['spec.plugins[1]: Duplicate value: {"section":"a"}'],
        ),
        (
            {"release": "2026.1", "plugins": [{"extra": "x"}]},
            ["spec.plugins[0].section: Required value"],
        ),
        ({"release": "2026.1", "tags": ["x", "y", "x"]}, ['spec.tags[2]: Duplicate value: "x"']),
    ],
)
def test_schema_rule_passes_or_fails_with_the_api_servers_message(spec, expected):
    assert messages(oas.validate(SCHEMA, {"spec": spec})) == expected


def test_every_schema_error_is_collected_not_just_the_first():
    errors = oas.validate(SCHEMA, {"spec": {"replicas": 0, "format": "xml", "port": 0}})
    assert [e.path for e in errors] == ["spec.release", "spec.format", "spec.port", "spec.replicas"]
    assert {e.origin for e in errors} == {fe.ORIGIN_SCHEMA}


@pytest.mark.parametrize(
    ("obj", "unknown"),
    [
        (
            {
                "apiVersion": "x/v1",
                "kind": "K",
                "metadata": {"name": "a"},
                "spec": {"release": "1"},
            },
            [],
        ),
        ({"spec": {"release": "1", "bogus": 1}}, ['unknown field "spec.bogus"']),
        ({"spec": {"logging": {"levle": "INFO"}}}, ['unknown field "spec.logging.levle"']),
        (
            {"spec": {"plugins": [{"section": "a", "sectoin": "b"}]}},
            ['unknown field "spec.plugins[0].sectoin"'],
        ),
        ({"metadata": {"name": "a", "lables": {}}}, ['unknown field "metadata.lables"']),
        ({"spec": {"free": {"anything": {"goes": 1}}}}, []),
        ({"spec": {"labels": {"any-key": "v"}}}, []),
        ({"status": {"x": 1}}, ['unknown field "status"']),
    ],
)
def test_strict_decoding_names_each_unknown_field(obj, unknown):
    assert messages(oas.unknown_fields(SCHEMA, obj)) == unknown


def test_defaults_fill_absent_fields_and_recurse_only_into_present_objects():
    out = oas.apply_defaults(SCHEMA, {"spec": {"release": "2026.2", "logging": {}}})
    assert out["spec"]["replicas"] == 3
    assert out["spec"]["format"] == "text"
    assert out["spec"]["logging"] == {"level": "INFO"}
    bare = oas.apply_defaults(SCHEMA, {"spec": {"release": "2026.2"}})
    assert "logging" not in bare["spec"]


def test_defaults_never_overwrite_and_do_not_touch_the_input():
    given = {"spec": {"replicas": 5, "format": "json"}}
    out = oas.apply_defaults(SCHEMA, given)
    assert out["spec"]["replicas"] == 5 and out["spec"]["format"] == "json"
    assert given == {"spec": {"replicas": 5, "format": "json"}}


def test_null_takes_the_default_or_is_pruned_when_not_nullable():
    out = oas.apply_defaults(SCHEMA, {"spec": {"replicas": None, "name": None}})
    assert out["spec"]["replicas"] == 3
    assert "name" not in out["spec"]


def test_version_schema_picks_the_storage_version():
    crd = {
        "metadata": {"name": "x"},
        "spec": {
            "versions": [
                {"name": "v1alpha1", "storage": False, "schema": {"openAPIV3Schema": {"a": 1}}},
                {"name": "v1", "storage": True, "schema": {"openAPIV3Schema": {"b": 2}}},
            ]
        },
    }
    assert oas.version_schema(crd) == {"b": 2}
    assert oas.version_schema(crd, "v1alpha1") == {"a": 1}
    with pytest.raises(KeyError):
        oas.version_schema(crd, "v2")
