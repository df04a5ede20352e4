"""The API servers the reconcile scenarios run against.

Every scenario runs twice: on a real kube-apiserver and etcd when their binaries are
present (``KUBE_ASSETS_DIR``/``KUBEBUILDER_ASSETS``; skipped, saying why, when absent), and
on the REST test double of ``tests/support/fake_apiserver.py``, which always runs. The
double is a unit-test double: it is how these scenarios exercise the playbooks, the
modules and the client over real HTTPS on machines without the binaries, not a
substitute for the real server.
"""

from __future__ import annotations

import pytest
from integration.kube_harness import started_apiserver
from support.api_env import api_env

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)


@pytest.fixture(scope="session")
def real_apiserver():
    with started_apiserver(load_crds().values()) as server:
        yield server


@pytest.fixture(params=["double", pytest.param("kube-apiserver", marks=pytest.mark.integration)])
def api(request, tmp_path):
    """An ``ApiEnv`` with an empty namespace of its own."""
    yield from api_env(request.param, request, tmp_path, "reconcile")
