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


def pytest_collection_modifyitems(config, items):
    """The items in the order of ``tiers.TIER_ORDER``; within a tier, pytest's own order.
    Where a real kube-apiserver runs, the API test double's twins of its scenarios are left
    out (``double_twins_left_out``)."""
    from support.tiers import tier_rank

    items.sort(key=lambda item: tier_rank(Path(item.path)))
    left_out = double_twins_left_out(items)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        kept = set(map(id, left_out))
        items[:] = [item for item in items if id(item) not in kept]
        _DOUBLE_TWINS_LEFT_OUT.append(len(left_out))


_DOUBLE_TWINS_LEFT_OUT: list[int] = []
DOUBLE_TWINS_VARIABLE = "C5C3_DOUBLE_TWINS"


def double_twins_left_out(items) -> list:
    """The ``[double...]`` items of scenarios parametrized over the API test double and a
    kube-apiserver (the ``api`` fixtures of tests/reconcile and tests/runner) when the
    kube-apiserver's binaries are there: the real server runs the same scenario, and a test
    double proves nothing about it. Kept: those marked ``double_sees`` (their double run
    asserts what only the double shows: its request log, a Glance API behind its service
    proxy), and all of them with ``C5C3_DOUBLE_TWINS=1``. Without the binaries the double
    is all there is, and every twin runs."""
    import os

    from integration.kube_harness import ASSET_VARIABLES

    if os.environ.get(DOUBLE_TWINS_VARIABLE) == "1":
        return []
    if not any(os.environ.get(variable) for variable in ASSET_VARIABLES):
        return []
    return [
        item
        for item in items
        if getattr(item, "callspec", None) is not None
        and item.callspec.params.get("api") == "double"
        and item.get_closest_marker("double_sees") is None
    ]


def pytest_report_collectionfinish(config, start_path, items):
    if _DOUBLE_TWINS_LEFT_OUT:
        return (
            f"{_DOUBLE_TWINS_LEFT_OUT[-1]} API-test-double twins left out: a real kube-apiserver "
            f"runs the same scenarios here ({DOUBLE_TWINS_VARIABLE}=1 runs them; tests/conftest.py)"
        )
    return None
