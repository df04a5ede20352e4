# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Pod and container building: the volumes, mounts and environment, the security contexts,
the ``pod`` and container entries, the ``PodTemplateSpec`` a template renders from a
``pod``, and the pod-spec hash taken over it.

The ``pod`` and container shapes are described in ``owned``'s module docstring. The
names with a leading underscore (``_mount``, ``_config_volume``, ``_container``, ``_pod``
and the like) are the package's own: the API's and the database's objects build their
pods with them, nothing outside ``desired/objects/`` uses them.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.config_secrets import (
    DB_CONNECTION_KEY,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    DB_CONNECTION_SUFFIX,
    Artifacts,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import (
    go_quantity_string,
)

# --- ports, paths, identities ------------------------------------------------------------
API_PORT = 9292
OPENSTACK_UID = 42424  # the "openstack" user and group of the Glance image
TMP_PATH = "/tmp"
DB_CONNECTION_ENV = "OS_DATABASE__CONNECTION"
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
# The download import methods (web-download, glance-download) fetch with urllib and
# Python's default TLS context, which OpenSSL fills from SSL_CERT_FILE and its certificate
# directory: the file is spec.importCABundleSecretRef's bundle, the directory stays the
# image's system store (/usr/lib/ssl/certs), so both are trusted. keystoneauth (requests,
# certifi's bundle), boto3 and PyMySQL (an explicit CA) do not read it.
SSL_CERT_FILE_ENV = "SSL_CERT_FILE"
IMPORT_CA_DEFAULT_MODE = 0o444  # a CA bundle is public; 292 in JSON
TLS_DISABLED_MODES = ("", "disabled")

# --- volumes -----------------------------------------------------------------------------
CONFIG_VOLUME = "config"
BACKENDS_VOLUME = "backends"
STAGING_VOLUME = "staging"
TASKS_VOLUME = "tasks-work"
DB_TLS_VOLUME = "db-tls"
IMPORT_CA_VOLUME = "import-ca"
IMAGE_CACHE_VOLUME = "image-cache"
TMP_VOLUME = "tmp"
DEFAULT_STAGING_SIZE = "10Gi"
DEFAULT_IMAGE_CACHE_SIZE = "10Gi"
# The read-only root filesystem leaves no writable /tmp; Python's tempfile, sqlite's temp
# files (the cache pruner) and uWSGI fall back to it. Small: the image data goes to the
# staging, tasks-work and image-cache volumes, never here.
TMP_SIZE_LIMIT = "1Gi"

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


def image_reference(spec: Mapping[str, Any]) -> str:
    """``repository@digest`` when a digest is set, else ``repository:tag``."""
    image = spec["image"]
    if image.get("digest"):
        return f"{image['repository']}@{image['digest']}"
    return f"{image['repository']}:{image['tag']}"


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


def import_ca_secret(spec: Mapping[str, Any]) -> str | None:
    """The Secret of ``spec.importCABundleSecretRef``; None when unset."""
    return (spec.get("importCABundleSecretRef") or {}).get("name") or None


def _import_ca_volume(secret: str) -> dict[str, Any]:
    """The key ca.crt of the import CA Secret, readable by the Glance user. A new bundle
    rolls the pods (the pod template's import-ca-hash annotation): each uWSGI worker's
    urllib builds its TLS context once, at its first download, and keeps it."""
    return {
        "name": IMPORT_CA_VOLUME,
        "secret": {
            "secretName": secret,
            "items": [{"key": TLS_CA_FILE, "path": TLS_CA_FILE}],
            "defaultMode": IMPORT_CA_DEFAULT_MODE,
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
