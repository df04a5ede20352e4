"""Extra vars of a pass (ansible-operator's makeParameters) and the reading of a finished run."""

from __future__ import annotations

import copy
from types import MappingProxyType

import pytest

from runner.kube.watches import Finalizer, GroupVersionKind, Watch
from runner.passes.extravars import (
    CLUSTERS_NAMESPACE,
    FailedTask,
    PlaybookStats,
    RunOutcome,
    extra_vars,
    is_finalizer_run,
    mark_unsafe,
    object_var_name,
    run_outcome,
    snake_case,
    snake_case_keys,
)

GLANCE_GVK = GroupVersionKind("glance.openstack.c5c3.io", "v1alpha1", "Glance")
FINALIZER = "glance.openstack.c5c3.io/finalizer"
# The Glance entry of watches.yaml.
GLANCE_WATCH = Watch(
    gvk=GLANCE_GVK,
    manage_status=False,
    snake_case_parameters=False,
    mark_unsafe=True,
    finalizer=Finalizer(name=FINALIZER, vars=MappingProxyType({"glance_finalizing": True})),
)
GLANCE = {
    "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
    "kind": "Glance",
    "metadata": {
        "name": "glance",
        "namespace": "openstack",
        "generation": 2,
        "finalizers": [FINALIZER],
    },
    "spec": {
        "openStackRelease": "2026.1",
        "apiServer": {
            "replicas": 2,
            "extraConfig": {"DEFAULT": {"debug": "{{ lookup('pipe', 'id') }}"}},
        },
        "imageCache": None,
        "keystoneEndpoint": "https://keystone:5000",
    },
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


def unsafe(text: str) -> dict:
    return {"__ansible_unsafe": text}


def deleting(obj: dict, finalizers: list[str]) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    obj["metadata"]["finalizers"] = finalizers
    return obj


# -- names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "kind", "expected"),
    [
        ("glance.openstack.c5c3.io", "Glance", "_glance_openstack_c5c3_io_glance"),
        ("glance.openstack.c5c3.io", "GlanceBackend", "_glance_openstack_c5c3_io_glancebackend"),
        ("cert-manager.io", "Certificate", "_cert_manager_io_certificate"),
        ("", "Secret", "__secret"),
        ("Example.COM", "Widget", "_Example_COM_widget"),  # the group keeps its case
    ],
)
def test_the_object_var_is_underscore_group_underscore_lowercase_kind(group, kind, expected):
    assert object_var_name(group, kind) == expected


# Every expected value is the output of ansible-operator's paramconv.ToSnake (Go),
# including the cases of its own paramconv_test.go.
SNAKE_CASES = [
    ("var", "var"),
    ("var_var", "var_var"),
    ("size_k8s_test", "size_k8s_test"),
    ("888", "888"),
    ("k8s_var", "k8s_var"),
    ("_k8s_var", "_k8s_var"),
    ("k8s var", "k8s_var"),
    ("ThisShouldHaveUnderscores", "_this_should_have_underscores"),
    ("sizeK8sBuckets", "size_k8s_buckets"),
    ("_CanYou_Handle_mixedVars", "_can_you_handle_mixed_vars"),
    ("this_should_be_a_noop", "this_should_be_a_noop"),
    ("egressIPs", "egress_ips"),
    ("egressIPsEgress", "egress_ips_egress"),
    ("egressIPsegress", "egress_ips_egress"),
    ("IPsegress", "_ips_egress"),
    ("egressIP", "egress_ip"),
    ("egressIPEgress", "egress_ip_egress"),
    ("egressIPegress", "egress_ip_egress"),
    ("URLegressIPEgressHTTP", "url_egress_ip_egress_http"),
    ("URLsegressIPsEgressHTTPs", "_urls_egress_ips_egress_https"),
    ("s3_bucket", "s3_bucket"),
    ("s3Bucket", "s3_bucket"),
    ("a1b2", "a_1_b2"),
    ("a1b2c3", "a_1_b2c3"),
    ("x11y22z33", "x_11_y22z33"),
    ("x509Certs", "x509_certs"),
    ("HTTPServer", "http_server"),
    ("IPs", "__ips"),
    ("IPURL", "ip__url"),
    ("ZIPCode", "_z_ip_code"),
    ("JSONData", "_json_data"),
    ("OAuth2Token", "_o_auth2_token"),
    ("enableHTTP2", "enable_http_2"),
    ("iPhone", "i_phone"),
    ("ABC", "_abc"),
    ("a-b-c", "a_b_c"),
    (" lead trail ", "lead_trail"),
    ("v1alpha1", "v1alpha1"),
    ("app.kubernetes.io/name", "app.kubernetes.io/name"),
    ("nodeSelector", "node_selector"),
    ("keystoneEndpoint", "keystone_endpoint"),
]


@pytest.mark.parametrize(("key", "expected"), SNAKE_CASES)
def test_snake_case_is_ansible_operator_s_to_snake(key, expected):
    assert snake_case(key) == expected


def test_snake_case_of_an_empty_key_is_empty_where_go_panics():
    assert snake_case("") == snake_case("   ") == ""


def test_snake_casing_recurses_into_mappings_and_lists_but_not_values():
    value = {
        "apiServer": {"extraConfig": [{"logLevel": "debugMode"}]},
        "nodeSelector": {"kubernetes.io/os": "linux"},
    }
    assert snake_case_keys(value) == {
        "api_server": {"extra_config": [{"log_level": "debugMode"}]},
        "node_selector": {"kubernetes.io/os": "linux"},
    }


def test_mark_unsafe_wraps_every_string_and_nothing_else():
    value = {"a": "x", "n": 1, "f": 1.5, "b": True, "z": None, "l": ["y", 2, {"k": "v"}]}
    assert mark_unsafe(value) == {
        "a": unsafe("x"),
        "n": 1,
        "f": 1.5,
        "b": True,
        "z": None,
        "l": [unsafe("y"), 2, {"k": unsafe("v")}],
    }


# -- extra vars -------------------------------------------------------------------------


def test_the_glance_watch_passes_spec_keys_meta_object_and_spec_all_marked_unsafe():
    assert extra_vars(GLANCE_WATCH, GLANCE) == {
        "openStackRelease": unsafe("2026.1"),
        "apiServer": {
            "replicas": 2,
            "extraConfig": {"DEFAULT": {"debug": unsafe("{{ lookup('pipe', 'id') }}")}},
        },
        "imageCache": None,
        "keystoneEndpoint": unsafe("https://keystone:5000"),
        "ansible_operator_meta": {"name": "glance", "namespace": "openstack"},
        "_glance_openstack_c5c3_io_glance": mark_unsafe(GLANCE),
        "_glance_openstack_c5c3_io_glance_spec": mark_unsafe(GLANCE["spec"]),
    }


def test_without_mark_unsafe_strings_pass_as_they_are():
    watch = Watch(gvk=GLANCE_GVK, snake_case_parameters=False)
    variables = extra_vars(watch, GLANCE)
    assert variables["openStackRelease"] == "2026.1"
    assert variables["_glance_openstack_c5c3_io_glance"] == GLANCE
    assert variables["_glance_openstack_c5c3_io_glance_spec"] == GLANCE["spec"]


def test_snake_case_parameters_converts_top_level_spec_vars_but_not_the_spec_var():
    variables = extra_vars(Watch(gvk=GLANCE_GVK), GLANCE)
    assert sorted(variables) == [
        "_glance_openstack_c5c3_io_glance",
        "_glance_openstack_c5c3_io_glance_spec",
        "ansible_operator_meta",
        "api_server",
        "image_cache",
        "keystone_endpoint",
        "open_stack_release",
    ]
    assert variables["api_server"] == {
        "replicas": 2,
        "extra_config": {"_default": {"debug": "{{ lookup('pipe', 'id') }}"}},
    }
    assert variables["_glance_openstack_c5c3_io_glance_spec"] == GLANCE["spec"]


def test_watch_vars_override_spec_keys_and_meta_overrides_a_spec_key_of_its_name():
    watch = Watch(
        gvk=GLANCE_GVK,
        snake_case_parameters=False,
        vars=MappingProxyType({"openStackRelease": "pinned"}),
    )
    obj = copy.deepcopy(GLANCE)
    obj["spec"]["ansible_operator_meta"] = "spoofed"
    variables = extra_vars(watch, obj)
    assert variables["openStackRelease"] == "pinned"
    assert variables["ansible_operator_meta"] == {"name": "glance", "namespace": "openstack"}


def test_watch_vars_are_not_marked_unsafe():
    watch = Watch(
        gvk=GLANCE_GVK,
        mark_unsafe=True,
        vars=MappingProxyType({"meta": "{{ ansible_operator_meta }}"}),
    )
    assert extra_vars(watch, GLANCE)["meta"] == "{{ ansible_operator_meta }}"


@pytest.mark.parametrize(
    ("obj", "finalizing"),
    [
        (GLANCE, False),
        (deleting(GLANCE, [FINALIZER]), True),
        (deleting(GLANCE, ["someone.else/finalizer", FINALIZER]), True),
        (deleting(GLANCE, ["someone.else/finalizer"]), False),
        (deleting(GLANCE, []), False),
    ],
)
def test_finalizer_vars_come_only_on_the_deletion_pass_of_our_finalizer(obj, finalizing):
    assert is_finalizer_run(GLANCE_WATCH, obj) is finalizing
    assert ("glance_finalizing" in extra_vars(GLANCE_WATCH, obj)) is finalizing


def test_a_watch_without_finalizer_never_finalizes():
    assert not is_finalizer_run(Watch(gvk=GLANCE_GVK), deleting(GLANCE, [FINALIZER]))


def test_an_object_without_spec_gets_an_empty_spec_and_a_cluster_scoped_one_an_empty_namespace():
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": "dg=="},
    }
    variables = extra_vars(Watch(gvk=GroupVersionKind("", "v1", "Secret")), secret)
    assert variables == {
        "ansible_operator_meta": {"name": "s", "namespace": ""},
        "__secret": secret,
        "__secret_spec": {},
    }


def test_extra_vars_share_nothing_with_the_object_or_the_watch():
    obj = copy.deepcopy(GLANCE)
    watch = Watch(
        gvk=GLANCE_GVK, snake_case_parameters=False, vars=MappingProxyType({"v": {"x": 1}})
    )
    variables = extra_vars(watch, deleting(obj, []))
    variables["apiServer"]["replicas"] = 9
    variables["_glance_openstack_c5c3_io_glance"]["metadata"]["name"] = "changed"
    variables["_glance_openstack_c5c3_io_glance_spec"]["openStackRelease"] = "changed"
    variables["v"]["x"] = 2
    assert obj == GLANCE
    assert dict(watch.vars) == {"v": {"x": 1}}


def test_the_runner_vars_reach_every_pass_and_come_last():
    """``clusters_namespace`` (the runner's ``--clusters-namespace``) beats a spec key, a
    watch var and a finalizer var of its name: the pass must look where the runner
    watches."""
    assert CLUSTERS_NAMESPACE == "clusters_namespace"
    watch = Watch(
        gvk=GLANCE_GVK,
        snake_case_parameters=False,
        mark_unsafe=True,
        vars=MappingProxyType({CLUSTERS_NAMESPACE: "from-watches-yaml"}),
        finalizer=Finalizer(
            name=FINALIZER, vars=MappingProxyType({CLUSTERS_NAMESPACE: "from-finalizer"})
        ),
    )
    obj = deleting(GLANCE, [FINALIZER])
    obj["spec"][CLUSTERS_NAMESPACE] = "from-spec"
    variables = extra_vars(watch, obj, {CLUSTERS_NAMESPACE: "c5c3-clusters"})
    assert variables[CLUSTERS_NAMESPACE] == "c5c3-clusters"  # not marked unsafe either
    assert variables["_glance_openstack_c5c3_io_glance_spec"][CLUSTERS_NAMESPACE] == unsafe(
        "from-spec"
    )
    off = extra_vars(GLANCE_WATCH, GLANCE, {CLUSTERS_NAMESPACE: ""})
    assert off[CLUSTERS_NAMESPACE] == ""  # target clusters off: said, not left out


def test_without_runner_vars_the_vars_are_ansible_operators():
    assert CLUSTERS_NAMESPACE not in extra_vars(GLANCE_WATCH, GLANCE)


def test_extra_vars_share_nothing_with_the_runner_vars():
    runner_vars = {CLUSTERS_NAMESPACE: "c5c3-clusters", "nested": {"x": 1}}
    variables = extra_vars(GLANCE_WATCH, GLANCE, runner_vars)
    variables["nested"]["x"] = 2
    assert runner_vars["nested"] == {"x": 1}


# -- reading a run ----------------------------------------------------------------------


def task_event(event: str, task: str, action: str, host: str = "localhost", **data) -> dict:
    """An ansible-runner event (the shape of its job_events/*.json)."""
    return {
        "uuid": "0",
        "counter": 0,
        "event": event,
        "event_data": {
            "task": task,
            "task_action": action,
            "resolved_action": action,
            "host": host,
            **data,
        },
    }


def ok(task: str, action: str = "ansible.builtin.debug", res: dict | None = None, **data) -> dict:
    return task_event("runner_on_ok", task, action, res=res or {"changed": False}, **data)


def failed(
    task: str, msg: str | None = "boom", ignore_errors: bool = False, host: str = "localhost"
) -> dict:
    res = {"failed": True} | ({} if msg is None else {"msg": msg})
    return task_event(
        "runner_on_failed", task, "ansible.builtin.fail", host, res=res, ignore_errors=ignore_errors
    )


def recap(artifact_data: dict | None = None, **counters: dict) -> dict:
    data = {
        key: counters.get(key, {})
        for key in (
            "changed",
            "dark",
            "failures",
            "ignored",
            "ok",
            "processed",
            "rescued",
            "skipped",
        )
    }
    return {
        "event": "playbook_on_stats",
        "event_data": {**data, "artifact_data": artifact_data or {}},
    }


def test_a_clean_run_succeeds_with_its_recap_summed_over_hosts():
    outcome = run_outcome(
        [
            ok("a"),
            ok("b", host="other"),
            recap(ok={"localhost": 3, "other": 1}, changed={"localhost": 1}, skipped={"other": 2}),
        ]
    )
    assert outcome == RunOutcome(
        stats=PlaybookStats(ok=4, changed=1, skipped=2), failed_tasks=(), requeue_after=None
    )
    assert outcome.succeeded


def test_a_failed_task_fails_the_run_with_its_message():
    outcome = run_outcome(
        [
            ok("a"),
            failed("Apply objects", "conflict"),
            recap(ok={"localhost": 1}, failures={"localhost": 1}),
        ]
    )
    assert outcome.failed_tasks == (
        FailedTask("Apply objects", "ansible.builtin.fail", "localhost", "conflict"),
    )
    assert not outcome.succeeded


def test_a_failure_without_msg_says_unknown_playbook_failure():
    outcome = run_outcome([failed("t", msg=None), recap(failures={"localhost": 1})])
    assert [task.message for task in outcome.failed_tasks] == ["unknown playbook failure"]


def test_ignored_errors_do_not_count():
    outcome = run_outcome(
        [
            failed("probe", ignore_errors=True),
            ok("next"),
            recap(ok={"localhost": 2}, ignored={"localhost": 1}),
        ]
    )
    assert outcome.failed_tasks == () and outcome.succeeded
    assert outcome.stats.ignored == 1


def test_an_ignored_error_after_the_failure_does_not_take_its_place():
    events = [
        failed("apply", "uncaught"),
        failed("always: cleanup", "ignored", ignore_errors=True),
        recap(failures={"localhost": 1}),
    ]
    assert [task.message for task in run_outcome(events).failed_tasks] == ["uncaught"]


def test_ignored_errors_do_not_count_without_recap_either():
    assert run_outcome([failed("probe", ignore_errors=True)]).failed_tasks == ()


def test_a_rescued_failure_does_not_count():
    outcome = run_outcome(
        [failed("try"), ok("rescue"), recap(ok={"localhost": 1}, rescued={"localhost": 1})]
    )
    assert outcome.failed_tasks == () and outcome.succeeded


def test_after_a_rescued_failure_an_uncaught_one_still_counts():
    events = [
        failed("try", "caught"),
        ok("rescue"),
        failed("later", "uncaught"),
        recap(rescued={"localhost": 1}, failures={"localhost": 1}),
    ]
    assert [task.message for task in run_outcome(events).failed_tasks] == ["uncaught"]


def test_rescues_are_counted_per_host():
    events = [
        failed("try", "a caught", host="a"),
        failed("try", "b uncaught", host="b"),
        recap(rescued={"a": 1}, failures={"b": 1}),
    ]
    assert [task.message for task in run_outcome(events).failed_tasks] == ["b uncaught"]


def test_a_run_without_recap_fails_and_every_failed_event_counts():
    outcome = run_outcome([failed("try", "first"), ok("rescue"), failed("again", "second")])
    assert outcome.stats is None and not outcome.succeeded
    assert [task.message for task in outcome.failed_tasks] == ["first", "second"]


def test_a_run_without_any_event_did_not_succeed():
    assert not run_outcome([]).succeeded


def test_an_unreachable_host_fails_the_run():
    unreachable = task_event(
        "runner_on_unreachable",
        "t",
        "ansible.builtin.ping",
        res={"msg": "no route", "unreachable": True},
    )
    outcome = run_outcome([unreachable, recap(dark={"localhost": 1})])
    assert outcome.failed_tasks == (
        FailedTask("t", "ansible.builtin.ping", "localhost", "no route"),
    )
    assert outcome.stats.unreachable == 1 and not outcome.succeeded


def test_a_recap_counting_failures_fails_the_run_even_without_their_events():
    assert not run_outcome([recap(failures={"localhost": 1})]).succeeded


def set_stats(value) -> dict:
    return recap(ok={"localhost": 1}, artifact_data={"requeue_after": value})


def requeue_module(period: str, action: str = "operator_sdk.util.requeue_after") -> dict:
    return ok("Come back later", action, res={"changed": False, "period": period})


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([set_stats(30)], 30.0),
        ([set_stats(2.5)], 2.5),
        ([set_stats("2m")], 120.0),
        ([set_stats(0)], None),
        ([requeue_module("45s"), recap()], 45.0),
        ([requeue_module("1h", "requeue_after"), recap()], 3600.0),
        ([requeue_module("10s"), set_stats(30)], 10.0),
        ([requeue_module("90s"), set_stats(30)], 30.0),
        ([requeue_module("10s"), requeue_module("5s"), recap()], 5.0),
        ([ok("debug", res={"period": "5s"}), recap()], None),
        ([recap()], None),
    ],
)
def test_the_soonest_requeue_a_playbook_asked_for_wins(events, expected):
    outcome = run_outcome(events)
    assert outcome.requeue_after == expected
    assert outcome.succeeded


def test_a_failed_requeue_module_asks_for_nothing():
    event = task_event(
        "runner_on_failed",
        "Come back",
        "operator_sdk.util.requeue_after",
        res={"msg": "invalid time input"},
    )
    outcome = run_outcome([event, recap(failures={"localhost": 1})])
    assert outcome.requeue_after is None
    assert [task.message for task in outcome.failed_tasks] == ["invalid time input"]


@pytest.mark.parametrize("value", ["soon", -5, True, [30], "-1m"])
def test_a_bad_requeue_request_fails_the_run(value):
    outcome = run_outcome([set_stats(value)])
    assert outcome.requeue_after is None and not outcome.succeeded
    assert outcome.failed_tasks == (
        FailedTask(
            "set_stats",
            "ansible.builtin.set_stats",
            "",
            f'requeue_after: {value!r} is neither a number of seconds nor a duration such as "30s"',
        ),
    )


def test_a_bad_requeue_module_period_names_its_task():
    outcome = run_outcome([requeue_module("5 minutes"), recap()])
    (problem,) = outcome.failed_tasks
    assert (problem.task, problem.action) == ("Come back later", "operator_sdk.util.requeue_after")
