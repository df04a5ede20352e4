# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Every decision about the objects a Glance owns, as data for the role templates.

The roles emit objects and decide nothing: each template lays out one object's structure
and inserts the values computed here. One function per owned object returns what its
template needs, or ``None`` when this pass renders no such object; ``desired_objects`` is
the entry point that returns all of them by key.

``None`` means one of two things, and the apply step must tell them apart:

* ``OPTIONAL_OBJECTS`` (``hpa``, ``network_policy``, ``http_route``): the spec block is
  unset, so the object is not wanted and a live one is deleted.
* every other key: the input to build it is not there yet (no valid configuration, so no
  config ConfigMap name; or no DSN), so nothing is written and a live object is kept.

Pure: no I/O, no clock, no randomness. Maps keep a fixed insertion order and every list
has a defined order, so the same inputs give byte-identical manifests. Nothing returned
shares a mutable object with the input or with another part of the output (a YAML dumper
would otherwise write anchors).

Data shape
----------
Every entry carries ``name``, ``namespace``, ``labels`` and ``owner_references`` (the
controller reference to the Glance). A Glance whose children go to a target cluster
(``spec.targetClusterRef``) gives no owner reference, which would name a UID absent on
that cluster, and the ownership labels (``owner_labels``) join ``labels`` instead. The
rest, per key:

* ``config_map``: ``data`` (the ConfigMap data, keys sorted).
* ``backends_secret``, ``db_connection_secret``: ``data`` (base64 values, keys sorted).
* ``deployment``: ``replicas`` (None: omitted, the HPA owns it), ``selector``,
  ``strategy``, ``pod``.
* ``service``: ``type``, ``selector``, ``ports``.
* ``pdb``: ``selector``, ``min_available`` / ``max_unavailable`` (exactly one is set).
* ``hpa``: ``scale_target_ref``, ``min_replicas``, ``max_replicas``, ``metrics``.
* ``network_policy``: ``pod_selector``, ``policy_types``, ``ingress``, ``egress``.
* ``http_route``: ``annotations``, ``parent_refs``, ``hostnames``, ``path``,
  ``backend_refs``, ``timeouts``.
* ``db_sync_job``, ``db_expand_job``, ``db_migrate_job``, ``db_contract_job`` (the
  ``DB_JOBS``, one template): ``annotations`` (the pod-spec hash), ``backoff_limit``,
  ``pod``. At most one of them is set: ``database_job`` names it (the db-sync Job in the
  steady state, the Job of the current upgrade phase during an upgrade, none while an
  upgrade is refused or between phases; ``upgrade.database_job`` decides).
* ``db_purge_cronjob``: ``schedule``, ``suspend``, ``concurrency_policy``,
  ``job_labels``, ``active_deadline_seconds``, ``pod``.
* ``mariadb_database``, ``mariadb_user``, ``mariadb_grant`` (managed mode, the
  ``MARIADB_OBJECTS``; the common labels, which the reference's lack): ``mariadb_ref``, and
  ``character_set``, ``collate``, ``database`` (Database); ``password_secret_key_ref``
  (User); ``privileges``, ``database``, ``table``, ``username`` (Grant). None outside
  managed mode, and the User and Grant None with Dynamic credentials.

A ``pod`` is ``labels``, ``annotations`` ({}: omitted), ``restart_policy`` and
``termination_grace_period_seconds`` and ``priority_class_name`` (None: omitted),
``automount_service_account_token``, ``security_context``,
``topology_spread_constraints`` ([]: omitted), ``containers`` and ``volumes``. A container
is ``name``, ``image``, ``command``, ``env`` and ``ports`` ([]: omitted), ``resources``
(None: omitted), ``volume_mounts``, ``security_context``, and ``startup_probe``,
``liveness_probe``, ``readiness_probe`` and ``lifecycle`` (None: omitted).
:func:`pod_template_object` builds the Kubernetes ``PodTemplateSpec`` a template renders
from a ``pod``; the Job's pod-spec hash is taken over exactly that object.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    DEFAULT_REPLICAS,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_SECRET_KEY,
    POD_INSTANCE_LABEL,
    POD_NAME_LABEL,
    effective_grace,
    effective_prestop,
    http_keepalive_wanted,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    BACKENDS_DIR,
    CONFIG_DIR,
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
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    DB_PASSWORD_KEY,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    DB_TLS_MOUNT_PATH as DB_TLS_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_duration import (
    parse_duration,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_url import (
    URLError,
    parse_url,
    url_port,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import (
    go_quantity_string,
)

# --- keys of desired_objects -------------------------------------------------------------
CONFIG_MAP = "config_map"
BACKENDS_SECRET = "backends_secret"
DB_CONNECTION_SECRET = "db_connection_secret"
DEPLOYMENT = "deployment"
SERVICE = "service"
PDB = "pdb"
HPA = "hpa"
NETWORK_POLICY = "network_policy"
HTTP_ROUTE = "http_route"
DB_SYNC_JOB = "db_sync_job"
DB_EXPAND_JOB = "db_expand_job"
DB_MIGRATE_JOB = "db_migrate_job"
DB_CONTRACT_JOB = "db_contract_job"
DB_PURGE_CRONJOB = "db_purge_cronjob"
MARIADB_DATABASE = "mariadb_database"
MARIADB_USER = "mariadb_user"
MARIADB_GRANT = "mariadb_grant"
OBJECT_KEYS = (
    CONFIG_MAP,
    BACKENDS_SECRET,
    DB_CONNECTION_SECRET,
    MARIADB_DATABASE,
    MARIADB_USER,
    MARIADB_GRANT,
    DEPLOYMENT,
    SERVICE,
    PDB,
    HPA,
    NETWORK_POLICY,
    HTTP_ROUTE,
    DB_SYNC_JOB,
    DB_EXPAND_JOB,
    DB_MIGRATE_JOB,
    DB_CONTRACT_JOB,
    DB_PURGE_CRONJOB,
)
# The three upgrade phase Jobs (reference-spec §4.13), in the order an upgrade runs them.
DB_PHASE_JOBS = (DB_EXPAND_JOB, DB_MIGRATE_JOB, DB_CONTRACT_JOB)
# Every Job that runs glance-manage once against the database, from one template.
DB_JOBS = (DB_SYNC_JOB, *DB_PHASE_JOBS)
# None for these means "spec block unset: delete the live object".
OPTIONAL_OBJECTS = frozenset({HPA, NETWORK_POLICY, HTTP_ROUTE})
# The mariadb-operator resources of managed mode (reference-spec §4.10), all named {name}:
# the Database always, the User and Grant with Static credentials only.
MARIADB_OBJECTS = (MARIADB_DATABASE, MARIADB_USER, MARIADB_GRANT)
MARIADB_API_VERSION = "k8s.mariadb.com/v1alpha1"
MARIADB_CHARACTER_SET = "utf8"
MARIADB_COLLATE = "utf8_general_ci"
MARIADB_PRIVILEGES = ("ALL PRIVILEGES",)
MARIADB_GRANT_TABLE = "*"

# --- labels and annotations --------------------------------------------------------------
APP_NAME = "glance"
MANAGED_BY = "glance-operator"
NAME_LABEL = POD_NAME_LABEL
INSTANCE_LABEL = POD_INSTANCE_LABEL
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
COMPONENT_LABEL = "app.kubernetes.io/component"
COMPONENT_API = "api"
COMPONENT_DB_SYNC = "db-sync"
COMPONENT_DB_PURGE = "db-purge"
CONFIG_BASE_LABEL = "cobaltcore.c5c3.io/config-base"
# The ownership labels of a child on a target cluster (the reference's multicluster ones):
# there, no owner reference can hold, so these name the owner, and the deletion sweep
# selects by them.
OWNER_KIND_LABEL = "openstack.c5c3.io/owner-kind"
OWNER_NAME_LABEL = "openstack.c5c3.io/owner-name"
OWNER_NAMESPACE_LABEL = "openstack.c5c3.io/owner-namespace"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
POD_SPEC_HASH_ANNOTATION = "cobaltcore.c5c3.io/pod-spec-hash"
DB_CONNECTION_HASH_ANNOTATION = "glance.c5c3.io/db-connection-hash"
AUTHTOKEN_HASH_ANNOTATION = "glance.c5c3.io/authtoken-hash"

# --- names -------------------------------------------------------------------------------
CONFIG_SUFFIX = "-config"
BACKENDS_SUFFIX = "-backends"
DB_CONNECTION_SUFFIX = "-db-connection"
DB_SYNC_SUFFIX = "-db-sync"
DB_EXPAND_SUFFIX = "-db-expand"
DB_MIGRATE_SUFFIX = "-db-migrate"
DB_CONTRACT_SUFFIX = "-db-contract"
# A longer Glance name gets a hashed db-purge name: CronJob names are capped at 52.

# --- ports, paths, identities ------------------------------------------------------------
API_PORT = 9292
API_PORT_NAME = "glance-api"
API_CONTAINER = "glance-api"
CACHE_MAINTENANCE_CONTAINER = "cache-maintenance"
DB_SYNC_CONTAINER = "db-sync"
DB_PURGE_CONTAINER = "db-purge"
OPENSTACK_UID = 42424  # the "openstack" user and group of the Glance image
TMP_PATH = "/tmp"
WSGI_SCRIPT = "/var/lib/openstack/bin/glance-wsgi-api"
METADEFS_PATH = "/var/lib/openstack/etc/glance/metadefs"
HEALTHCHECK_PATH = "/healthcheck"
DB_CONNECTION_KEY = "connection"
DB_CONNECTION_ENV = "OS_DATABASE__CONNECTION"
AUTHTOKEN_PASSWORD_ENV = "OS_KEYSTONE_AUTHTOKEN__PASSWORD"
# Each API pod's own URL, glance's [DEFAULT] worker_self_reference_url (oslo.config reads
# OS_<GROUP>__<OPTION> from the environment, over the files): the pod IP from the downward
# API, expanded by the kubelet (dependent environment variables). With it glance records
# the pod that staged an image (os_glance_stage_host) and forwards a later import or
# delete to it (docs/import.md). An IPv6 pod IP gives http://fd00::1:9292, which no HTTP
# client parses; the image's glance-wsgi-api shim brackets it before glance reads it.
POD_IP_ENV = "POD_IP"
POD_IP_FIELD = "status.podIP"
SELF_REFERENCE_URL_ENV = "OS_DEFAULT__WORKER_SELF_REFERENCE_URL"
SELF_REFERENCE_URL = f"http://$({POD_IP_ENV}):{{port}}"
TLS_CA_FILE = "ca.crt"
TLS_CERT_FILE = "tls.crt"
TLS_KEY_FILE = "tls.key"
DB_TLS_DEFAULT_MODE = 0o400  # owner read only; 256 in JSON
TLS_DISABLED_MODES = ("", "disabled")
DEFAULT_DB_PORT = 3306
DNS_PORT = 53
MEMCACHED_PORT = 11211
MAX_PORT = 65535
SCHEME_PORTS = {"https": 443, "http": 80}

# --- volumes -----------------------------------------------------------------------------
CONFIG_VOLUME = "config"
BACKENDS_VOLUME = "backends"
STAGING_VOLUME = "staging"
TASKS_VOLUME = "tasks-work"
DB_TLS_VOLUME = "db-tls"
IMAGE_CACHE_VOLUME = "image-cache"
TMP_VOLUME = "tmp"
DEFAULT_STAGING_SIZE = "10Gi"
DEFAULT_IMAGE_CACHE_SIZE = "10Gi"
# The read-only root filesystem leaves no writable /tmp; Python's tempfile, sqlite's temp
# files (the cache pruner) and uWSGI fall back to it. Small: the image data goes to the
# staging, tasks-work and image-cache volumes, never here.
TMP_SIZE_LIMIT = "1Gi"

# --- the uWSGI command (reference-spec §4.2) ---------------------------------------------
UWSGI_DEFAULT_PROCESSES = 2
UWSGI_DEFAULT_THREADS = 1
UWSGI_LOG_FORMAT = (
    "%(method) %(uri) => generated %(rsize) bytes in %(msecs) msecs (%(proto) %(status))"
)
UWSGI_PYARGV = f"--config-dir {CONFIG_DIR} --config-dir {BACKENDS_DIR}"
# uWSGI parses each chunk of a chunked request body, with its size line and CRLF, into a
# buffer capped by --chunked-input-limit (default 1 MiB, core/chunked.c): a 1 MiB chunk,
# what python-glanceclient and Cinder send, does not fit and the upload fails with a 500.
# 16 MiB leaves room for clients with larger chunks; the buffer only grows to the largest
# chunk actually received, so the limit costs no memory on its own.
UWSGI_CHUNKED_INPUT_LIMIT = 16 * 1024 * 1024
# Without keep-alive (the default) the workers serve HTTP themselves (--http-socket) and
# every response says "Connection: close": each byte is copied once, and no idle
# connection can hold a worker (docs/upload.md). With keep-alive uWSGI's HTTP router
# (--http) holds the client connections, idle ones included, without a worker, and copies
# every byte once more through a buffer of this size (default: the page size, 4 KiB). 32
# KiB halves the router's CPU per byte moved; larger buffers gain little more and reset a
# chunked upload now and then (docs/upload.md).
UWSGI_HTTP_BUFFER_SIZE = 32 * 1024
UWSGI_CLOSE_EVERY_RESPONSE = "Connection: close"
# How long a request may stay silent in the middle (a client pausing mid-body or mid-
# download, or glance busy with the store without a byte moving) before uWSGI cuts it: the
# workers' --socket-timeout, which also bounds reading a chunked body (default 4 s: a
# client's short pause failed its upload), and the router's --http-timeout. Five minutes,
# the default stream idle timeout of Envoy, the gateway in front; the request's whole
# duration stays capped by harakiri and the HTTPRoute timeout (docs/upload.md).
UWSGI_TRANSFER_IDLE_TIMEOUT = 300
# With the router: what it allowed before the transfer timeout grew (its --http-timeout
# default): a new connection's request headers, and an idle kept-alive connection, get 60 s.
UWSGI_HEADERS_TIMEOUT = 60
UWSGI_KEEPALIVE_IDLE_TIMEOUT = 60

# --- probes (DECISIONS.md) -----------------------------------------------------------------
STARTUP_PROBE_TIMING = {"periodSeconds": 10, "timeoutSeconds": 8, "failureThreshold": 30}
LIVENESS_PROBE_TIMING = {
    "initialDelaySeconds": 15,
    "periodSeconds": 20,
    "timeoutSeconds": 10,
    "failureThreshold": 3,
}
READINESS_PROBE_TIMING = {
    "initialDelaySeconds": 10,
    "periodSeconds": 15,
    "timeoutSeconds": 10,
    "failureThreshold": 3,
}

# --- security contexts (Pod Security Standard "restricted") -------------------------------
RUNTIME_DEFAULT_SECCOMP = {"type": "RuntimeDefault"}
POD_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "fsGroup": OPENSTACK_UID,
    "seccompProfile": RUNTIME_DEFAULT_SECCOMP,
}
CONTAINER_SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "runAsUser": OPENSTACK_UID,
    "runAsGroup": OPENSTACK_UID,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": RUNTIME_DEFAULT_SECCOMP,
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

# --- database Jobs (reference-spec §4.11, §4.12) ------------------------------------------
GLANCE_MANAGE = f"glance-manage --config-dir {CONFIG_DIR}"
# load_metadefs --merge: without it every namespace that exists is skipped, so a new
# release's db-sync would never load the definitions it adds to a shipped namespace (the
# reference's stated intent, §4.13, which its command does not do). --merge only adds:
# what the database holds (an admin's edits included) is never changed or removed.
# --prefer_new would also overwrite each shipped namespace's visibility and owner and
# every shipped definition on each run (every config change re-runs db-sync); not chosen.
DB_SYNC_SCRIPT = (
    f"{GLANCE_MANAGE} db sync && {GLANCE_MANAGE} db load_metadefs --path {METADEFS_PATH} --merge"
)
DB_SYNC_BACKOFF_LIMIT = 4
# Per database Job: its name suffix, which is also its container's name and its component
# label without the leading "-", and the script it runs (reference-spec §4.11, §4.13).
DB_JOB_SPECS = {
    DB_SYNC_JOB: (DB_SYNC_SUFFIX, DB_SYNC_SCRIPT),
    DB_EXPAND_JOB: (DB_EXPAND_SUFFIX, f"{GLANCE_MANAGE} db expand"),
    DB_MIGRATE_JOB: (DB_MIGRATE_SUFFIX, f"{GLANCE_MANAGE} db migrate"),
    DB_CONTRACT_JOB: (DB_CONTRACT_SUFFIX, f"{GLANCE_MANAGE} db contract"),
}
DEFAULT_PURGE_SCHEDULE = "1 0 * * *"
PURGE_MAX_ROWS = 1000
PURGE_ACTIVE_DEADLINE_SECONDS = 3600
PURGE_CONCURRENCY_POLICY = "Forbid"

# --- HPA, PDB, HTTPRoute -------------------------------------------------------------------
ROUTE_REQUEST_TIMEOUT = "4h"  # no CR field: long transfers pass, a stalled one is still cut
ROUTE_PATH_TYPE = "PathPrefix"
DEFAULT_ROUTE_PATH = "/"
DEFAULT_STRATEGY = {
    "type": "RollingUpdate",
    "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
}
DEFAULT_SPREAD_TOPOLOGY_KEYS = ("topology.kubernetes.io/zone", "kubernetes.io/hostname")

_PORT_DIGITS = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Artifacts:
    """What the other compute steps produced for this pass, handed in.

    ``config_map`` and ``backends_secret`` are the content-addressed names
    (``{name}-config-<hash8>``, ``{name}-backends-<hash8>``); ``config_map`` is ``""``
    while no valid configuration exists. ``dsn`` is None when the database Secret gate
    failed. ``s3_hosts`` are the ``s3.host`` URLs of every attached backend.
    ``image_cache_max_size`` (bytes) is required when ``spec.imageCache`` is set.
    ``owner`` is the Glance's ``apiVersion``, ``kind``, ``name`` and ``uid``.
    """

    config_map: str
    backends_secret: str
    config_data: Mapping[str, str]
    backends_data: Mapping[str, str]
    dsn: str | None
    dsn_digest: str | None
    authtoken_digest: str | None
    s3_hosts: Sequence[str]
    image_cache_max_size: int | None
    owner: Mapping[str, str]


# ---------------------------------------------------------------------------------------
# small pieces shared by several objects


def _spec(glance: Mapping[str, Any]) -> Mapping[str, Any]:
    return glance.get("spec") or {}


def _name(glance: Mapping[str, Any]) -> str:
    return glance["metadata"]["name"]


def _namespace(glance: Mapping[str, Any]) -> str:
    return glance["metadata"]["namespace"]


def common_labels(name: str) -> dict[str, str]:
    """The labels every owned object carries."""
    return {NAME_LABEL: APP_NAME, INSTANCE_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY}


def selector_labels(name: str) -> dict[str, str]:
    """The immutable Deployment selector: name and instance."""
    return {NAME_LABEL: APP_NAME, INSTANCE_LABEL: name}


def component_labels(name: str, component: str) -> dict[str, str]:
    """The common labels plus ``app.kubernetes.io/component``."""
    return {**common_labels(name), COMPONENT_LABEL: component}


def owner_references(owner: Mapping[str, str]) -> list[dict[str, Any]]:
    """The controller reference to the Glance, for garbage collection."""
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["name"],
            "uid": owner["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def target_cluster(glance: Mapping[str, Any]) -> str | None:
    """The registered cluster ``spec.targetClusterRef`` names, or None: this cluster."""
    ref = _spec(glance).get("targetClusterRef")
    return str(ref.get("name") or "") if isinstance(ref, Mapping) else None


def owner_labels(kind: str, name: str, namespace: str) -> dict[str, str]:
    """The labels that name the owner of a child on a target cluster."""
    return {OWNER_KIND_LABEL: kind, OWNER_NAME_LABEL: name, OWNER_NAMESPACE_LABEL: namespace}


def _metadata(
    glance: Mapping[str, Any], artifacts: Artifacts, name: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    if target_cluster(glance) is not None:
        owner = artifacts.owner
        return {
            "name": name,
            "namespace": _namespace(glance),
            "labels": {**labels, **owner_labels(owner["kind"], owner["name"], _namespace(glance))},
            "owner_references": [],
        }
    return {
        "name": name,
        "namespace": _namespace(glance),
        "labels": dict(labels),
        "owner_references": owner_references(artifacts.owner),
    }


def image_reference(spec: Mapping[str, Any]) -> str:
    """``repository@digest`` when a digest is set, else ``repository:tag``."""
    image = spec["image"]
    if image.get("digest"):
        return f"{image['repository']}@{image['digest']}"
    return f"{image['repository']}:{image['tag']}"


def _b64(value: str) -> str:
    return base64.b64encode(value.encode("utf-8")).decode("ascii")


def effective_replicas(spec: Mapping[str, Any]) -> int:
    """``spec.deployment.replicas``; 0 or unset is the default 3."""
    return (spec.get("deployment") or {}).get("replicas") or DEFAULT_REPLICAS


def db_tls_enabled(spec: Mapping[str, Any]) -> bool:
    """Database TLS is on when ``database.tls.mode`` is set and not ``disabled``."""
    tls = (spec.get("database") or {}).get("tls") or {}
    return (tls.get("mode") or "") not in TLS_DISABLED_MODES


def staging_size_limit(spec: Mapping[str, Any]) -> str | None:
    """The sizeLimit of both scratch volumes: the spec's, else 10Gi; None when unbounded."""
    staging = spec.get("staging") or {}
    if staging.get("unbounded"):
        return None
    return go_quantity_string(staging.get("sizeLimit") or DEFAULT_STAGING_SIZE)


def image_cache_size_limit(spec: Mapping[str, Any]) -> str:
    """The sizeLimit of the image-cache volume: the spec's, else 10Gi."""
    cache = spec.get("imageCache") or {}
    return go_quantity_string(cache.get("sizeLimit") or DEFAULT_IMAGE_CACHE_SIZE)


def maintenance_interval_seconds(spec: Mapping[str, Any]) -> int:
    """``imageCache.maintenanceInterval`` in whole seconds (Go truncates); 300 when unset."""
    cache = spec.get("imageCache") or {}
    return int(parse_duration(cache.get("maintenanceInterval") or DEFAULT_MAINTENANCE_INTERVAL))


def _empty_dir(name: str, size_limit: str | None) -> dict[str, Any]:
    source = {"sizeLimit": size_limit} if size_limit is not None else {}
    return {"name": name, "emptyDir": source}


def _mount(name: str, path: str, read_only: bool = False) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": name, "mountPath": path}
    if read_only:
        mount["readOnly"] = True
    return mount


def _config_volume(artifacts: Artifacts) -> dict[str, Any]:
    return {"name": CONFIG_VOLUME, "configMap": {"name": artifacts.config_map}}


def _db_tls_volume(spec: Mapping[str, Any]) -> dict[str, Any]:
    """ca.crt from the CA bundle Secret, tls.crt and tls.key from the client Secret."""
    tls = spec["database"]["tls"]
    return {
        "name": DB_TLS_VOLUME,
        "projected": {
            "defaultMode": DB_TLS_DEFAULT_MODE,
            "sources": [
                {
                    "secret": {
                        "name": tls["caBundleSecretRef"]["name"],
                        "items": [{"key": TLS_CA_FILE, "path": TLS_CA_FILE}],
                    }
                },
                {
                    "secret": {
                        "name": tls["clientCertSecretRef"]["name"],
                        "items": [
                            {"key": TLS_CERT_FILE, "path": TLS_CERT_FILE},
                            {"key": TLS_KEY_FILE, "path": TLS_KEY_FILE},
                        ],
                    }
                },
            ],
        },
    }


def _tmp_volume() -> dict[str, Any]:
    return _empty_dir(TMP_VOLUME, TMP_SIZE_LIMIT)


def _secret_env(env_name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": env_name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def _db_connection_env(name: str) -> dict[str, Any]:
    return _secret_env(DB_CONNECTION_ENV, name + DB_CONNECTION_SUFFIX, DB_CONNECTION_KEY)


def self_reference_env() -> list[dict[str, Any]]:
    """``POD_IP`` from the downward API, then the pod's URL built from it.

    Order matters: the kubelet expands ``$(POD_IP)`` only from variables defined earlier.
    """
    return [
        {"name": POD_IP_ENV, "valueFrom": {"fieldRef": {"fieldPath": POD_IP_FIELD}}},
        {"name": SELF_REFERENCE_URL_ENV, "value": SELF_REFERENCE_URL.format(port=API_PORT)},
    ]


def _container(
    name: str,
    image: str,
    command: list[str],
    volume_mounts: list[dict[str, Any]],
    *,
    env: list[dict[str, Any]] | None = None,
    ports: list[dict[str, Any]] | None = None,
    resources: Mapping[str, Any] | None = None,
    startup_probe: dict[str, Any] | None = None,
    liveness_probe: dict[str, Any] | None = None,
    readiness_probe: dict[str, Any] | None = None,
    lifecycle: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "command": command,
        "env": env or [],
        "ports": ports or [],
        "resources": copy.deepcopy(dict(resources)) if resources is not None else None,
        "volume_mounts": volume_mounts,
        "security_context": copy.deepcopy(CONTAINER_SECURITY_CONTEXT),
        "startup_probe": startup_probe,
        "liveness_probe": liveness_probe,
        "readiness_probe": readiness_probe,
        "lifecycle": lifecycle,
    }


def _pod(
    labels: Mapping[str, str],
    containers: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    *,
    annotations: Mapping[str, str] | None = None,
    restart_policy: str | None = None,
    termination_grace_period_seconds: int | None = None,
    priority_class_name: str | None = None,
    topology_spread_constraints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "labels": dict(labels),
        "annotations": dict(annotations or {}),
        "restart_policy": restart_policy,
        "termination_grace_period_seconds": termination_grace_period_seconds,
        "priority_class_name": priority_class_name,
        "automount_service_account_token": False,
        "security_context": copy.deepcopy(POD_SECURITY_CONTEXT),
        "topology_spread_constraints": topology_spread_constraints or [],
        "containers": containers,
        "volumes": volumes,
    }


def _container_object(container: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": container["name"],
        "image": container["image"],
        "command": container["command"],
    }
    if container["env"]:
        out["env"] = container["env"]
    if container["ports"]:
        out["ports"] = container["ports"]
    if container["resources"] is not None:
        out["resources"] = container["resources"]
    for key, field in (
        ("startup_probe", "startupProbe"),
        ("liveness_probe", "livenessProbe"),
        ("readiness_probe", "readinessProbe"),
        ("lifecycle", "lifecycle"),
    ):
        if container[key] is not None:
            out[field] = container[key]
    out["volumeMounts"] = container["volume_mounts"]
    out["securityContext"] = container["security_context"]
    return out


def pod_template_object(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The ``PodTemplateSpec`` the templates render from ``pod``, field for field.

    The templates lay out the same fields in the same order; a test keeps the two equal.
    """
    metadata: dict[str, Any] = {"labels": pod["labels"]}
    if pod["annotations"]:
        metadata["annotations"] = pod["annotations"]
    spec: dict[str, Any] = {}
    if pod["restart_policy"] is not None:
        spec["restartPolicy"] = pod["restart_policy"]
    if pod["termination_grace_period_seconds"] is not None:
        spec["terminationGracePeriodSeconds"] = pod["termination_grace_period_seconds"]
    if pod["priority_class_name"] is not None:
        spec["priorityClassName"] = pod["priority_class_name"]
    spec["automountServiceAccountToken"] = pod["automount_service_account_token"]
    spec["securityContext"] = pod["security_context"]
    if pod["topology_spread_constraints"]:
        spec["topologySpreadConstraints"] = pod["topology_spread_constraints"]
    spec["containers"] = [_container_object(c) for c in pod["containers"]]
    spec["volumes"] = pod["volumes"]
    return copy.deepcopy({"metadata": metadata, "spec": spec})


def pod_spec_hash(pod: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON (sorted keys, no spaces) of the pod template.

    A Job whose annotation differs from this is re-created (the rerun key).
    """
    canonical = json.dumps(
        pod_template_object(pod), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------
# config ConfigMap, backends Secret, db-connection Secret


def config_map(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The immutable, content-addressed ConfigMap; None while no valid config exists."""
    if not artifacts.config_map:
        return None
    name = _name(glance)
    labels = {**common_labels(name), CONFIG_BASE_LABEL: name + CONFIG_SUFFIX}
    out = _metadata(glance, artifacts, artifacts.config_map, labels)
    out["data"] = {key: artifacts.config_data[key] for key in sorted(artifacts.config_data)}
    return out


def backends_secret(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The immutable, content-addressed backends Secret (``data`` base64-encoded)."""
    if not artifacts.backends_secret:
        return None
    name = _name(glance)
    labels = {**common_labels(name), CONFIG_BASE_LABEL: name + BACKENDS_SUFFIX}
    out = _metadata(glance, artifacts, artifacts.backends_secret, labels)
    out["data"] = {
        key: _b64(artifacts.backends_data[key]) for key in sorted(artifacts.backends_data)
    }
    return out


def db_connection_secret(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """``{name}-db-connection`` holding the DSN under ``connection``; None without a DSN."""
    if artifacts.dsn is None:
        return None
    name = _name(glance)
    out = _metadata(glance, artifacts, name + DB_CONNECTION_SUFFIX, common_labels(name))
    out["data"] = {DB_CONNECTION_KEY: _b64(artifacts.dsn)}
    return out


# ---------------------------------------------------------------------------------------
# managed mode: the mariadb-operator Database, User and Grant (reference-spec §4.10)
#
# They live here with the other owned objects (docs/architecture.md: "an owned object: its
# decisions in desired/desired_objects.py"); desired/ is at its twelve files, and these are
# three small functions of the same shape as the rest, not a module of their own.


def _mariadb_metadata(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any]:
    # The reference leaves them unlabelled; ours carry the common labels like every other
    # owned object, so `kubectl get databases,users,grants -l app.kubernetes.io/instance=`
    # finds them (labels add nothing a cluster switching operators would have to edit).
    name = _name(glance)
    return _metadata(glance, artifacts, name, common_labels(name))


def _mariadb_ref(spec: Mapping[str, Any]) -> dict[str, str]:
    return {"name": spec["database"]["clusterRef"]["name"]}


def _static_managed(spec: Mapping[str, Any]) -> bool:
    database = spec.get("database") or {}
    return database.get("clusterRef") is not None and database.get("credentialsMode") != "Dynamic"


def mariadb_database(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The ``Database`` ``{name}`` on the MariaDB of ``clusterRef``; None outside managed mode."""
    spec = _spec(glance)
    if (spec.get("database") or {}).get("clusterRef") is None:
        return None
    out = _mariadb_metadata(glance, artifacts)
    out["mariadb_ref"] = _mariadb_ref(spec)
    out["character_set"] = MARIADB_CHARACTER_SET
    out["collate"] = MARIADB_COLLATE
    out["database"] = spec["database"]["database"]
    return out


def mariadb_user(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The ``User`` ``{name}`` with the password of ``database.secretRef`` (key ``password``);
    None unless managed with Static credentials. ``maxUserConnections`` stays unset."""
    spec = _spec(glance)
    if not _static_managed(spec):
        return None
    out = _mariadb_metadata(glance, artifacts)
    out["mariadb_ref"] = _mariadb_ref(spec)
    out["password_secret_key_ref"] = {
        "name": spec["database"]["secretRef"]["name"],
        "key": DB_PASSWORD_KEY,
    }
    return out


def mariadb_grant(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The ``Grant`` ``{name}``: ALL PRIVILEGES on ``<database>.*`` to the User ``{name}``;
    None unless managed with Static credentials."""
    spec = _spec(glance)
    if not _static_managed(spec):
        return None
    out = _mariadb_metadata(glance, artifacts)
    out["mariadb_ref"] = _mariadb_ref(spec)
    out["privileges"] = list(MARIADB_PRIVILEGES)
    out["database"] = spec["database"]["database"]
    out["table"] = MARIADB_GRANT_TABLE
    out["username"] = _name(glance)
    return out


# ---------------------------------------------------------------------------------------
# the API: Deployment, Service, PDB, HPA


UWSGI_CLOSE_AFTER_CHUNKED = "contains:${HTTP_TRANSFER_ENCODING};chunked addheader:Connection: close"
UWSGI_GRACEFUL_SIGTERM = "unix_signal:15 gracefully_kill_them_all"


def uwsgi_keepalive(uwsgi: Mapping[str, Any]) -> int | None:
    """The idle seconds of HTTP keep-alive the uWSGI block asks for; None for none.

    Keep-alive is on when ``httpKeepAlive`` is true, or when it is unset and
    ``httpKeepAliveTimeout`` is given (``http_keepalive_wanted``, the webhook's default);
    off otherwise. Its idle timeout is ``httpKeepAliveTimeout`` when positive, else 60, at
    least 2 (uWSGI reads ``--http-keepalive=1`` as "on" without a timeout of its own).
    """
    if not http_keepalive_wanted(uwsgi):
        return None
    timeout = uwsgi.get("httpKeepAliveTimeout")
    timeout = timeout if isinstance(timeout, int) and timeout > 0 else None
    return max(timeout or UWSGI_KEEPALIVE_IDLE_TIMEOUT, 2)


def uwsgi_command(spec: Mapping[str, Any]) -> list[str]:
    """The uWSGI launch command of reference-spec §4.2, tuned for the image upload path.

    Two HTTP fronts (docs/upload.md). Without keep-alive (``uwsgi_keepalive``: the default)
    the workers serve HTTP themselves (``--http-socket``) and every response announces
    ``Connection: close``. With keep-alive uWSGI's HTTP router holds the connections
    (``--http``, its buffer size and header timeout, ``--http-keepalive=<idle seconds>``,
    chunked input through the router, the close announced after a chunked request); uWSGI
    2.0 has no ``--http-keepalive-timeout``, the reference's token: it refuses to start.
    Both: the transfer timeout, the chunked-input limit and the graceful SIGTERM.
    ``harakiri`` is emitted only when positive; processes and threads below 1 fall back to
    2 and 1.
    """
    uwsgi = (spec.get("apiServer") or {}).get("uwsgi") or {}
    processes = uwsgi.get("processes") or 0
    threads = uwsgi.get("threads") or 0
    processes = processes if processes >= 1 else UWSGI_DEFAULT_PROCESSES
    threads = threads if threads >= 1 else UWSGI_DEFAULT_THREADS
    keepalive = uwsgi_keepalive(uwsgi)
    if keepalive is None:
        # One request per connection, said in every response: a client (or the gateway)
        # never reuses a connection the worker has closed, and no idle connection holds
        # one of the pod's processes x threads request slots.
        command = [
            "uwsgi",
            "--http-socket",
            f":{API_PORT}",
            "--add-header",
            UWSGI_CLOSE_EVERY_RESPONSE,
            "--socket-timeout",
            str(UWSGI_TRANSFER_IDLE_TIMEOUT),
            "--chunked-input-limit",
            str(UWSGI_CHUNKED_INPUT_LIMIT),
        ]
    else:
        command = [
            "uwsgi",
            "--http",
            f":{API_PORT}",
            "--http-buffer-size",
            str(UWSGI_HTTP_BUFFER_SIZE),
            "--http-timeout",
            str(UWSGI_TRANSFER_IDLE_TIMEOUT),
            "--http-headers-timeout",
            str(UWSGI_HEADERS_TIMEOUT),
            "--socket-timeout",
            str(UWSGI_TRANSFER_IDLE_TIMEOUT),
            "--http-auto-chunked",
            "--http-chunked-input",
            "--chunked-input-limit",
            str(UWSGI_CHUNKED_INPUT_LIMIT),
            f"--http-keepalive={keepalive}",
            # uWSGI's HTTP router closes a connection after a chunked request without
            # saying so; the client's next request on it then fails. Announce the close.
            "--route-if",
            UWSGI_CLOSE_AFTER_CHUNKED,
        ]
    # uWSGI 2.0 takes SIGTERM as a brutal reload: in-flight uploads are cut and the master
    # exits 1. Make SIGTERM the graceful shutdown the kubelet expects (tests/e2e).
    command += ["--hook-master-start", UWSGI_GRACEFUL_SIGTERM]
    command += [
        "--log-master",
        "--log-format",
        UWSGI_LOG_FORMAT,
        "--wsgi-file",
        WSGI_SCRIPT,
        "--master",
        "--lazy-apps",
        "--need-app",
        "--processes",
        str(processes),
        "--threads",
        str(threads),
        "--pyargv",
        UWSGI_PYARGV,
    ]
    harakiri = uwsgi.get("harakiri")
    if harakiri is not None and harakiri > 0:
        command += ["--harakiri", str(harakiri)]
    return command


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


# ---------------------------------------------------------------------------------------
# exposure: NetworkPolicy, HTTPRoute


def _split_host_port_port(hostport: str) -> str | None:
    """The port part of Go's ``net.SplitHostPort``, or None where Go returns an error."""
    last = hostport.rfind(":")
    if last < 0:
        return None
    start, end_bracket = 0, 0
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or end + 1 != last:
            return None
        start, end_bracket = 1, end + 1
    elif ":" in hostport[:last]:
        return None
    if "[" in hostport[start:] or "]" in hostport[end_bracket:]:
        return None
    return hostport[last + 1 :]


def _valid_port(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 32)`` then the 1-65535 range, or None."""
    if not _PORT_DIGITS.fullmatch(text):
        return None
    port = int(text)
    return port if 0 < port <= MAX_PORT else None


def cache_egress_ports(spec: Mapping[str, Any]) -> list[int]:
    """11211 for a clusterRef; else each server's port (11211 when absent or invalid).

    Deduplicated, in first-seen order.
    """
    cache = spec.get("cache") or {}
    servers = cache.get("servers") or []
    if not servers:
        return [MEMCACHED_PORT] if cache.get("clusterRef") is not None else []
    ports: list[int] = []
    for server in servers:
        text = _split_host_port_port(server)
        port = (_valid_port(text) if text is not None else None) or MEMCACHED_PORT
        if port not in ports:
            ports.append(port)
    return ports


def s3_egress_ports(hosts: Sequence[str]) -> list[int]:
    """Each backend URL's port, or 443/80 by scheme; unusable URLs skipped; sorted, unique."""
    ports = set()
    for host in hosts:
        try:
            url = parse_url(host)
        except URLError:
            continue
        if not url.hostname:
            continue
        port = _valid_port(url.port) if url.port else SCHEME_PORTS.get(url.scheme)
        if port is not None:
            ports.add(port)
    return sorted(ports)


def keystone_port(endpoint: str) -> int:
    """The port of a Keystone URL: explicit, else 80 for http, else 443 (fail closed)."""
    try:
        port = url_port(endpoint)
    except URLError:
        return 443
    if port is not None and 0 < port <= MAX_PORT:
        return port
    return 80 if parse_url(endpoint).scheme == "http" else 443


def keystone_egress_ports(spec: Mapping[str, Any]) -> list[int]:
    """The ports of ``keystoneEndpoint`` and ``keystonePublicEndpoint``; sorted, unique."""
    endpoints = [spec["keystoneEndpoint"]]
    if spec.get("keystonePublicEndpoint"):
        endpoints.append(spec["keystonePublicEndpoint"])
    return sorted({keystone_port(endpoint) for endpoint in endpoints})


def _tcp_rule(ports: Sequence[int]) -> dict[str, Any]:
    return {"ports": [{"protocol": "TCP", "port": port} for port in ports]}


def _sibling_pods(name: str) -> list[dict[str, Any]]:
    """The peer "pods of this Glance, in its namespace": the Deployment's selector labels."""
    return [{"podSelector": {"matchLabels": selector_labels(name)}}]


def sibling_egress_rule(name: str) -> dict[str, Any]:
    """To the other pods of this Glance on the API port: glance forwards a staged import."""
    return {**_tcp_rule([API_PORT]), "to": _sibling_pods(name)}


def egress_rules(
    spec: Mapping[str, Any], s3_hosts: Sequence[str], name: str
) -> list[dict[str, Any]]:
    """The egress rules, in order: DNS, database, cache, S3, Keystone, sibling pods,
    additionalEgress.

    The derived rules restrict ports only, never the destination, except the rule to the
    sibling pods (a pod forwards an import or delete of an image another pod staged,
    ``worker_self_reference_url``), which admits only this Glance's pods on 9292. Ports
    are deduplicated within a rule, not across rules, so each rule depends on its own
    input alone. Keystone follows the reference's four derived rules, so their positions
    stay the reference's; the user's rules come last, verbatim.
    """
    database = spec.get("database") or {}
    rules = [
        {"ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}]},
        _tcp_rule([database.get("port") or DEFAULT_DB_PORT]),
    ]
    for ports in (
        cache_egress_ports(spec),
        s3_egress_ports(s3_hosts),
        keystone_egress_ports(spec),
    ):
        if ports:
            rules.append(_tcp_rule(ports))
    rules.append(sibling_egress_rule(name))
    rules += copy.deepcopy(list((spec.get("networkPolicy") or {}).get("additionalEgress") or []))
    return rules


def _namespace_peer(namespace: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}}


def ingress_peers(
    glance: Mapping[str, Any], operator_namespace: str | None = None
) -> list[dict[str, Any]]:
    """The spec's sources, the Gateway's namespace, the operator's namespace, then the
    other pods of this Glance (a forwarded import or delete of a staged image)."""
    spec = _spec(glance)
    peers = []
    for source in (spec.get("networkPolicy") or {}).get("ingress") or []:
        peer = {}
        if source.get("namespaceSelector") is not None:
            peer["namespaceSelector"] = copy.deepcopy(source["namespaceSelector"])
        if source.get("podSelector") is not None:
            peer["podSelector"] = copy.deepcopy(source["podSelector"])
        peers.append(peer)
    gateway = spec.get("gateway")
    if gateway is not None:
        peers.append(_namespace_peer(gateway["parentRef"].get("namespace") or _namespace(glance)))
    if operator_namespace:
        peers.append(_namespace_peer(operator_namespace))
    peers += _sibling_pods(_name(glance))
    return peers


def network_policy(
    glance: Mapping[str, Any], artifacts: Artifacts, operator_namespace: str | None = None
) -> dict[str, Any] | None:
    """The per-Glance NetworkPolicy; None when ``spec.networkPolicy`` is unset.

    Raises ValueError for an empty ingress list (schema and webhook reject it): a rule
    with no peers would admit everyone, so the policy fails closed instead.
    """
    spec = _spec(glance)
    policy = spec.get("networkPolicy")
    if policy is None:
        return None
    if not policy.get("ingress"):
        raise ValueError(
            "spec.networkPolicy.ingress must not be empty: refusing to create a "
            "NetworkPolicy that would allow all ingress"
        )
    name = _name(glance)
    out = _metadata(glance, artifacts, name, common_labels(name))
    out["pod_selector"] = {"matchLabels": selector_labels(name)}
    out["policy_types"] = ["Ingress", "Egress"]
    out["ingress"] = [
        {
            "ports": [{"protocol": "TCP", "port": API_PORT}],
            "from": ingress_peers(glance, operator_namespace),
        }
    ]
    out["egress"] = egress_rules(spec, artifacts.s3_hosts, name)
    return out


def route_path(gateway: Mapping[str, Any]) -> str:
    """``gateway.path`` with a leading ``/``; ``/`` when empty."""
    path = gateway.get("path") or DEFAULT_ROUTE_PATH
    return path if path.startswith("/") else "/" + path


def http_route(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The gateway.networking.k8s.io/v1 HTTPRoute; None when ``spec.gateway`` is unset."""
    gateway = _spec(glance).get("gateway")
    if gateway is None:
        return None
    name = _name(glance)
    parent = gateway["parentRef"]
    out = _metadata(glance, artifacts, name, common_labels(name))
    out["annotations"] = dict(gateway.get("annotations") or {})
    out["parent_refs"] = [
        {key: parent[key] for key in ("name", "namespace", "sectionName") if parent.get(key)}
    ]
    out["hostnames"] = [gateway["hostname"]]
    out["path"] = {"type": ROUTE_PATH_TYPE, "value": route_path(gateway)}
    out["backend_refs"] = [{"kind": "Service", "name": name, "port": API_PORT}]
    out["timeouts"] = {"request": ROUTE_REQUEST_TIMEOUT}
    return out


# ---------------------------------------------------------------------------------------
# database: db-sync Job, db-purge CronJob


def _database_pod(
    spec: Mapping[str, Any],
    artifacts: Artifacts,
    name: str,
    container: str,
    script: str,
    restart_policy: str,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """A pod that runs glance-manage against the database: the config, the DSN, DB TLS."""
    volumes = [_config_volume(artifacts)]
    mounts = [_mount(CONFIG_VOLUME, CONFIG_DIR, read_only=True)]
    if db_tls_enabled(spec):
        volumes.append(_db_tls_volume(spec))
        mounts.append(_mount(DB_TLS_VOLUME, DB_TLS_DIR, read_only=True))
    volumes.append(_tmp_volume())
    mounts.append(_mount(TMP_VOLUME, TMP_PATH))
    return _pod(
        labels,
        [
            _container(
                container,
                image_reference(spec),
                ["/bin/sh", "-eu", "-c", script],
                mounts,
                env=[_db_connection_env(name)],
            )
        ],
        volumes,
        restart_policy=restart_policy,
    )


def db_job(glance: Mapping[str, Any], artifacts: Artifacts, key: str) -> dict[str, Any] | None:
    """A Job of ``DB_JOBS``: ``{name}-db-sync`` (db sync, then load_metadefs) or an upgrade
    phase's ``{name}-db-expand`` / ``-db-migrate`` / ``-db-contract``; None while no config
    exists.

    All four are one shape: the spec image, the config mount, the DSN from the
    db-connection Secret, the DB TLS volume when TLS is on, backoffLimit 4, never
    restarted in place. Their pods carry no name/instance labels, so neither the Service
    nor the PDB counts them. The annotation is the pod-spec hash: any change to the pod
    template re-runs a finished Job (the rerun key).
    """
    if not artifacts.config_map:
        return None
    spec = _spec(glance)
    name = _name(glance)
    suffix, script = DB_JOB_SPECS[key]
    component = suffix.lstrip("-")
    pod = _database_pod(spec, artifacts, name, component, script, "Never", {})
    out = _metadata(glance, artifacts, name + suffix, component_labels(name, component))
    out["annotations"] = {POD_SPEC_HASH_ANNOTATION: pod_spec_hash(pod)}
    out["backoff_limit"] = DB_SYNC_BACKOFF_LIMIT
    out["pod"] = pod
    return out


def db_sync_job(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """``{name}-db-sync``: db sync, then load_metadefs; None while no config exists."""
    return db_job(glance, artifacts, DB_SYNC_JOB)


def db_purge_script(spec: Mapping[str, Any]) -> str:
    """``db purge`` of rows soft-deleted ``retentionDays`` ago; ``purge_images_table`` opt-in."""
    purge = spec.get("dbPurge") or {}
    days = purge.get("retentionDays") or DEFAULT_RETENTION_DAYS
    script = f"{GLANCE_MANAGE} db purge --age_in_days {days} --max_rows {PURGE_MAX_ROWS}"
    if purge.get("purgeImagesTable"):
        script += (
            f" && {GLANCE_MANAGE} db purge_images_table --age_in_days {days}"
            f" --max_rows {PURGE_MAX_ROWS}"
        )
    return script


def db_purge_cronjob(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The db-purge CronJob, on every Glance; None while no config exists to mount."""
    if not artifacts.config_map:
        return None
    spec = _spec(glance)
    name = _name(glance)
    purge = spec.get("dbPurge") or {}
    out = _metadata(glance, artifacts, db_purge_cronjob_name(name), common_labels(name))
    out["schedule"] = purge.get("schedule") or DEFAULT_PURGE_SCHEDULE
    out["suspend"] = bool(purge.get("suspend"))
    out["concurrency_policy"] = PURGE_CONCURRENCY_POLICY
    out["job_labels"] = common_labels(name)
    out["active_deadline_seconds"] = PURGE_ACTIVE_DEADLINE_SECONDS
    out["pod"] = _database_pod(
        spec,
        artifacts,
        name,
        DB_PURGE_CONTAINER,
        db_purge_script(spec),
        "OnFailure",
        component_labels(name, COMPONENT_DB_PURGE),
    )
    return out


# ---------------------------------------------------------------------------------------
# entry point


def desired_objects(
    glance: Mapping[str, Any],
    artifacts: Artifacts,
    *,
    narrow_selector: bool = False,
    operator_namespace: str | None = None,
    database_job: str | None = DB_SYNC_JOB,
) -> dict[str, dict[str, Any] | None]:
    """The data of every owned object, by key (see the module docstring for ``None``).

    ``glance`` is the stored Glance with defaults applied (``admission.judge(...).object``).
    ``database_job`` is the one key of ``DB_JOBS`` to render (None: none of them).
    """
    if database_job is not None and database_job not in DB_JOBS:
        raise ValueError(f"database_job must be one of {DB_JOBS}, not {database_job!r}")
    jobs = {key: db_job(glance, artifacts, key) if key == database_job else None for key in DB_JOBS}
    return {
        CONFIG_MAP: config_map(glance, artifacts),
        BACKENDS_SECRET: backends_secret(glance, artifacts),
        DB_CONNECTION_SECRET: db_connection_secret(glance, artifacts),
        MARIADB_DATABASE: mariadb_database(glance, artifacts),
        MARIADB_USER: mariadb_user(glance, artifacts),
        MARIADB_GRANT: mariadb_grant(glance, artifacts),
        DEPLOYMENT: deployment(glance, artifacts),
        SERVICE: service(glance, artifacts, narrow_selector),
        PDB: pdb(glance, artifacts),
        HPA: hpa(glance, artifacts),
        NETWORK_POLICY: network_policy(glance, artifacts, operator_namespace),
        HTTP_ROUTE: http_route(glance, artifacts),
        **jobs,
        DB_PURGE_CRONJOB: db_purge_cronjob(glance, artifacts),
    }
