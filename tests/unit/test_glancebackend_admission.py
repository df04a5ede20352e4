"""The GlanceBackend webhook's default and every rule of reference-spec §5.3, table-driven."""

from __future__ import annotations

import pytest
from support.builders import BACKEND, DELETE, patched

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glancebackend_admission import (
    default_glancebackend,
    validate_glancebackend,
)


def errors_of(patch: dict, ctx: AdmissionContext | None = None) -> list[str]:
    obj = default_glancebackend(patched(BACKEND, patch))
    errors, warnings = validate_glancebackend(obj, ctx)
    assert warnings == []
    return [str(e) for e in errors]


def test_bucket_url_format_defaults_to_path_only_when_unset():
    assert default_glancebackend(BACKEND)["spec"]["s3"]["bucketURLFormat"] == "path"
    virtual = patched(BACKEND, {"spec": {"s3": {"bucketURLFormat": "virtual"}}})
    assert default_glancebackend(virtual)["spec"]["s3"]["bucketURLFormat"] == "virtual"
    no_s3 = patched(BACKEND, {"spec": {"s3": DELETE}})
    assert "s3" not in default_glancebackend(no_s3)["spec"]


CASES = [
    ("union", {}, []),
    (
        "union",
        {"spec": {"s3": DELETE}},
        [
            'spec.s3: Invalid value: "S3": exactly one backend block matching spec.type must be set (type S3 requires spec.s3)'
        ],
    ),
    ("reserved name", {"metadata": {"name": "store-a"}}, []),
    *[
        (
            "reserved name",
            {"metadata": {"name": name}},
            [
                f'metadata.name: Invalid value: "{name}": name "{name}" collides with the reserved or operator-managed Glance store section of the same name: the backend\'s name is its store id and its backends.conf section'
            ],
        )
        for name in (
            "default",
            "database",
            "keystone_authtoken",
            "glance_store",
            "paste_deploy",
            "oslo_policy",
            "os_glance_staging_store",
            "os_glance_tasks_store",
            "Default",
        )
    ],
    ("reserved prefix", {"metadata": {"name": "os-glance"}}, []),
    *[
        (
            "reserved prefix",
            {"metadata": {"name": name}},
            [
                f'metadata.name: Invalid value: "{name}": name must not use the reserved "os_glance_" / "os-glance-" store-section prefix (Glance owns that namespace for its staging and tasks stores)'
            ],
        )
        for name in ("os-glance-x", "os_glance_x", "OS-Glance-store")
    ],
    ("extraOptions", {"spec": {"extraOptions": {"s3_store_thread_pools": "10", "B_2": "x"}}}, []),
    (
        "extraOptions",
        {"spec": {"extraOptions": {"": "x"}}},
        ['spec.extraOptions: Invalid value: "": option name must not be empty'],
    ),
    (
        "extraOptions",
        {"spec": {"extraOptions": {"s3-store": "x"}}},
        [
            'spec.extraOptions[s3-store]: Invalid value: "s3-store": option name must match ^[A-Za-z0-9_]+$ (letters, digits, and underscore)'
        ],
    ),
    (
        "extraOptions",
        {"spec": {"extraOptions": {"s3_store_access_key": "AKIA"}}},
        [
            'spec.extraOptions[s3_store_access_key]: Invalid value: "AKIA": option "s3_store_access_key" is owned by spec.s3.credentialsSecretRef and must not be set via extraOptions'
        ],
    ),
    (
        "extraOptions",
        {"spec": {"extraOptions": {"store_description": "x"}}},
        [
            'spec.extraOptions[store_description]: Invalid value: "x": option "store_description" is owned by the operator (store section wiring) and must not be set via extraOptions'
        ],
    ),
    (
        "extraOptions",
        {"spec": {"extraOptions": {"z": "a\nb", "a": "\r"}}},
        [
            'spec.extraOptions[a]: Invalid value: "\\r": value must not contain newline or carriage-return characters',
            'spec.extraOptions[z]: Invalid value: "a\\nb": value must not contain newline or carriage-return characters',
        ],
    ),
]


@pytest.mark.parametrize(
    ("rule", "patch", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_rule(rule, patch, expected):
    assert errors_of(patch) == expected


def test_every_rule_has_an_accepted_and_a_rejected_case():
    assert {r for r, _, e in CASES if e} == {r for r, _, e in CASES if not e}


def sibling(
    name: str, glance: str = "glance", default: bool = True, deleting: bool = False
) -> dict:
    obj = patched(
        BACKEND,
        {"metadata": {"name": name}, "spec": {"glanceRef": {"name": glance}, "isDefault": default}},
    )
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    return obj


def test_a_second_default_on_the_same_glance_is_refused():
    ctx = AdmissionContext(siblings=[sibling("s3-default"), sibling("s3-other")])
    assert errors_of({}, ctx) == [
        'spec.isDefault: Invalid value: true: GlanceBackend "s3-other" attached to the same Glance "glance" is '
        "already marked isDefault; exactly one default store is allowed"
    ]


@pytest.mark.parametrize(
    "siblings",
    [
        [],
        [sibling("s3-default")],  # itself (an update)
        [sibling("s3-other", default=False)],
        [sibling("s3-other", glance="other-glance")],
        [sibling("s3-other", deleting=True)],
    ],
)
def test_the_single_default_check_skips_itself_others_glances_non_defaults_and_deleted(siblings):
    assert errors_of({}, AdmissionContext(siblings=siblings)) == []


def test_a_non_default_backend_is_never_checked_against_siblings():
    ctx = AdmissionContext(siblings=[sibling("s3-other")])
    assert errors_of({"spec": {"isDefault": False}}, ctx) == []


def test_without_a_sibling_list_the_check_is_skipped():
    assert errors_of({}, AdmissionContext(siblings=None)) == []
