"""The helm the tests use: ``HELM`` (``make test`` and ``make cluster-test`` export the one
``make helm`` builds), else that build where it is cached already."""

from __future__ import annotations

import os
from pathlib import Path

from support.hack_scripts import hack_script

helm_tool = hack_script("helm_tool")


def find_helm() -> tuple[str | None, str]:
    """helm's path and where it came from, or None and how to get one."""
    if os.environ.get("HELM"):
        return os.environ["HELM"], f"HELM={os.environ['HELM']}"
    try:
        cached = helm_tool.go_build.output_dir(
            helm_tool.helm_build(), helm_tool.go_build.build_env()
        )
    except helm_tool.go_build.BuildError as exc:
        return None, f"no helm: {exc}"
    if os.access(Path(cached) / "helm", os.X_OK):
        return str(Path(cached) / "helm"), f"the cached build {cached}"
    return None, "no helm: `make helm` builds it (hack/helm/go.mod) and prints its path; set HELM"
