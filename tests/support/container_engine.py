"""Whether a container engine runs here: what the kind scenario and the image builds need.

``engine_problem(engine)`` says why ``engine`` (``docker`` or ``podman``) cannot run a
container here, or "" when its daemon answers ``<engine> info``; the tests that need one
skip with that reason, naming the tool (never a silent pass).
"""

from __future__ import annotations

import shutil
import subprocess

ENGINES = ("docker", "podman")


def engine_problem(engine: str) -> str:
    path = shutil.which(engine)
    if path is None:
        return f"no {engine} on PATH"
    try:
        probe = subprocess.run(
            [path, "info"], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:
        return f"{engine} info did not answer in 60 s"
    if probe.returncode != 0:
        return f"{engine} info failed: {(probe.stderr or probe.stdout).strip()[:200]}"
    return ""


def container_engine() -> tuple[str | None, str]:
    """The first of ``ENGINES`` that runs here, or None and why none does."""
    problems = []
    for engine in ENGINES:
        problem = engine_problem(engine)
        if not problem:
            return engine, ""
        problems.append(problem)
    return None, "; ".join(problems)
