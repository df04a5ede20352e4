# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The GlanceBackend admission webhook: defaulting and the rules the CRD cannot express.

The backend's ``metadata.name`` becomes the store id, the ``[<name>]`` section of
``backends.conf`` and the ``<name>:s3`` entry of ``enabled_backends``, so it must not collide
with a section glance or the operator already uses. ``extraOptions`` are merged into that
section and must not shadow an option the operator renders from the typed fields. Only one
backend of a Glance may be the default; the sibling check here is best effort (two
concurrent creates can both pass), the reconciler's exactly-one rule is the real guard.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
)

RESERVED_NAMES = frozenset(
    {
        "default",
        "database",
        "keystone_authtoken",
        "glance_store",
        "paste_deploy",
        "oslo_policy",
        "os_glance_staging_store",
        "os_glance_tasks_store",
    }
)
RESERVED_PREFIXES = ("os_glance_", "os-glance-")
OPTION_NAME = re.compile(r"^[A-Za-z0-9_]+$")
OWNED_OPTIONS = {
    "s3_store_host": "spec.s3.host",
    "s3_store_bucket": "spec.s3.bucket",
    "s3_store_access_key": "spec.s3.credentialsSecretRef",
    "s3_store_secret_key": "spec.s3.credentialsSecretRef",
    "s3_store_bucket_url_format": "spec.s3.bucketURLFormat",
    "s3_store_region_name": "spec.s3.region",
    "s3_store_create_bucket_on_put": "spec.s3.createBucketOnPut",
    "s3_store_large_object_size": "spec.s3.largeObjectSize",
    "s3_store_large_object_chunk_size": "spec.s3.largeObjectChunkSize",
    "store_description": "the operator (store section wiring)",
}
BACKEND_TYPES = {"S3": "s3"}


def default_glancebackend(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` with ``s3.bucketURLFormat`` defaulted to ``path``."""
    out = copy.deepcopy(dict(obj))
    s3 = (out.get("spec") or {}).get("s3")
    if isinstance(s3, dict) and not s3.get("bucketURLFormat"):
        s3["bucketURLFormat"] = "path"
    return out


def check_backend_union(spec, ctx, meta) -> Iterable[fe.FieldError]:
    for kind, block in BACKEND_TYPES.items():
        if (spec.get("type") == kind) != (spec.get(block) is not None):
            yield fe.invalid(
                f"spec.{block}",
                spec.get("type", ""),
                f"exactly one backend block matching spec.type must be set (type {kind} "
                f"requires spec.{block})",
            )


def check_store_name(spec, ctx, meta) -> Iterable[fe.FieldError]:
    name = meta.get("name", "")
    lowered = name.lower()
    if lowered in RESERVED_NAMES:
        yield fe.invalid(
            "metadata.name",
            name,
            f'name "{name}" collides with the reserved or operator-managed Glance store section '
            "of the same name: the backend's name is its store id and its backends.conf section",
        )
    elif lowered.startswith(RESERVED_PREFIXES):
        yield fe.invalid(
            "metadata.name",
            name,
            'name must not use the reserved "os_glance_" / "os-glance-" store-section prefix '
            "(Glance owns that namespace for its staging and tasks stores)",
        )


def check_extra_options(spec, ctx, meta) -> Iterable[fe.FieldError]:
    options = spec.get("extraOptions") or {}
    path = "spec.extraOptions"
    for option in sorted(options):
        here = fe.key(path, option)
        value = str(options[option])
        # As the reference: the first rule an option breaks is its only error.
        if not option:
            yield fe.invalid(path, option, "option name must not be empty")
        elif not OPTION_NAME.match(option):
            yield fe.invalid(
                here,
                fe.truncate(option),
                "option name must match ^[A-Za-z0-9_]+$ (letters, digits, and underscore)",
            )
        elif option in OWNED_OPTIONS:
            yield fe.invalid(
                here,
                fe.truncate(value),
                f'option "{option}" is owned by {OWNED_OPTIONS[option]} and must not be set '
                "via extraOptions",
            )
        elif "\n" in value or "\r" in value:
            yield fe.invalid(
                here,
                fe.truncate(value),
                "value must not contain newline or carriage-return characters",
            )


def check_single_default(spec, ctx, meta) -> Iterable[fe.FieldError]:
    if not spec.get("isDefault") or ctx.siblings is None:
        return
    parent = (spec.get("glanceRef") or {}).get("name")
    for other in sorted(ctx.siblings, key=lambda o: o.get("metadata", {}).get("name", "")):
        other_meta = other.get("metadata") or {}
        other_spec = other.get("spec") or {}
        if (
            other_meta.get("name") == meta.get("name")
            or other_meta.get("deletionTimestamp")
            or (other_spec.get("glanceRef") or {}).get("name") != parent
            or not other_spec.get("isDefault")
        ):
            continue
        yield fe.invalid(
            "spec.isDefault",
            True,
            f'GlanceBackend "{other_meta.get("name")}" attached to the same Glance "{parent}" is '
            "already marked isDefault; exactly one default store is allowed",
        )


GLANCEBACKEND_RULES = (
    check_backend_union,
    check_store_name,
    check_extra_options,
    check_single_default,
)


def validate_glancebackend(
    obj: Mapping[str, Any], ctx: AdmissionContext | None = None
) -> tuple[list[fe.FieldError], list[str]]:
    """Every webhook rule the (defaulted) GlanceBackend ``obj`` breaks; it earns no warnings."""
    ctx = ctx or AdmissionContext()
    spec = obj.get("spec") or {}
    meta = obj.get("metadata") or {}
    errors: list[fe.FieldError] = []
    for rule in GLANCEBACKEND_RULES:
        errors.extend(rule(spec, ctx, meta))
    return errors, []
