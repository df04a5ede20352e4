"""CEL rules evaluated by a real CEL implementation, placed and reported as kube-apiserver does."""

from __future__ import annotations

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.admission import cel_validation as cel

SCHEMA = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "!has(self.ref) || self.ref == oldSelf.ref", "message": "ref is immutable"},
    ],
    "properties": {
        "ref": {"type": "string"},
        "image": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.tag) != has(self.digest)",
                    "message": "exactly one of image.tag or image.digest must be set",
                }
            ],
            "properties": {"tag": {"type": "string"}, "digest": {"type": "string"}},
        },
        "servers": {
            "type": "array",
            "items": {
                "type": "string",
                "x-kubernetes-validations": [
                    {"rule": "!self.contains('\\n')", "message": "no newline"}
                ],
            },
        },
        "options": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(k, size(k) <= 3)",
                    "message": "keys are short",
                    "fieldPath": ".keys",
                }
            ],
            "additionalProperties": {"type": "string"},
        },
        "limits": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.low) || self.low <= self.high",
                    "messageExpression": "'low ' + string(self.low) + ' exceeds high ' + string(self.high)",
                    "reason": "FieldValueForbidden",
                },
                {"rule": "self.high > 0"},
            ],
            "properties": {"low": {"type": "integer"}, "high": {"type": "integer"}},
        },
        "plugins": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.kind == oldSelf.kind", "message": "kind is immutable"}
                ],
                "properties": {"name": {"type": "string"}, "kind": {"type": "string"}},
            },
        },
    },
}


def run(obj, old=cel._ABSENT):
    return [str(e) for e in cel.validate(SCHEMA, obj, old, path="spec")]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"image": {"tag": "1"}}, []),
        ({"image": {"digest": "sha256:x"}}, []),
        (
            {"image": {"tag": "1", "digest": "sha256:x"}},
            [
                'spec.image: Invalid value: "object": exactly one of image.tag or image.digest must be set'
            ],
        ),
        (
            {"image": {}},
            [
                'spec.image: Invalid value: "object": exactly one of image.tag or image.digest must be set'
            ],
        ),
        ({}, []),  # a rule runs only where its node is present
        ({"servers": ["a", "b\nc"]}, ['spec.servers[1]: Invalid value: "string": no newline']),
        ({"options": {"abc": "1"}}, []),
        (
            {"options": {"abcd": "1"}},
            ['spec.options.keys: Invalid value: "object": keys are short'],
        ),
        ({"limits": {"low": 1, "high": 2}}, []),
        ({"limits": {"low": 3, "high": 2}}, ["spec.limits: Forbidden: low 3 exceeds high 2"]),
        (
            {"limits": {"high": 0}},
            ['spec.limits: Invalid value: "object": failed rule: self.high > 0'],
        ),
    ],
)
def test_rule_passes_or_fails_with_its_message_on_its_path(obj, expected):
    assert run(obj) == expected


def test_transition_rules_run_only_on_update():
    assert run({"ref": "a"}) == []
    assert run({"ref": "b"}, {"ref": "a"}) == ['spec: Invalid value: "object": ref is immutable']
    assert run({"ref": "a"}, {"ref": "a"}) == []


def test_transition_rules_pair_list_map_items_by_key():
    old = {"plugins": [{"name": "x", "kind": "a"}, {"name": "y", "kind": "a"}]}
    changed = {"plugins": [{"name": "y", "kind": "b"}, {"name": "x", "kind": "a"}]}
    assert run(changed, old) == ['spec.plugins[0]: Invalid value: "object": kind is immutable']
    added = {"plugins": [{"name": "z", "kind": "b"}]}
    assert run(added, old) == []


def test_an_evaluation_error_is_reported_not_raised():
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.missing == 1"}]}
    errors = cel.validate(schema, {}, path="spec")
    assert len(errors) == 1 and "rule evaluation error" in str(errors[0])


def test_a_rule_that_does_not_compile_is_a_defect_of_the_crd():
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.(("}]}
    with pytest.raises(cel.CELRuleError):
        cel.validate(schema, {}, path="spec")


def test_iter_rules_lists_every_rule_with_its_path():
    paths = [p for p, _ in cel.iter_rules(SCHEMA, "spec")]
    assert paths == [
        "spec",
        "spec.image",
        "spec.servers[*]",
        "spec.options",
        "spec.limits",
        "spec.limits",
        "spec.plugins[*]",
    ]
