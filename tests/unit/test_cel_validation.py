"""CEL rules evaluated by a real CEL implementation, placed and reported as kube-apiserver does."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

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


# -- the parser cache ----------------------------------------------------------------------
PROBE = """
import json, sys
from ansible_collections.c5c3.glance.plugins.module_utils.admission import cel_validation as cel
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import load_crds
rules = sorted({r for crd in load_crds().values() for r in cel.crd_rules(crd)})
for rule in rules:
    cel.compile_rule(rule)
print(json.dumps([len(rules), bool(cel.evaluate("self.a > 1 && size(self.b) == 2", {"a": 2, "b": "xy"}))]))
"""


def _probe(env: dict[str, str]) -> list:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def test_the_parser_is_built_once_then_loaded_from_the_users_cache(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = _probe(env)
    cache = tmp_path / "c5c3-glance" / cel.PARSER_CACHE_NAME
    assert cache.stat().st_size > 0
    assert stat.S_IMODE((tmp_path / "c5c3-glance").stat().st_mode) == 0o700
    written = cache.stat().st_mtime_ns
    # A second process parses every CRD rule with the loaded parser, and the same way; lark
    # writes the file again when it cannot use it, so an unchanged file is one it loaded.
    assert _probe(env) == first
    assert first[0] > 20 and first[1] is True
    assert cache.stat().st_mtime_ns == written


def test_a_damaged_cache_costs_a_build_not_a_pass(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    cache = tmp_path / "c5c3-glance" / cel.PARSER_CACHE_NAME
    cache.parent.mkdir(mode=0o700)
    cache.write_bytes(b"not a parser\n")
    assert _probe(env)[1] is True
    assert cache.read_bytes() != b"not a parser\n"


def test_a_cache_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "c5c3-glance"
    shared.mkdir()
    shared.chmod(0o777)
    assert cel.parser_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) is None
    shared.chmod(0o700)
    assert cel.parser_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == shared
    monkeypatch.setattr(cel.os, "getuid", lambda: shared.stat().st_uid + 1)
    assert cel.parser_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) is None


def test_no_home_and_no_writable_cache_mean_no_cache(tmp_path):
    assert cel.parser_cache_dir({}) is None
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert cel.parser_cache_dir({"XDG_CACHE_HOME": str(blocked)}) is None
