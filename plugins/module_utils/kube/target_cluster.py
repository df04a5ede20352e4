# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The cluster a Glance's children are written to (reference-spec §2.11).

A Glance with ``spec.targetClusterRef.name: <cluster>`` keeps itself, its status, its
finalizers, its events and its GlanceBackends in the cluster the operator runs in (the
management cluster); every child (Deployment, Service, Secrets, Jobs, the MariaDB
resources...) goes to the target cluster, in the namespace of the same name. The target
is registered by a Secret of the management cluster:

* named ``<cluster>``, in the clusters namespace (the runner's ``--clusters-namespace``,
  the playbooks' ``clusters_namespace``, default ``c5c3-clusters``; empty turns target
  clusters off);
* labelled ``sigs.k8s.io/multicluster-runtime-kubeconfig: "true"`` and holding the
  kubeconfig under the key ``kubeconfig``: the label, the key and the naming are
  multicluster-runtime's kubeconfig provider's, which the reference uses, so a Secret
  written for the reference registers the cluster here unchanged.

The kubeconfig must carry its credential inline: a bearer ``token``, or a client
certificate and key as ``-data``, the CA as ``certificate-authority-data``. A registration
is data, not a program: an ``exec`` plugin or an ``auth-provider`` would run or act inside
the operator's pod, and a file path (``tokenFile``, ``client-certificate``,
``client-key``, ``certificate-authority``) would be read from the operator's filesystem -
its own service account token sent to a server of the Secret writer's choosing. Such a
registration is refused with a message naming the field (the reference refuses them for
the same reason).

There is no client cache to engage and no watch on the target: each step of a pass reads
the registration (one GET) and talks to the target directly, so a changed or deleted
registration takes effect on the next pass, and an unusable one is reported, never used.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeClient,
    KubeConfigError,
    connection_from_document,
)

REGISTRATION_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"
KUBECONFIG_KEY = "kubeconfig"
DEFAULT_CLUSTERS_NAMESPACE = "c5c3-clusters"

# Fields that make a client act on the operator's pod instead of the Secret's data.
_USER_FIELDS = ("exec", "auth-provider", "tokenFile", "client-certificate", "client-key")
_CLUSTER_FIELDS = ("certificate-authority",)


class Unavailable(Exception):
    """The target cluster cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Target:
    """A resolved target: its name, the registration Secret and the client for it."""

    name: str
    registration: str
    client: KubeClient

    def describe(self) -> str:
        return f'target cluster "{self.name}" ({self.client.connection.server})'


def registration_name(cluster: str, clusters_namespace: str) -> str:
    return f"{clusters_namespace}/{cluster}"


def _kubeconfig_document(secret: Mapping[str, Any], where: str) -> dict[str, Any]:
    labels = (secret.get("metadata") or {}).get("labels") or {}
    if labels.get(REGISTRATION_LABEL) != "true":
        raise Unavailable(
            f'Secret {where} is not a registration: it lacks the label {REGISTRATION_LABEL}="true"'
        )
    raw = (secret.get("data") or {}).get(KUBECONFIG_KEY)
    if not raw:
        raise Unavailable(f"Secret {where} has no {KUBECONFIG_KEY!r} key")
    try:
        document = yaml.safe_load(base64.b64decode(raw, validate=True).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise Unavailable(
            f"Secret {where}: key {KUBECONFIG_KEY!r} is not a kubeconfig: {exc}"
        ) from exc
    if not isinstance(document, dict):
        raise Unavailable(f"Secret {where}: key {KUBECONFIG_KEY!r} is not a kubeconfig")
    refuse_outside_credentials(document, where)
    return document


def refuse_outside_credentials(document: Mapping[str, Any], where: str) -> None:
    """Raise ``Unavailable`` when the kubeconfig takes a credential from anywhere but
    itself (the module docstring says why)."""
    for entry in document.get("users") or []:
        user = (entry or {}).get("user") or {}
        for name in _USER_FIELDS:
            if user.get(name):
                raise Unavailable(
                    f"Secret {where}: user {entry.get('name')!r} sets {name}, which would act "
                    "on the operator's own pod; a registration carries its credential inline "
                    "(token, client-certificate-data and client-key-data)"
                )
    for entry in document.get("clusters") or []:
        cluster = (entry or {}).get("cluster") or {}
        for name in _CLUSTER_FIELDS:
            if cluster.get(name):
                raise Unavailable(
                    f"Secret {where}: cluster {entry.get('name')!r} sets {name}, a file of the "
                    "operator's pod; use certificate-authority-data"
                )


def resolve(mgmt: KubeClient, cluster: str, clusters_namespace: str, timeout: float) -> Target:
    """The target cluster ``cluster``, from its registration Secret in ``clusters_namespace``
    of the management cluster (``mgmt``); ``Unavailable`` when there is none or it cannot be
    used. API errors reading the Secret itself are the management cluster's, and raised."""
    if not clusters_namespace:
        raise Unavailable(
            f'target cluster "{cluster}" cannot be resolved: target clusters are turned off '
            "(the clusters namespace is empty)"
        )
    where = registration_name(cluster, clusters_namespace)
    try:
        secret = mgmt.get("v1", "Secret", cluster, clusters_namespace)
    except ApiError as exc:
        if exc.code != 403:
            raise
        raise Unavailable(f"cannot read the registration Secret {where}: {exc.message}") from exc
    if secret is None:
        raise Unavailable(f'cluster "{cluster}" is not registered: no Secret {where}')
    document = _kubeconfig_document(secret, where)
    try:
        connection = connection_from_document(document, f"of Secret {where}")
        client = KubeClient(connection, timeout=timeout)
    except KubeConfigError as exc:
        raise Unavailable(str(exc)) from exc
    return Target(name=cluster, registration=where, client=client)


__all__ = [
    "DEFAULT_CLUSTERS_NAMESPACE",
    "KUBECONFIG_KEY",
    "REGISTRATION_LABEL",
    "Target",
    "Unavailable",
    "refuse_outside_credentials",
    "registration_name",
    "resolve",
]
