#!/usr/bin/env python3
"""Build helm from the Go module proxy: ``make helm``.

    make helm                            # build (or reuse) it; the binary's path is the last line
    python3 hack/helm_tool.py --dry-run  # the path and the command; nothing is built
    export HELM=$(make -s helm | tail -n 1)

What is built is ``hack/helm/go.mod``: ``helm.sh/helm/v4`` at the version it requires, its
``cmd/helm`` named in the ``tool`` block, stamped with that version as helm's release build
stamps it (``helm version`` reports it). The chart's tests (``tests/chart/``) and the
cluster tier's install, upgrade and uninstall use it. The cache, its key and its reuse are
``hack/go_build.py``'s. Standard library only.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build

ROOT = Path(__file__).resolve().parents[1]
MODULE_DIR = ROOT / "hack" / "helm"
CHART_DIR = ROOT / "charts" / "glance-operator"
HELM_MODULE = "helm.sh/helm/v4"
VERSION_PACKAGE = "helm.sh/helm/v4/internal/version"


def helm_build(module_dir: Path = MODULE_DIR) -> go_build.GoBuild:
    version = go_build.required_version(module_dir, HELM_MODULE)
    stamps = f"-X {VERSION_PACKAGE}.version={version} -X {VERSION_PACKAGE}.gitTreeState=clean"
    return go_build.GoBuild(
        kind="helm",
        label=f"helm-{version}",
        module_dir=module_dir,
        packages=go_build.tools(module_dir),
        binaries=("helm",),
        ldflags=f"-s -w {stamps}",
    )


def ensure(say=lambda message: None) -> Path:
    """The path of the helm binary, built first unless cached."""
    return go_build.ensure(helm_build(), say) / "helm"


def chart_files() -> dict[Path, Path]:
    """What the chart carries of config/ (helm reads no file outside the chart): the CRDs,
    the alert rules and the dashboard, each copy -> its source."""
    pairs = {
        CHART_DIR / "files" / "crds" / source.name: source
        for source in sorted((ROOT / "config" / "crd" / "bases").glob("*.yaml"))
    }
    prometheus = ROOT / "config" / "prometheus"
    for relative in ("rules.yaml", "dashboards/glance-operator.json"):
        pairs[CHART_DIR / "files" / "prometheus" / relative] = prometheus / relative
    return pairs


def stale_chart_files() -> list[Path]:
    """The chart's copies that differ from their source, or are missing, or have none."""
    pairs = chart_files()
    stale = [c for c, s in pairs.items() if not c.is_file() or not filecmp.cmp(c, s, False)]
    extra = [p for p in (CHART_DIR / "files").rglob("*") if p.is_file() and p not in pairs]
    return sorted(stale + extra)


def sync_chart_files() -> list[Path]:
    """Copy config/'s files into the chart; remove copies whose source is gone."""
    pairs = chart_files()
    changed = stale_chart_files()
    for path in changed:
        if path in pairs:
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pairs[path], path)
        else:
            path.unlink()
    return changed


def say(message: str) -> None:
    print(f"[helm] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the path and the command")
    parser.add_argument(
        "--sync-chart-files",
        action="store_true",
        help="copy config/'s CRDs, alert rules and dashboard into the chart (no build)",
    )
    args = parser.parse_args(argv)
    if args.sync_chart_files:
        for path in sync_chart_files():
            say(f"updated {path.relative_to(ROOT)}")
        return 0
    try:
        build = helm_build()
        if args.dry_run:
            target = go_build.output_dir(build, go_build.build_env())
            say(f"would run in {MODULE_DIR}: {' '.join(build.command(target))}")
            print(target / "helm")
        else:
            print(go_build.ensure(build, say) / "helm")
    except go_build.BuildError as exc:
        say(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
