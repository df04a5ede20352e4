"""The API servers the runner's tests share.

* ``real_apiserver`` (session): one kube-apiserver with both CRDs for every test that
  runs its runner in a namespace of its own (``WATCH_NAMESPACE``); skipped, saying why,
  without ``KUBE_ASSETS_DIR``. A test module whose runner watches every namespace
  (``test_make_run.py``) overrides it with one of its own per test.
* ``api``: an empty namespace of the test's own on the API double, and on that
  kube-apiserver (marked ``integration``);
* ``double_api``: the test double only, for the runner's own machinery (kill, election,
  shutdown, the warm server) and for what the kube-apiserver cannot show (a kind it does
  not serve).
"""

from __future__ import annotations

import pytest
from test_runner_support import api_env, own_real_apiserver


@pytest.fixture(scope="session")
def real_apiserver():
    with own_real_apiserver() as server:
        yield server


@pytest.fixture(params=["double", pytest.param("kube-apiserver", marks=pytest.mark.integration)])
def api(request, tmp_path):
    yield from api_env(request.param, request, tmp_path)


@pytest.fixture
def double_api(request, tmp_path):
    yield from api_env("double", request, tmp_path)
