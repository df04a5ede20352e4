"""The molecule scenarios as pytest-ansible finds them, each named for its cluster.

pytest-ansible's ``molecule_scenario`` fixture parametrizes a test with every scenario git
tracks (``**/molecule/*/molecule.yml``), each a ``MoleculeScenario`` whose ``test_id`` is
the test's id: ``<directory holding molecule/>-<scenario>``, which is ``-offline`` for a
checkout root. Here each scenario's id names the scenario and the cluster it runs on
(docs/molecule.md): ``offline``; ``default-kube-apiserver`` when ``KUBE_ASSETS_DIR`` (or
``KUBEBUILDER_ASSETS``) is set, else ``default-api-double``; ``kind``. A scenario not
named here keeps its own name.

``offline``, ``default`` and ``node`` carry the mark ``molecule_target``: ``make test``
leaves them to ``make molecule`` (docs/decisions.md, "What left make test"); ``kind`` is
the scenario ``make test`` runs.
"""

from __future__ import annotations

import os

import pytest
from integration.kube_harness import ASSET_VARIABLES
from pytest_ansible import plugin as pytest_ansible_plugin


def cluster_of(scenario: str) -> str | None:
    """The cluster a scenario runs on here, or None for one that needs none."""
    if scenario == "default":
        real = any(os.environ.get(variable) for variable in ASSET_VARIABLES)
        return "kube-apiserver" if real else "api-double"
    return None


def test_id(scenario: str) -> str:
    cluster = cluster_of(scenario)
    return scenario if cluster is None else f"{scenario}-{cluster}"


MAKE_MOLECULE_ONLY = ("offline", "default", "node")
"""The scenarios ``make test`` leaves to ``make molecule``: each proves again what make test
proves elsewhere (docs/decisions.md)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        spec = getattr(item, "callspec", None)
        scenario = spec.params.get("molecule_scenario") if spec is not None else None
        if scenario is not None and getattr(scenario, "name", None) in MAKE_MOLECULE_ONLY:
            item.add_marker(pytest.mark.molecule_target)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    # The scenarios the plugin found in its own pytest_configure (this one runs after it):
    # the list its molecule_scenario fixture is parametrized with, by test_id.
    for scenario in pytest_ansible_plugin.scenarios:
        scenario.test_id = test_id(scenario.name)
