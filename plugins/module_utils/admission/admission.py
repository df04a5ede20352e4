# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Judge a Glance or GlanceBackend exactly as the API server plus our webhook would.

``judge`` runs the steps of a create or update request in the API server's order:

1. object metadata (name and namespace syntax);
2. strict decoding: a field the CRD does not declare is refused by name;
3. the CRD's schema defaults, then the mutating webhook's defaults (and the schema
   defaults once more, as the API server re-defaults after a mutating patch);
4. the CRD's OpenAPI schema and its CEL rules, both read from the CRD itself; as in the API
   server, the CEL rules are skipped when the schema already found a type, enum, required,
   length or count error;
5. the validating webhook's rules, only when 4 passed (the API server never calls the
   webhook for an object its schema refuses).

Errors within a step are all collected. The result carries the object as it would be
stored (``status`` dropped: the status subresource owns it), every error, every warning
and the step that decided. The same function backs offline render, the reconcile and the
admission webhook, so a given input gets the same messages everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission import (
    cel_verdicts,
    openapi_schema,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
    default_glance,
    validate_glance,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glancebackend_admission import (
    default_glancebackend,
    validate_glancebackend,
)

GROUP = "glance.openstack.c5c3.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KINDS = ("Glance", "GlanceBackend")

_WEBHOOKS = {
    "Glance": (default_glance, validate_glance),
    "GlanceBackend": (default_glancebackend, validate_glancebackend),
}

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

# Schema errors after which the API server does not run the CEL rules.
_BLOCKING = {fe.UNSUPPORTED, fe.REQUIRED, fe.TOO_LONG, fe.TOO_MANY, fe.TYPE_INVALID}
CEL_SKIPPED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)

STAGE_METADATA = "metadata"
STAGE_DECODING = "decoding"
STAGE_SCHEMA = "schema"
STAGE_WEBHOOK = "webhook"


@dataclass
class Verdict:
    """What the API server would answer: the stored object, or why not."""

    kind: str
    name: str
    object: dict[str, Any] | None
    errors: list[fe.FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stage: str = STAGE_WEBHOOK

    @property
    def allowed(self) -> bool:
        return not self.errors

    def messages(self) -> list[str]:
        return [str(e) for e in self.errors]

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "allowed": self.allowed,
            "stage": self.stage,
            "errors": [e.as_dict() for e in self.errors],
            "warnings": list(self.warnings),
            "object": self.object,
        }


def check_metadata(obj: Mapping[str, Any]) -> list[fe.FieldError]:
    """Name and namespace syntax, as ``ValidateObjectMeta`` checks a namespaced object."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return [fe.required("metadata", origin=fe.ORIGIN_SCHEMA)]
    errors = []
    name = meta.get("name")
    if name is not None and not isinstance(name, str):
        errors.append(fe.invalid("metadata.name", name, "must be a string", fe.ORIGIN_SCHEMA))
    elif not name:
        errors.append(
            fe.required("metadata.name", "name or generateName is required", fe.ORIGIN_SCHEMA)
        )
    elif len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        detail = "must be no more than 253 characters" if len(name) > 253 else _SUBDOMAIN_MESSAGE
        errors.append(fe.invalid("metadata.name", fe.truncate(name), detail, fe.ORIGIN_SCHEMA))
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        errors.append(
            fe.invalid("metadata.namespace", namespace, "must be a string", fe.ORIGIN_SCHEMA)
        )
    elif namespace and (len(namespace) > 63 or not _DNS1123_LABEL.match(namespace)):
        errors.append(fe.invalid("metadata.namespace", namespace, _LABEL_MESSAGE, fe.ORIGIN_SCHEMA))
    return errors


def _check_type(crd: Mapping[str, Any], obj: Mapping[str, Any]) -> list[fe.FieldError]:
    names = crd["spec"]["names"]
    group = crd["spec"]["group"]
    errors = []
    if obj.get("kind") != names["kind"]:
        errors.append(fe.not_supported("kind", obj.get("kind"), [names["kind"]], fe.ORIGIN_SCHEMA))
    served = [f"{group}/{v['name']}" for v in crd["spec"]["versions"] if v.get("served")]
    if obj.get("apiVersion") not in served:
        errors.append(
            fe.not_supported("apiVersion", obj.get("apiVersion"), served, fe.ORIGIN_SCHEMA)
        )
    return errors


def schema_and_cel(
    schema: Mapping[str, Any],
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    *,
    remember: bool = False,
) -> list[fe.FieldError]:
    """The OpenAPI schema errors, then the CEL errors unless a schema error blocks them.
    ``remember`` (an update): the CEL verdict kept between processes (``cel_verdicts``)."""
    errors = openapi_schema.validate(schema, obj)
    if any(e.type in _BLOCKING for e in errors):
        errors.append(fe.FieldError(fe.INVALID, "", CEL_SKIPPED, None, fe.ORIGIN_CEL))
        return errors
    if remember and old is not None:
        errors.extend(cel_verdicts.remembered_validate(schema, obj, old))
    else:
        errors.extend(cel_verdicts.evaluate(schema, obj, old))
    return errors


def judge(
    crd: Mapping[str, Any],
    obj: Mapping[str, Any],
    ctx: AdmissionContext | None = None,
    *,
    remember_cel: bool = False,
) -> Verdict:
    """Judge ``obj`` against ``crd`` and the webhook; ``ctx.old`` makes it an update.
    ``remember_cel``: an update's CEL verdict is kept between passes (``cel_verdicts``)."""
    ctx = ctx or AdmissionContext()
    kind = crd["spec"]["names"]["kind"]
    meta = obj.get("metadata")
    name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
    verdict = Verdict(kind=kind, name=name, object=None)

    errors = _check_type(crd, obj) + check_metadata(obj)
    if errors:
        verdict.errors, verdict.stage = errors, STAGE_METADATA
        return verdict

    schema = openapi_schema.version_schema(crd)
    body = {k: v for k, v in obj.items() if k != "status"}
    errors = openapi_schema.unknown_fields(schema, body)
    if errors:
        verdict.errors, verdict.stage = errors, STAGE_DECODING
        return verdict

    default, validate = _WEBHOOKS[kind]
    stored = openapi_schema.apply_defaults(schema, body)
    try:
        defaulted = default(stored)
    except (AttributeError, TypeError):
        # A block of the wrong type (``spec.deployment: "x"``): the reference's typed decode
        # refuses such an object before defaulting; the schema step below names the field.
        defaulted = stored
    stored = openapi_schema.apply_defaults(schema, defaulted)
    old = None
    if ctx.is_update:
        old = openapi_schema.apply_defaults(
            schema, {k: v for k, v in ctx.old.items() if k != "status"}
        )

    errors = schema_and_cel(schema, stored, old, remember=remember_cel)
    if errors:
        verdict.errors, verdict.stage = errors, STAGE_SCHEMA
        return verdict

    errors, warnings = validate(stored, ctx)
    verdict.object, verdict.errors, verdict.warnings = stored, errors, warnings
    verdict.stage = STAGE_WEBHOOK
    return verdict
