# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The API's objects (role ``glance_api``): the Deployment with its glance-api container and
the cache-maintenance sidecar (reference-spec §4.3), the Service, the
PodDisruptionBudget and the HorizontalPodAutoscaler.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    DEFAULT_REPLICAS,
    DEFAULT_SECRET_KEY,
    effective_grace,
    effective_prestop,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    BACKENDS_DIR,
    CONFIG_DIR,
    IMPORT_CA_DIR,
    IMPORT_CA_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    IMAGE_CACHE_DIR as IMAGE_CACHE_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    STAGING_DIR as STAGING_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    TASKS_WORK_DIR as TASKS_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    DB_TLS_MOUNT_PATH as DB_TLS_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    AUTHTOKEN_HASH_ANNOTATION,
    COMPONENT_API,
    COMPONENT_LABEL,
    DB_CONNECTION_HASH_ANNOTATION,
    IMPORT_CA_HASH_ANNOTATION,
    JOB_NAME_LABEL,
    Artifacts,
    _metadata,
    _name,
    _spec,
    common_labels,
    component_labels,
    selector_labels,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
    BACKENDS_VOLUME,
    CONFIG_VOLUME,
    DB_TLS_VOLUME,
    IMAGE_CACHE_VOLUME,
    IMPORT_CA_VOLUME,
    SSL_CERT_FILE_ENV,
    STAGING_VOLUME,
    TASKS_VOLUME,
    TMP_PATH,
    TMP_VOLUME,
    _config_volume,
    _container,
    _db_connection_env,
    _db_tls_volume,
    _empty_dir,
    _import_ca_volume,
    _mount,
    _pod,
    _secret_env,
    _tmp_volume,
    db_tls_enabled,
    image_cache_size_limit,
    image_reference,
    import_ca_secret,
    self_reference_env,
    staging_size_limit,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.uwsgi import (
    uwsgi_command,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_duration import (
    parse_duration,
)

# --- ports, paths, identities ------------------------------------------------------------
API_PORT_NAME = "glance-api"
API_CONTAINER = "glance-api"
CACHE_MAINTENANCE_CONTAINER = "cache-maintenance"
HEALTHCHECK_PATH = "/healthcheck"
AUTHTOKEN_PASSWORD_ENV = "OS_KEYSTONE_AUTHTOKEN__PASSWORD"

# --- probes (DECISIONS.md, docs/decisions.md "Probes that find a started pod at once") -----
# The startup probe keeps the founding 300 s budget and 8 s timeout, asked every 2 s instead
# of every 10 s: a pod serves a few seconds after its container starts, and a 10 s period
# left it unready for up to 10 s more. Readiness has no initial delay: the startup probe
# holds it back until the API answers, and the kubelet runs it as soon as that succeeds.
STARTUP_PROBE_TIMING = {"periodSeconds": 2, "timeoutSeconds": 8, "failureThreshold": 150}
LIVENESS_PROBE_TIMING = {
    "initialDelaySeconds": 15,
    "periodSeconds": 20,
    "timeoutSeconds": 10,
    "failureThreshold": 3,
}
READINESS_PROBE_TIMING = {
    "periodSeconds": 15,
    "timeoutSeconds": 10,
    "failureThreshold": 3,
}

# --- the cache-maintenance sidecar (reference-spec §4.3) ----------------------------------
DEFAULT_MAINTENANCE_INTERVAL = "5m"
CACHE_POLL_SECONDS = 30
CACHE_MAINTENANCE_RESOURCES = {
    "requests": {"cpu": "25m", "memory": "64Mi"},
    "limits": {"memory": "256Mi"},
}
# Every `poll` seconds: measure what the pruner can reclaim (du -sk, without the cleaner's
# incomplete/, invalid/ and queue/); run a pass (pruner, then cleaner) once `interval` has
# passed or the cache reaches the high-water mark. A failing pass never ends the loop; the
# failure count and the recovery go to stderr. The pipeline's status is cut's, so a failing
# du shows as an empty measurement, which runs a pass rather than reading as an empty cache.
# The shell is the container's PID 1, which ignores a signal it has no handler for: without
# the trap, and with `sleep` in the foreground (a trap runs only when the foreground command
# ends), a deleted pod waited its whole grace period (30 s) for this container, SIGKILL, the
# pod's address and its terminating endpoint held that long (issue 36's timeline). Waiting
# on the sleep lets TERM end the loop at once; a pass under way finishes first.
CACHE_MAINTENANCE_SCRIPT = """\
interval={interval}
poll={poll}
high_water_kib={high_water_kib}
dir={dir}
conf={conf}
elapsed=0
failures=0
trap 'exit 0' TERM INT
while true; do
  sleep "$poll" &
  wait $!
  elapsed=$((elapsed + poll))
  used_kib=$(du -sk --exclude=incomplete --exclude=invalid --exclude=queue "$dir" | cut -f1)
  if [ -z "$used_kib" ]; then
    echo "glance-cache-maintenance unmeasured: could not measure $dir; running a pass anyway" >&2
    used_kib=$high_water_kib
  fi
  if [ "$elapsed" -lt "$interval" ] && [ "$used_kib" -lt "$high_water_kib" ]; then
    continue
  fi
  elapsed=0
  rc=0
  glance-cache-pruner --config-dir "$conf" || rc=1
  glance-cache-cleaner --config-dir "$conf" || rc=1
  if [ "$rc" -eq 0 ]; then
    if [ "$failures" -ne 0 ]; then
      echo "glance-cache-maintenance recovered: after $failures consecutive failures" >&2
    fi
    failures=0
    continue
  fi
  failures=$((failures + 1))
  echo "glance-cache-maintenance failed: $failures consecutive," \\
    "cache at $used_kib KiB of $high_water_kib" >&2
done
"""

# --- Deployment ----------------------------------------------------------------------------
DEFAULT_STRATEGY = {
    "type": "RollingUpdate",
    "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
}
DEFAULT_SPREAD_TOPOLOGY_KEYS = ("topology.kubernetes.io/zone", "kubernetes.io/hostname")


def effective_replicas(spec: Mapping[str, Any]) -> int:
    """``spec.deployment.replicas``; 0 or unset is the default 3."""
    return (spec.get("deployment") or {}).get("replicas") or DEFAULT_REPLICAS


def maintenance_interval_seconds(spec: Mapping[str, Any]) -> int:
    """``imageCache.maintenanceInterval`` in whole seconds (Go truncates); 300 when unset."""
    cache = spec.get("imageCache") or {}
    return int(parse_duration(cache.get("maintenanceInterval") or DEFAULT_MAINTENANCE_INTERVAL))


def _healthcheck_probe(timing: Mapping[str, int]) -> dict[str, Any]:
    return {"httpGet": {"path": HEALTHCHECK_PATH, "port": API_PORT}, **timing}


def _topology_spread_constraints(spec: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
    """The spec's list verbatim (an empty one disables spreading), else zone and hostname."""
    constraints = (spec.get("deployment") or {}).get("topologySpreadConstraints")
    if constraints is not None:
        return copy.deepcopy(list(constraints))
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": selector_labels(name)},
        }
        for key in DEFAULT_SPREAD_TOPOLOGY_KEYS
    ]


def _pod_annotations(artifacts: Artifacts) -> dict[str, str]:
    annotations = {}
    if artifacts.dsn_digest:
        annotations[DB_CONNECTION_HASH_ANNOTATION] = artifacts.dsn_digest
    if artifacts.authtoken_digest:
        annotations[AUTHTOKEN_HASH_ANNOTATION] = artifacts.authtoken_digest
    if artifacts.import_ca_digest:
        annotations[IMPORT_CA_HASH_ANNOTATION] = artifacts.import_ca_digest
    return annotations


def _cache_maintenance_container(spec: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any]:
    if artifacts.image_cache_max_size is None:
        raise ValueError("artifacts.image_cache_max_size is required when spec.imageCache is set")
    script = CACHE_MAINTENANCE_SCRIPT.format(
        interval=maintenance_interval_seconds(spec),
        poll=CACHE_POLL_SECONDS,
        high_water_kib=artifacts.image_cache_max_size // 1024,
        dir=IMAGE_CACHE_PATH,
        conf=CONFIG_DIR,
    )
    return _container(
        CACHE_MAINTENANCE_CONTAINER,
        image_reference(spec),
        ["/bin/sh", "-eu", "-c", script],
        [
            _mount(CONFIG_VOLUME, CONFIG_DIR, read_only=True),
            _mount(IMAGE_CACHE_VOLUME, IMAGE_CACHE_PATH),
            _mount(TMP_VOLUME, TMP_PATH),
        ],
        resources=CACHE_MAINTENANCE_RESOURCES,
    )


def deployment(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The Glance API Deployment; None while no valid config exists (first install)."""
    if not artifacts.config_map:
        return None
    spec = _spec(glance)
    name = _name(glance)
    knobs = spec.get("deployment") or {}
    size = staging_size_limit(spec)
    cache_on = spec.get("imageCache") is not None
    tls_on = db_tls_enabled(spec)
    import_ca = import_ca_secret(spec)

    volumes = [
        _config_volume(artifacts),
        {"name": BACKENDS_VOLUME, "secret": {"secretName": artifacts.backends_secret}},
        _empty_dir(STAGING_VOLUME, size),
        _empty_dir(TASKS_VOLUME, size),
    ]
    mounts = [
        _mount(CONFIG_VOLUME, CONFIG_DIR, read_only=True),
        _mount(BACKENDS_VOLUME, BACKENDS_DIR, read_only=True),
        _mount(STAGING_VOLUME, STAGING_PATH),
        _mount(TASKS_VOLUME, TASKS_PATH),
    ]
    if tls_on:
        volumes.append(_db_tls_volume(spec))
        mounts.append(_mount(DB_TLS_VOLUME, DB_TLS_DIR, read_only=True))
    if cache_on:
        volumes.append(_empty_dir(IMAGE_CACHE_VOLUME, image_cache_size_limit(spec)))
        mounts.append(_mount(IMAGE_CACHE_VOLUME, IMAGE_CACHE_PATH))
    if import_ca:
        volumes.append(_import_ca_volume(import_ca))
        mounts.append(_mount(IMPORT_CA_VOLUME, IMPORT_CA_DIR, read_only=True))
    volumes.append(_tmp_volume())
    mounts.append(_mount(TMP_VOLUME, TMP_PATH))

    user = spec["serviceUser"]
    api = _container(
        API_CONTAINER,
        image_reference(spec),
        uwsgi_command(spec),
        mounts,
        env=[
            _db_connection_env(name),
            _secret_env(
                AUTHTOKEN_PASSWORD_ENV,
                user["secretRef"]["name"],
                user["secretRef"].get("key") or DEFAULT_SECRET_KEY,
            ),
            *self_reference_env(),
            *([{"name": SSL_CERT_FILE_ENV, "value": IMPORT_CA_PATH}] if import_ca else []),
        ],
        ports=[{"name": API_PORT_NAME, "containerPort": API_PORT, "protocol": "TCP"}],
        resources=knobs.get("resources") or {},
        startup_probe=_healthcheck_probe(STARTUP_PROBE_TIMING),
        liveness_probe=_healthcheck_probe(LIVENESS_PROBE_TIMING),
        readiness_probe=_healthcheck_probe(READINESS_PROBE_TIMING),
        lifecycle={
            "preStop": {"exec": {"command": ["/bin/sh", "-c", f"sleep {effective_prestop(spec)}"]}}
        },
    )
    containers = [api]
    if cache_on:
        containers.append(_cache_maintenance_container(spec, artifacts))

    labels = component_labels(name, COMPONENT_API)
    out = _metadata(glance, artifacts, name, labels)
    out["replicas"] = None if spec.get("autoscaling") is not None else effective_replicas(spec)
    out["selector"] = {"matchLabels": selector_labels(name)}
    out["strategy"] = copy.deepcopy(knobs.get("strategy") or DEFAULT_STRATEGY)
    out["pod"] = _pod(
        labels,
        containers,
        volumes,
        annotations=_pod_annotations(artifacts),
        termination_grace_period_seconds=effective_grace(spec),
        priority_class_name=knobs.get("priorityClassName") or None,
        topology_spread_constraints=_topology_spread_constraints(spec, name),
    )
    return out


def service(
    glance: Mapping[str, Any], artifacts: Artifacts, narrow_selector: bool = False
) -> dict[str, Any] | None:
    """The ClusterIP Service on 9292; with the Deployment.

    ``narrow_selector`` adds ``component: api`` (kept out of the db-purge pods); the
    reconcile decides it once the API template has converged, and latches it.
    """
    if not artifacts.config_map:
        return None
    name = _name(glance)
    out = _metadata(glance, artifacts, name, common_labels(name))
    out["type"] = "ClusterIP"
    out["selector"] = selector_labels(name)
    if narrow_selector:
        out["selector"][COMPONENT_LABEL] = COMPONENT_API
    out["ports"] = [{"port": API_PORT, "targetPort": API_PORT, "protocol": "TCP"}]
    return out


def hpa_min_replicas(spec: Mapping[str, Any]) -> int:
    """``autoscaling.minReplicas``, else the effective deployment replicas."""
    return (spec.get("autoscaling") or {}).get("minReplicas") or effective_replicas(spec)


def replica_lower_bound(spec: Mapping[str, Any]) -> int:
    """The HPA's minReplicas while autoscaling is set, else the deployment replicas."""
    if spec.get("autoscaling") is not None:
        return hpa_min_replicas(spec)
    return effective_replicas(spec)


def pdb(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The PodDisruptionBudget; Job pods are kept out by ``job-name DoesNotExist``.

    A lower replica bound of 1 gives ``maxUnavailable: 1`` (``minAvailable: 1`` would block
    every drain), anything higher ``minAvailable: 1``.
    """
    if not artifacts.config_map:
        return None
    spec = _spec(glance)
    name = _name(glance)
    out = _metadata(glance, artifacts, name, common_labels(name))
    out["selector"] = {
        "matchLabels": selector_labels(name),
        "matchExpressions": [{"key": JOB_NAME_LABEL, "operator": "DoesNotExist"}],
    }
    single = replica_lower_bound(spec) <= 1
    out["min_available"] = None if single else 1
    out["max_unavailable"] = 1 if single else None
    return out


def hpa(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The autoscaling/v2 HPA; None when ``spec.autoscaling`` is unset."""
    spec = _spec(glance)
    autoscaling = spec.get("autoscaling")
    if autoscaling is None:
        return None
    name = _name(glance)
    out = _metadata(glance, artifacts, name, common_labels(name))
    out["scale_target_ref"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    out["min_replicas"] = hpa_min_replicas(spec)
    out["max_replicas"] = autoscaling["maxReplicas"]
    out["metrics"] = [
        {
            "type": "Resource",
            "resource": {
                "name": resource,
                "target": {"type": "Utilization", "averageUtilization": autoscaling[field]},
            },
        }
        for resource, field in (
            ("cpu", "targetCPUUtilization"),
            ("memory", "targetMemoryUtilization"),
        )
        if autoscaling.get(field) is not None
    ]
    return out
