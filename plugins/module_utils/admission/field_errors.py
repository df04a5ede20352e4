# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Field errors and admission warnings, worded as Kubernetes words them.

A ``FieldError`` is one reason a custom resource is refused. It carries the field path
(``spec.importFiltering.allowedHosts[2]``), the offending value, the rule (``detail``) and
where the rule lives (``origin``: the CRD's OpenAPI schema, one of its CEL rules, or the
admission webhook). ``str()`` gives the same text the API server prints for a
``k8s.io/apimachinery`` ``field.Error``, so a message reads the same whether it comes from
offline render, the reconcile or the admission webhook.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# Error types (k8s.io/apimachinery/pkg/util/validation/field.ErrorType), as printed.
NOT_FOUND = "Not found"
REQUIRED = "Required value"
DUPLICATE = "Duplicate value"
INVALID = "Invalid value"
UNSUPPORTED = "Unsupported value"
FORBIDDEN = "Forbidden"
TOO_LONG = "Too long"
TOO_MANY = "Too many"
INTERNAL = "Internal error"
TYPE_INVALID = "Type invalid"  # printed as "Invalid value", see ErrorType.String()
UNKNOWN_FIELD = "Unknown field"  # strict decoding, printed as `unknown field "path"`

# Where a rule lives.
ORIGIN_SCHEMA = "schema"
ORIGIN_CEL = "cel"
ORIGIN_WEBHOOK = "webhook"
ORIGIN_DECODING = "decoding"

# Values the webhook echoes back are cut to this many characters, then "…".
ECHO_LIMIT = 255

_OMIT = object()

# Error types whose message shows no value (field.Error.ErrorBody).
_VALUELESS = {REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL}


def truncate(value: str, limit: int = ECHO_LIMIT) -> str:
    """Cut ``value`` to ``limit`` characters followed by an ellipsis, as the webhook echoes it."""
    return value if len(value) <= limit else value[:limit] + "…"


def go_quote(value: str) -> str:
    """Quote a string as Go's ``%q`` does for the printable text we echo."""
    return json.dumps(value, ensure_ascii=False)


def format_value(value: Any) -> str:
    """Render a bad value the way ``field.Error`` prints it."""
    if value is None:
        return '"null"'  # Go prints a nil bad value as the string "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class FieldError:
    """One reason an object is refused: where, what value, which rule."""

    type: str
    path: str
    detail: str = ""
    value: Any = field(default=_OMIT, compare=False)
    origin: str = ORIGIN_WEBHOOK

    @property
    def has_value(self) -> bool:
        return self.value is not _OMIT

    def body(self) -> str:
        """The message without the path (``field.Error.ErrorBody``)."""
        shown = INVALID if self.type == TYPE_INVALID else self.type
        if self.type in _VALUELESS or not self.has_value:
            text = shown
        else:
            text = f"{shown}: {format_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        if self.type == UNKNOWN_FIELD:
            return f'unknown field "{self.path}"'
        return f"{self.path or '<nil>'}: {self.body()}"

    def as_dict(self) -> dict[str, Any]:
        """A plain mapping for playbooks, status messages and AdmissionReview causes."""
        out: dict[str, Any] = {
            "field": self.path,
            "type": self.type,
            "detail": self.detail,
            "origin": self.origin,
            "message": str(self),
        }
        if self.has_value:
            out["value"] = self.value
        return out


def invalid(path: str, value: Any, detail: str, origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(INVALID, path, detail, value, origin)


def required(path: str, detail: str = "", origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(REQUIRED, path, detail, _OMIT, origin)


def forbidden(path: str, detail: str, origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(FORBIDDEN, path, detail, _OMIT, origin)


def not_supported(
    path: str, value: Any, supported: list[Any], origin: str = ORIGIN_WEBHOOK
) -> FieldError:
    detail = "supported values: " + ", ".join(format_value(v) for v in supported)
    return FieldError(UNSUPPORTED, path, detail, value, origin)


def not_found(path: str, value: Any, origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(NOT_FOUND, path, "", value, origin)


def too_many(path: str, actual: int, limit: int, origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(TOO_MANY, path, f"must have at most {limit} items", actual, origin)


def too_long(path: str, limit: int, origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(TOO_LONG, path, f"may not be more than {limit} bytes", _OMIT, origin)


def duplicate(path: str, value: Any, origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(DUPLICATE, path, "", value, origin)


def internal(path: str, detail: str, origin: str = ORIGIN_WEBHOOK) -> FieldError:
    return FieldError(INTERNAL, path, detail, _OMIT, origin)


def unknown_field(path: str) -> FieldError:
    return FieldError(UNKNOWN_FIELD, path, "", _OMIT, ORIGIN_DECODING)


def child(path: str, name: str) -> str:
    """``spec`` + ``image`` -> ``spec.image``."""
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    """``spec.plugins`` + 2 -> ``spec.plugins[2]``."""
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """``spec.extraConfig`` + ``DEFAULT`` -> ``spec.extraConfig[DEFAULT]``."""
    return f"{path}[{k}]"
