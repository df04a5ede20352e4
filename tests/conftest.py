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


def pytest_configure(config):
    """Where the run's time goes, each module's time limit and the signal guard
    (tests/support/timings.py)."""
    from support.timings import Timings

    config.pluginmanager.register(Timings(), "c5c3-timings")


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


# --- strict runs: a skip for want of a part is a failure (tests/skips.py) --------------------


def _strict() -> bool:
    import os

    from skips import STRICT_VARIABLE

    return os.environ.get(STRICT_VARIABLE) == "1"


def _unexplained(report) -> str | None:
    """The skip reason of ``report`` when a strict run may not skip for it, else None."""
    from skips import explained

    if not report.skipped or hasattr(report, "wasxfail") or not _strict():
        return None
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    reason = reason.removeprefix("Skipped: ")
    return None if explained(reason) else reason


def _fail_unexplained(report, reason: str) -> None:
    report.outcome = "failed"
    report.longrepr = (
        f"skipped in a strict run (C5C3_STRICT_SKIPS=1, as make test and CI run): {reason}\n"
        "make test installs and builds every part the tiers need; a test may skip there "
        "only for a reason tests/skips.py explains"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    reason = _unexplained(report)
    if reason is not None:
        _fail_unexplained(report, reason)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    reason = _unexplained(report)
    if reason is not None:
        _fail_unexplained(report, reason)
    return report


# --- the order of the tiers (tests/support/tiers.py) ----------------------------------------


def pytest_collection_modifyitems(items):
    """The items in the order of ``tiers.TIER_ORDER``; within a tier, pytest's own order."""
    from support.tiers import tier_rank

    items.sort(key=lambda item: tier_rank(Path(item.path)))
