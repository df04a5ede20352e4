"""The CustomResourceDefinitions of neighbours the cluster tests install beside the
operator, from the neighbours' own Go modules at the versions ``hack/crds/go.mod`` pins
(``go mod download``, checked against its go.sum; nothing is built)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = ROOT / "hack" / "crds"
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator"


def module_dir(module: str) -> Path:
    """Where Go keeps the source of ``module`` at the pinned version (downloaded first)."""
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    done = subprocess.run(
        ["go", "mod", "download", "-json", module],
        cwd=MODULE_DIR,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    found = json.loads(done.stdout) if done.stdout.strip() else {}
    if done.returncode != 0 or not found.get("Dir"):
        raise RuntimeError(f"go mod download {module} in {MODULE_DIR}: {found or done.stderr}")
    return Path(found["Dir"])


def prometheus_operator_crds(*plurals: str) -> list[Path]:
    """The Prometheus Operator's CRD files of ``plurals`` (servicemonitors, prometheusrules)."""
    folder = module_dir(PROMETHEUS_OPERATOR) / "example" / "prometheus-operator-crd"
    return [folder / f"monitoring.coreos.com_{plural}.yaml" for plural in plurals]
