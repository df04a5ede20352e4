"""GlanceBackends to backends.conf and BackendsReady (reference-spec §1.4, §2.3 step 3, §3.3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.builders import BACKEND, DELETE, GLANCE, patched, secret_data

from ansible_collections.c5c3.glance.plugins.module_utils.admission import (
    admission,
    collection_files,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.backend_projection import (
    BackendFault,
    backend_credentials,
    project_backends,
    render_store_section,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    backends_base,
    content_name,
)

SAMPLES = collection_files.COLLECTION_ROOT / "config" / "samples"
CRDS = collection_files.load_crds()


def judged(obj: dict) -> dict:
    verdict = admission.judge(CRDS[obj["kind"]], obj)
    assert verdict.allowed, verdict.messages()
    return verdict.object


def load_sample(path: Path) -> tuple[dict, list[dict], dict[str, dict[str, str]]]:
    """The stored Glance and GlanceBackends of a sample, and its Secrets by name."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    glance = judged(next(d for d in docs if d["kind"] == "Glance"))
    backends = [judged(d) for d in docs if d["kind"] == "GlanceBackend"]
    secrets = {d["metadata"]["name"]: secret_data(d) for d in docs if d["kind"] == "Secret"}
    return glance, backends, secrets


FULL = load_sample(SAMPLES / "glance_full.yaml")
MINIMAL = load_sample(SAMPLES / "glance_minimal.yaml")

FULL_BACKENDS_CONF = """\
[s3-archive]
s3_store_access_key = EXAMPLEARCHIVEKEYID
s3_store_bucket = glance-archive
s3_store_bucket_url_format = virtual
s3_store_create_bucket_on_put = true
s3_store_host = https://s3.eu-central-1.example.com
s3_store_large_object_chunk_size = 20
s3_store_large_object_size = 200
s3_store_region_name = eu-central-1
s3_store_secret_key = change-me-s3-archive-secret-key
s3_store_thread_pools = 10

[s3-default]
s3_store_access_key = EXAMPLEACCESSKEYID
s3_store_bucket = glance-images
s3_store_bucket_url_format = path
s3_store_host = http://rgw.storage.svc:8080
s3_store_secret_key = change-me-s3-secret-key
"""

MINIMAL_BACKENDS_CONF = """\
[s3-default]
s3_store_access_key = EXAMPLEACCESSKEYID
s3_store_bucket = glance-images
s3_store_bucket_url_format = path
s3_store_host = http://rgw.storage.svc:8080
s3_store_secret_key = change-me-s3-secret-key
"""

ALL_PROJECTED = {
    "type": "BackendsReady",
    "status": "True",
    "reason": "AllBackendsProjected",
    "message": "All attached backends are projected",
}


def by_name(backends: list[dict], name: str) -> dict:
    return next(b for b in backends if b["metadata"]["name"] == name)


def with_backend(backends: list[dict], name: str, patch: dict) -> list[dict]:
    return [patched(b, patch) if b["metadata"]["name"] == name else b for b in backends]


def backends_secret(projection) -> str:
    return content_name(backends_base("glance"), projection.backends_data)


# --- the samples ------------------------------------------------------------------------


def test_the_full_sample_projects_both_stores():
    glance, backends, secrets = FULL
    projection = project_backends(glance, backends, secrets)
    assert projection.backends_conf == FULL_BACKENDS_CONF
    assert projection.valid and projection.default_backend == "s3-default"
    assert projection.default_rendered
    assert projection.enabled_backends == ["s3-archive:s3", "s3-default:s3"]
    assert projection.enabled_backends_value == "s3-archive:s3,s3-default:s3"
    assert projection.s3_hosts == [
        "https://s3.eu-central-1.example.com",
        "http://rgw.storage.svc:8080",
    ]
    assert projection.condition == ALL_PROJECTED
    assert projection.skipped == [] and projection.pending == []
    assert {n: c["reason"] for n, c in projection.backend_conditions.items()} == {
        "s3-archive": "CredentialsAvailable",
        "s3-default": "CredentialsAvailable",
    }
    assert projection.skip_messages() == []


def test_the_minimal_sample_projects_its_one_default_store():
    glance, backends, secrets = MINIMAL
    projection = project_backends(glance, backends, secrets)
    assert projection.backends_conf == MINIMAL_BACKENDS_CONF
    assert projection.enabled_backends == ["s3-default:s3"]
    assert projection.condition == ALL_PROJECTED


def test_the_order_of_the_listed_backends_does_not_matter():
    glance, backends, secrets = FULL
    forward = project_backends(glance, backends, secrets)
    backward = project_backends(glance, list(reversed(backends)), secrets)
    assert forward == backward


# --- what changes the backends Secret name ----------------------------------------------


def test_an_is_default_flip_changes_nothing_in_backends_conf():
    glance, backends, secrets = FULL
    before = project_backends(glance, backends, secrets)
    flipped = with_backend(
        with_backend(backends, "s3-default", {"spec": {"isDefault": False}}),
        "s3-archive",
        {"spec": {"isDefault": True}},
    )
    after = project_backends(glance, flipped, secrets)
    assert after.default_backend == "s3-archive" and after.condition == ALL_PROJECTED
    assert after.backends_conf == before.backends_conf
    assert backends_secret(after) == backends_secret(before)


@pytest.mark.parametrize(
    "change",
    [
        lambda b, s: (b, {**s, "glance-s3": {**s["glance-s3"], "secret-access-key": "rotated"}}),
        lambda b, s: (b, {**s, "glance-s3": {**s["glance-s3"], "access-key-id": "ROTATED"}}),
        lambda b, s: (
            with_backend(
                b, "s3-archive", {"spec": {"extraOptions": {"s3_store_thread_pools": "4"}}}
            ),
            s,
        ),
        lambda b, s: (with_backend(b, "s3-archive", {"spec": {"s3": {"region": "eu-west-1"}}}), s),
        lambda b, s: ([by_name(b, "s3-default")], s),
    ],
    ids=[
        "a rotated S3 secret key changes the backends Secret name",
        "a rotated S3 access key changes the backends Secret name",
        "changed extraOptions change the backends Secret name",
        "a changed typed field changes the backends Secret name",
        "a detached backend changes the backends Secret name",
    ],
)
def test_a_change_of_a_store_changes_the_backends_secret_name(change):
    glance, backends, secrets = FULL
    before = project_backends(glance, backends, secrets)
    after = project_backends(glance, *change(backends, secrets))
    assert after.valid
    assert backends_secret(after) != backends_secret(before)


# --- the exactly-one-default rule -------------------------------------------------------


def test_two_defaults_park_at_no_default_backend_naming_both():
    glance, backends, secrets = FULL
    both = with_backend(backends, "s3-archive", {"spec": {"isDefault": True}})
    projection = project_backends(glance, both, secrets)
    assert projection.condition == {
        "type": "BackendsReady",
        "status": "False",
        "reason": "NoDefaultBackend",
        "message": "More than one attached, credential-ready backend is marked isDefault (s3-archive, s3-default); exactly one is required",
    }
    assert not projection.valid and projection.default_backend is None
    assert projection.default_candidates == ["s3-archive", "s3-default"]
    # nothing is rendered (the config step keeps the last-good artefacts) but the
    # NetworkPolicy still gets every host
    assert projection.backends_conf == "" and projection.enabled_backends == []
    assert projection.s3_hosts == [
        "https://s3.eu-central-1.example.com",
        "http://rgw.storage.svc:8080",
    ]


NO_DEFAULT = {
    "type": "BackendsReady",
    "status": "False",
    "reason": "NoDefaultBackend",
    "message": "No attached, credential-ready backend is marked isDefault; exactly one is required",
}


@pytest.mark.parametrize(
    "change",
    [
        lambda b, s: (with_backend(b, "s3-default", {"spec": {"isDefault": False}}), s),
        lambda b, s: (b, {k: v for k, v in s.items() if k != "glance-s3"}),
        lambda b, s: (b, {**s, "glance-s3": {"access-key-id": "AKID"}}),
        lambda b, s: ([by_name(b, "s3-archive")], s),
        lambda b, s: ([], s),
    ],
    ids=[
        "no backend marked isDefault",
        "the default's credentials Secret is missing",
        "the default's credentials Secret lacks a key",
        "the default backend was deleted",
        "no backend at all",
    ],
)
def test_no_credential_ready_default_parks_at_no_default_backend(change):
    glance, backends, secrets = FULL
    projection = project_backends(glance, *change(backends, secrets))
    assert projection.condition == NO_DEFAULT
    assert not projection.valid and projection.backends_conf == ""


def test_a_default_without_credentials_still_keeps_its_host_in_the_egress_set():
    glance, backends, _ = MINIMAL
    projection = project_backends(glance, backends, {})
    assert projection.s3_hosts == ["http://rgw.storage.svc:8080"]
    assert projection.pending == [("s3-default", "credentials not ready")]


# --- per-backend isolation --------------------------------------------------------------


def test_a_secret_with_a_newline_is_skipped_the_others_still_project():
    glance, backends, secrets = FULL
    poisoned = {
        **secrets,
        "glance-s3-archive": {**secrets["glance-s3-archive"], "secret-access-key": "abc\n[x]"},
    }
    projection = project_backends(glance, backends, poisoned)
    error = (
        "[glance_store] option name or value contains a newline or carriage-return character "
        "(option s3_store_secret_key of [s3-archive])"
    )
    assert projection.skipped == [("s3-archive", error)]
    assert projection.skip_messages() == [f"Skipping backend s3-archive: {error}"]
    assert projection.pending == [("s3-archive", error)]
    assert projection.valid and projection.default_backend == "s3-default"
    assert projection.backends_conf == MINIMAL_BACKENDS_CONF
    assert projection.enabled_backends == ["s3-default:s3"]
    assert projection.condition == {
        "type": "BackendsReady",
        "status": "False",
        "reason": "WaitingForBackends",
        "message": f"Waiting for backends: s3-archive ({error})",
    }
    assert "abc" not in projection.condition["message"]


def test_a_carriage_return_in_an_extra_option_that_bypassed_admission_is_skipped():
    glance, backends, secrets = FULL
    bypassed = with_backend(backends, "s3-archive", {"spec": {"extraOptions": {"x": "1\r2"}}})
    projection = project_backends(glance, bypassed, secrets)
    assert [name for name, _ in projection.skipped] == ["s3-archive"]
    assert "(option x of [s3-archive])" in projection.skipped[0][1]


def test_a_newline_in_an_extra_option_name_is_skipped():
    glance, backends, secrets = FULL
    bypassed = with_backend(backends, "s3-archive", {"spec": {"extraOptions": {"a\nb": "1"}}})
    projection = project_backends(glance, bypassed, secrets)
    assert projection.skipped == [
        (
            "s3-archive",
            "[glance_store] option name or value contains a newline or carriage-return character "
            "(option name 'a\\nb' of [s3-archive])",
        )
    ]


def test_a_skipped_default_leaves_the_projection_valid_but_not_rendered():
    glance, backends, secrets = FULL
    poisoned = {**secrets, "glance-s3": {**secrets["glance-s3"], "access-key-id": "a\nb"}}
    projection = project_backends(glance, backends, poisoned)
    assert projection.valid and projection.default_backend == "s3-default"
    assert not projection.default_rendered
    assert projection.enabled_backends == ["s3-archive:s3"]
    assert projection.condition["reason"] == "WaitingForBackends"


def test_a_backend_without_credentials_waits_and_the_rest_project():
    glance, backends, secrets = FULL
    missing = {k: v for k, v in secrets.items() if k != "glance-s3-archive"}
    projection = project_backends(glance, backends, missing)
    assert projection.condition == {
        "type": "BackendsReady",
        "status": "False",
        "reason": "WaitingForBackends",
        "message": "Waiting for backends: s3-archive (credentials not ready)",
    }
    assert projection.skipped == []
    assert projection.backends_conf == MINIMAL_BACKENDS_CONF
    assert projection.s3_hosts == [
        "https://s3.eu-central-1.example.com",
        "http://rgw.storage.svc:8080",
    ]
    assert projection.backend_conditions["s3-archive"]["reason"] == "WaitingForCredentials"


def test_pending_backends_are_listed_by_name_whatever_the_cause():
    glance, backends, secrets = FULL
    extra = judged(
        patched(BACKEND, {"metadata": {"name": "s3-zeta"}, "spec": {"isDefault": False}})
    )
    first = judged(
        patched(
            BACKEND,
            {
                "metadata": {"name": "s3-alpha"},
                "spec": {"isDefault": False, "s3": {"credentialsSecretRef": {"name": "absent"}}},
            },
        )
    )
    poisoned = {
        **secrets,
        "glance-s3-archive": {**secrets["glance-s3-archive"], "access-key-id": "x\ny"},
    }
    projection = project_backends(glance, [*backends, extra, first], poisoned)
    assert [name for name, _ in projection.pending] == ["s3-alpha", "s3-archive"]
    assert projection.enabled_backends == ["s3-default:s3", "s3-zeta:s3"]


# --- attachment -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "patch",
    [
        {"spec": {"glanceRef": {"name": "other-glance"}}},
        {"metadata": {"namespace": "elsewhere"}},
        {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}},
    ],
    ids=[
        "a backend of another Glance is not attached",
        "a backend in another namespace is not attached",
        "a backend being deleted is dropped at once",
    ],
)
def test_only_attached_backends_are_projected(patch):
    glance, backends, secrets = FULL
    projection = project_backends(glance, with_backend(backends, "s3-archive", patch), secrets)
    assert projection.backends_conf == MINIMAL_BACKENDS_CONF
    assert projection.s3_hosts == ["http://rgw.storage.svc:8080"]
    assert "s3-archive" not in projection.backend_conditions
    assert projection.condition == ALL_PROJECTED


def test_a_second_default_of_another_glance_does_not_count():
    glance, backends, secrets = FULL
    other = judged(
        patched(
            BACKEND, {"metadata": {"name": "s3-other"}, "spec": {"glanceRef": {"name": "glance-b"}}}
        )
    )
    projection = project_backends(glance, [*backends, other], secrets)
    assert projection.valid and projection.condition == ALL_PROJECTED


# --- one store section ------------------------------------------------------------------

SECRETS = {"glance-s3": {"access-key-id": "AKID", "secret-access-key": "SECRET"}}


@pytest.mark.parametrize(
    "patch, expected",
    [
        (
            {},
            "[s3-default]\ns3_store_access_key = AKID\ns3_store_bucket = glance-images\n"
            "s3_store_bucket_url_format = path\ns3_store_host = http://rgw.storage.svc:8080\n"
            "s3_store_secret_key = SECRET\n",
        ),
        (
            {"spec": {"s3": {"createBucketOnPut": False, "region": ""}}},
            "[s3-default]\ns3_store_access_key = AKID\ns3_store_bucket = glance-images\n"
            "s3_store_bucket_url_format = path\ns3_store_host = http://rgw.storage.svc:8080\n"
            "s3_store_secret_key = SECRET\n",
        ),
        (
            {"spec": {"s3": {"createBucketOnPut": True, "largeObjectSize": 1}}},
            "[s3-default]\ns3_store_access_key = AKID\ns3_store_bucket = glance-images\n"
            "s3_store_bucket_url_format = path\ns3_store_create_bucket_on_put = true\n"
            "s3_store_host = http://rgw.storage.svc:8080\ns3_store_large_object_size = 1\n"
            "s3_store_secret_key = SECRET\n",
        ),
        (
            {"spec": {"extraOptions": {"s3_store_host": "http://evil", "a_first": "1"}}},
            "[s3-default]\na_first = 1\ns3_store_access_key = AKID\ns3_store_bucket = glance-images\n"
            "s3_store_bucket_url_format = path\ns3_store_host = http://rgw.storage.svc:8080\n"
            "s3_store_secret_key = SECRET\n",
        ),
    ],
    ids=[
        "the operator keys, sorted",
        "false and empty optional fields are not rendered",
        "createBucketOnPut renders true and sizes render as integers",
        "extraOptions are sorted in and never override an operator key",
    ],
)
def test_the_store_section(patch, expected):
    # unjudged: the renderer must hold even where admission was bypassed
    assert render_store_section(patched(BACKEND, patch), SECRETS) == expected


def test_a_bucket_url_format_left_empty_by_a_bypassed_webhook_renders_path():
    section = render_store_section(BACKEND, SECRETS)
    assert "s3_store_bucket_url_format = path\n" in section


def test_a_dollar_in_an_operator_value_is_escaped_for_oslo_config():
    secrets = {"glance-s3": {"access-key-id": "AK$ID", "secret-access-key": "se$cret${x}$$"}}
    extra = patched(BACKEND, {"spec": {"extraOptions": {"s3_store_thread_pools": "$pools"}}})
    section = render_store_section(extra, secrets)
    assert "s3_store_access_key = AK$$ID\n" in section
    assert "s3_store_secret_key = se$$cret$${x}$$$$\n" in section
    assert "s3_store_thread_pools = $pools\n" in section


@pytest.mark.parametrize(
    "secrets, message",
    [
        (
            {},
            'getting Secret openstack/glance-s3: secrets "glance-s3" not found (the S3 '
            "credentials Secret)",
        ),
        (
            {"glance-s3": {"access-key-id": "AKID"}},
            'key not found in Secret: key "secret-access-key" in Secret openstack/glance-s3 (the '
            "S3 credentials Secret)",
        ),
        (
            {"glance-s3": {"access-key-id": "", "secret-access-key": "x"}},
            'key is empty in Secret: key "access-key-id" in Secret openstack/glance-s3 (the S3 '
            "credentials Secret)",
        ),
    ],
    ids=["a missing Secret", "a missing key", "an empty key"],
)
def test_a_store_section_without_credentials_is_a_backend_fault(secrets, message):
    with pytest.raises(BackendFault) as fault:
        render_store_section(BACKEND, secrets)
    assert str(fault.value) == message
    assert isinstance(fault.value, ValueError)


def test_a_backend_without_an_s3_block_is_a_backend_fault():
    with pytest.raises(BackendFault, match="has type S3 but no s3 block"):
        render_store_section(patched(BACKEND, {"spec": {"s3": DELETE}}), SECRETS)


# --- CredentialsReady -------------------------------------------------------------------

CREDENTIAL_CASES = [
    (
        None,
        SECRETS,
        {},
        "False",
        "WaitingForParent",
        "parent Glance openstack/glance does not exist; the cluster this backend's credentials "
        "belong on is unknown (spec.glanceRef.name)",
    ),
    (
        GLANCE,
        {},
        {},
        "False",
        "WaitingForCredentials",
        "S3 credentials Secret openstack/glance-s3 not found yet; it must carry the data keys access-key-id and secret-access-key",
    ),
    (
        GLANCE,
        {"glance-s3": {"access-key-id": "AKID"}},
        {},
        "False",
        "WaitingForCredentials",
        "S3 credentials Secret exists but is missing expected keys: openstack/glance-s3 lacks secret-access-key; it must carry the data keys access-key-id and secret-access-key",
    ),
    (
        GLANCE,
        {"glance-s3": {"access-key-id": "", "secret-access-key": ""}},
        {},
        "False",
        "WaitingForCredentials",
        "S3 credentials Secret exists but is missing expected keys: openstack/glance-s3 lacks access-key-id (empty), secret-access-key (empty); it must carry the data keys access-key-id and secret-access-key",
    ),
    (
        GLANCE,
        SECRETS,
        {"spec": {"s3": DELETE}},
        "False",
        "WaitingForCredentials",
        "spec.s3 is not set; no S3 credentials to resolve",
    ),
    (
        GLANCE,
        SECRETS,
        {},
        "True",
        "CredentialsAvailable",
        'S3 credentials Secret "glance-s3" carries the required keys',
    ),
]


@pytest.mark.parametrize(
    "parent, secrets, patch, status, reason, message",
    CREDENTIAL_CASES,
    ids=[
        "a missing parent Glance waits for the parent",
        "a missing Secret waits for credentials",
        "a missing key waits for credentials, naming it",
        "empty keys count as missing",
        "no s3 block waits for credentials",
        "both keys make the credentials available",
    ],
)
def test_credentials_ready(parent, secrets, patch, status, reason, message):
    assert backend_credentials(patched(BACKEND, patch), parent, secrets) == {
        "type": "CredentialsReady",
        "status": status,
        "reason": reason,
        "message": message,
    }
