"""The node's fixed names, addresses and places (one such node per machine)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CNI_BIN_DIR = Path("/usr/lib/cni")
CGROUP_ROOT = Path("/sys/fs/cgroup")
PAUSE_IMAGE = "localhost/c5c3-node/pause:1"
FORWARD_CHAIN = "C5C3-NODE"


@dataclass(frozen=True)
class Layout:
    """The node's fixed names and addresses (one such node per machine)."""

    name: str = "c5c3-node"
    node_ip: str = "10.250.0.1"
    node_prefix: int = 24
    node_bridge: str = "c5c3-node0"
    pod_cidr: str = "10.244.0.0/24"
    cni_bridge: str = "c5c3-cni0"
    service_cidr: str = "10.96.0.0/24"
    # The cluster DNS the kubelet gives pods (ClusterFirst); CoreDNS answers there once an
    # add-on tool installed it (make cluster-addons, make cluster-gateway).
    cluster_dns_ip: str = "10.96.0.10"
    api_port: int = 6443
    run_dir: Path = Path("/run/c5c3-node")

    @property
    def api_url(self) -> str:
        return f"https://{self.node_ip}:{self.api_port}"

    @property
    def kubernetes_service_ip(self) -> str:
        return str(next(ipaddress.ip_network(self.service_cidr).hosts()))

    @property
    def containerd_socket(self) -> Path:
        return self.run_dir / "containerd.sock"


LAYOUT = Layout()
DEFAULT_WORKDIR = Path("/var/lib/c5c3-node")
