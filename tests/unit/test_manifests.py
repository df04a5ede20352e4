"""The Python objects of ``manifests`` are exactly what the role templates render.

The templates are rendered here with plain Jinja2 (``to_json`` is the one filter they use);
``test_role_templates`` checks the same templates through Ansible itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest
import yaml
from support.builders import BACKEND, GLANCE, patched
from support.cluster import default_secrets, glance_object, stored

from ansible_collections.c5c3.glance.plugins.module_utils import desired_objects as do
from ansible_collections.c5c3.glance.plugins.module_utils.collection_files import (
    COLLECTION_ROOT,
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.input_documents import InputSet
from ansible_collections.c5c3.glance.plugins.module_utils.manifests import KINDS, manifest
from ansible_collections.c5c3.glance.plugins.module_utils.render_plan import build_plan

TEMPLATES = {
    do.CONFIG_MAP: "glance_config/templates/configmap.yaml.j2",
    do.BACKENDS_SECRET: "glance_config/templates/backends_secret.yaml.j2",
    do.DB_CONNECTION_SECRET: "glance_config/templates/db_connection_secret.yaml.j2",
    do.DEPLOYMENT: "glance_api/templates/deployment.yaml.j2",
    do.SERVICE: "glance_api/templates/service.yaml.j2",
    do.PDB: "glance_api/templates/pdb.yaml.j2",
    do.HPA: "glance_api/templates/hpa.yaml.j2",
    do.NETWORK_POLICY: "glance_exposure/templates/networkpolicy.yaml.j2",
    do.HTTP_ROUTE: "glance_exposure/templates/httproute.yaml.j2",
    do.DB_SYNC_JOB: "glance_database/templates/db_sync_job.yaml.j2",
    do.DB_PURGE_CRONJOB: "glance_database/templates/db_purge_cronjob.yaml.j2",
}
FULL = {
    "autoscaling": {"maxReplicas": 6, "minReplicas": 2, "targetCPUUtilization": 70},
    "networkPolicy": {"ingress": [{"namespaceSelector": {"matchLabels": {"x": "y"}}}]},
    "gateway": {
        "hostname": "glance.example.com",
        "parentRef": {"name": "public", "namespace": "gw"},
        "annotations": {"a": "b"},
    },
    "imageCache": {},
    "database": {
        "tls": {
            "mode": "verify-full",
            "caBundleSecretRef": {"name": "ca"},
            "clientCertSecretRef": {"name": "client"},
        }
    },
}


def render(key: str, data: dict) -> dict:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(COLLECTION_ROOT) / "roles")),
        undefined=jinja2.StrictUndefined,
    )
    env.filters["to_json"] = lambda value: json.dumps(value)
    text = env.get_template(TEMPLATES[key]).render(glance_desired={key: data})
    (obj,) = [d for d in yaml.safe_load_all(text) if d]
    return obj


@pytest.fixture(scope="module")
def full_desired() -> dict:
    """The data of every owned object of a Glance with every optional block set."""
    found = InputSet(
        glance=glance_object(patched(GLANCE, {"spec": FULL})),
        backends=[stored(BACKEND, "b")],
        secrets=default_secrets(),
    )
    plan = build_plan(found, load_crds(), load_catalogs(), stored=True, narrow_selector=True)
    assert not plan.errors, plan.errors
    return plan.desired


def test_every_key_has_a_kind_and_a_template():
    assert set(KINDS) == set(do.OBJECT_KEYS) == set(TEMPLATES)


@pytest.mark.parametrize("key", do.OBJECT_KEYS)
def test_the_python_object_is_what_the_template_renders(full_desired, key):
    data = full_desired[key]
    assert data is not None, key
    obj = manifest(key, data)
    assert obj == render(key, data)
    assert list(obj) == list(render(key, data))  # the same field order, too
    assert (obj["apiVersion"], obj["kind"]) == KINDS[key]


def test_optional_fields_are_left_out_as_the_templates_leave_them_out(full_desired):
    deployment = dict(full_desired[do.DEPLOYMENT], replicas=3)
    assert manifest(do.DEPLOYMENT, deployment) == render(do.DEPLOYMENT, deployment)
    assert manifest(do.DEPLOYMENT, deployment)["spec"]["replicas"] == 3
    assert "replicas" not in manifest(do.DEPLOYMENT, full_desired[do.DEPLOYMENT])["spec"]
    pdb = dict(full_desired[do.PDB], min_available=None, max_unavailable=1)
    assert manifest(do.PDB, pdb) == render(do.PDB, pdb)
    route = dict(full_desired[do.HTTP_ROUTE], annotations={})
    assert "annotations" not in manifest(do.HTTP_ROUTE, route)["metadata"]
    assert manifest(do.HTTP_ROUTE, route) == render(do.HTTP_ROUTE, route)


def test_a_manifest_shares_nothing_with_its_data(full_desired):
    data = full_desired[do.SERVICE]
    obj = manifest(do.SERVICE, data)
    obj["spec"]["selector"]["x"] = "y"
    assert "x" not in data["selector"]


def test_an_unknown_key_is_refused():
    with pytest.raises(KeyError):
        manifest("pod", {"name": "x", "namespace": "y", "labels": {}, "owner_references": []})
