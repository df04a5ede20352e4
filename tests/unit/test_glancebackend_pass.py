"""One reconcile pass of a GlanceBackend (reference-spec §1.4, §2.4) and the parent wake-up."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from support.builders import BACKEND, GLANCE, patched
from support.cluster import b64, default_secrets, glance_object, secret, stored

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.passes import glancebackend_pass as bp

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SECRET = "glance-backends-0123abcd"
CONF = "[s3-default]\ns3_store_bucket = glance-images\n"


def parent_deployment(secret_name: str | None = SECRET) -> dict:
    volumes = [{"name": "config", "configMap": {"name": "glance-config-1"}}]
    if secret_name:
        volumes.append({"name": "backends", "secret": {"secretName": secret_name}})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "glance", "namespace": "openstack"},
        "spec": {"template": {"spec": {"volumes": volumes}}},
    }


def backends_secret(conf: str = CONF, name: str = SECRET) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "openstack"},
        "data": {"backends.conf": b64(conf)},
    }


def backend(**meta) -> dict:
    return stored(BACKEND, "b-uid", **meta)


def decide(obj=None, parent="default", secrets=None, deployment="default", mounted="default"):
    return bp.decide_backend_pass(
        obj or backend(),
        glance_object(GLANCE) if parent == "default" else parent,
        default_secrets() if secrets is None else secrets,
        parent_deployment() if deployment == "default" else deployment,
        backends_secret() if mounted == "default" else mounted,
        NOW,
    )


def reasons(result) -> dict[str, tuple[str, str]]:
    return {cond["type"]: (cond["status"], cond["reason"]) for cond in result.status["conditions"]}


def test_a_projected_backend_with_credentials_is_ready_and_needs_no_poll():
    result = decide()
    assert reasons(result) == {
        c.CREDENTIALS_READY: ("True", c.CREDENTIALS_AVAILABLE),
        c.CONFIG_PROJECTED: ("True", c.CONFIG_PROJECTED_REASON),
        c.READY: ("True", c.ALL_READY),
    }
    assert result.requeue_after is None
    assert result.status["observedGeneration"] == 1
    projected = c.by_type(result.status["conditions"])[c.CONFIG_PROJECTED]
    assert SECRET in projected["message"] and "[s3-default]" in projected["message"]


def test_a_second_pass_over_the_same_state_writes_no_status():
    first = decide()
    again = decide(obj={**backend(), "status": first.status})
    assert again.status_patch is None


@pytest.mark.parametrize(
    "deployment, mounted, fragment",
    [
        (None, None, "does not exist yet"),
        (parent_deployment(None), None, "mounts no backends Secret"),
        (parent_deployment(), None, "is not found"),
        (parent_deployment(), backends_secret(name="glance-backends-other"), "is not found"),
        (
            parent_deployment(),
            backends_secret("[s3-other]\nx = 1\n"),
            "has no [s3-default] section",
        ),
        (parent_deployment(), backends_secret("[s3-default-2]\n# [s3-default]\n"), "has no"),
        (parent_deployment(), {"metadata": {"name": SECRET}, "data": {}}, "has no"),
        (
            parent_deployment(),
            {"metadata": {"name": SECRET}, "data": {"backends.conf": "%%%"}},
            "has no",
        ),
    ],
    ids=[
        "no-deployment",
        "no-backends-volume",
        "secret-missing",
        "another-secret",
        "section-missing",
        "only-look-alike-lines",
        "no-key",
        "not-base64",
    ],
)
def test_config_projected_waits_until_the_mounted_secret_holds_the_section(
    deployment, mounted, fragment
):
    result = decide(deployment=deployment, mounted=mounted)
    cond = c.by_type(result.status["conditions"])[c.CONFIG_PROJECTED]
    assert (cond["status"], cond["reason"]) == ("False", c.WAITING_FOR_PROJECTION)
    assert fragment in cond["message"]
    assert reasons(result)[c.READY] == ("False", c.NOT_ALL_READY)
    assert result.requeue_after == 15


def test_a_section_line_with_a_carriage_return_still_counts():
    result = decide(mounted=backends_secret("[s3-default]\r\nx = 1\r\n"))
    assert reasons(result)[c.CONFIG_PROJECTED][0] == "True"


@pytest.mark.parametrize(
    "secrets, fragment",
    [
        ([], "not found yet"),
        ([secret("glance-s3", **{"access-key-id": "a"})], "secret-access-key"),
    ],
    ids=["no-secret", "missing-key"],
)
def test_missing_credentials_poll_and_projection_is_still_observed(secrets, fragment):
    result = decide(secrets=secrets, mounted=backends_secret("[s3-other]\n"))
    cred = c.by_type(result.status["conditions"])[c.CREDENTIALS_READY]
    assert (cred["status"], cred["reason"]) == ("False", c.WAITING_FOR_CREDENTIALS)
    assert fragment in cred["message"]
    assert reasons(result)[c.CONFIG_PROJECTED] == ("False", c.WAITING_FOR_PROJECTION)
    assert result.requeue_after == 15


def test_a_missing_parent_demotes_a_standing_projection():
    ready = decide()
    orphan = {**backend(), "status": ready.status}
    result = decide(obj=orphan, parent=None, deployment=None, mounted=None)
    assert reasons(result) == {
        c.CREDENTIALS_READY: ("False", c.WAITING_FOR_PARENT),
        c.CONFIG_PROJECTED: ("False", c.WAITING_FOR_PROJECTION),
        c.READY: ("False", c.NOT_ALL_READY),
    }
    assert (
        "parent Glance openstack/glance does not exist" in result.status["conditions"][0]["message"]
    )
    assert result.requeue_after == 15


def test_a_missing_parent_does_not_invent_a_projection_condition():
    result = decide(parent=None, deployment=None, mounted=None)
    assert set(reasons(result)) == {c.CREDENTIALS_READY, c.READY}


def test_a_backend_being_deleted_is_left_alone():
    result = decide(obj=backend(deletionTimestamp="2026-03-01T00:00:00Z"))
    assert (result.status, result.status_patch, result.requeue_after) == (None, None, None)


def test_the_backend_result_is_plain_data():
    assert set(decide().as_dict()) == {"status", "status_patch", "requeue_after"}


def with_credentials(obj: dict, status: str) -> dict:
    out = copy.deepcopy(obj)
    out["status"] = {"conditions": [{"type": c.CREDENTIALS_READY, "status": status}]}
    return out


OLD = with_credentials(backend(), "True")
KEY = ("openstack", "glance")


@pytest.mark.parametrize(
    "new, old, expected",
    [
        (OLD, None, KEY),  # created
        (None, OLD, KEY),  # deleted
        (patched(OLD, {"spec": {"isDefault": False}}), OLD, KEY),
        (patched(OLD, {"spec": {"s3": {"bucket": "other"}}}), OLD, KEY),
        (patched(OLD, {"metadata": {"deletionTimestamp": "2026-03-01T00:00:00Z"}}), OLD, KEY),
        (with_credentials(backend(), "False"), OLD, KEY),  # credentials flipped
        (patched(OLD, {"metadata": {"resourceVersion": "9"}}), OLD, None),
        (
            patched(
                OLD,
                {
                    "status": {
                        "conditions": [
                            {"type": c.CREDENTIALS_READY, "status": "True"},
                            {"type": c.CONFIG_PROJECTED, "status": "True"},
                        ]
                    }
                },
            ),
            OLD,
            None,
        ),  # the parent's own projection coming back
        (None, None, None),
        (patched(OLD, {"spec": {"glanceRef": {"name": ""}}}), None, None),
    ],
    ids=[
        "created",
        "deleted",
        "is-default-flip",
        "spec-change",
        "deletion-started",
        "credentials-flip",
        "nothing-but-metadata",
        "projection-status-only",
        "nothing",
        "no-parent-named",
    ],
)
def test_a_backend_change_the_parent_must_see_wakes_the_parent(new, old, expected):
    assert bp.parent_to_wake(new, old) == expected


def test_the_section_test_wants_the_whole_line():
    assert bp.has_section("[a]\nx = 1\n", "a")
    assert not bp.has_section("[ab]\n", "a")
    assert not bp.has_section(" [a]\n", "a")
    assert bp.has_section("x\r\n[a]\r\n", "a")


def test_a_backend_finds_its_own_section_among_its_siblings():
    other = patched(BACKEND, {"metadata": {"name": "s3-other"}})
    result = decide(obj=stored(other, "o"), mounted=backends_secret(CONF + "\n[s3-other]\nx = 1\n"))
    assert reasons(result)[c.CONFIG_PROJECTED][0] == "True"


def test_the_mounted_secret_may_carry_string_data():
    mounted = {"metadata": {"name": SECRET}, "stringData": {"backends.conf": CONF}}
    assert reasons(decide(mounted=mounted))[c.CONFIG_PROJECTED][0] == "True"


def test_credentials_are_found_among_other_conditions():
    old = copy.deepcopy(OLD)
    old["status"]["conditions"].insert(0, {"type": c.CONFIG_PROJECTED, "status": "True"})
    assert bp.parent_to_wake(old, OLD) is None
