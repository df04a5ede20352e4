"""The order the test tiers run in (tests/conftest.py sorts the collected items by it).

``make unit`` runs tests/unit alone first (the Makefile's ``unit-tier``), before the
Kubernetes binaries are there, then hack/tiers.py runs the one-node cluster's tiers
(tests/cluster, then tests/molecule) and the others in two pytest processes at once; within
the second, this order. A plain ``pytest tests`` runs everything in this order: what needs
Python alone or a kube-apiserver first, the node's tiers last, so the Go programs only they
use (hack/prebuild.py) can be built meanwhile. tests/molecule comes after tests/cluster: its
``node`` scenario starts the machine's one node, which the cluster tier ends by taking down.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

TIER_ORDER = (
    "unit",
    "render",
    "playbooks",
    "reconcile",
    "integration",
    "runner",
    "install",
    "e2e",
    "cluster",
    "molecule",
)


def tier_rank(path: Path) -> int:
    """The place of the tier (``tests/<tier>/...``) that ``path`` is in; anything else last."""
    try:
        tier = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return len(TIER_ORDER)
    return TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER)
