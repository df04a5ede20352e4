"""Session set-up every test directory shares: Ansible's collection finder, installed first.

pytest-ansible (``--ansible-unit-inject-only`` in pyproject.toml) installs Ansible's
collection finder when pytest configures itself. The conftest files of the test
directories import ``ansible_collections.c5c3.glance`` when they are collected; an import
made before the finder is installed binds the collection as a plain namespace package, and
every later ``c5c3.glance`` import fails with "collection metadata was not loaded for
collection c5c3.glance". This file is the first conftest pytest loads (before
pytest_configure and before any subdirectory's), so the finder is in place, over the
checkout's link ``.collections/ansible_collections/c5c3/glance`` that ``make venv``
creates, before anything imports the collection.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = Path(__file__).resolve().parents[1]

_AnsibleCollectionFinder(paths=[str(ROOT / ".collections")])._install()


@pytest.fixture(scope="session")
def say(request) -> Callable[[str], None]:
    """Print a line to the terminal, past pytest's capturing (timings: shown without -s)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def _print(msg: str) -> None:
        with capture.global_and_fixture_disabled():
            print(msg, file=sys.stderr, flush=True)

    return _print


@pytest.fixture(scope="session")
def target_apiserver():
    """A second kube-apiserver and etcd of their own, on loopback: the target cluster of
    the target-cluster tests (tests/reconcile, tests/runner); skipped, saying why, without
    the binaries (``KUBE_ASSETS_DIR``). Started only for a test that asks for it."""
    from integration.kube_harness import started_apiserver

    with started_apiserver() as server:
        yield server
