"""``diagnose``'s judgement, on objects and log lines written here: which cause each sign
names, which cause comes first, what is masked, and that docs/operations.md's table is
the data's. The reads against a real kube-apiserver are tests/reconcile/test_diagnose.py.

The log lines are the real libraries' own words (pymysql's, botocore's, keystonemiddleware's,
oslo.policy's), as a glance-api or glance-manage container prints them.
"""

from __future__ import annotations

import json

import pytest
from support.hack_scripts import hack_script

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import causes as k
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import findings as fd
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import in_pod
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import reads as rd

STAMP = "2026-12-07T00:00:00Z"


def glance(*conditions: dict, generation: int = 1, observed: int = 1) -> dict:
    conds = [{**cond, "observedGeneration": observed} for cond in conditions]
    return {
        "metadata": {"name": "glance", "namespace": "openstack", "generation": generation},
        "status": {"conditions": conds},
    }


def cond(type_: str, status: str, reason: str, message: str = "") -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message}


HEALTHY = [cond(t, "True", "Fine") for t in c.READY_PARTS] + [cond(c.READY, "True", c.ALL_READY)]


def api_pod(name: str, status: dict) -> dict:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "creationTimestamp": STAMP,
            "labels": {"app.kubernetes.io/component": "api"},
        },
        "status": status,
    }


def job(name: str, failed: bool, active: int = 0) -> dict:
    conds = [
        cond(
            "Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        )
    ]
    return {
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/component": name.split("glance-")[1]},
        },
        "status": {"conditions": conds if failed else [], "active": active},
    }


def job_pod(job_name: str, name: str, exit_code: int = 1) -> dict:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "creationTimestamp": STAMP,
            "labels": {"batch.kubernetes.io/job-name": job_name},
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "db-sync",
                    "state": {"terminated": {"exitCode": exit_code, "reason": "Error"}},
                }
            ],
        },
    }


# --- the data ----------------------------------------------------------------------------


def test_every_sign_names_a_cause_that_exists_and_ranks_are_unique():
    named = (
        set(k.CONDITION_CAUSES.values())
        | set(k.REASON_CAUSES.values())
        | set(k.BACKEND_CONDITION_CAUSES.values())
        | set(k.WAITING_CAUSES.values())
        | set(k.TERMINATED_CAUSES.values())
        | set(k.VOLUME_CAUSES.values())
        | set(k.JOB_CAUSES.values())
        | {cause for cause, _ in k.LOG_CAUSES}
    )
    assert named <= set(k.BY_ID), named - set(k.BY_ID)
    assert len({cause.rank for cause in k.CAUSES}) == len(k.CAUSES)
    assert len(k.BY_ID) == len(k.CAUSES)
    assert {cause.severity for cause in k.CAUSES} == {k.FAULT, k.PROGRESS, k.NOTE}


def test_every_glance_condition_type_that_can_be_false_has_its_reasons_mapped():
    """A reason the passes report with a not-True status and the data does not know would
    fall back to "a condition is not True": each reason constant of conditions.py that is
    not a success is either mapped or a deliberate success reason."""
    successes = {
        c.SECRETS_AVAILABLE,
        c.ALL_BACKENDS_PROJECTED,
        c.DATABASE_SYNCED,
        c.DEPLOYMENT_READY_REASON,
        c.API_HEALTHY,
        c.HPA_READY_REASON,
        c.HPA_NOT_REQUIRED,
        c.NETWORK_POLICY_READY_REASON,
        c.NETWORK_POLICY_NOT_REQUIRED,
        c.HTTPROUTE_ACCEPTED,
        c.HTTPROUTE_NOT_REQUIRED,
        c.DB_PURGE_SCHEDULED,
        c.DB_PURGE_SUSPENDED,
        c.ALL_READY,
        c.NOT_ALL_READY,
        c.NO_OWNED_KEYS_OVERRIDDEN,
        c.CREDENTIALS_AVAILABLE,
        c.CONFIG_PROJECTED_REASON,
        c.READY,
    }
    glance_reasons = {
        value
        for name, value in vars(c).items()
        if name.isupper()
        and isinstance(value, str)
        and not name.startswith(("EVENT_", "TRUE", "FALSE"))
        and not name.endswith(("_MESSAGE", "_READY", "_HEALTHY", "_PROJECTED", "_PARTS"))
    } | {c.CONFIG_PROJECTED_REASON, c.DEPLOYMENT_READY_REASON}
    mapped = (
        {reason for _, reason in k.CONDITION_CAUSES}
        | set(k.REASON_CAUSES)
        | {reason for _, reason in k.BACKEND_CONDITION_CAUSES}
    )
    assert glance_reasons - successes - mapped == set()


def test_the_docs_table_is_the_data():
    table = hack_script("diagnose_table")
    assert table.documented() == table.table(), (
        "run: .venv/bin/python hack/diagnose_table.py --write"
    )


# --- the conditions -----------------------------------------------------------------------


def test_a_healthy_glance_has_no_finding():
    report = fd.diagnosis(glance(*HEALTHY), [], [], [], [], {})
    assert report == {
        "glance": "openstack/glance",
        "state": "healthy",
        "healthy": True,
        "first_cause": None,
        "summary": "Glance openstack/glance is healthy",
        "findings": [],
    }
    assert fd.text_lines(report) == ["Glance openstack/glance is healthy"]


def test_a_note_leaves_a_glance_healthy():
    notes = [
        *HEALTHY,
        cond(c.EXTRA_CONFIG_HEALTHY, "False", c.OWNED_KEYS_OVERRIDDEN, "DEFAULT.debug"),
    ]
    report = fd.diagnosis(glance(*notes), [], [], [], [], {})
    assert report["healthy"] and [f["cause"] for f in report["findings"]] == [
        "owned-keys-overridden"
    ]


@pytest.mark.parametrize(
    ("type_", "reason", "cause"),
    [
        (c.SECRETS_READY, c.WAITING_FOR_DB_CREDENTIALS, "db-secret"),
        (c.SECRETS_READY, c.WAITING_FOR_SERVICE_USER_CREDENTIALS, "service-user-secret"),
        (c.DATABASE_READY, c.DB_SYNC_FAILED, "db-sync-failed"),
        (c.DATABASE_READY, c.MIGRATE_FAILED, "upgrade-failed"),
        (c.HTTPROUTE_READY, c.HTTPROUTE_NOT_ACCEPTED, "route-not-accepted"),
        (c.DEPLOYMENT_READY, c.OWNERSHIP_CONFLICT, "ownership-conflict"),
        (c.HPA_READY, "SomethingNew", "not-ready"),
    ],
)
def test_a_condition_names_its_cause_with_its_message(type_, reason, cause):
    report = fd.diagnosis(
        glance(cond(type_, "False", reason, "what the pass said")), [], [], [], [], {}
    )
    (found,) = report["findings"]
    assert found["cause"] == cause
    assert found["subject"] == "Glance openstack/glance"
    assert found["detail"] == f"{type_} is False, {reason}: what the pass said"
    assert found["fix"] == k.BY_ID[cause].fix


def test_a_status_of_an_older_generation_says_the_operator_has_not_reconciled():
    stale = glance(*HEALTHY, generation=3, observed=2)
    report = fd.diagnosis(stale, [], [], [], [], {})
    assert report["first_cause"] == "not-reconciled"
    assert report["findings"][0]["detail"] == "its status is of generation 2, the spec is at 3"
    never = {"metadata": {"name": "glance", "namespace": "openstack"}}
    assert fd.diagnosis(never, [], [], [], [], {})["first_cause"] == "not-reconciled"


def test_the_summary_names_the_cause_that_explains_the_most_first():
    # The Secret is missing: the database is not synced, the Deployment not ready, the
    # health check fails. The Secret comes first whatever order the conditions are in.
    report = fd.diagnosis(
        glance(
            cond(c.GLANCE_API_READY, "False", c.CONNECTION_FAILED),
            cond(c.DEPLOYMENT_READY, "False", c.WAITING_FOR_DEPLOYMENT),
            cond(
                c.SECRETS_READY,
                "False",
                c.WAITING_FOR_DB_CREDENTIALS,
                'Secret "glance-db" not found',
            ),
        ),
        [],
        [],
        [],
        [],
        {},
    )
    assert [f["cause"] for f in report["findings"]] == ["db-secret", "api-unhealthy", "rolling-out"]
    assert report["summary"] == (
        "Glance openstack/glance is not healthy: the database Secret (spec.database.secretRef) "
        "is missing or lacks a key"
    )


def test_a_step_under_way_is_progress_not_a_fault():
    report = fd.diagnosis(
        glance(cond(c.DATABASE_READY, "False", c.EXPAND_IN_PROGRESS)), [], [], [], [], {}
    )
    assert report["state"] == "progressing" and not report["healthy"]
    assert report["summary"] == (
        "Glance openstack/glance is on its way: a release upgrade is under way"
    )


def test_a_backend_without_its_credentials_is_named():
    backend = {
        "metadata": {"name": "s3-default"},
        "status": {
            "conditions": [
                cond(
                    c.CREDENTIALS_READY,
                    "False",
                    c.WAITING_FOR_CREDENTIALS,
                    'Secret "glance-s3" not found',
                )
            ]
        },
    }
    report = fd.diagnosis(glance(*HEALTHY), [backend], [], [], [], {})
    assert [(f["cause"], f["subject"]) for f in report["findings"]] == [
        ("backend-secret", "GlanceBackend s3-default")
    ]


# --- the logs -----------------------------------------------------------------------------

LOG_LINES = {
    "db-auth": "sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (1045, \"Access denied for user 'glance'@'10.244.0.12' (using password: YES)\")",
    "db-unreachable": "sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (2003, \"Can't connect to MySQL server on '10.96.0.20' ([Errno 111] Connection refused)\")",
    "db-missing": "(pymysql.err.OperationalError) (1049, \"Unknown database 'glance'\")",
    "keystone-auth": 'WARNING keystonemiddleware.auth_token [-] Identity response: {"error":{"code":401,"title":"Unauthorized","message":"The request you have made requires authentication."}}',
    "keystone-unreachable": "keystoneauth1.exceptions.connection.ConnectFailure: Unable to establish connection to http://keystone:5000/v3/auth/tokens",
    "s3-auth": "botocore.exceptions.ClientError: An error occurred (InvalidAccessKeyId) when calling the HeadBucket operation: The AWS Access Key Id you provided does not exist in our records.",
    "s3-bucket": "botocore.exceptions.ClientError: An error occurred (NoSuchBucket) when calling the PutObject operation: The specified bucket does not exist",
    "s3-unreachable": 'botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: "http://10.0.0.1:7480/glance-images"',
    "policy-error": "oslo_policy.policy.InvalidDefinitionError: Invalid policy rule default: Failed to understand rule role:admin or",
}


@pytest.mark.parametrize("cause", sorted(LOG_LINES))
def test_a_log_line_names_its_cause(cause):
    lines = ["INFO glance starting", LOG_LINES[cause], "ERROR glance exiting"]
    assert k.log_cause(lines) == (cause, LOG_LINES[cause])


def test_a_failed_db_sync_whose_log_says_access_denied_names_the_password_first():
    logs = {"glance-db-sync-x/db-sync": {"lines": ["Running db_sync", LOG_LINES["db-auth"]]}}
    report = fd.diagnosis(
        glance(cond(c.DATABASE_READY, "False", c.DB_SYNC_FAILED, "db_sync job failed")),
        [],
        [job_pod("glance-db-sync", "glance-db-sync-x")],
        [job("glance-db-sync", failed=True)],
        [],
        logs,
    )
    first = report["findings"][0]
    assert (report["first_cause"], first["subject"]) == ("db-auth", "Job glance-db-sync")
    assert first["detail"].startswith(
        "failed: BackoffLimitExceeded: Job has reached the specified backoff limit; its log says: "
        'sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (1045, "Access denied'
    )
    assert first["evidence"] == ["Running db_sync", LOG_LINES["db-auth"]]
    assert [f["cause"] for f in report["findings"]] == ["db-auth", "db-sync-failed"]


def test_a_job_still_running_whose_pods_fail_is_said_before_its_back_off_ends():
    logs = {"glance-db-sync-a/db-sync": {"lines": [LOG_LINES["db-unreachable"]]}}
    report = fd.diagnosis(
        glance(cond(c.DATABASE_READY, "False", c.DB_SYNC_IN_PROGRESS)),
        [],
        [job_pod("glance-db-sync", "glance-db-sync-a")],
        [job("glance-db-sync", failed=False, active=1)],
        [],
        logs,
    )
    assert [(f["cause"], f["subject"]) for f in report["findings"]] == [
        ("db-unreachable", "Job glance-db-sync"),
        ("db-sync-running", "Glance openstack/glance"),
    ]
    assert report["state"] == "faulty"


def test_a_crashing_api_container_is_named_by_its_previous_log():
    crash = api_pod(
        "glance-7d9-abc",
        {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {
                    "name": "glance-api",
                    "restartCount": 4,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
                }
            ],
        },
    )
    assert rd.wanted_logs([crash]) == [("glance-7d9-abc", "glance-api", True)]
    logs = {"glance-7d9-abc/glance-api": {"lines": [LOG_LINES["policy-error"]]}}
    report = fd.diagnosis(glance(*HEALTHY), [], [crash], [], [], logs)
    (found,) = report["findings"]
    assert (found["cause"], found["subject"]) == (
        "policy-error",
        "Pod glance-7d9-abc container glance-api",
    )
    assert found["detail"].startswith(
        "CrashLoopBackOff: ended Error (exit code 1), restarted 4 times; its log says: "
    )
    # Without a line that names a cause: the container keeps failing, its last line shown.
    plain = {
        "glance-7d9-abc/glance-api": {
            "lines": ["Traceback (most recent call last):", "KeyError: 'x'"]
        }
    }
    (found,) = fd.diagnosis(glance(*HEALTHY), [], [crash], [], [], plain)["findings"]
    assert found["cause"] == "crashing" and found["detail"].endswith("its log ends: KeyError: 'x'")
    # A server's log goes on after the traceback: the line that states the exception is shown.
    served = {
        "glance-7d9-abc/glance-api": {
            "lines": [
                'ERROR glance.common.wsgi   File "/x/oslo_policy/_external.py", in __call__',
                "ERROR glance.common.wsgi requests.exceptions.ConnectionError: "
                "HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded",
                "[pid: 7] 10.244.0.1 () {34 vars} GET /v2/images => generated 114 bytes",
            ]
        }
    }
    (found,) = fd.diagnosis(glance(*HEALTHY), [], [crash], [], [], served)["findings"]
    assert found["detail"].endswith(
        "its log ends: ERROR glance.common.wsgi requests.exceptions.ConnectionError: "
        "HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded"
    ), found["detail"]


def test_an_eviction_names_the_volume_bound_or_the_node():
    cache = api_pod(
        "glance-a",
        {
            "phase": "Failed",
            "reason": "Evicted",
            "message": 'Usage of EmptyDir volume "image-cache" exceeds the limit "32Mi". ',
        },
    )
    node = api_pod(
        "glance-b",
        {
            "phase": "Failed",
            "reason": "Evicted",
            "message": "The node was low on resource: memory.",
        },
    )
    causes = [
        f["cause"]
        for f in fd.diagnosis(glance(*HEALTHY), [], [cache, node], [], [], {})["findings"]
    ]
    assert causes == ["cache-bound", "evicted"]
    assert rd.wanted_logs([cache, node]) == []  # an evicted pod's log says nothing of why


# --- what is shown --------------------------------------------------------------------------


def test_credentials_in_logs_and_messages_are_masked():
    assert fd.redact("connection = mysql+pymysql://glance:s3cr3t@mariadb/glance") == (
        "connection = mysql+pymysql://glance:***@mariadb/glance"
    )
    assert fd.redact("password = hunter2, secret_key: 'abc' token=xyz") == (
        "password = ***, secret_key: '***' token=***"
    )
    logs = {
        "glance-db-sync-x/db-sync": {
            "lines": ["Traceback", "url mysql+pymysql://glance:s3cr3t@db/glance failed"]
        }
    }
    report = fd.diagnosis(
        glance(*HEALTHY),
        [],
        [job_pod("glance-db-sync", "glance-db-sync-x")],
        [job("glance-db-sync", True)],
        [],
        logs,
    )
    assert "s3cr3t" not in repr(report)


def test_one_line_per_finding_with_its_fix():
    report = fd.diagnosis(
        glance(
            cond(
                c.SECRETS_READY,
                "False",
                c.WAITING_FOR_DB_CREDENTIALS,
                'Secret "glance-db" not found',
            )
        ),
        [],
        [],
        [],
        [],
        {},
    )
    assert fd.text_lines(report)[1] == (
        "FAULT Glance openstack/glance: the database Secret (spec.database.secretRef) is missing "
        "or lacks a key [db-secret] - SecretsReady is False, WaitingForDBCredentials: Secret "
        '"glance-db" not found - fix: create the Secret with the keys username and password '
        "(docs/secrets.md)"
    )


# --- the checks from inside an API pod ----------------------------------------------------


def test_the_in_pod_script_compiles_and_its_lines_are_read_apart_from_the_rest():
    compile(in_pod.SCRIPT, "in_pod.SCRIPT", "exec")
    argv = in_pod.command()
    assert argv[:3] == ["/var/lib/openstack/bin/python", "-B", "-c"]
    assert argv[4:] == [
        "/etc/glance/glance-api.conf.d/,/etc/glance/backends.conf.d/",
        "9292",
        "5",
        "{}",
        "0.9",
    ]
    out = b'warning: something\n{"check": "s3", "ok": true}\nnot json\n[1]\n'
    assert in_pod.parse(out) == [{"check": "s3", "ok": True}]


@pytest.mark.parametrize(
    ("check", "kind", "cause"),
    [
        ("database", "auth", "db-auth"),
        ("database", "unreachable", "db-unreachable"),
        ("keystone", "auth", "keystone-auth"),
        ("s3", "auth", "s3-auth"),
        ("s3", "bucket", "s3-bucket"),
        ("s3", "unreachable", "s3-unreachable"),
        ("healthcheck", "unreachable", "api-unhealthy"),
        ("keystone", "other", "check-failed"),
        ("volume", "filling", "volume-filling"),
    ],
)
def test_a_failed_check_names_its_cause(check, kind, cause):
    said = {"check": check, "subject": "what", "ok": False, "kind": kind, "error": "why"}
    (found,) = fd.check_findings("glance-a", [said, {"check": "x", "ok": True}], {})
    assert (found["cause"], found["subject"], found["detail"]) == (
        cause,
        f"Pod glance-a check {check}",
        f"what: {kind}: why",
    )


def test_server_errors_of_the_api_are_named_by_its_log():
    said = {"check": "images", "subject": "GET /v2/images", "ok": False, "kind": "server-error"}
    log = {"lines": ["INFO start", LOG_LINES["policy-error"]]}
    (found,) = fd.check_findings("glance-a", [said], log)
    assert found["cause"] == "policy-error"
    (plain,) = fd.check_findings("glance-a", [said], {"lines": ["INFO start"]})
    assert plain["cause"] == "api-errors"


def test_the_checks_run_in_a_running_api_pod_a_ready_one_first():
    def pod(name, state, ready, component="api", stamp=STAMP):
        return {
            "metadata": {
                "name": name,
                "creationTimestamp": stamp,
                "labels": {"app.kubernetes.io/component": component},
            },
            "status": {
                "containerStatuses": [{"name": "glance-api", "state": {state: {}}, "ready": ready}]
            },
        }

    assert rd.running_api_pod([pod("a", "waiting", False)]) is None
    assert rd.running_api_pod([pod("j", "running", True, component="db-sync")]) is None
    pods = [pod("old", "running", True), pod("new", "running", False, stamp="2026-12-08T00:00:00Z")]
    assert rd.running_api_pod(pods) == "old"
    report = fd.diagnosis(
        glance(*HEALTHY), [], [], [], [], {}, [fd.not_checked(glance(), "no pod")]
    )
    assert report["healthy"] and report["findings"][0]["cause"] == "checks-not-made"
    assert report["summary"] == (
        "Glance openstack/glance is healthy as far as its conditions and pods show "
        "(no check from inside a pod)"
    )


def test_the_module_documents_exactly_the_spec_its_action_plugin_runs():
    import yaml

    from ansible_collections.c5c3.glance.plugins.action import diagnose as action
    from ansible_collections.c5c3.glance.plugins.doc_fragments.kube import ModuleDocFragment
    from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import step
    from ansible_collections.c5c3.glance.plugins.modules import diagnose as module

    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc["extends_documentation_fragment"] == ["c5c3.glance.kube"]
    documented = {**doc["options"], **yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]}
    assert set(documented) == set(step.DIAGNOSE_SPEC)
    for option, rules in step.DIAGNOSE_SPEC.items():
        assert documented[option]["type"] == rules["type"], option
        assert documented[option].get("required", False) == rules.get("required", False)
        assert documented[option].get("default") == rules.get("default"), option
    assert action.ActionModule.SPEC is step.DIAGNOSE_SPEC
    assert action.ActionModule.STEP is step.diagnose


def test_an_upgrade_under_way_or_stopped_says_its_releases_and_phase_in_words():
    conds = [x for x in HEALTHY if x["type"] not in (c.DATABASE_READY, c.READY)]
    failed = glance(
        *conds,
        cond(c.DATABASE_READY, "False", c.MIGRATE_FAILED, "migrate Job glance-db-migrate failed"),
        cond(c.READY, "False", "NotAllReady"),
    )
    failed["status"].update(
        upgradePhase="Migrating", installedRelease="2026.1", targetRelease="2026.2"
    )
    report = fd.diagnosis(failed, [], [], [], [], {})
    (first,) = [f for f in report["findings"] if f["cause"] == "upgrade-failed"]
    assert first["detail"] == (
        "DatabaseReady is False, MigrateFailed: migrate Job glance-db-migrate failed; "
        "upgrade 2026.1 -> 2026.2 in phase Migrating (2 of 4, migrate: the data moved to them)"
    )
    # With no upgrade under way, a condition's words are all.
    failed["status"]["upgradePhase"] = ""
    (plain,) = [
        f
        for f in fd.diagnosis(failed, [], [], [], [], {})["findings"]
        if f["cause"] == "upgrade-failed"
    ]
    assert plain["detail"].endswith("migrate Job glance-db-migrate failed")


# --- the route and its parents -------------------------------------------------------------

NOT_ACCEPTED = cond(
    c.HTTPROUTE_READY, "False", c.HTTPROUTE_NOT_ACCEPTED, "HTTPRoute not yet accepted by Gateway"
)


def route(*parents: dict) -> dict:
    return {
        "metadata": {"name": "glance", "namespace": "openstack", "generation": 2},
        "spec": {"parentRefs": [{"name": "public", "namespace": "gateways"}]},
        "status": {"parents": list(parents)},
    }


def parent_status(*conditions: dict, name: str = "public") -> dict:
    return {
        "parentRef": {"name": name, "namespace": "gateways"},
        "controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
        "conditions": list(conditions),
    }


GATEWAY = {"metadata": {"name": "public"}, "spec": {"gatewayClassName": "eg"}}


def route_report(read: dict) -> dict:
    return fd.diagnosis(glance(NOT_ACCEPTED), [], [], [], [], {}, route=read)


def test_a_route_whose_gateway_does_not_exist_names_that_first():
    assert fd.route_not_accepted(glance(NOT_ACCEPTED))
    assert not fd.route_not_accepted(glance(*HEALTHY))
    report = route_report({"route": route(), "gateways": {"gateways/public": None}})
    assert report["first_cause"] == "route-parent-missing"
    first, then = report["findings"]
    assert (first["subject"], first["detail"]) == (
        "HTTPRoute openstack/glance",
        "the Gateway gateways/public does not exist",
    )
    assert first["fix"].startswith("correct spec.gateway.parentRef (name, namespace)")
    assert (then["cause"], then["subject"]) == ("route-not-accepted", "Glance openstack/glance")


def test_a_route_its_gateway_refuses_says_the_gateways_own_words():
    refused = cond("Accepted", "False", "NotAllowedByListeners", "No listener allows this route")
    resolved = cond("ResolvedRefs", "True", "ResolvedRefs", "")
    read = {
        "route": route(parent_status(refused, resolved)),
        "gateways": {"gateways/public": GATEWAY},
    }
    details = [
        f["detail"] for f in route_report(read)["findings"] if f["subject"].startswith("HTTPRoute")
    ]
    assert details == [
        "the Gateway gateways/public (gateway.envoyproxy.io/gatewayclass-controller) says "
        "Accepted is False, NotAllowedByListeners: No listener allows this route"
    ]


def test_a_route_no_controller_has_answered_says_so_and_an_unreadable_gateway_why():
    other = parent_status(cond("Accepted", "True", "Accepted"), name="other")
    read = {"route": route(other), "gateways": {"gateways/public": GATEWAY}}
    (said,) = [f for f in route_report(read)["findings"] if f["subject"].startswith("HTTPRoute")]
    assert said["cause"] == "route-not-accepted"
    assert (
        "has said nothing of the route: no controller serves its GatewayClass eg" in said["detail"]
    )
    hidden = "it could not be read: diagnose needs ..."
    read = {"route": route(), "gateways": {"gateways/public": hidden}}
    (said,) = [f for f in route_report(read)["findings"] if f["subject"].startswith("HTTPRoute")]
    assert said["detail"] == f"the Gateway gateways/public: {hidden}"
    # No route at all (not written yet): the Glance's own condition says it.
    assert [f["cause"] for f in route_report({"route": None, "gateways": {}})["findings"]] == [
        "route-not-accepted"
    ]


def test_the_bounded_volumes_of_the_api_container_are_measured_against_their_limits():
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "glance-api",
                    "volumeMounts": [
                        {"name": "staging", "mountPath": "/var/lib/glance/staging"},
                        {"name": "image-cache", "mountPath": "/var/lib/glance/image-cache"},
                        {"name": "tmp", "mountPath": "/tmp"},
                    ],
                },
                {"name": "cache-maintenance", "volumeMounts": [{"name": "x", "mountPath": "/x"}]},
            ],
            "volumes": [
                {"name": "staging", "emptyDir": {"sizeLimit": "64Mi"}},
                {"name": "image-cache", "emptyDir": {"sizeLimit": "1.5Gi"}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},  # not a bound of Glance's
            ],
        }
    }
    bounds = in_pod.bounds(pod, "glance-api")
    assert bounds == {
        "staging": ("/var/lib/glance/staging", 64 * 2**20),
        "image-cache": ("/var/lib/glance/image-cache", 3 * 2**29),
    }
    assert in_pod.bounds(pod, "cache-maintenance") == {}
    unbounded = {"spec": {**pod["spec"], "volumes": [{"name": "staging", "emptyDir": {}}]}}
    assert in_pod.bounds(unbounded, "glance-api") == {}
    argv = in_pod.command(volumes=bounds)
    assert json.loads(argv[-2]) == {k: list(v) for k, v in bounds.items()}


def test_a_filling_volume_is_a_note_that_leaves_the_glance_healthy():
    said = {
        "check": "volume",
        "subject": "staging (/var/lib/glance/staging)",
        "ok": False,
        "kind": "filling",
        "error": "60 MiB of its 64 MiB bound (93%)",
    }
    found = fd.check_findings("glance-a", [said], {})
    report = fd.diagnosis(glance(*HEALTHY), [], [], [], [], {}, inside=found)
    assert (report["state"], report["first_cause"]) == ("healthy", None)
    (note,) = report["findings"]
    assert (note["cause"], note["severity"]) == ("volume-filling", "note")
    assert note["detail"].endswith("filling: 60 MiB of its 64 MiB bound (93%)")
