# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The CRD's CEL rules (``x-kubernetes-validations``), evaluated as kube-apiserver does.

Each rule is read from the CRD schema and evaluated by a real CEL implementation
(``cel-python``) with ``self`` bound to the value of the schema node that carries it and,
for transition rules, ``oldSelf`` bound to the same node of the stored object. As in the API
server:

* a rule runs only where its node is present in the object;
* a transition rule (one that mentions ``oldSelf``) runs only on update, and only where the
  node can be paired with the old object's (object fields and map keys by name, items of
  ``x-kubernetes-list-type: map`` lists by their keys);
* a failed rule is reported on the node's path (plus ``fieldPath`` when the rule has one),
  with the rule's ``message`` (or ``messageExpression``), the node's schema type as the
  value, and the error type named by ``reason``.

**The parser, cached.** cel-python builds its LALR parser (lark) from the CEL grammar when
the first ``Environment`` is made: 0.1 CPU-s, in every ``ansible-playbook`` that runs a
pass. lark can save what it built and load it again (0.008 s): ``_environment`` keeps that
file in ``${XDG_CACHE_HOME:-~/.cache}/c5c3-glance/cel/`` (``collection_files.user_cache_dir``:
a directory of the user's own, made 0700; lark's own default is a shared temporary
directory, and the file is a pickle). lark checks
the grammar, its options and the versions of lark and Python against the file and builds
the parser again when they differ; any failure to read or write the cache only costs that
0.1 s.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import celpy
from celpy import celparser, celtypes

from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    user_cache_dir,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.openapi_schema import (
    additional_of,
    list_map_key,
    properties_of,
)

_OLD_SELF = re.compile(r"\boldSelf\b")
PARSER_CACHE_NAME = "cel-parser.lark-cache"


def _environment(cache_dir: Path | None) -> celpy.Environment:
    """A CEL environment whose parser comes from ``cache_dir`` when it is there, and is saved
    there when it is not (see the module docstring). ``celparser.CELParser`` builds its lark
    parser once per process, with options it alone knows: only ``cache`` is added to them
    (lark hashes the options, the file's path among them, so the file is always named the
    same). lark writes the file in place: a pass that reads it while another writes it fails
    to load it, builds the parser itself and writes the file again, whole."""
    if cache_dir is None or celparser.CELParser.CEL_PARSER is not None:
        return celpy.Environment()
    lark_class = celparser.Lark
    celparser.Lark = functools.partial(lark_class, cache=str(cache_dir / PARSER_CACHE_NAME))
    try:
        return celpy.Environment()
    finally:
        celparser.Lark = lark_class


_ENV = _environment(user_cache_dir("cel"))
_PROGRAMS: dict[str, Any] = {}

_ABSENT = object()


class CELRuleError(ValueError):
    """A rule in the CRD that does not compile: a defect of the CRD, not of the object."""


def compile_rule(rule: str) -> Any:
    """The compiled program of ``rule``, memoised by its text."""
    program = _PROGRAMS.get(rule)
    if program is None:
        try:
            program = _ENV.program(_ENV.compile(rule))
        except celpy.CELParseError as exc:
            raise CELRuleError(f"CEL rule does not compile: {rule}: {exc}") from exc
        _PROGRAMS[rule] = program
    return program


def crd_rules(node: Any) -> list[str]:
    """Every ``x-kubernetes-validations`` rule in a CRD (or any part of one)."""
    if isinstance(node, dict):
        found = [str(v["rule"]) for v in node.get("x-kubernetes-validations") or [] if "rule" in v]
        return found + [rule for value in node.values() for rule in crd_rules(value)]
    if isinstance(node, list):
        return [rule for value in node for rule in crd_rules(value)]
    return []


def is_transition_rule(rule: str) -> bool:
    return bool(_OLD_SELF.search(rule))


def evaluate(rule: str, self_value: Any, old_value: Any = _ABSENT) -> Any:
    """Evaluate ``rule`` with ``self`` (and ``oldSelf``) bound; returns the CEL result."""
    activation = {"self": celpy.json_to_cel(self_value)}
    if old_value is not _ABSENT:
        activation["oldSelf"] = celpy.json_to_cel(old_value)
    result = compile_rule(rule).evaluate(activation)
    if isinstance(result, celpy.CELEvalError):
        raise result
    return result


def iter_rules(schema: dict[str, Any], path: str = ""):
    """Every ``(path, rule)`` of the schema, paths with ``[*]`` for items and map values."""
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule
    for name, prop in properties_of(schema).items():
        yield from iter_rules(prop, f"{path}.{name}" if path else name)
    extra = additional_of(schema)
    if extra is not None:
        yield from iter_rules(extra, f"{path}[*]")
    if isinstance(schema.get("items"), dict):
        yield from iter_rules(schema["items"], f"{path}[*]")


def validate(
    schema: dict[str, Any], obj: Any, old: Any = _ABSENT, path: str = ""
) -> list[fe.FieldError]:
    """Every CEL rule ``obj`` breaks (``old`` is the stored object on update)."""
    errors: list[fe.FieldError] = []
    _walk(schema, obj, old, path, errors)
    return errors


def _walk(schema: dict[str, Any], value: Any, old: Any, path: str, out: list) -> None:
    if value is None:
        return
    for rule in schema.get("x-kubernetes-validations") or []:
        error = _check(rule, schema, value, old, path)
        if error is not None:
            out.append(error)
    if isinstance(value, dict):
        props = properties_of(schema)
        extra = additional_of(schema)
        old_map = old if isinstance(old, dict) else {}
        for name in sorted(value):
            sub = props.get(name)
            here = fe.child(path, name)
            if sub is None and extra is not None:
                sub, here = extra, fe.key(path, name)
            if sub is not None:
                _walk(sub, value[name], old_map.get(name, _ABSENT), here, out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        old_by_key = {}
        if isinstance(old, list):
            for item in old:
                item_key = list_map_key(schema, item)
                if item_key is not None:
                    old_by_key[item_key] = item
        for i, item in enumerate(value):
            item_key = list_map_key(schema, item)
            old_item = old_by_key.get(item_key, _ABSENT) if item_key is not None else _ABSENT
            _walk(items, item, old_item, fe.index(path, i), out)


def _check(
    rule: dict[str, Any], schema: dict[str, Any], value: Any, old: Any, path: str
) -> fe.FieldError | None:
    text = rule["rule"]
    transition = is_transition_rule(text)
    if transition and old is _ABSENT:
        return None
    here = path + rule["fieldPath"] if rule.get("fieldPath") else path
    type_name = schema.get("type", "")
    try:
        result = evaluate(text, value, old if transition else _ABSENT)
    except CELRuleError:
        raise
    except Exception as exc:  # an evaluation error is reported, as the API server does
        return fe.invalid(here, type_name, f"rule evaluation error: {exc}", fe.ORIGIN_CEL)
    if isinstance(result, celtypes.BoolType) and bool(result):
        return None
    message = _message(rule, value, old if transition else _ABSENT)
    reason = rule.get("reason", "FieldValueInvalid")
    if reason == "FieldValueForbidden":
        return fe.forbidden(here, message, fe.ORIGIN_CEL)
    if reason == "FieldValueRequired":
        return fe.required(here, message, fe.ORIGIN_CEL)
    if reason == "FieldValueDuplicate":
        return fe.FieldError(fe.DUPLICATE, here, message, type_name, fe.ORIGIN_CEL)
    return fe.invalid(here, type_name, message, fe.ORIGIN_CEL)


def _message(rule: dict[str, Any], value: Any, old: Any) -> str:
    expression = rule.get("messageExpression")
    if expression:
        try:
            text = str(evaluate(expression, value, old))
            if text.strip():
                return text
        except Exception:
            pass
    return rule.get("message") or f"failed rule: {rule['rule']}"
