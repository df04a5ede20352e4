"""``diagnose``'s checks from inside an API pod, run where the e2e stack's Glance runs: with
its rendered configuration directories, its environment (the database URL and the service
user's password come from the pod's variables) and its port, against the real MariaDB,
Keystone and S3 server (moto) on loopback.

Each fault is made the way a user's would show in the pod: a password in the variable the
Secret fills, a store's host or bucket in the backends file the Secret mounts. What the
checks say is then judged as ``diagnose`` judges it (``findings.check_findings``): each
fault names its cause.

moto accepts any S3 key pair, so a wrong S3 key cannot be shown here (the unit tests
judge the kind the check reports for it; the node's tests run the S3 server with keys).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    BACKENDS_DIR,
    CONFIG_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import API_PORT
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import findings, in_pod

pytestmark = [pytest.mark.e2e]


def checks(stack, env: dict[str, str] | None = None, backends: Path | None = None) -> list[dict]:
    """The checks as the pod would run them, here: the command remapped to the stack."""
    argv = stack.remap.command(in_pod.command())
    argv[-3] = f"{stack.remap.path(CONFIG_DIR)},{backends or stack.remap.path(BACKENDS_DIR)}"
    assert argv[-2] == str(API_PORT)
    argv[-2] = str(stack.glance_port)
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


def edited_backends(stack, tmp_path: Path, option: str, value: str) -> Path:
    """A copy of the backends directory with ``option`` of every store set to ``value``."""
    copy = tmp_path / "backends"
    shutil.copytree(stack.remap.path(BACKENDS_DIR), copy)
    for path in copy.glob("*.conf"):
        text = path.read_text()
        path.write_text(re.sub(rf"(?m)^{option}\s*=.*$", f"{option} = {value}", text))
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
    away = edited_backends(stack, tmp_path / "away", "s3_store_host", "http://127.0.0.1:9")
    found = checks(stack, backends=away)
    assert {cause for cause, _ in causes(found)} == {"s3-unreachable"}
    missing = edited_backends(stack, tmp_path / "missing", "s3_store_bucket", "no-such-bucket")
    found = checks(stack, backends=missing)
    assert {cause for cause, _ in causes(found)} == {"s3-bucket"}
