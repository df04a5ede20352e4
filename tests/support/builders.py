"""Builders shared by the test suites: a valid Glance and GlanceBackend, and a deep patch."""

from __future__ import annotations

import copy

from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import decode_secrets

DELETE = object()


def patched(base: dict, patch: dict) -> dict:
    """``base`` with ``patch`` merged in; a ``DELETE`` value removes the key."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is DELETE:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = patched(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


GLANCE = {
    "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
    "kind": "Glance",
    "metadata": {"name": "glance", "namespace": "openstack"},
    "spec": {
        "openStackRelease": "2026.2",
        "image": {"repository": "ghcr.io/c5c3/glance", "tag": "2026.2"},
        "database": {
            "host": "mariadb.openstack.svc",
            "database": "glance",
            "secretRef": {"name": "glance-db"},
        },
        "cache": {"servers": ["memcached.openstack.svc:11211"]},
        "keystoneEndpoint": "http://keystone.openstack.svc:5000/v3",
        "serviceUser": {"secretRef": {"name": "glance-service-user"}},
    },
}

BACKEND = {
    "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
    "kind": "GlanceBackend",
    "metadata": {"name": "s3-default", "namespace": "openstack"},
    "spec": {
        "glanceRef": {"name": "glance"},
        "type": "S3",
        "isDefault": True,
        "s3": {
            "host": "http://rgw.storage.svc:8080",
            "bucket": "glance-images",
            "credentialsSecretRef": {"name": "glance-s3"},
        },
    },
}


def secret_data(doc: dict) -> dict[str, str]:
    """A Secret's data as text, decoded as the operator decodes it."""
    return decode_secrets([doc])[doc["metadata"]["name"]]
