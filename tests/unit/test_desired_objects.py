"""What desired_objects decides about every owned object, table-driven.

Each Glance is the stored object a cluster would keep (``admission.judge`` applies the
schema and webhook defaults), unless a case needs a spec admission refuses, to show how
the function copes with an object that bypassed it.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support.builders import DELETE, GLANCE, patched

from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import judge
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.api import (
    deployment,
    service,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.config_secrets import (
    db_connection_secret,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.database import (
    db_purge_cronjob,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.exposure import (
    keystone_port,
    network_policy,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.keys import (
    DB_JOBS,
    DB_PHASE_JOBS,
    MARIADB_OBJECTS,
    OBJECT_KEYS,
    OPTIONAL_OBJECTS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    Artifacts,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.owned import (
    desired_objects,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    CONTAINER_SECURITY_CONTEXT,
    pod_template_object,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.uwsgi import (
    UWSGI_CHUNKED_INPUT_LIMIT,
    UWSGI_TRANSFER_IDLE_TIMEOUT,
    uwsgi_command,
)

CRD = load_crds()["Glance"]
OWNER = {
    "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
    "kind": "Glance",
    "name": "glance",
    "uid": "6f1c1d0e-5a4b-4c3d-9e8f-7a6b5c4d3e2f",
}
ARTIFACTS = Artifacts(
    config_map="glance-config-0123abcd",
    backends_secret="glance-backends-89abcdef",
    config_data={"glance-api.conf": "[DEFAULT]\ndebug = false\n", "glance-api-paste.ini": "[x]\n"},
    backends_data={"backends.conf": "[s3-default]\ns3_store_host = http://rgw:8080\n"},
    dsn="mysql+pymysql://glance:secret@mariadb.openstack.svc:3306/glance?charset=utf8",
    dsn_digest="d" * 64,
    authtoken_digest="a" * 64,
    s3_hosts=("http://rgw.storage.svc:8080",),
    image_cache_max_size=8589934592,
    owner=OWNER,
)
API_MOUNTS = [
    {"name": "config", "mountPath": "/etc/glance/glance-api.conf.d/", "readOnly": True},
    {"name": "backends", "mountPath": "/etc/glance/backends.conf.d/", "readOnly": True},
    {"name": "staging", "mountPath": "/var/lib/glance/staging"},
    {"name": "tasks-work", "mountPath": "/var/lib/glance/tasks-work"},
]
TMP_MOUNT = {"name": "tmp", "mountPath": "/tmp"}
TLS = {
    "mode": "verify-full",
    "caBundleSecretRef": {"name": "db-ca"},
    "clientCertSecretRef": {"name": "db-client"},
}


def stored(spec: dict | None = None, **metadata) -> dict:
    """The Glance as the API server stores it, after every default."""
    verdict = judge(CRD, patched(GLANCE, {"spec": spec or {}, "metadata": metadata}))
    assert verdict.allowed, verdict.messages()
    return verdict.object


def artifacts(**changes) -> Artifacts:
    return dataclasses.replace(ARTIFACTS, **changes)


def desired(spec: dict | None = None, art: Artifacts = ARTIFACTS, **kw) -> dict:
    return desired_objects(stored(spec), art, **kw)


def api_container(spec: dict | None = None, art: Artifacts = ARTIFACTS) -> dict:
    return deployment(stored(spec), art)["pod"]["containers"][0]


def pod_of(key: str, spec: dict | None = None, art: Artifacts = ARTIFACTS) -> dict:
    return desired(spec, art)[key]["pod"]


# --- the uWSGI command --------------------------------------------------------------------

APPLICATION = [
    "--hook-master-start",
    "unix_signal:15 gracefully_kill_them_all",
    "--log-master",
    "--log-format",
    "%(method) %(uri) => generated %(rsize) bytes in %(msecs) msecs (%(proto) %(status))",
    "--wsgi-file",
    "/var/lib/openstack/bin/glance-wsgi-api",
    "--master",
    "--lazy-apps",
    "--need-app",
    "--processes",
    "2",
    "--threads",
    "1",
    "--pyargv",
    "--config-dir /etc/glance/glance-api.conf.d/ --config-dir /etc/glance/backends.conf.d/",
]
# Without keep-alive (the default): the workers serve HTTP, every response says close.
DEFAULT_COMMAND = [
    "uwsgi",
    "--http-socket",
    ":9292",
    "--add-header",
    "Connection: close",
    "--socket-timeout",
    "300",
    "--chunked-input-limit",
    "16777216",
    *APPLICATION,
]
# With keep-alive: uWSGI's HTTP router in front of the workers.
KEEPALIVE_COMMAND = [
    "uwsgi",
    "--http",
    ":9292",
    "--http-buffer-size",
    "32768",
    "--http-timeout",
    "300",
    "--http-headers-timeout",
    "60",
    "--socket-timeout",
    "300",
    "--http-auto-chunked",
    "--http-chunked-input",
    "--chunked-input-limit",
    "16777216",
    "--http-keepalive=60",
    "--route-if",
    "contains:${HTTP_TRANSFER_ENCODING};chunked addheader:Connection: close",
    *APPLICATION,
]


@pytest.mark.parametrize("release", ["2025.2", "2026.1", "2026.2"])
def test_every_release_launches_under_uwsgi_with_the_tuned_tokens(release):
    assert api_container({"openStackRelease": release})["command"] == DEFAULT_COMMAND


def test_an_empty_uwsgi_block_gives_the_default_command():
    assert api_container({"apiServer": {"uwsgi": {}}})["command"] == DEFAULT_COMMAND


def _replaced(tokens: list[str], old: list[str], new: list[str]) -> list[str]:
    for i in range(len(tokens)):
        if tokens[i : i + len(old)] == old:
            return tokens[:i] + new + tokens[i + len(old) :]
    raise AssertionError(f"{old} not in {tokens}")


@pytest.mark.parametrize(
    ("uwsgi", "expected"),
    [
        pytest.param(
            {"httpKeepAlive": False}, DEFAULT_COMMAND, id="keepalive-false-is-the-default"
        ),
        pytest.param({"httpKeepAlive": True}, KEEPALIVE_COMMAND, id="keepalive-true-is-the-router"),
        pytest.param(
            {"httpKeepAliveTimeout": 5},
            _replaced(KEEPALIVE_COMMAND, ["--http-keepalive=60"], ["--http-keepalive=5"]),
            id="a-keepalive-timeout-alone-asks-for-keepalive",
        ),
        pytest.param(
            {"httpKeepAlive": True, "httpKeepAliveTimeout": 5},
            _replaced(KEEPALIVE_COMMAND, ["--http-keepalive=60"], ["--http-keepalive=5"]),
            id="keepalive-timeout-is-the-keepalive-value",
        ),
        pytest.param(
            # uWSGI reads --http-keepalive=1 as "on" with no idle timeout of its own.
            {"httpKeepAliveTimeout": 1},
            _replaced(KEEPALIVE_COMMAND, ["--http-keepalive=60"], ["--http-keepalive=2"]),
            id="keepalive-timeout-of-one-second-is-two",
        ),
        pytest.param(
            {"harakiri": 20},
            [*DEFAULT_COMMAND, "--harakiri", "20"],
            id="harakiri-is-last",
        ),
        pytest.param(
            {"processes": 4, "threads": 3},
            _replaced(
                DEFAULT_COMMAND,
                ["--processes", "2", "--threads", "1"],
                ["--processes", "4", "--threads", "3"],
            ),
            id="processes-and-threads",
        ),
    ],
)
def test_each_uwsgi_knob_changes_exactly_its_tokens(uwsgi, expected):
    assert api_container({"apiServer": {"uwsgi": uwsgi}})["command"] == expected


@pytest.mark.parametrize(
    ("uwsgi", "absent"),
    [
        ({"httpKeepAlive": False, "httpKeepAliveTimeout": 5}, "--http-keepalive=5"),
        ({"harakiri": 0}, "--harakiri"),
        ({"httpKeepAliveTimeout": 0}, "--http-keepalive=0"),
        ({"httpKeepAliveTimeout": 0}, "--http"),
    ],
)
def test_a_spec_that_bypassed_admission_never_emits_a_meaningless_cap(uwsgi, absent):
    assert absent not in uwsgi_command({"apiServer": {"uwsgi": uwsgi}})


def test_uwsgi_2_0_has_no_keepalive_timeout_option():
    # The reference's --http-keepalive-timeout makes uWSGI 2.0 exit: unrecognized option.
    command = uwsgi_command({"apiServer": {"uwsgi": {"httpKeepAliveTimeout": 30}}})
    assert not any(token.startswith("--http-keepalive-timeout") for token in command)
    assert "--http-keepalive=30" in command


@pytest.mark.parametrize("uwsgi", [{}, {"httpKeepAlive": True}], ids=["default", "keepalive"])
def test_a_paused_transfer_is_cut_by_neither_the_router_nor_a_worker_before_the_bound(uwsgi):
    command = uwsgi_command({"apiServer": {"uwsgi": uwsgi}})
    bound = str(UWSGI_TRANSFER_IDLE_TIMEOUT)
    assert command[command.index("--socket-timeout") + 1] == bound  # workers, chunked reads
    if "--http" in command:
        assert command[command.index("--http-timeout") + 1] == bound  # the router, both peers
    assert UWSGI_TRANSFER_IDLE_TIMEOUT >= 120  # minutes, not uWSGI's 4 s
    assert "--chunked-input-timeout" not in command  # it would override --socket-timeout


def test_without_keepalive_every_response_announces_the_close():
    # --http-socket closes after each response; saying so keeps clients from reusing it.
    command = uwsgi_command({})
    assert command[command.index("--http-socket") + 1] == ":9292"
    assert command[command.index("--add-header") + 1] == "Connection: close"
    assert "--http" not in command and "--http11-socket" not in command


def test_processes_and_threads_below_one_fall_back_to_the_defaults():
    command = uwsgi_command({"apiServer": {"uwsgi": {"processes": 0, "threads": -1}}})
    assert command[command.index("--processes") + 1] == "2"
    assert command[command.index("--threads") + 1] == "1"


def test_the_pyargv_value_is_one_argv_element():
    command = uwsgi_command({})
    assert command[command.index("--pyargv") + 1].count("--config-dir") == 2


@pytest.mark.parametrize("uwsgi", [{}, {"httpKeepAlive": True}], ids=["default", "keepalive"])
def test_the_chunked_input_limit_lets_a_one_mib_chunk_and_its_framing_through(uwsgi):
    command = uwsgi_command({"apiServer": {"uwsgi": uwsgi}})
    position = command.index("--chunked-input-limit")
    one_mib_chunk_with_framing = 1024 * 1024 + len("100000\r\n") + len("\r\n")
    assert int(command[position + 1]) == UWSGI_CHUNKED_INPUT_LIMIT
    assert int(command[position + 1]) > 10 * one_mib_chunk_with_framing


# --- the API container --------------------------------------------------------------------


def test_all_three_probes_get_the_healthcheck_with_the_decided_timings():
    container = api_container()
    http_get = {"path": "/healthcheck", "port": 9292}
    assert container["startup_probe"] == {
        "httpGet": http_get,
        "periodSeconds": 2,
        "timeoutSeconds": 8,
        "failureThreshold": 150,
    }
    # the founding 300 s budget (DECISIONS.md), asked five times as often
    startup = container["startup_probe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] == 300
    assert container["liveness_probe"] == {
        "httpGet": http_get,
        "initialDelaySeconds": 15,
        "periodSeconds": 20,
        "timeoutSeconds": 10,
        "failureThreshold": 3,
    }
    assert container["readiness_probe"] == {  # no delay: the startup probe holds it back
        "httpGet": http_get,
        "periodSeconds": 15,
        "timeoutSeconds": 10,
        "failureThreshold": 3,
    }


def test_the_env_is_the_dsn_the_service_user_password_then_the_pod_url_in_that_order():
    assert api_container()["env"] == [
        {
            "name": "OS_DATABASE__CONNECTION",
            "valueFrom": {"secretKeyRef": {"name": "glance-db-connection", "key": "connection"}},
        },
        {
            "name": "OS_KEYSTONE_AUTHTOKEN__PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": "glance-service-user", "key": "password"}},
        },
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "OS_DEFAULT__WORKER_SELF_REFERENCE_URL", "value": "http://$(POD_IP):9292"},
    ]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="default-import-methods"),
        pytest.param({"importMethods": ["glance-direct", "copy-image"]}, id="glance-direct"),
        pytest.param({"imageCache": {}}, id="image-cache"),
        pytest.param({"autoscaling": {"maxReplicas": 5, "targetCPUUtilization": 70}}, id="hpa"),
    ],
)
def test_every_api_pod_gets_its_own_url_whatever_the_spec(spec):
    env = api_container(spec)["env"]
    names = [entry["name"] for entry in env]
    # The kubelet expands $(POD_IP) only from a variable defined before it.
    assert names.index("POD_IP") < names.index("OS_DEFAULT__WORKER_SELF_REFERENCE_URL")
    assert env[names.index("OS_DEFAULT__WORKER_SELF_REFERENCE_URL")]["value"] == (
        "http://$(POD_IP):9292"
    )


def test_only_the_api_container_gets_the_pod_url():
    pod = desired({"imageCache": {}})["deployment"]["pod"]
    sidecar = next(c for c in pod["containers"] if c["name"] == "cache-maintenance")
    assert sidecar["env"] == []
    for job in ("db_sync_job",):
        (container,) = desired()[job]["pod"]["containers"]
        assert [e["name"] for e in container["env"]] == ["OS_DATABASE__CONNECTION"]


def test_the_service_user_key_is_taken_from_the_spec():
    spec = {"serviceUser": {"secretRef": {"name": "su", "key": "token"}}}
    assert api_container(spec)["env"][1]["valueFrom"]["secretKeyRef"] == {
        "name": "su",
        "key": "token",
    }


@pytest.mark.parametrize(
    ("image", "reference"),
    [
        ({"repository": "ghcr.io/c5c3/glance", "tag": "2026.2"}, "ghcr.io/c5c3/glance:2026.2"),
        (
            {"repository": "ghcr.io/c5c3/glance", "tag": DELETE, "digest": "sha256:" + "0" * 64},
            "ghcr.io/c5c3/glance@sha256:" + "0" * 64,
        ),
    ],
)
def test_the_image_reference_is_a_digest_when_pinned_else_the_tag(image, reference):
    objects = desired({"image": image, "imageCache": {}})
    containers = objects["deployment"]["pod"]["containers"]
    assert [c["image"] for c in containers] == [reference, reference]
    assert objects["db_sync_job"]["pod"]["containers"][0]["image"] == reference
    assert objects["db_purge_cronjob"]["pod"]["containers"][0]["image"] == reference


@pytest.mark.parametrize(
    ("deployment", "sleep", "grace"),
    [
        ({}, "sleep 5", 30),
        ({"preStopSleepSeconds": 10, "terminationGracePeriodSeconds": 60}, "sleep 10", 60),
    ],
)
def test_the_prestop_sleep_and_grace_period_default_to_5_and_30(deployment, sleep, grace):
    objects = desired({"deployment": deployment})
    assert objects["deployment"]["pod"]["containers"][0]["lifecycle"] == {
        "preStop": {"exec": {"command": ["/bin/sh", "-c", sleep]}}
    }
    assert objects["deployment"]["pod"]["termination_grace_period_seconds"] == grace


def test_resources_are_taken_verbatim_after_the_webhook_defaults():
    assert api_container()["resources"] == {
        "requests": {"memory": "512Mi", "cpu": "100m"},
        "limits": {"memory": "1Gi", "cpu": "500m"},
    }
    custom = {"requests": {"cpu": "1", "ephemeral-storage": "20Gi"}, "limits": {"cpu": "2"}}
    assert api_container({"deployment": {"resources": custom}})["resources"] == custom


def test_the_api_port_is_9292():
    assert api_container()["ports"] == [
        {"name": "glance-api", "containerPort": 9292, "protocol": "TCP"}
    ]


# --- volumes ------------------------------------------------------------------------------


def volumes_of(spec: dict | None = None) -> dict[str, dict]:
    return {v["name"]: v for v in deployment(stored(spec), ARTIFACTS)["pod"]["volumes"]}


@pytest.mark.parametrize(
    ("staging", "source"),
    [
        pytest.param(None, {"sizeLimit": "10Gi"}, id="default-10Gi"),
        pytest.param({}, {"sizeLimit": "10Gi"}, id="empty-block-10Gi"),
        pytest.param({"sizeLimit": "40Gi"}, {"sizeLimit": "40Gi"}, id="explicit"),
        pytest.param({"sizeLimit": "40960Mi"}, {"sizeLimit": "40Gi"}, id="canonical-form"),
        pytest.param({"unbounded": True}, {}, id="unbounded-has-no-limit"),
    ],
)
def test_both_scratch_volumes_carry_the_resolved_staging_limit(staging, source):
    volumes = volumes_of({"staging": staging} if staging is not None else {})
    assert volumes["staging"] == {"name": "staging", "emptyDir": source}
    assert volumes["tasks-work"] == {"name": "tasks-work", "emptyDir": source}


def test_volumes_and_mounts_follow_the_reference_order_with_tmp_last():
    pod = deployment(stored({"database": {"tls": TLS}, "imageCache": {}}), ARTIFACTS)["pod"]
    assert [v["name"] for v in pod["volumes"]] == [
        "config",
        "backends",
        "staging",
        "tasks-work",
        "db-tls",
        "image-cache",
        "tmp",
    ]
    assert pod["containers"][0]["volume_mounts"] == [
        *API_MOUNTS,
        {"name": "db-tls", "mountPath": "/etc/glance/db-tls/", "readOnly": True},
        {"name": "image-cache", "mountPath": "/var/lib/glance/image-cache"},
        TMP_MOUNT,
    ]
    assert pod["volumes"][0] == {"name": "config", "configMap": {"name": "glance-config-0123abcd"}}
    assert pod["volumes"][1] == {
        "name": "backends",
        "secret": {"secretName": "glance-backends-89abcdef"},
    }
    assert pod["volumes"][-1] == {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}


def test_without_tls_or_cache_the_pod_has_only_the_four_reference_volumes_and_tmp():
    pod = deployment(stored(), ARTIFACTS)["pod"]
    assert [v["name"] for v in pod["volumes"]] == [
        "config",
        "backends",
        "staging",
        "tasks-work",
        "tmp",
    ]
    assert pod["containers"][0]["volume_mounts"] == [*API_MOUNTS, TMP_MOUNT]


DB_TLS_VOLUME = {
    "name": "db-tls",
    "projected": {
        "defaultMode": 256,
        "sources": [
            {"secret": {"name": "db-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "secret": {
                    "name": "db-client",
                    "items": [
                        {"key": "tls.crt", "path": "tls.crt"},
                        {"key": "tls.key", "path": "tls.key"},
                    ],
                }
            },
        ],
    },
}


@pytest.mark.parametrize("mode", ["prefer", "require", "verify-ca", "verify-full"])
def test_db_tls_is_projected_read_only_0400_when_a_mode_is_set(mode):
    assert volumes_of({"database": {"tls": {**TLS, "mode": mode}}})["db-tls"] == DB_TLS_VOLUME


@pytest.mark.parametrize(
    "tls",
    [None, {**TLS, "mode": "disabled"}, {k: v for k, v in TLS.items() if k != "mode"}],
    ids=["unset", "disabled", "no-mode"],
)
def test_no_db_tls_volume_without_a_mode_or_when_disabled(tls):
    spec = {"database": {"tls": tls}} if tls is not None else {}
    objects = desired(spec)
    assert "db-tls" not in volumes_of(spec)
    for key in ("db_sync_job", "db_purge_cronjob"):
        assert "db-tls" not in [v["name"] for v in objects[key]["pod"]["volumes"]]


@pytest.mark.parametrize("key", ["db_sync_job", "db_purge_cronjob"])
def test_every_job_that_gets_the_dsn_also_mounts_the_db_tls_material(key):
    pod = pod_of(key, {"database": {"tls": TLS}})
    container = pod["containers"][0]
    assert container["env"] == [
        {
            "name": "OS_DATABASE__CONNECTION",
            "valueFrom": {"secretKeyRef": {"name": "glance-db-connection", "key": "connection"}},
        }
    ]
    assert pod["volumes"] == [
        {"name": "config", "configMap": {"name": "glance-config-0123abcd"}},
        DB_TLS_VOLUME,
        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
    ]
    assert container["volume_mounts"] == [
        {"name": "config", "mountPath": "/etc/glance/glance-api.conf.d/", "readOnly": True},
        {"name": "db-tls", "mountPath": "/etc/glance/db-tls/", "readOnly": True},
        TMP_MOUNT,
    ]


@pytest.mark.parametrize(
    ("image_cache", "limit"),
    [({}, "10Gi"), ({"sizeLimit": "20Gi"}, "20Gi"), ({"sizeLimit": "256Mi"}, "256Mi")],
)
def test_the_image_cache_volume_carries_the_resolved_cache_limit(image_cache, limit):
    assert volumes_of({"imageCache": image_cache})["image-cache"] == {
        "name": "image-cache",
        "emptyDir": {"sizeLimit": limit},
    }


# --- the cache-maintenance sidecar --------------------------------------------------------


def sidecar(spec: dict, art: Artifacts = ARTIFACTS) -> dict:
    containers = deployment(stored(spec), art)["pod"]["containers"]
    assert [c["name"] for c in containers] == ["glance-api", "cache-maintenance"]
    return containers[1]


def script_values(script: str) -> dict[str, str]:
    head = script.split("\ntrap", 1)[0]
    return dict(line.split("=", 1) for line in head.splitlines())


def test_no_sidecar_and_no_cache_volume_without_image_cache():
    pod = deployment(stored(), ARTIFACTS)["pod"]
    assert [c["name"] for c in pod["containers"]] == ["glance-api"]
    assert "image-cache" not in [v["name"] for v in pod["volumes"]]


@pytest.mark.parametrize(
    ("image_cache", "max_size", "interval", "high_water"),
    [
        pytest.param({}, 8589934592, "300", "8388608", id="defaults"),
        pytest.param(
            {"sizeLimit": "20Gi", "maintenanceInterval": "10m"},
            17179869184,
            "600",
            "16777216",
            id="explicit",
        ),
        pytest.param({"maintenanceInterval": "1h30m"}, 8589934592, "5400", "8388608", id="hours"),
        pytest.param(
            {"sizeLimit": "256Mi", "maintenanceInterval": "90s"},
            214748360,
            "90",
            "209715",
            id="high-water-rounds-down",
        ),
    ],
)
def test_the_sidecar_script_takes_interval_poll_and_high_water_mark(
    image_cache, max_size, interval, high_water
):
    container = sidecar({"imageCache": image_cache}, artifacts(image_cache_max_size=max_size))
    shell, flags, dash_c, script = container["command"]
    assert (shell, flags, dash_c) == ("/bin/sh", "-eu", "-c")
    assert script_values(script) == {
        "interval": interval,
        "poll": "30",
        "high_water_kib": high_water,
        "dir": "/var/lib/glance/image-cache",
        "conf": "/etc/glance/glance-api.conf.d/",
        "elapsed": "0",
        "failures": "0",
    }


def test_the_sidecar_script_keeps_the_reference_loop_and_messages():
    script = sidecar({"imageCache": {}})["command"][3]
    for line in (
        'sleep "$poll" &',
        'used_kib=$(du -sk --exclude=incomplete --exclude=invalid --exclude=queue "$dir" | cut -f1)',
        'echo "glance-cache-maintenance unmeasured: could not measure $dir; running a pass anyway" >&2',
        'if [ "$elapsed" -lt "$interval" ] && [ "$used_kib" -lt "$high_water_kib" ]; then',
        'glance-cache-pruner --config-dir "$conf" || rc=1',
        'glance-cache-cleaner --config-dir "$conf" || rc=1',
        'echo "glance-cache-maintenance recovered: after $failures consecutive failures" >&2',
        'echo "glance-cache-maintenance failed: $failures consecutive," \\',
        '"cache at $used_kib KiB of $high_water_kib" >&2',
    ):
        assert line in script
    assert script.index("glance-cache-pruner") < script.index("glance-cache-cleaner")


def run_maintenance_loop(tmp_path, script: str, failing_runs: int, cache_dir) -> str:
    """Run the loop with a zero poll and fake CLIs; return its stderr after a second."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "glance-cache-pruner").write_text(
        f'#!/bin/sh\necho pruner "$@" >> {calls}\n'
        f"[ $(grep -c pruner {calls}) -gt {failing_runs} ]\n"
    )
    (bin_dir / "glance-cache-cleaner").write_text(f'#!/bin/sh\necho cleaner "$@" >> {calls}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    script = script.replace("poll=30", "poll=0").replace(
        "dir=/var/lib/glance/image-cache", f"dir={cache_dir}"
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    try:
        subprocess.run(["/bin/sh", "-eu", "-c", script], env=env, capture_output=True, timeout=1)
    except subprocess.TimeoutExpired as stopped:
        assert calls.read_text().startswith(
            "pruner --config-dir /etc/glance/glance-api.conf.d/\n"
            "cleaner --config-dir /etc/glance/glance-api.conf.d/\n"
        )
        return (stopped.stderr or b"").decode()
    raise AssertionError("the maintenance loop ended; it must run until the pod stops")


def test_the_maintenance_loop_survives_failures_and_reports_the_count_and_recovery(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "image").write_bytes(b"x" * 8192)
    # A high-water mark of 1 KiB: the cache is above it, so every poll runs a pass.
    art = artifacts(image_cache_max_size=1024)
    script = sidecar({"imageCache": {}}, art)["command"][3]
    stderr = run_maintenance_loop(tmp_path, script, failing_runs=2, cache_dir=cache)
    lines = stderr.splitlines()
    assert re.fullmatch(
        r"glance-cache-maintenance failed: 1 consecutive, cache at \d+ KiB of 1", lines[0]
    )
    assert re.fullmatch(
        r"glance-cache-maintenance failed: 2 consecutive, cache at \d+ KiB of 1", lines[1]
    )
    assert lines[2] == "glance-cache-maintenance recovered: after 2 consecutive failures"
    assert "failed: 3 consecutive" not in stderr


def test_an_unmeasurable_cache_is_reported_and_still_pruned(tmp_path):
    script = sidecar({"imageCache": {}})["command"][3]
    stderr = run_maintenance_loop(tmp_path, script, failing_runs=0, cache_dir=tmp_path / "missing")
    assert (
        f"glance-cache-maintenance unmeasured: could not measure {tmp_path / 'missing'}; "
        "running a pass anyway"
    ) in stderr


def test_the_maintenance_loop_as_pid_1_ends_on_sigterm(tmp_path):
    """The sidecar's shell is its container's PID 1, which ignores a signal it has no
    handler for. Run as PID 1 of a PID namespace of its own (util-linux ``unshare``, as root)
    with the rendered 30 s poll, it must end on the kubelet's SIGTERM with status 0, not
    hold the pod until the grace period's SIGKILL."""
    script = sidecar({"imageCache": {}})["command"][3].replace(
        "dir=/var/lib/glance/image-cache", f"dir={tmp_path}"
    )
    assert "poll=30" in script
    loop = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", "/bin/sh", "-eu", "-c", script],
        stderr=subprocess.PIPE,
    )
    try:
        children = Path(f"/proc/{loop.pid}/task/{loop.pid}/children")
        pid_1 = wait_for(lambda: children.read_text().split(), "the loop's PID 1")[0]
        # PID 1 in its namespace: the shell, started and sleeping in its poll.
        status = Path(f"/proc/{pid_1}/status").read_text()
        assert re.search(r"^NSpid:\s+\d+\s+1$", status, re.M), status
        wait_for(lambda: Path(f"/proc/{pid_1}/task/{pid_1}/children").read_text().split(),
                 "the poll's sleep")  # fmt: skip
        os.kill(int(pid_1), signal.SIGTERM)
        # The poll is 30 s: an ignored TERM leaves it running past this wait.
        assert loop.wait(timeout=20) == 0, loop.stderr.read()
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()


def wait_for(value, what: str, timeout: float = 10.0):
    """``value()`` once it is truthy, polled every 50 ms for ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = value()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"{what}: not there within {timeout} s")


def test_the_sidecar_is_restricted_small_and_mounts_only_config_cache_and_tmp():
    container = sidecar({"imageCache": {}})
    assert container["env"] == [] and container["ports"] == []
    assert container["startup_probe"] is None and container["liveness_probe"] is None
    assert container["readiness_probe"] is None and container["lifecycle"] is None
    assert container["resources"] == {
        "requests": {"cpu": "25m", "memory": "64Mi"},
        "limits": {"memory": "256Mi"},
    }
    assert container["volume_mounts"] == [
        {"name": "config", "mountPath": "/etc/glance/glance-api.conf.d/", "readOnly": True},
        {"name": "image-cache", "mountPath": "/var/lib/glance/image-cache"},
        TMP_MOUNT,
    ]
    assert container["security_context"] == CONTAINER_SECURITY_CONTEXT


def test_an_image_cache_without_its_max_size_artifact_is_a_caller_error():
    with pytest.raises(ValueError, match="image_cache_max_size is required"):
        deployment(stored({"imageCache": {}}), artifacts(image_cache_max_size=None))


# --- Deployment knobs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "replicas"),
    [
        pytest.param({}, 3, id="default-3"),
        pytest.param({"deployment": {"replicas": 1}}, 1, id="explicit-1"),
        pytest.param(
            {"autoscaling": {"maxReplicas": 5, "targetCPUUtilization": 80}}, None, id="hpa-owns-it"
        ),
    ],
)
def test_replicas_are_omitted_while_autoscaling_is_set(spec, replicas):
    assert desired(spec)["deployment"]["replicas"] == replicas


def test_default_strategy_surges_one_and_keeps_every_replica_available():
    assert desired()["deployment"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    assert desired({"deployment": {"strategy": {"type": "Recreate"}}})["deployment"][
        "strategy"
    ] == {"type": "Recreate"}


SELECT = {
    "matchLabels": {"app.kubernetes.io/name": "glance", "app.kubernetes.io/instance": "glance"}
}


def test_default_topology_spread_is_zone_then_hostname_schedule_anyway():
    assert desired()["deployment"]["pod"]["topology_spread_constraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": SELECT,
        }
        for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname")
    ]


def test_a_topology_spread_list_in_the_spec_replaces_the_defaults_and_an_empty_one_disables_them():
    custom = [
        {
            "maxSkew": 2,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": SELECT,
        }
    ]
    spec = {"deployment": {"topologySpreadConstraints": custom}}
    assert desired(spec)["deployment"]["pod"]["topology_spread_constraints"] == custom
    spec = {"deployment": {"topologySpreadConstraints": []}}
    assert desired(spec)["deployment"]["pod"]["topology_spread_constraints"] == []


def test_priority_class_is_set_only_when_the_spec_names_one():
    assert desired()["deployment"]["pod"]["priority_class_name"] is None
    spec = {"deployment": {"priorityClassName": "high"}}
    assert desired(spec)["deployment"]["pod"]["priority_class_name"] == "high"


@pytest.mark.parametrize(
    ("dsn_digest", "authtoken_digest", "annotations"),
    [
        (
            "d" * 64,
            "a" * 64,
            {
                "glance.c5c3.io/db-connection-hash": "d" * 64,
                "glance.c5c3.io/authtoken-hash": "a" * 64,
            },
        ),
        (None, "a" * 64, {"glance.c5c3.io/authtoken-hash": "a" * 64}),
        ("d" * 64, "", {"glance.c5c3.io/db-connection-hash": "d" * 64}),
        (None, None, {}),
    ],
)
def test_the_two_digests_become_pod_annotations_only_when_non_empty(
    dsn_digest, authtoken_digest, annotations
):
    art = artifacts(dsn_digest=dsn_digest, authtoken_digest=authtoken_digest)
    assert deployment(stored(), art)["pod"]["annotations"] == annotations


def test_labels_selector_and_component():
    objects = desired()
    common = {
        "app.kubernetes.io/name": "glance",
        "app.kubernetes.io/instance": "glance",
        "app.kubernetes.io/managed-by": "glance-operator",
    }
    api = {**common, "app.kubernetes.io/component": "api"}
    assert objects["deployment"]["labels"] == api
    assert objects["deployment"]["pod"]["labels"] == api
    assert objects["deployment"]["selector"] == SELECT
    for key in ("service", "pdb", "db_connection_secret", "db_purge_cronjob"):
        assert objects[key]["labels"] == common
    purge = objects["db_purge_cronjob"]
    assert purge["job_labels"] == common
    assert purge["pod"]["labels"] == {**common, "app.kubernetes.io/component": "db-purge"}
    assert objects["db_sync_job"]["labels"] == {**common, "app.kubernetes.io/component": "db-sync"}
    assert objects["db_sync_job"]["pod"]["labels"] == {}


def test_every_pod_and_container_is_restricted():
    objects = desired({"imageCache": {}})
    for key in ("deployment", "db_sync_job", "db_purge_cronjob"):
        pod = objects[key]["pod"]
        assert pod["security_context"] == {
            "runAsNonRoot": True,
            "fsGroup": 42424,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        assert pod["automount_service_account_token"] is False
        for container in pod["containers"]:
            assert container["security_context"] == {
                "allowPrivilegeEscalation": False,
                "runAsNonRoot": True,
                "runAsUser": 42424,
                "runAsGroup": 42424,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
                "seccompProfile": {"type": "RuntimeDefault"},
            }


# --- Service, PDB, HPA --------------------------------------------------------------------


def test_the_service_is_cluster_ip_on_9292_and_narrows_only_when_asked():
    glance = stored()
    wide = service(glance, ARTIFACTS)
    assert wide["type"] == "ClusterIP"
    assert wide["ports"] == [{"port": 9292, "targetPort": 9292, "protocol": "TCP"}]
    assert wide["selector"] == SELECT["matchLabels"]
    narrow = service(glance, ARTIFACTS, narrow_selector=True)
    assert narrow["selector"] == {**SELECT["matchLabels"], "app.kubernetes.io/component": "api"}
    assert desired(narrow_selector=True)["service"] == narrow


@pytest.mark.parametrize(
    ("spec", "min_available", "max_unavailable"),
    [
        pytest.param({"deployment": {"replicas": 1}}, None, 1, id="replicas-1"),
        pytest.param({"deployment": {"replicas": 3}}, 1, None, id="replicas-3"),
        pytest.param(
            {"autoscaling": {"minReplicas": 1, "maxReplicas": 4, "targetCPUUtilization": 70}},
            None,
            1,
            id="autoscaling-min-1-over-3-replicas",
        ),
        pytest.param(
            {
                "deployment": {"replicas": 1},
                "autoscaling": {"minReplicas": 2, "maxReplicas": 4, "targetCPUUtilization": 70},
            },
            1,
            None,
            id="autoscaling-min-2-over-1-replica",
        ),
        pytest.param(
            {
                "deployment": {"replicas": 1},
                "autoscaling": {"maxReplicas": 4, "targetCPUUtilization": 70},
            },
            None,
            1,
            id="autoscaling-without-min-uses-replicas",
        ),
    ],
)
def test_the_pdb_shape_follows_the_lower_replica_bound(spec, min_available, max_unavailable):
    budget = desired(spec)["pdb"]
    assert (budget["min_available"], budget["max_unavailable"]) == (min_available, max_unavailable)
    assert budget["selector"] == {
        **SELECT,
        "matchExpressions": [{"key": "batch.kubernetes.io/job-name", "operator": "DoesNotExist"}],
    }


CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
}
MEMORY = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 85}},
}


@pytest.mark.parametrize(
    ("autoscaling", "min_replicas", "metrics"),
    [
        ({"maxReplicas": 6, "targetCPUUtilization": 70}, 3, [CPU]),
        ({"minReplicas": 2, "maxReplicas": 6, "targetMemoryUtilization": 85}, 2, [MEMORY]),
        (
            {
                "minReplicas": 2,
                "maxReplicas": 6,
                "targetMemoryUtilization": 85,
                "targetCPUUtilization": 70,
            },
            2,
            [CPU, MEMORY],
        ),
    ],
)
def test_the_hpa_scales_the_deployment_on_cpu_then_memory(autoscaling, min_replicas, metrics):
    hpa = desired({"autoscaling": autoscaling})["hpa"]
    assert hpa["scale_target_ref"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "glance",
    }
    assert (hpa["min_replicas"], hpa["max_replicas"]) == (min_replicas, 6)
    assert hpa["metrics"] == metrics


# --- NetworkPolicy ------------------------------------------------------------------------

POLICY = {"ingress": [{"namespaceSelector": {"matchLabels": {"team": "compute"}}}]}
DNS_RULE = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}


def tcp(*ports: int) -> dict:
    return {"ports": [{"protocol": "TCP", "port": port} for port in ports]}


def egress(spec: dict | None = None, hosts=ARTIFACTS.s3_hosts) -> list[dict]:
    spec = {"networkPolicy": POLICY, **(spec or {})}
    return desired(spec, artifacts(s3_hosts=tuple(hosts)))["network_policy"]["egress"]


SIBLINGS = [{"podSelector": {"matchLabels": SELECT["matchLabels"]}}]
SIBLING_RULE = {**tcp(9292), "to": SIBLINGS}


def test_egress_is_dns_database_cache_s3_keystone_sibling_pods_in_that_order():
    assert egress() == [DNS_RULE, tcp(3306), tcp(11211), tcp(8080), tcp(5000), SIBLING_RULE]


def test_the_pods_of_one_glance_may_reach_each_other_on_the_api_port_only():
    policy = desired({"networkPolicy": POLICY})["network_policy"]
    assert SIBLING_RULE in policy["egress"]
    to_siblings = [rule for rule in policy["egress"] if rule.get("to") == SIBLINGS]
    assert to_siblings == [SIBLING_RULE]
    (ingress,) = policy["ingress"]
    assert ingress["ports"] == [{"protocol": "TCP", "port": 9292}]
    assert ingress["from"][-1] == SIBLINGS[0]
    # The sibling peer has no namespaceSelector: the policy's own namespace only.
    assert "namespaceSelector" not in ingress["from"][-1]
    assert SIBLINGS[0]["podSelector"] == policy["pod_selector"]


def test_without_a_network_policy_there_is_no_sibling_rule_because_there_is_no_policy():
    assert desired()["network_policy"] is None


def test_the_database_rule_takes_the_spec_port():
    assert egress({"database": {"port": 3307}})[1] == tcp(3307)


@pytest.mark.parametrize(
    ("cache", "ports"),
    [
        pytest.param({"servers": DELETE, "clusterRef": {"name": "mc"}}, [11211], id="clusterRef"),
        pytest.param(
            {
                "servers": [
                    "a.svc:11212",
                    "b.svc",
                    "[fd00::1]:11213",
                    "c.svc:11212",
                    "d.svc:0",
                    "e.svc:x",
                    "f.svc:70000",
                    "fd00::2",
                ]
            },
            [11212, 11211, 11213],
            id="servers-first-seen-dedup-invalid-is-11211",
        ),
    ],
)
def test_cache_egress_ports(cache, ports):
    assert egress({"cache": cache})[2] == tcp(*ports)


@pytest.mark.parametrize(
    ("hosts", "ports"),
    [
        pytest.param(["https://s3.example.com"], [443], id="https-default"),
        pytest.param(["http://minio.svc"], [80], id="http-default"),
        pytest.param(
            [
                "https://s3.example.com:8443",
                "http://rgw:8080",
                "https://s3.example.com",
                "https://other.example.com:443",
                "http://rgw2:8080",
            ],
            [443, 8080, 8443],
            id="sorted-and-deduplicated",
        ),
        pytest.param(
            ["ftp://files", "http://", "http://h:99999", "::bad"], [], id="unusable-skipped"
        ),
    ],
)
def test_s3_egress_ports_come_from_every_attached_backend_host(hosts, ports):
    rules = egress(hosts=hosts)
    if ports:
        assert rules[3] == tcp(*ports)
        assert rules[4] == tcp(5000)
    else:
        assert rules == [DNS_RULE, tcp(3306), tcp(11211), tcp(5000), SIBLING_RULE]


def test_no_backend_gives_no_s3_rule():
    assert egress(hosts=()) == [DNS_RULE, tcp(3306), tcp(11211), tcp(5000), SIBLING_RULE]


@pytest.mark.parametrize(
    ("endpoints", "ports"),
    [
        pytest.param({"keystoneEndpoint": "http://keystone.svc:5000/v3"}, [5000], id="internal"),
        pytest.param({"keystoneEndpoint": "https://keystone.svc/v3"}, [443], id="https-default"),
        pytest.param({"keystoneEndpoint": "http://keystone.svc/v3"}, [80], id="http-default"),
        pytest.param(
            {
                "keystoneEndpoint": "http://keystone.svc:5000/v3",
                "keystonePublicEndpoint": "https://identity.example.com/v3",
            },
            [443, 5000],
            id="public-endpoint-added-sorted",
        ),
        pytest.param(
            {
                "keystoneEndpoint": "https://keystone.svc:5000/v3",
                "keystonePublicEndpoint": "https://identity.example.com:5000/v3",
            },
            [5000],
            id="same-port-once",
        ),
    ],
)
def test_the_keystone_rule_takes_the_ports_of_both_endpoints(endpoints, ports):
    assert egress(endpoints)[4] == tcp(*ports)


def test_keystone_ports_fail_closed_to_443_for_an_unparseable_url():
    assert keystone_port("http://bad host/") == 443
    assert keystone_port("http://keystone:99999/") == 80


def test_additional_egress_comes_last_verbatim():
    extra = [
        {
            "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}],
            "ports": [{"protocol": "TCP", "port": 443}],
        },
        {"ports": [{"protocol": "TCP", "port": 8443}]},
    ]
    rules = egress({"networkPolicy": {**POLICY, "additionalEgress": extra}})
    assert rules[:6] == [DNS_RULE, tcp(3306), tcp(11211), tcp(8080), tcp(5000), SIBLING_RULE]
    assert rules[6:] == extra


def test_ingress_is_the_api_port_from_the_sources_then_gateway_then_operator_namespace():
    sources = [
        {"namespaceSelector": {"matchLabels": {"team": "compute"}}},
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "nova"}}},
    ]
    spec = {
        "networkPolicy": {"ingress": sources},
        "gateway": {"parentRef": {"name": "gw"}, "hostname": "glance.example.com"},
    }
    policy = desired(spec, operator_namespace="glance-operator")["network_policy"]
    assert policy["ingress"] == [
        {
            "ports": [{"protocol": "TCP", "port": 9292}],
            "from": [
                *sources,
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "openstack"}
                    }
                },
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "glance-operator"}
                    }
                },
                *SIBLINGS,
            ],
        }
    ]
    assert policy["pod_selector"] == SELECT
    assert policy["policy_types"] == ["Ingress", "Egress"]


def test_the_gateway_peer_uses_the_parent_namespace_and_no_operator_peer_without_one():
    spec = {
        "networkPolicy": POLICY,
        "gateway": {"parentRef": {"name": "gw", "namespace": "gateways"}, "hostname": "g.example"},
    }
    peers = desired(spec)["network_policy"]["ingress"][0]["from"]
    assert peers == [
        *POLICY["ingress"],
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateways"}}},
        *SIBLINGS,
    ]


def test_an_empty_ingress_list_fails_closed():
    glance = patched(
        stored({"networkPolicy": POLICY}), {"spec": {"networkPolicy": {"ingress": []}}}
    )
    with pytest.raises(ValueError, match="would allow all ingress"):
        network_policy(glance, ARTIFACTS)


# --- HTTPRoute ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value"),
    [(None, "/"), ("", "/"), ("/", "/"), ("images", "/images"), ("/image/v2", "/image/v2")],
)
def test_the_route_path_gets_a_leading_slash_and_defaults_to_root(path, value):
    gateway = {"parentRef": {"name": "gw"}, "hostname": "glance.example.com"}
    if path is not None:
        gateway["path"] = path
    route = desired({"gateway": gateway})["http_route"]
    assert route["path"] == {"type": "PathPrefix", "value": value}


def test_the_route_allows_four_hours_and_passes_annotations_through():
    gateway = {
        "parentRef": {"name": "gw", "namespace": "gateways", "sectionName": "https"},
        "hostname": "glance.example.com",
        "annotations": {"example.com/body-size": "64g"},
    }
    route = desired({"gateway": gateway})["http_route"]
    assert route["timeouts"] == {"request": "4h"}
    assert route["annotations"] == {"example.com/body-size": "64g"}
    assert route["parent_refs"] == [{"name": "gw", "namespace": "gateways", "sectionName": "https"}]
    assert route["hostnames"] == ["glance.example.com"]
    assert route["backend_refs"] == [{"kind": "Service", "name": "glance", "port": 9292}]


def test_a_parent_ref_leaves_out_what_the_spec_leaves_empty():
    gateway = {"parentRef": {"name": "gw", "namespace": ""}, "hostname": "g.example"}
    route = desired({"gateway": gateway})["http_route"]
    assert route["parent_refs"] == [{"name": "gw"}]
    assert route["annotations"] == {}


# --- db-sync Job, db-purge CronJob --------------------------------------------------------

GLANCE_MANAGE = "glance-manage --config-dir /etc/glance/glance-api.conf.d/"


def test_db_sync_runs_sync_then_metadefs_and_never_restarts():
    job = desired()["db_sync_job"]
    assert job["name"] == "glance-db-sync"
    assert job["backoff_limit"] == 4
    assert job["pod"]["restart_policy"] == "Never"
    assert job["pod"]["containers"][0]["name"] == "db-sync"
    assert job["pod"]["containers"][0]["command"] == [
        "/bin/sh",
        "-eu",
        "-c",
        f"{GLANCE_MANAGE} db sync && {GLANCE_MANAGE} db load_metadefs "
        "--path /var/lib/openstack/etc/glance/metadefs --merge",
    ]


def canonical_hash(obj: dict) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_db_sync_hash_is_the_sha256_of_the_canonical_pod_template():
    job = desired()["db_sync_job"]
    template = pod_template_object(job["pod"])
    assert job["annotations"] == {"cobaltcore.c5c3.io/pod-spec-hash": canonical_hash(template)}


@pytest.mark.parametrize(
    ("spec", "art", "changes"),
    [
        pytest.param(
            {}, artifacts(config_map="glance-config-fedcba98"), True, id="config-map-name"
        ),
        pytest.param({"image": {"tag": "2026.2-p1"}}, ARTIFACTS, True, id="image"),
        pytest.param({"database": {"tls": TLS}}, ARTIFACTS, True, id="db-tls"),
        pytest.param(
            {}, artifacts(backends_secret="glance-backends-00000000"), False, id="backends"
        ),
        pytest.param({}, artifacts(dsn_digest="e" * 64), False, id="dsn-digest"),
        pytest.param({"deployment": {"replicas": 5}}, ARTIFACTS, False, id="api-knob"),
    ],
)
def test_the_db_sync_hash_changes_exactly_when_its_pod_template_does(spec, art, changes):
    before = desired()["db_sync_job"]["annotations"]
    after = desired(spec, art)["db_sync_job"]["annotations"]
    assert (before != after) is changes


@pytest.mark.parametrize(
    ("key", "name", "command"),
    [
        ("db_expand_job", "glance-db-expand", "db expand"),
        ("db_migrate_job", "glance-db-migrate", "db migrate"),
        ("db_contract_job", "glance-db-contract", "db contract"),
    ],
)
def test_a_phase_job_runs_its_command_in_the_db_sync_jobs_pod(key, name, command):
    spec = {"database": {"tls": TLS}, "image": {"tag": "2026.2"}}
    objects = desired(spec, database_job=key)
    job = objects[key]
    assert [k for k in DB_JOBS if objects[k] is not None] == [key]
    sync = desired(spec)["db_sync_job"]
    assert job["name"] == name
    assert job["backoff_limit"] == 4
    assert job["labels"]["app.kubernetes.io/component"] == name.removeprefix("glance-")
    (container,) = job["pod"]["containers"]
    (sync_container,) = sync["pod"]["containers"]
    assert container["command"] == ["/bin/sh", "-eu", "-c", f"{GLANCE_MANAGE} {command}"]
    assert container["image"] == sync_container["image"] == "ghcr.io/c5c3/glance:2026.2"
    for field in ("env", "volume_mounts", "security_context"):
        assert container[field] == sync_container[field], field
    assert job["pod"]["volumes"] == sync["pod"]["volumes"]
    assert any(v["name"] == "db-tls" for v in job["pod"]["volumes"])
    template = pod_template_object(job["pod"])
    assert job["annotations"] == {"cobaltcore.c5c3.io/pod-spec-hash": canonical_hash(template)}


def test_no_database_job_renders_when_none_is_named():
    objects = desired(database_job=None)
    assert all(objects[key] is None for key in DB_JOBS)
    with pytest.raises(ValueError, match="database_job must be one of"):
        desired(database_job="db_purge_cronjob")


def test_the_db_purge_cronjob_defaults():
    cron = desired()["db_purge_cronjob"]
    assert cron["name"] == "glance-db-purge"
    assert cron["schedule"] == "1 0 * * *"
    assert cron["suspend"] is False
    assert cron["concurrency_policy"] == "Forbid"
    assert cron["active_deadline_seconds"] == 3600
    assert cron["pod"]["restart_policy"] == "OnFailure"
    assert cron["pod"]["containers"][0]["name"] == "db-purge"
    assert cron["pod"]["containers"][0]["command"] == [
        "/bin/sh",
        "-eu",
        "-c",
        f"{GLANCE_MANAGE} db purge --age_in_days 30 --max_rows 1000",
    ]


def test_the_db_purge_cronjob_takes_every_db_purge_knob():
    spec = {
        "dbPurge": {
            "retentionDays": 90,
            "schedule": "30 2 * * *",
            "purgeImagesTable": True,
            "suspend": True,
        }
    }
    cron = desired(spec)["db_purge_cronjob"]
    assert (cron["schedule"], cron["suspend"]) == ("30 2 * * *", True)
    assert cron["pod"]["containers"][0]["command"][3] == (
        f"{GLANCE_MANAGE} db purge --age_in_days 90 --max_rows 1000"
        f" && {GLANCE_MANAGE} db purge_images_table --age_in_days 90 --max_rows 1000"
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("g" * 43, "g" * 43 + "-db-purge", id="43-plain"),
        pytest.param(
            "a" * 44,
            "a" * 34 + "-" + hashlib.sha256(b"a" * 44).hexdigest()[:8] + "-db-purge",
            id="44-hashed",
        ),
        pytest.param(
            "x" * 32 + "-.y" + "z" * 10,
            "x" * 32
            + "-"
            + hashlib.sha256(("x" * 32 + "-.y" + "z" * 10).encode()).hexdigest()[:8]
            + "-db-purge",
            id="trailing-dash-and-dot-trimmed",
        ),
    ],
)
def test_the_db_purge_name_is_hashed_for_names_over_43_characters(name, expected):
    assert db_purge_cronjob_name(name) == expected
    assert len(db_purge_cronjob_name(name)) <= 52


def test_a_44_character_glance_gets_the_hashed_cronjob_name():
    name = "glance-" + "x" * 37
    assert len(name) == 44
    glance = patched(stored(), {"metadata": {"name": name}})
    cron = db_purge_cronjob(glance, ARTIFACTS)
    assert (
        cron["name"]
        == f"glance-{'x' * 27}-{hashlib.sha256(name.encode()).hexdigest()[:8]}-db-purge"
    )
    assert cron["labels"]["app.kubernetes.io/instance"] == name


# --- config objects -----------------------------------------------------------------------


def test_the_config_map_is_content_addressed_and_labelled_with_its_base():
    config_map = desired()["config_map"]
    assert config_map["name"] == "glance-config-0123abcd"
    assert config_map["labels"]["cobaltcore.c5c3.io/config-base"] == "glance-config"
    assert config_map["data"] == dict(ARTIFACTS.config_data)
    assert list(config_map["data"]) == sorted(ARTIFACTS.config_data)


def test_the_secrets_carry_base64_data():
    objects = desired()
    backends = objects["backends_secret"]
    assert backends["name"] == "glance-backends-89abcdef"
    assert backends["labels"]["cobaltcore.c5c3.io/config-base"] == "glance-backends"
    assert (
        base64.b64decode(backends["data"]["backends.conf"]).decode()
        == ARTIFACTS.backends_data["backends.conf"]
    )
    connection = objects["db_connection_secret"]
    assert connection["name"] == "glance-db-connection"
    assert set(connection["data"]) == {"connection"}
    assert base64.b64decode(connection["data"]["connection"]).decode() == ARTIFACTS.dsn


def test_non_ascii_secret_values_are_utf8_before_base64():
    secret = db_connection_secret(stored(), artifacts(dsn="mysql+pymysql://gläns:pw@db/glance"))
    assert (
        base64.b64decode(secret["data"]["connection"])
        .decode("utf-8")
        .startswith("mysql+pymysql://gläns")
    )


# --- the entry point ----------------------------------------------------------------------


def test_every_object_is_namespaced_and_owned_by_the_glance_as_controller():
    spec = {
        "autoscaling": {"maxReplicas": 4, "targetCPUUtilization": 70},
        "networkPolicy": POLICY,
        "gateway": {"parentRef": {"name": "gw"}, "hostname": "g.example"},
        "database": MANAGED_DB,
    }
    objects = desired(spec)
    assert list(objects) == list(OBJECT_KEYS)
    for key, data in objects.items():
        if key in DB_PHASE_JOBS:  # only during an upgrade
            assert data is None, key
            continue
        assert data is not None, key
        assert data["namespace"] == "openstack", key
        assert data["owner_references"] == [
            {**OWNER, "controller": True, "blockOwnerDeletion": True}
        ], key


def test_optional_objects_are_none_when_their_block_is_unset():
    objects = desired()
    assert {key for key, data in objects.items() if data is None} == OPTIONAL_OBJECTS | set(
        DB_PHASE_JOBS
    ) | set(MARIADB_OBJECTS)  # brownfield mode: no MariaDB resources


# --- managed mode: the mariadb-operator resources (reference-spec §4.10) ----------------

MANAGED_DB = {"host": DELETE, "clusterRef": {"name": "mariadb"}}


def test_managed_static_asks_for_a_database_a_user_and_a_grant_named_after_the_glance():
    objects = desired({"database": MANAGED_DB})
    owner = [{**OWNER, "controller": True, "blockOwnerDeletion": True}]
    labels = {
        "app.kubernetes.io/name": "glance",
        "app.kubernetes.io/instance": "glance",
        "app.kubernetes.io/managed-by": "glance-operator",
    }
    meta = {"name": "glance", "namespace": "openstack", "labels": labels, "owner_references": owner}
    ref = {"name": "mariadb"}
    assert objects["mariadb_database"] == {
        **meta,
        "mariadb_ref": ref,
        "character_set": "utf8",
        "collate": "utf8_general_ci",
        "database": "glance",
    }
    assert objects["mariadb_user"] == {
        **meta,
        "annotations": {"glance.c5c3.io/db-connection-hash": "d" * 64},
        "mariadb_ref": ref,
        "password_secret_key_ref": {"name": "glance-db", "key": "password"},
    }
    assert objects["mariadb_grant"] == {
        **meta,
        "mariadb_ref": ref,
        "privileges": ["ALL PRIVILEGES"],
        "database": "glance",
        "table": "*",
        "username": "glance",
    }


def test_a_rotated_password_changes_the_user_so_mariadb_operator_sets_it():
    """mariadb-operator reads the password when the User changes (the Secret is watched
    only with its k8s.mariadb.com/watch label): the DSN's hash on the User is that change."""
    before = desired({"database": MANAGED_DB})["mariadb_user"]
    after = desired({"database": MANAGED_DB}, artifacts(dsn_digest="e" * 64))["mariadb_user"]
    assert before["annotations"] != after["annotations"]
    assert {k: v for k, v in before.items() if k != "annotations"} == {
        k: v for k, v in after.items() if k != "annotations"
    }


def test_managed_dynamic_asks_for_the_database_alone():
    objects = desired({"database": {**MANAGED_DB, "credentialsMode": "Dynamic"}})
    assert objects["mariadb_database"]["mariadb_ref"] == {"name": "mariadb"}
    assert objects["mariadb_user"] is None and objects["mariadb_grant"] is None


def test_the_network_policy_allows_the_database_port_in_managed_mode_too():
    spec = {"networkPolicy": POLICY, "database": {**MANAGED_DB, "port": 3307}}
    egress = desired(spec)["network_policy"]["egress"]
    assert egress[1] == {"ports": [{"protocol": "TCP", "port": 3307}]}
    spec = {"networkPolicy": POLICY, "database": MANAGED_DB}
    assert desired(spec)["network_policy"]["egress"][1] == {
        "ports": [{"protocol": "TCP", "port": 3306}]
    }


def test_without_a_valid_config_only_the_spec_driven_objects_are_rendered():
    spec = {
        "autoscaling": {"maxReplicas": 4, "targetCPUUtilization": 70},
        "networkPolicy": POLICY,
        "gateway": {"parentRef": {"name": "gw"}, "hostname": "g.example"},
    }
    objects = desired(spec, artifacts(config_map="", backends_secret="", dsn=None, dsn_digest=None))
    assert {key for key, data in objects.items() if data is not None} == OPTIONAL_OBJECTS


def test_no_db_connection_secret_without_a_dsn_but_the_workloads_still_render():
    objects = desired(art=artifacts(dsn=None, dsn_digest=None))
    assert objects["db_connection_secret"] is None
    assert objects["deployment"] is not None and objects["db_sync_job"] is not None


def test_the_output_is_deterministic_shares_nothing_and_leaves_the_input_alone():
    spec = {"imageCache": {}, "database": {"tls": TLS}, "networkPolicy": POLICY}
    glance = stored(spec)
    before = copy.deepcopy(glance)
    first = desired_objects(glance, ARTIFACTS)
    assert desired_objects(glance, ARTIFACTS) == first
    assert glance == before
    assert "&id" not in yaml.safe_dump(first)
    first["deployment"]["pod"]["containers"][0]["security_context"]["runAsUser"] = 0
    first["network_policy"]["ingress"][0]["from"][0]["namespaceSelector"]["x"] = "y"
    assert desired_objects(glance, ARTIFACTS)["deployment"] == deployment(glance, ARTIFACTS)
    assert glance == before
    assert CONTAINER_SECURITY_CONTEXT["runAsUser"] == 42424
