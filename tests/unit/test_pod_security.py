"""The restricted Pod Security Standard checker flags every control it implements."""

from __future__ import annotations

import copy

import pytest
from support.builders import DELETE, patched
from support.pod_security import pod_templates, restricted_violations

CONTAINER = {
    "name": "app",
    "image": "example/app:1",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    },
}
POD = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [CONTAINER],
    "volumes": [{"name": "scratch", "emptyDir": {}}],
}


def with_container(patch: dict) -> dict:
    pod = copy.deepcopy(POD)
    pod["containers"] = [patched(CONTAINER, patch)]
    return pod


def test_a_restricted_pod_passes():
    assert restricted_violations(POD) == []


def test_pod_level_non_root_and_seccomp_cover_containers_that_leave_them_unset():
    pod = with_container({"securityContext": {"runAsNonRoot": DELETE, "seccompProfile": DELETE}})
    assert restricted_violations(pod) == []


def test_net_bind_service_is_the_one_capability_a_container_may_add():
    pod = with_container({"securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}})
    assert restricted_violations(pod) == []


@pytest.mark.parametrize(
    ("pod", "violation"),
    [
        pytest.param(
            patched(POD, {"hostNetwork": True}),
            "spec.hostNetwork must not be true",
            id="hostNetwork",
        ),
        pytest.param(
            patched(POD, {"hostPID": True}), "spec.hostPID must not be true", id="hostPID"
        ),
        pytest.param(
            patched(POD, {"hostIPC": True}), "spec.hostIPC must not be true", id="hostIPC"
        ),
        pytest.param(
            with_container({"securityContext": {"privileged": True}}),
            "spec.containers[0].securityContext.privileged must not be true",
            id="privileged",
        ),
        pytest.param(
            patched(POD, {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}),
            "spec.volumes[0].hostPath is forbidden",
            id="hostPath",
        ),
        pytest.param(
            patched(POD, {"volumes": [{"name": "n", "nfs": {"server": "x", "path": "/"}}]}),
            "spec.volumes[0].nfs is not an allowed volume type",
            id="volume-type",
        ),
        pytest.param(
            with_container({"ports": [{"containerPort": 80, "hostPort": 80}]}),
            "spec.containers[0].ports[0].hostPort must be unset or 0",
            id="hostPort",
        ),
        pytest.param(
            with_container({"securityContext": {"allowPrivilegeEscalation": DELETE}}),
            "spec.containers[0].securityContext.allowPrivilegeEscalation must be false",
            id="privilege-escalation-unset",
        ),
        pytest.param(
            with_container({"securityContext": {"allowPrivilegeEscalation": True}}),
            "spec.containers[0].securityContext.allowPrivilegeEscalation must be false",
            id="privilege-escalation-true",
        ),
        pytest.param(
            patched(
                with_container({"securityContext": {"runAsNonRoot": DELETE}}),
                {"securityContext": {"runAsNonRoot": DELETE}},
            ),
            "spec.containers[0].securityContext.runAsNonRoot must be true (here or in spec.securityContext)",
            id="non-root-unset",
        ),
        pytest.param(
            with_container({"securityContext": {"runAsNonRoot": False}}),
            "spec.containers[0].securityContext.runAsNonRoot must not be false",
            id="non-root-false",
        ),
        pytest.param(
            with_container({"securityContext": {"runAsUser": 0}}),
            "spec.containers[0].securityContext.runAsUser must not be 0",
            id="root-user",
        ),
        pytest.param(
            patched(POD, {"securityContext": {"runAsUser": 0}}),
            "spec.securityContext.runAsUser must not be 0",
            id="root-user-pod",
        ),
        pytest.param(
            patched(
                with_container({"securityContext": {"seccompProfile": DELETE}}),
                {"securityContext": {"seccompProfile": DELETE}},
            ),
            "spec.containers[0].securityContext.seccompProfile.type must be set (here or in spec.securityContext)",
            id="seccomp-unset",
        ),
        pytest.param(
            with_container({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            "spec.containers[0].securityContext.seccompProfile.type must not be Unconfined",
            id="seccomp-unconfined",
        ),
        pytest.param(
            with_container({"securityContext": {"capabilities": {"drop": ["NET_RAW"]}}}),
            "spec.containers[0].securityContext.capabilities.drop must include ALL",
            id="drop-not-all",
        ),
        pytest.param(
            with_container({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
            "spec.containers[0].securityContext.capabilities.add 'SYS_ADMIN' is not allowed",
            id="add-capability",
        ),
        pytest.param(
            with_container({"securityContext": {"procMount": "Unmasked"}}),
            "spec.containers[0].securityContext.procMount must be Default",
            id="procMount",
        ),
        pytest.param(
            with_container({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
            "spec.containers[0].securityContext.seLinuxOptions.type 'spc_t' is not allowed",
            id="selinux-type",
        ),
        pytest.param(
            patched(POD, {"securityContext": {"seLinuxOptions": {"user": "root"}}}),
            "spec.securityContext.seLinuxOptions.user must be unset",
            id="selinux-user",
        ),
        pytest.param(
            with_container({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}),
            "spec.containers[0].securityContext.appArmorProfile.type must be RuntimeDefault or Localhost",
            id="apparmor",
        ),
        pytest.param(
            patched(
                POD, {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}
            ),
            "spec.securityContext.sysctls[0] 'kernel.msgmax' is not safe",
            id="sysctl",
        ),
        pytest.param(
            with_container({"securityContext": {"windowsOptions": {"hostProcess": True}}}),
            "spec.containers[0].securityContext.windowsOptions.hostProcess must not be true",
            id="hostProcess",
        ),
    ],
)
def test_each_restricted_control_is_flagged(pod, violation):
    assert violation in restricted_violations(pod)


def test_init_and_ephemeral_containers_are_checked_too():
    bad = patched(CONTAINER, {"securityContext": {"allowPrivilegeEscalation": True}})
    pod = patched(POD, {"initContainers": [bad], "ephemeralContainers": [bad]})
    assert restricted_violations(pod) == [
        "spec.initContainers[0].securityContext.allowPrivilegeEscalation must be false",
        "spec.ephemeralContainers[0].securityContext.allowPrivilegeEscalation must be false",
    ]


def test_an_apparmor_annotation_other_than_runtime_default_or_localhost_is_flagged():
    metadata = {"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}
    assert restricted_violations(POD, metadata) == [
        "metadata.annotations[container.apparmor.security.beta.kubernetes.io/app] "
        "must be runtime/default or localhost/*"
    ]


@pytest.mark.parametrize(
    ("obj", "count"),
    [
        ({"kind": "Deployment", "spec": {"template": {"spec": POD}}}, 1),
        ({"kind": "Job", "spec": {"template": {"spec": POD}}}, 1),
        ({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": POD}}}}}, 1),
        ({"kind": "Pod", "spec": POD}, 1),
        ({"kind": "Service", "spec": {}}, 0),
    ],
)
def test_pod_templates_finds_the_pod_of_every_workload_kind(obj, count):
    found = list(pod_templates(obj))
    assert len(found) == count
    assert all(spec == POD for _, spec in found)
