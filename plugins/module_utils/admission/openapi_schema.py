# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""A CRD's structural OpenAPI v3 schema, applied the way kube-apiserver applies it.

Three steps, in the API server's order, each a pure function of the schema and the object:

1. ``unknown_fields``: strict decoding (``kubectl``'s default field validation) refuses a
   field the schema does not declare, naming it (``unknown field "spec.foo"``).
2. ``apply_defaults``: fills ``default`` values into absent fields (and for ``null`` in a
   non-nullable field), recursing into what is present, as structural defaulting does.
3. ``validate``: type, enum, pattern, length, range, item and property counts, required
   fields and list-type uniqueness, with kube-openapi's messages converted to field errors
   as ``apiextensions-apiserver`` converts them.

The CEL rules (``x-kubernetes-validations``) are evaluated by ``cel_validation``; the schema
here is read from the CRD file itself so the two never drift from what a cluster enforces.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe

# ObjectMeta fields a client may send (metav1.ObjectMeta JSON names).
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def version_schema(crd: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` (default: the storage version) of ``crd``."""
    versions = crd["spec"]["versions"]
    for v in versions:
        if (version is None and v.get("storage")) or v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    raise KeyError(f"CRD {crd['metadata']['name']} has no version {version!r}")


def json_type(value: Any) -> str:
    """The OpenAPI type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def properties_of(schema: dict[str, Any]) -> dict[str, Any]:
    return schema.get("properties") or {}


def additional_of(schema: dict[str, Any]) -> dict[str, Any] | None:
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


# ---------------------------------------------------------------------------------------
# 1. strict decoding


def unknown_fields(schema: dict[str, Any], obj: Any, path: str = "") -> list[fe.FieldError]:
    """Every field of ``obj`` that ``schema`` does not declare, as strict decoding reports it."""
    errors: list[fe.FieldError] = []
    _unknown(schema, obj, path, errors, root=not path)
    return errors


def _unknown(schema: dict[str, Any], obj: Any, path: str, out: list, root: bool = False) -> None:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(obj, dict):
        props = properties_of(schema)
        extra = additional_of(schema)
        for name in sorted(obj):
            here = fe.child(path, name)
            if root and name == "metadata":
                _unknown_meta(obj[name], here, out)
            elif name in props:
                _unknown(props[name], obj[name], here, out)
            elif extra is not None:
                _unknown(extra, obj[name], fe.key(path, name), out)
            elif schema.get("additionalProperties") is True:
                continue
            elif not (root and name in ROOT_FIELDS):
                out.append(fe.unknown_field(here))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            _unknown(schema["items"], item, fe.index(path, i), out)


def _unknown_meta(meta: Any, path: str, out: list) -> None:
    if isinstance(meta, dict):
        out.extend(
            fe.unknown_field(fe.child(path, k)) for k in sorted(meta) if k not in OBJECT_META_FIELDS
        )


# ---------------------------------------------------------------------------------------
# 2. defaulting


def apply_defaults(schema: dict[str, Any], obj: Any) -> Any:
    """A copy of ``obj`` with the schema's defaults filled in (structural defaulting)."""
    result = copy.deepcopy(obj)
    _default(schema, result)
    return result


def _default(schema: dict[str, Any], obj: Any) -> None:
    if isinstance(obj, dict):
        props = properties_of(schema)
        for name, prop in props.items():
            if "default" not in prop:
                continue
            if name not in obj or (obj[name] is None and not prop.get("nullable")):
                obj[name] = copy.deepcopy(prop["default"])
        for name in list(obj):
            if obj[name] is None and name in props and not props[name].get("nullable"):
                del obj[name]  # a null in a non-nullable field without default is pruned
                continue
            sub = props.get(name) or additional_of(schema)
            if sub is not None:
                _default(sub, obj[name])
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            _default(schema["items"], item)


# ---------------------------------------------------------------------------------------
# 3. validation


def validate(schema: dict[str, Any], obj: Any, path: str = "") -> list[fe.FieldError]:
    """Every OpenAPI rule ``obj`` breaks, as field errors (CEL rules excluded)."""
    errors: list[fe.FieldError] = []
    _validate(schema, obj, path, errors)
    return errors


def _schema_error(path: str, value: Any, detail: str) -> fe.FieldError:
    return fe.invalid(path, value, f"{path} in body {detail}", fe.ORIGIN_SCHEMA)


def _type_ok(schema: dict[str, Any], value: Any) -> bool:
    if value is None:
        return bool(schema.get("nullable"))
    if schema.get("x-kubernetes-int-or-string"):
        return json_type(value) in ("integer", "string")
    want = schema.get("type")
    if not want:
        return True
    have = json_type(value)
    return have == want or (want == "number" and have == "integer")


def _validate(schema: dict[str, Any], value: Any, path: str, out: list) -> None:
    if not _type_ok(schema, value):
        want = schema.get("type") or "integer-or-string"
        have = json_type(value)
        out.append(
            fe.FieldError(
                fe.TYPE_INVALID,
                path,
                f'{path} in body must be of type {want}: "{have}"',
                have,
                fe.ORIGIN_SCHEMA,
            )
        )
        return
    if value is None:
        return
    _validate_value(schema, value, path, out)
    for combinator in ("allOf", "anyOf", "oneOf", "not"):
        if combinator in schema:
            _validate_combinator(combinator, schema[combinator], value, path, out)
    if isinstance(value, dict):
        _validate_object(schema, value, path, out)
    elif isinstance(value, list):
        _validate_array(schema, value, path, out)


def _validate_value(schema: dict[str, Any], value: Any, path: str, out: list) -> None:
    if "enum" in schema and value not in schema["enum"]:
        out.append(fe.not_supported(path, value, schema["enum"], fe.ORIGIN_SCHEMA))
    if isinstance(value, str):
        # kube-openapi's string validator stops at the first of maxLength, minLength and
        # pattern that fails: an empty name of a patterned field is only "too short".
        if "maxLength" in schema and len(value.encode()) > schema["maxLength"]:
            out.append(fe.too_long(path, schema["maxLength"], fe.ORIGIN_SCHEMA))
        elif "minLength" in schema and len(value) < schema["minLength"]:
            detail = f"should be at least {schema['minLength']} chars long"
            out.append(_schema_error(path, value, detail))
        elif "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(_schema_error(path, value, f"should match '{schema['pattern']}'"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema:
            if schema.get("exclusiveMinimum") and value <= schema["minimum"]:
                out.append(
                    _schema_error(path, value, f"should be greater than {schema['minimum']}")
                )
            elif value < schema["minimum"]:
                detail = f"should be greater than or equal to {schema['minimum']}"
                out.append(_schema_error(path, value, detail))
        if "maximum" in schema:
            if schema.get("exclusiveMaximum") and value >= schema["maximum"]:
                out.append(_schema_error(path, value, f"should be less than {schema['maximum']}"))
            elif value > schema["maximum"]:
                detail = f"should be less than or equal to {schema['maximum']}"
                out.append(_schema_error(path, value, detail))
        if "multipleOf" in schema and value % schema["multipleOf"]:
            out.append(
                _schema_error(path, value, f"should be a multiple of {schema['multipleOf']}")
            )


def _validate_combinator(kind: str, branches: Any, value: Any, path: str, out: list) -> None:
    if kind == "not":
        if not validate(branches, value, path):
            out.append(_schema_error(path, value, "must not validate the schema (not)"))
        return
    failures = [validate(branch, value, path) for branch in branches]
    passed = sum(1 for f in failures if not f)
    if kind == "allOf":
        for f in failures:
            out.extend(f)
    elif kind == "anyOf" and not passed:
        out.append(_schema_error(path, value, "must validate at least one schema (anyOf)"))
        out.extend(failures[0])
    elif kind == "oneOf" and passed != 1:
        out.append(_schema_error(path, value, "must validate one and only one schema (oneOf)"))


def _validate_object(schema: dict[str, Any], value: dict, path: str, out: list) -> None:
    for name in schema.get("required") or []:
        if name not in value:
            out.append(fe.required(fe.child(path, name), origin=fe.ORIGIN_SCHEMA))
    count = len(value)
    if "maxProperties" in schema and count > schema["maxProperties"]:
        out.append(fe.too_many(path, count, schema["maxProperties"], fe.ORIGIN_SCHEMA))
    if "minProperties" in schema and count < schema["minProperties"]:
        detail = f"should have at least {schema['minProperties']} properties"
        out.append(_schema_error(path, count, detail))
    props = properties_of(schema)
    extra = additional_of(schema)
    for name in sorted(value):
        if name in props:
            _validate(props[name], value[name], fe.child(path, name), out)
        elif extra is not None:
            _validate(extra, value[name], fe.key(path, name), out)


def _validate_array(schema: dict[str, Any], value: list, path: str, out: list) -> None:
    count = len(value)
    if "maxItems" in schema and count > schema["maxItems"]:
        out.append(fe.too_many(path, count, schema["maxItems"], fe.ORIGIN_SCHEMA))
    if "minItems" in schema and count < schema["minItems"]:
        out.append(_schema_error(path, count, f"should have at least {schema['minItems']} items"))
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(items, item, fe.index(path, i), out)
    _validate_list_type(schema, value, path, out)


def _validate_list_type(schema: dict[str, Any], value: list, path: str, out: list) -> None:
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set" or schema.get("uniqueItems"):
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                out.append(fe.duplicate(fe.index(path, i), item, fe.ORIGIN_SCHEMA))
            seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: list[dict[str, Any]] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            item_key = {k: item.get(k) for k in keys}
            if item_key in seen_keys:
                out.append(fe.duplicate(fe.index(path, i), item_key, fe.ORIGIN_SCHEMA))
            seen_keys.append(item_key)


def list_map_key(schema: dict[str, Any], item: Any) -> tuple | None:
    """The key of ``item`` in a ``x-kubernetes-list-type: map`` list, None otherwise."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(item, dict):
        return None
    return tuple(item.get(k) for k in schema.get("x-kubernetes-list-map-keys") or [])
