#!/usr/bin/env python3
"""Build etcd and the Kubernetes binaries from the Go module proxy: ``make kube-assets``.

    make kube-assets                      # build (or reuse) them; the directory is the last line
    python3 hack/kube_assets.py --dry-run # the directory and the command; nothing is built
    export KUBE_ASSETS_DIR=$(make -s kube-assets | tail -n 1)

What is built, and at which versions, is ``hack/kube/go.mod``: ``k8s.io/kubernetes`` (its
staging modules replaced by their published ``v0.<minor>.<patch>``: its own go.mod points
them at ``./staging``, which only holds inside its repository), the programs its ``tool``
block names (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
kubectl, kubeadm), and etcd, ``hack/kube/etcd``: a ``main`` of our own around the server's
``etcdmain``, at the etcd version kubeadm of that release runs (``DefaultEtcdVersion``).

The binaries carry their release as Kubernetes' own release build stamps it
(``-X k8s.io/component-base/version.gitVersion=...``, and for client-go): kubeadm derives
the control plane's image tags from it, and ``kubectl version`` and ``/version`` report
it. The cache, its key and its reuse are ``hack/go_build.py``'s. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build

MODULE_DIR = Path(__file__).resolve().parent / "kube"
KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
# What a complete directory holds: what the integration tests, the one-node cluster
# (hack/node_cluster.py) and the kind node image (hack/kind_node.py) take from it.
BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "kubectl",
    "kubeadm",
)
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


def ldflags(kubernetes: str) -> str:
    """The linker flags of a release build: stripped, and stamped with the release."""
    match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+", kubernetes)
    if not match:
        raise go_build.BuildError(f"not a Kubernetes release version: {kubernetes}")
    major, minor = match.groups()
    stamps = {
        "gitVersion": kubernetes,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
    }
    flags = ["-s", "-w"]
    for package in VERSION_PACKAGES:
        flags += [f"-X {package}.{name}={value}" for name, value in stamps.items()]
    return " ".join(flags)


def kube_build(module_dir: Path = MODULE_DIR) -> go_build.GoBuild:
    kubernetes = go_build.required_version(module_dir, KUBERNETES_MODULE)
    etcd = go_build.required_version(module_dir, ETCD_MODULE)
    return go_build.GoBuild(
        kind="kube-assets",
        label=f"kubernetes-{kubernetes}-etcd-{etcd}",
        module_dir=module_dir,
        packages=(*go_build.tools(module_dir), "./etcd"),
        binaries=BINARIES,
        ldflags=ldflags(kubernetes),
    )


def say(message: str) -> None:
    print(f"[kube-assets] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dry-run", action="store_true", help="print the directory and the command"
    )
    args = parser.parse_args(argv)
    try:
        build = kube_build()
        if args.dry_run:
            target = go_build.output_dir(build, go_build.build_env())
            say(f"would run in {MODULE_DIR}: {' '.join(build.command(target))}")
        else:
            target = go_build.ensure(build, say)
    except go_build.BuildError as exc:
        say(f"error: {exc}")
        return 1
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
