"""Fixtures of the integration tests: a real kube-apiserver with both CRDs installed."""

from __future__ import annotations

import pytest
from kube_harness import assets_dir, started_apiserver

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)


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
    with started_apiserver(load_crds().values()) as server:
        yield server
