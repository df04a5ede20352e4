"""The external-secrets.io/v1 kinds the operator reads, as CRDs for a real kube-apiserver,
and what external-secrets' controllers would write: for tests only, not shipped.

Written for these tests from external-secrets' public API reference
(https://external-secrets.io/latest/api/spec/): the names, scopes and the fields the
operator and the tests use - a store's ``spec.provider``, an ExternalSecret's
``spec.secretStoreRef``, ``spec.target``, ``spec.data`` and ``spec.refreshInterval``, and
``status.conditions[]`` (type ``Ready``, status, reason, message, lastTransitionTime) on
all three. Everything else a real installation declares is left open
(``x-kubernetes-preserve-unknown-fields``) rather than copied.
"""

from __future__ import annotations

from typing import Any

GROUP = "external-secrets.io"
API_VERSION = f"{GROUP}/v1"

_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_CONDITIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
    },
}
_STORE_SPEC = {**_OPEN, "properties": {"provider": _OPEN, "refreshInterval": {"type": "integer"}}}
_EXTERNAL_SECRET_SPEC = {
    **_OPEN,
    "properties": {
        "refreshInterval": {"type": "string"},
        "secretStoreRef": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["SecretStore", "ClusterSecretStore"]},
                "name": {"type": "string"},
            },
        },
        "target": {
            **_OPEN,
            "properties": {"name": {"type": "string"}, "creationPolicy": {"type": "string"}},
        },
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "secretKey": {"type": "string"},
                    "remoteRef": {
                        "type": "object",
                        "properties": {"key": {"type": "string"}, "property": {"type": "string"}},
                    },
                },
            },
        },
    },
}


def _crd(kind: str, plural: str, scope: str, spec: dict[str, Any]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": {"type": "object", "properties": {"conditions": _CONDITIONS}},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


CRDS = [
    _crd("ClusterSecretStore", "clustersecretstores", "Cluster", _STORE_SPEC),
    _crd("SecretStore", "secretstores", "Namespaced", _STORE_SPEC),
    _crd("ExternalSecret", "externalsecrets", "Namespaced", _EXTERNAL_SECRET_SPEC),
]


def store(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    """A store for OpenBao, as the reference's cluster has one (the provider is not read)."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    provider = {"vault": {"server": "https://openbao.openbao.svc:8200", "path": "kv"}}
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": meta,
        "spec": {"provider": provider},
    }


def external_secret(name: str, namespace: str, keys: list[str]) -> dict[str, Any]:
    """The ExternalSecret that writes the Secret ``name`` with ``keys`` from OpenBao."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ExternalSecret",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "refreshInterval": "1h",
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": "openbao-cluster-store"},
            "target": {"name": name, "creationPolicy": "Owner"},
            "data": [
                {"secretKey": key, "remoteRef": {"key": f"glance/{name}", "property": key}}
                for key in keys
            ],
        },
    }


def ready(status: bool, reason: str, message: str) -> dict[str, Any]:
    """The status external-secrets' controllers write: one ``Ready`` condition."""
    return {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if status else "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": "2026-12-04T00:00:00Z",
                }
            ]
        }
    }
