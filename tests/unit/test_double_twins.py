"""Where a real kube-apiserver runs, the API test double's twins of its scenarios are left
out but for those whose double run asserts what only the double shows (tests/conftest.py)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIERS = ("tests/reconcile", "tests/runner")


def collected(**env: str) -> tuple[list[str], str]:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KUBE_ASSETS_DIR", "KUBEBUILDER_ASSETS", "C5C3_DOUBLE_TWINS")
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *TIERS],
        cwd=ROOT,
        env={**environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "::" in line], done.stdout


def doubles(ids: list[str]) -> set[str]:
    return {i for i in ids if "[double" in i or "-double]" in i or "-double-" in i}


@pytest.fixture(scope="module")
def without_binaries():
    return collected()


def test_without_the_binaries_every_double_twin_runs(without_binaries):
    ids, out = without_binaries
    assert len(doubles(ids)) >= 30
    assert "twins left out" not in out


def test_with_the_binaries_only_the_twins_that_assert_on_the_double_run(without_binaries):
    all_ids, _ = without_binaries
    ids, out = collected(KUBE_ASSETS_DIR="/nonexistent")
    kept = doubles(ids)
    left_out = doubles(all_ids) - kept
    assert f"{len(left_out)} API-test-double twins left out" in out
    assert {i.split("[")[0] for i in kept} == {
        "tests/reconcile/test_reconcile.py::test_the_minimal_sample_converges_in_three_passes",
        "tests/reconcile/test_reconcile.py::test_a_pass_over_an_unchanged_cluster_writes_nothing",
        "tests/reconcile/test_reconcile.py::test_no_default_backend_parks_and_keeps_the_last_good_config",
        "tests/runner/test_make_run.py::test_make_run_converges_and_a_restart_with_another_kubeconfig_rolls_nothing",
        "tests/runner/test_runner_scenarios.py::test_the_minimal_sample_converges",
    }
    # Each left-out twin's kube-apiserver run is still there.
    for twin in left_out:
        assert twin.replace("double", "kube-apiserver", 1) in ids, twin
    assert set(all_ids) - set(ids) == left_out


def test_c5c3_double_twins_1_runs_them_all(without_binaries):
    all_ids, _ = without_binaries
    ids, out = collected(KUBE_ASSETS_DIR="/nonexistent", C5C3_DOUBLE_TWINS="1")
    assert doubles(ids) == doubles(all_ids) and "twins left out" not in out


def test_a_twin_is_marked_double_sees_only_where_it_asserts_on_the_double(monkeypatch):
    import importlib

    # For this test only: the runner tier's modules import their neighbours by name.
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "runner"))

    for module_name in ("reconcile.test_reconcile", "test_make_run", "test_runner_scenarios"):
        module = importlib.import_module(module_name)
        for name, function in vars(module).items():
            marks = [m.name for m in getattr(function, "pytestmark", [])]
            if name.startswith("test_") and "double_sees" in marks:
                source = inspect.getsource(function)
                assert "api.double" in source or "api.reaches_pods" in source, name
