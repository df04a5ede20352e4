"""The Kubernetes Pod Security Standards, "restricted" profile, as a checker for tests.

``restricted_violations(pod_spec, pod_metadata)`` returns one line per rule a pod breaks,
naming the field; an empty list means the pod would be admitted into a namespace labelled
``pod-security.kubernetes.io/enforce: restricted``. The checks follow the policy table of
https://kubernetes.io/docs/concepts/security/pod-security-standards/ (latest version):
every "baseline" control, then the controls "restricted" adds. Windows pods are not
special-cased: the operator renders Linux pods only.

``pod_templates(obj)`` finds the pod templates of a rendered workload (Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job, CronJob) or the spec of a bare Pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")

# baseline: "Sysctls" (safe set)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
# baseline: "SELinux"
ALLOWED_SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
# baseline: "AppArmor"
ALLOWED_APPARMOR_TYPES = frozenset({"RuntimeDefault", "Localhost"})
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
# restricted: "Volume Types"
ALLOWED_VOLUME_SOURCES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
# restricted: "Seccomp"
ALLOWED_SECCOMP_TYPES = frozenset({"RuntimeDefault", "Localhost"})
# restricted: "Capabilities" (the only capability a container may add)
ALLOWED_ADDED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})

_WORKLOAD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def pod_templates(obj: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """``(metadata, spec)`` of each pod an object describes; nothing for other kinds."""
    kind = obj.get("kind")
    if kind == "Pod":
        yield obj.get("metadata") or {}, obj.get("spec") or {}
        return
    path = _WORKLOAD_TEMPLATE_PATHS.get(kind)
    if path is None:
        return
    node: Any = obj
    for key in path:
        node = (node or {}).get(key)
    node = node or {}
    yield node.get("metadata") or {}, node.get("spec") or {}


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in CONTAINER_FIELDS:
        for index, container in enumerate(spec.get(field) or []):
            yield f"spec.{field}[{index}]", container


def _baseline(spec: Mapping[str, Any], metadata: Mapping[str, Any]) -> Iterator[str]:
    pod_sc = spec.get("securityContext") or {}
    containers = list(_containers(spec))

    # HostProcess
    if (pod_sc.get("windowsOptions") or {}).get("hostProcess"):
        yield "spec.securityContext.windowsOptions.hostProcess must not be true"
    for path, container in containers:
        if ((container.get("securityContext") or {}).get("windowsOptions") or {}).get(
            "hostProcess"
        ):
            yield f"{path}.securityContext.windowsOptions.hostProcess must not be true"

    # Host Namespaces
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield f"spec.{field} must not be true"

    # Privileged Containers
    for path, container in containers:
        if (container.get("securityContext") or {}).get("privileged"):
            yield f"{path}.securityContext.privileged must not be true"

    # HostPath Volumes
    for index, volume in enumerate(spec.get("volumes") or []):
        if "hostPath" in volume:
            yield f"spec.volumes[{index}].hostPath is forbidden"

    # Host Ports
    for path, container in containers:
        for index, port in enumerate(container.get("ports") or []):
            if port.get("hostPort"):
                yield f"{path}.ports[{index}].hostPort must be unset or 0"

    # AppArmor
    for key, value in (metadata.get("annotations") or {}).items():
        if key.startswith(APPARMOR_ANNOTATION_PREFIX) and not (
            value == "runtime/default" or value.startswith("localhost/")
        ):
            yield f"metadata.annotations[{key}] must be runtime/default or localhost/*"
    scopes = [("spec.securityContext", pod_sc)] + [
        (f"{path}.securityContext", container.get("securityContext") or {})
        for path, container in containers
    ]
    for path, context in scopes:
        profile = context.get("appArmorProfile")
        if profile is not None and profile.get("type") not in ALLOWED_APPARMOR_TYPES:
            yield f"{path}.appArmorProfile.type must be RuntimeDefault or Localhost"

    # SELinux
    for path, context in scopes:
        options = context.get("seLinuxOptions") or {}
        if options.get("type", "") not in ALLOWED_SELINUX_TYPES:
            yield f"{path}.seLinuxOptions.type {options.get('type')!r} is not allowed"
        for field in ("user", "role"):
            if options.get(field):
                yield f"{path}.seLinuxOptions.{field} must be unset"

    # /proc Mount Type
    for path, container in containers:
        mount = (container.get("securityContext") or {}).get("procMount")
        if mount not in (None, "Default"):
            yield f"{path}.securityContext.procMount must be Default"

    # Seccomp (baseline: never Unconfined)
    for path, context in scopes:
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            yield f"{path}.seccompProfile.type must not be Unconfined"

    # Sysctls
    for index, sysctl in enumerate(pod_sc.get("sysctls") or []):
        if sysctl.get("name") not in SAFE_SYSCTLS:
            yield f"spec.securityContext.sysctls[{index}] {sysctl.get('name')!r} is not safe"


def _restricted(spec: Mapping[str, Any]) -> Iterator[str]:
    pod_sc = spec.get("securityContext") or {}
    containers = list(_containers(spec))

    # Volume Types
    for index, volume in enumerate(spec.get("volumes") or []):
        sources = set(volume) - {"name"}
        for source in sorted(sources - ALLOWED_VOLUME_SOURCES):
            yield f"spec.volumes[{index}].{source} is not an allowed volume type"

    # Privilege Escalation
    for path, container in containers:
        if (container.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False:
            yield f"{path}.securityContext.allowPrivilegeEscalation must be false"

    # Running as Non-root
    pod_non_root = pod_sc.get("runAsNonRoot")
    if pod_non_root is False:
        yield "spec.securityContext.runAsNonRoot must not be false"
    for path, container in containers:
        value = (container.get("securityContext") or {}).get("runAsNonRoot")
        if value is False:
            yield f"{path}.securityContext.runAsNonRoot must not be false"
        elif value is None and pod_non_root is not True:
            yield (
                f"{path}.securityContext.runAsNonRoot must be true "
                "(here or in spec.securityContext)"
            )

    # Running as Non-root user
    if pod_sc.get("runAsUser") == 0:
        yield "spec.securityContext.runAsUser must not be 0"
    for path, container in containers:
        if (container.get("securityContext") or {}).get("runAsUser") == 0:
            yield f"{path}.securityContext.runAsUser must not be 0"

    # Seccomp (restricted: RuntimeDefault or Localhost, on the pod or on every container)
    pod_type = (pod_sc.get("seccompProfile") or {}).get("type")
    if pod_type is not None and pod_type not in ALLOWED_SECCOMP_TYPES:
        yield "spec.securityContext.seccompProfile.type must be RuntimeDefault or Localhost"
    for path, container in containers:
        own = ((container.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
        if own is not None and own not in ALLOWED_SECCOMP_TYPES:
            yield f"{path}.securityContext.seccompProfile.type must be RuntimeDefault or Localhost"
        elif own is None and pod_type is None:
            yield (
                f"{path}.securityContext.seccompProfile.type must be set "
                "(here or in spec.securityContext)"
            )

    # Capabilities
    for path, container in containers:
        capabilities = (container.get("securityContext") or {}).get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            yield f"{path}.securityContext.capabilities.drop must include ALL"
        for added in capabilities.get("add") or []:
            if added not in ALLOWED_ADDED_CAPABILITIES:
                yield f"{path}.securityContext.capabilities.add {added!r} is not allowed"


def restricted_violations(
    pod_spec: Mapping[str, Any], pod_metadata: Mapping[str, Any] | None = None
) -> list[str]:
    """Every "restricted" Pod Security Standard rule the pod breaks (empty: it passes)."""
    metadata = pod_metadata or {}
    return list(_baseline(pod_spec, metadata)) + list(_restricted(pod_spec))
