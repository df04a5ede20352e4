"""The order the test tiers run in (tests/conftest.py sorts the collected items by it).

``make unit`` runs tests/unit alone first (the Makefile's ``unit-tier``), before the
Kubernetes binaries are there, then hack/tiers.py runs two pytest processes at once: the
one-node cluster's tier (tests/cluster) with the molecule scenario that runs on that node
after it, and every other tier, in this order, ending with the molecule scenarios that need
no node. A plain ``pytest tests`` runs everything in this order: what needs Python alone or
a kube-apiserver first, the node's tiers last, so the Go programs only they use
(hack/prebuild.py) can be built meanwhile. tests/molecule comes after tests/cluster: its
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
