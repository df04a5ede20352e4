"""What a machine needs for the node: the Kubernetes binaries and Debian's programs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import debian_packages
import kube_assets

from .layout import CGROUP_ROOT, CNI_BIN_DIR

ASSET_VARIABLES = ("KUBE_ASSETS_DIR", "KUBEBUILDER_ASSETS")
# What `make kube-assets` builds, less kubeadm (kind's): the node runs the rest.
KUBE_BINARIES = tuple(b for b in kube_assets.BINARIES if b != "kubeadm")
# Debian package of each program the node runs beside the Kubernetes binaries.
PROGRAMS = {
    "containerd": "containerd",
    "containerd-shim-runc-v2": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "ipset": "ipset",  # `make cluster-netpol-down` removes kube-router's sets with it
    "ip": "iproute2",
    "gcc": "gcc",
}
CNI_PLUGINS = {"bridge": "containernetworking-plugins", "host-local": "containernetworking-plugins"}
CNI_PLUGINS["loopback"] = "containernetworking-plugins"


def assets_dir() -> tuple[Path | None, str]:
    """The directory of the Kubernetes binaries, or None and why it is not usable."""
    for variable in ASSET_VARIABLES:
        value = os.environ.get(variable)
        if not value:
            continue
        missing = [b for b in KUBE_BINARIES if not os.access(Path(value) / b, os.X_OK)]
        if missing:
            return None, f"{variable}={value} lacks {', '.join(missing)}"
        return Path(value), ""
    return None, (
        "no Kubernetes binaries: set KUBE_ASSETS_DIR to a directory holding "
        + ", ".join(KUBE_BINARIES)
        + " (`make kube-assets` builds them and prints the directory; the make targets "
        "set it themselves)"
    )


def missing_packages() -> dict[str, str]:
    """{program or plugin: Debian package} of what the node needs and this machine lacks."""
    plugins = {str(CNI_BIN_DIR / p): pkg for p, pkg in CNI_PLUGINS.items()}
    return debian_packages.missing(PROGRAMS, plugins)


def problems() -> list[str]:
    """Why a node cannot run here, one line each; empty when it can."""
    found = []
    _, why = assets_dir()
    if why:
        found.append(why)
    if os.geteuid() != 0:
        found.append("the node needs root (network devices, iptables, mounts, cgroups)")
    missing = missing_packages()
    if missing:
        packages = " ".join(sorted(set(missing.values())))
        found.append(
            f"missing {', '.join(sorted(missing))}: apt-get install {packages} "
            "(or `hack/node_cluster.py install-packages`)"
        )
    if not (CGROUP_ROOT / "memory").is_dir() and not (CGROUP_ROOT / "cgroup.controllers").exists():
        found.append(f"no cgroup hierarchy under {CGROUP_ROOT}")
    return found


def install_packages() -> None:
    """apt-get install the Debian packages of what ``missing_packages`` names."""
    debian_packages.install(missing_packages().values(), say=lambda m: print(m, file=sys.stderr))
