"""The molecule scenarios (molecule/<scenario>/molecule.yml), run by pytest.

pytest-ansible discovers the scenarios (every ``molecule/*/molecule.yml`` git tracks) and
runs each one as ``python -m molecule test -s <scenario>`` from the checkout
(``MoleculeScenario.test``). Each scenario gets what it needs here, and its test id says
against what it runs:

* ``offline``: nothing; always runs.
* ``default[double]``: the REST test double of ``tests/support/fake_apiserver.py`` with a
  stand-in Glance ``/healthcheck`` behind its service proxy, served by
  ``tests/support/serve_api_double.py`` as docs/molecule.md tells; always runs. A unit-test
  double, not a cluster.
* ``default[kube-apiserver]``: a real kube-apiserver and etcd started here without the CRDs
  (the scenario's prepare installs them); skipped, saying why, without ``KUBE_ASSETS_DIR``.
* ``kind[kind]``: a kind cluster the scenario creates; skipped, saying why, without ``kind``
  and a running container engine.

Every scenario is listed, including one added later without a target here (it runs with
nothing set up).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from integration.kube_harness import started_apiserver
from pytest_ansible.plugin import scenarios

ROOT = Path(__file__).resolve().parents[2]
SERVE_DOUBLE = ROOT / "tests" / "support" / "serve_api_double.py"
NAMESPACE = "molecule"
# The targets of each scenario; a scenario not named here runs once, with nothing set up.
TARGETS = {"default": ("double", "kube-apiserver"), "kind": ("kind",)}


def _cases() -> list:
    cases = []
    for scenario in scenarios:
        if Path(scenario.parent_directory).resolve() != ROOT:
            continue
        for target in TARGETS.get(scenario.name, (None,)):
            marks = [pytest.mark.integration] if target == "kube-apiserver" else []
            name = scenario.name if target is None else f"{scenario.name}[{target}]"
            cases.append(pytest.param(scenario, target, id=name, marks=marks))
    return cases


def container_engine() -> tuple[str | None, str]:
    """A container engine whose daemon answers (kind needs one), or None and why not."""
    reasons = []
    for engine in ("docker", "podman"):
        path = shutil.which(engine)
        if path is None:
            reasons.append(f"no {engine} on PATH")
            continue
        try:
            probe = subprocess.run(
                [path, "info"], capture_output=True, text=True, timeout=60, check=False
            )
        except subprocess.TimeoutExpired:
            reasons.append(f"{engine} info did not answer in 60 s")
            continue
        if probe.returncode == 0:
            return engine, ""
        reasons.append(f"{engine} info failed: {(probe.stderr or probe.stdout).strip()[:200]}")
    return None, "; ".join(reasons)


def _environment(monkeypatch: pytest.MonkeyPatch, **variables: str) -> None:
    # molecule runs ansible-config, ansible-playbook and kind from PATH: this Python's first.
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    )
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("GLANCE_MOLECULE_NAMESPACE", NAMESPACE)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def _run(scenario) -> None:
    done = scenario.test()
    assert done.returncode == 0, f"molecule test -s {scenario.name} failed ({done.returncode})"


@pytest.mark.parametrize(("scenario", "target"), _cases())
def test_molecule_scenario(scenario, target, monkeypatch, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    if target is None:
        _environment(monkeypatch)
        _run(scenario)
    elif target == "double":
        # As docs/molecule.md tells: the double served by tests/support/serve_api_double.py.
        served = subprocess.Popen(
            [sys.executable, str(SERVE_DOUBLE), "--kubeconfig", str(kubeconfig)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert served.stdout.readline().startswith("serving"), "the double did not start"
            _environment(monkeypatch, KUBECONFIG=str(kubeconfig))
            _run(scenario)
        finally:
            served.terminate()
            rest, _ = served.communicate(timeout=30)
        hits = int(re.search(r"health probes answered: (\d+)", rest).group(1))
        assert hits >= 1  # verify's Ready=True came through the service proxy
    elif target == "kube-apiserver":
        with started_apiserver(()) as server:  # skips, saying why, without the binaries
            server.write_kubeconfig(kubeconfig)
            _environment(monkeypatch, KUBECONFIG=str(kubeconfig))
            _run(scenario)
    else:
        engine, reason = container_engine()
        missing = [] if shutil.which("kind") else ["no kind on PATH (https://kind.sigs.k8s.io)"]
        if engine is None:
            missing.append(f"no running container engine ({reason})")
        if missing:
            pytest.skip(f"kind scenario needs kind and a container engine: {'; '.join(missing)}")
        _environment(
            monkeypatch,
            KUBECONFIG=str(kubeconfig),
            GLANCE_MOLECULE_ENGINE=engine,
            KIND_EXPERIMENTAL_PROVIDER=engine,
        )
        _run(scenario)


def test_every_scenario_is_collected():
    """pytest-ansible found the three scenarios of this checkout (git-tracked)."""
    names = {s.name for s in scenarios if Path(s.parent_directory).resolve() == ROOT}
    assert {"default", "kind", "offline"} <= names, names
