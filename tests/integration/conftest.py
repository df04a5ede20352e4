"""Fixtures of the integration tests: a real kube-apiserver with both CRDs installed."""

from __future__ import annotations

import pytest
from kube_harness import KubeApiServer, assets_dir

from ansible_collections.c5c3.glance.plugins.module_utils.collection_files import load_crds


def pytest_collection_modifyitems(config, items):
    _, reason = assets_dir()
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if "integration" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def kube():
    """A started kube-apiserver (with etcd) that has both CRDs, stopped after the session."""
    path, reason = assets_dir()
    if path is None:
        pytest.skip(reason)
    server = KubeApiServer(path)
    try:
        server.start()
        for crd in load_crds().values():
            server.install_crd(crd)
        yield server
    finally:
        server.stop()
