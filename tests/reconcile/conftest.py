"""The API servers the reconcile scenarios run against.

Every scenario runs twice: on a real kube-apiserver and etcd when their binaries are
present (``KUBE_ASSETS_DIR``/``KUBEBUILDER_ASSETS``; skipped, saying why, when absent), and
on the REST test double of ``tests/support/fake_apiserver.py``, which always runs. The
double is a unit-test double: it is how these scenarios exercise the playbooks, the
modules and the client over real HTTPS on machines without the binaries, not a
substitute for the real server.
"""

from __future__ import annotations

import itertools

import pytest
from integration.kube_harness import started_apiserver
from support.api_env import ApiEnv, HealthServer
from support.fake_apiserver import FakeAPIServer

from ansible_collections.c5c3.glance.plugins.module_utils.collection_files import load_crds
from ansible_collections.c5c3.glance.plugins.module_utils.kube_client import KubeClient

_namespaces = itertools.count(1)


@pytest.fixture(scope="session")
def real_apiserver():
    with started_apiserver(load_crds().values()) as server:
        yield server


@pytest.fixture(params=["double", pytest.param("kube-apiserver", marks=pytest.mark.integration)])
def api(request, tmp_path):
    """An ``ApiEnv`` with an empty namespace of its own."""
    kubeconfig = tmp_path / "kubeconfig"
    health = HealthServer()
    try:
        if request.param == "double":
            with FakeAPIServer() as double:
                double.write_kubeconfig(kubeconfig)
                client = KubeClient.from_environment(str(kubeconfig))
                yield ApiEnv("double", kubeconfig, client, double=double, health=health)
        else:
            server = request.getfixturevalue("real_apiserver")
            server.write_kubeconfig(kubeconfig)
            client = KubeClient.from_environment(str(kubeconfig))
            namespace = f"reconcile-{next(_namespaces)}"
            yield ApiEnv("kube-apiserver", kubeconfig, client, namespace=namespace)
    finally:
        health.stop()
