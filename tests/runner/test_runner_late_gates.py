"""Gates whose kinds the cluster serves only after the runner started: external-secrets
installed after the operator (found on the node with the real external-secrets,
tests/cluster/test_with_secrets_from_openbao.py: its stores were never watched, so a Ready
Glance did not see its store fail). ``python -m runner`` against a kube-apiserver of this
module's own that serves external-secrets' kinds only once the test installs their CRDs: the
runner asks again every ``--gate-discovery-period`` and watches a kind from when it is
served, waking the Glances it gates as test_runner_gates.py's stores do.
"""

from __future__ import annotations

import pytest
from integration import external_secrets as eso
from test_runner_gates import start_cluster_wide, vault_wakes_its_glance
from test_runner_support import api_env, own_real_apiserver


@pytest.fixture
def real_apiserver():
    """The Glance CRDs only, at first."""
    with own_real_apiserver() as server:
        yield server


@pytest.fixture
def late(request, tmp_path, real_apiserver):
    yield from api_env("kube-apiserver", request, tmp_path)


@pytest.mark.integration
def test_stores_served_after_the_runner_started_are_watched_from_then_on(
    late, real_apiserver, tmp_path
):
    """Not served at start: said so; served once the CRDs are in: watched, and a store
    created or whose readiness flips wakes the Glance it gates."""
    api = late
    runner = start_cluster_wide(api, tmp_path, GATE_DISCOVERY_PERIOD="1s")
    try:
        runner.wait_for("ClusterSecretStore not served, not watched yet")
        for crd in eso.CRDS:
            real_apiserver.install_crd(crd)
        for kind in ("SecretStore", "ClusterSecretStore"):
            runner.wait_for(f"{kind} served now, watched")
        vault_wakes_its_glance(api, runner)
        assert not runner.find("pass failed")
    finally:
        runner.close()
