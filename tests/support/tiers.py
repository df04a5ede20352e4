"""The order the test tiers run in (tests/conftest.py sorts the collected items by it).

What needs Python alone or a kube-apiserver first, the one-node cluster's tiers last: the Go
programs only those use (hack/prebuild.py: the node's tools, Envoy Gateway, the controllers
of ``make cluster-addons``) are built in the background while the earlier tiers run instead
of being waited for. ``make unit`` runs tests/unit in a pytest of its own, before the
Kubernetes binaries are there (the Makefile's ``unit-tier``). tests/molecule comes after
tests/cluster: its ``node`` scenario starts the machine's one node, which the cluster tier
ends by taking down.
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
