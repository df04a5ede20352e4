"""``diagnose``'s checks from inside an API pod, run where the e2e stack's Glance runs: with
its rendered configuration directories, its environment (the database URL and the service
user's password come from the pod's variables) and its port, against the real MariaDB,
Keystone and S3 server (moto) on loopback.

Each fault is made the way a user's would show in the pod: a password in the variable the
Secret fills, a store's host or bucket in the backends file the Secret mounts. What the
checks say is then judged as ``diagnose`` judges it (``findings.check_findings``): each
fault names its cause.

moto accepts any S3 key pair unless told to check them: the wrong secret key is shown with
a user of moto's own IAM, while moto checks every request's signature
(``Stack.s3_checking_keys``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    BACKENDS_DIR,
    CONFIG_DIR,
    STAGING_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import API_PORT
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import findings, in_pod

pytestmark = [pytest.mark.e2e]


def checks(
    stack,
    env: dict[str, str] | None = None,
    backends: Path | None = None,
    volumes: dict[str, tuple[str, int]] | None = None,
) -> list[dict]:
    """The checks as the pod would run them, here: the command remapped to the stack;
    ``volumes`` as ``in_pod.bounds`` reads them from a pod."""
    argv = stack.remap.command(in_pod.command(volumes=volumes))
    argv[4] = f"{stack.remap.path(CONFIG_DIR)},{backends or stack.remap.path(BACKENDS_DIR)}"
    assert argv[5] == str(API_PORT)
    argv[5] = str(stack.glance_port)
    done = subprocess.run(
        argv,
        env={**stack.glance_env, **(env or {})},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return in_pod.parse(done.stdout)


def causes(found: list[dict]) -> list[tuple[str, str]]:
    return [(f["cause"], f["subject"]) for f in findings.check_findings("pod", found, {})]


def edited_backends(stack, tmp_path: Path, **options: str) -> Path:
    """A copy of the backends directory with each of ``options`` of every store set to its
    value."""
    copy = tmp_path / "backends"
    shutil.copytree(stack.remap.path(BACKENDS_DIR), copy)
    for path in copy.glob("*.conf"):
        text = path.read_text()
        for option, value in options.items():
            text = re.sub(rf"(?m)^{option}\s*=.*$", f"{option} = {value}", text)
        path.write_text(text)
    return copy


def test_a_healthy_glance_passes_every_check(stack):
    found = checks(stack)
    assert {c["check"] for c in found} == {"healthcheck", "database", "keystone", "images", "s3"}
    assert [c for c in found if not c["ok"]] == []
    assert causes(found) == []


def test_a_database_password_that_is_refused_is_named(stack):
    url = stack.glance_env["OS_DATABASE__CONNECTION"]
    wrong = re.sub(r"(://[^:/@]+:)[^@]+@", r"\1not-the-password@", url)
    assert wrong != url
    found = checks(stack, {"OS_DATABASE__CONNECTION": wrong})
    database = next(c for c in found if c["check"] == "database")
    assert (database["kind"], "Access denied for user" in database["error"]) == ("auth", True)
    assert "not-the-password" not in database["error"]
    assert causes(found) == [("db-auth", "Pod pod check database")]


def test_a_database_that_does_not_answer_is_named(stack):
    url = stack.glance_env["OS_DATABASE__CONNECTION"]
    closed = re.sub(r"@[^/]+/", "@127.0.0.1:9/", url)
    found = checks(stack, {"OS_DATABASE__CONNECTION": closed})
    assert ("db-unreachable", "Pod pod check database") in causes(found)


def test_a_service_user_password_keystone_refuses_is_named(stack):
    found = checks(stack, {"OS_KEYSTONE_AUTHTOKEN__PASSWORD": "not-the-password"})
    keystone = next(c for c in found if c["check"] == "keystone")
    assert keystone["kind"] == "auth", keystone
    assert causes(found) == [("keystone-auth", "Pod pod check keystone")]
    assert "images" not in {c["check"] for c in found}  # no token to ask the API with


def test_an_s3_store_away_and_a_bucket_missing_are_named(stack, tmp_path):
    away = edited_backends(stack, tmp_path / "away", s3_store_host="http://127.0.0.1:9")
    found = checks(stack, backends=away)
    assert {cause for cause, _ in causes(found)} == {"s3-unreachable"}
    missing = edited_backends(stack, tmp_path / "missing", s3_store_bucket="no-such-bucket")
    found = checks(stack, backends=missing)
    assert {cause for cause, _ in causes(found)} == {"s3-bucket"}


def test_an_s3_secret_key_the_server_refuses_is_named(stack, tmp_path):
    key_id, secret = stack.s3_user("diagnose-e2e")
    right = edited_backends(
        stack, tmp_path / "right", s3_store_access_key=key_id, s3_store_secret_key=secret
    )
    wrong = edited_backends(
        stack, tmp_path / "wrong", s3_store_access_key=key_id, s3_store_secret_key="not-it"
    )
    with stack.s3_checking_keys():
        assert causes(checks(stack, backends=right)) == []
        found = checks(stack, backends=wrong)
        # The stack's own key, which moto's IAM does not know, while moto checks keys.
        unknown = checks(stack)
    stores = [c for c in found if c["check"] == "s3"]
    assert stores and all(c["kind"] == "auth" for c in stores), stores
    assert all("SignatureDoesNotMatch" in c["error"] for c in stores), stores
    assert secret not in str(found) and "not-it" not in str(found)
    assert {cause for cause, _ in causes(found)} == {"s3-auth"}
    assert all("InvalidAccessKeyId" in c["error"] for c in unknown if c["check"] == "s3"), unknown
    assert {cause for cause, _ in causes(unknown)} == {"s3-auth"}
    # moto checks no key again: the stack's Glance goes on with its own.
    assert causes(checks(stack)) == []


def test_a_staging_volume_near_its_bound_is_a_note(stack):
    """The staging directory the stack's Glance uses, with 9 MiB in it: against a bound of
    10 MiB it is filling (90 %: the kubelet evicts the pod past the bound), against 64 MiB
    it is not. What the check counts is what the files take on disk, as the kubelet's."""
    staging = stack.remap.path(STAGING_DIR)
    staged = staging / "diagnose-volume-check"
    staged.write_bytes(os.urandom(9 * 2**20))
    try:
        # The pod's path, as in_pod.bounds gives it: moved here with the rest of the command.
        near = checks(stack, volumes={"staging": (STAGING_DIR, 10 * 2**20)})
        roomy = checks(stack, volumes={"staging": (STAGING_DIR, 64 * 2**20)})
    finally:
        staged.unlink()
    (volume,) = [c for c in near if c["check"] == "volume"]
    assert (volume["ok"], volume["kind"], volume["bound"]) == (False, "filling", 10 * 2**20)
    assert 9 * 2**20 <= volume["used"] < 10 * 2**20, volume
    assert volume["error"] == "9 MiB of its 10 MiB bound (90%)", volume
    assert causes(near) == [("volume-filling", "Pod pod check volume")]
    (volume,) = [c for c in roomy if c["check"] == "volume"]
    assert volume["ok"] and volume["used"] >= 9 * 2**20, volume
    assert causes(roomy) == []
