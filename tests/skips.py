"""The skips a strict run allows, each with the reason it is not a gap.

``make test`` (and CI, which runs it) sets ``C5C3_STRICT_SKIPS=1``: it has installed and
built everything the tiers need (the Kubernetes binaries, a Docker daemon, the Debian
packages of the e2e stack and of the one-node cluster), so a test that skips for want of
one of them is a failure there, not a pass. ``tests/conftest.py`` turns every skip whose
reason matches none of the patterns below into a failure naming this file. Plain
``pytest`` (no variable) skips as before, saying why, for a developer's partial machine.

A pattern is a regular expression searched in the skip's reason. Add one only with the
reason the skip is not a missing part of the test run.
"""

from __future__ import annotations

import re

STRICT_VARIABLE = "C5C3_STRICT_SKIPS"

# (pattern, why the skip is not a gap in a strict run)
EXPLAINED: tuple[tuple[str, str], ...] = (
    (
        r"renders no configuration",
        "a parametrized render case whose input renders no configuration file to check: "
        "there is nothing of that kind to test for that case",
    ),
    (
        r"the stored object of this case is not admissible itself",
        "a CRD update case whose old object the API would refuse on its own: the update "
        "rule cannot be reached through it",
    ),
    (
        r"builds on what Docker cannot have here: \['(python|quay\.io)",
        "a documented `docker build` on a public base image (python:*-slim from docker.io, "
        "operator-framework's ansible-operator from quay.io): no registry can be reached "
        "from the machines this runs on, and nothing here may make those bases; the same "
        "Dockerfiles are built by `make images` and the documented commands on the local "
        "bases, in the same module",
    ),
    (
        r"one core: there is nothing to pin to",
        "CPU pinning needs two cores; CI has two, so it runs there",
    ),
)


def explained(reason: str) -> str | None:
    """Why a skip with ``reason`` is allowed in a strict run, or None when it is not."""
    for pattern, why in EXPLAINED:
        if re.search(pattern, reason):
            return why
    return None
