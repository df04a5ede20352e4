"""The node's worker half: its network (bridge, iptables chain, CNI), containerd and the
kubelet."""

from __future__ import annotations

import json

from .base import NodeBase
from .images import pause_archive
from .layout import CNI_BIN_DIR, FORWARD_CHAIN, PAUSE_IMAGE
from .processes import free_port, run


class Worker(NodeBase):
    """Starts what runs the pods: the network, containerd (CNI, the sandbox image) and the
    kubelet."""

    def _network_up(self) -> None:
        lay = self.layout
        run(["ip", "link", "add", lay.node_bridge, "type", "bridge"])
        run(["ip", "addr", "add", f"{lay.node_ip}/{lay.node_prefix}", "dev", lay.node_bridge])
        run(["ip", "link", "set", lay.node_bridge, "up"])
        run(["iptables", "-w", "-N", FORWARD_CHAIN])
        for rule in (
            ["-i", lay.cni_bridge, "-o", lay.cni_bridge, "-j", "ACCEPT"],
            ["-s", lay.pod_cidr, "!", "-o", lay.cni_bridge, "-j", "DROP"],
        ):
            run(["iptables", "-w", "-A", FORWARD_CHAIN, *rule])
        run(["iptables", "-w", "-I", "FORWARD", "1", "-j", FORWARD_CHAIN])
        cni_dir = self.workdir / "cni"
        (cni_dir / "net.d").mkdir(parents=True, exist_ok=True)
        (cni_dir / "net.d" / "10-c5c3-node.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "c5c3-node",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": lay.cni_bridge,
                            "isGateway": True,
                            "ipMasq": False,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": lay.pod_cidr}]],
                                "routes": [{"dst": "0.0.0.0/0"}],
                                "dataDir": str(cni_dir / "ipam"),
                            },
                        }
                    ],
                },
                indent=2,
            )
        )

    def _start_containerd(self) -> None:
        lay = self.layout
        root = self.workdir / "containerd"
        mirrors = "".join(
            f'  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."{registry}"]\n'
            '    endpoint = ["http://127.0.0.1:9"]\n'
            for registry in ("docker.io", "ghcr.io", "quay.io", "registry.k8s.io", "localhost")
        )
        config = root / "config.toml"
        root.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f"""# The one-node test cluster's containerd (hack/node_cluster.py).
version = 2
root = "{root / "root"}"
state = "{lay.run_dir / "containerd"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "{lay.containerd_socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{self.workdir / "cni" / "net.d"}"
  [plugins."io.containerd.grpc.v1.cri".registry]
{mirrors}"""
        )
        self._spawn("containerd", ["containerd", "--config", str(config)])
        self._wait(lambda: self._ctr("version").returncode == 0, 60, "containerd")
        archive = pause_archive(self.workdir / "pause.oci.tar", self.workdir / "pause-build")
        self._ctr("images", "import", str(archive), check=True)

    def _start_kubelet(self) -> None:
        lay, pki = self.layout, self.certs
        config = self.workdir / "kubelet-config.json"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubelet.config.k8s.io/v1beta1",
                    "kind": "KubeletConfiguration",
                    "address": lay.node_ip,
                    "port": 10250,
                    "readOnlyPort": 0,
                    "healthzBindAddress": "127.0.0.1",
                    "healthzPort": free_port(),
                    "tlsCertFile": str(pki.path("kubelet.crt")),
                    "tlsPrivateKeyFile": str(pki.path("kubelet.key")),
                    "authentication": {
                        "anonymous": {"enabled": False},
                        "webhook": {"enabled": True},
                        "x509": {"clientCAFile": str(pki.path("ca.crt"))},
                    },
                    "authorization": {"mode": "Webhook"},
                    "cgroupDriver": "cgroupfs",
                    "failCgroupV1": False,
                    "failSwapOn": False,
                    "containerRuntimeEndpoint": f"unix://{lay.containerd_socket}",
                    "clusterDomain": "cluster.local",
                    "clusterDNS": [lay.cluster_dns_ip],
                    "resolvConf": "/etc/resolv.conf",
                    "podCIDR": lay.pod_cidr,
                    "serializeImagePulls": False,
                    "registerNode": True,
                    "localStorageCapacityIsolation": True,
                    # Only the pods' own bounds evict (staging and cache sizeLimits); the
                    # machine's disk and memory are shared with other work.
                    "evictionHard": {
                        "memory.available": "100Mi",
                        "nodefs.available": "1%",
                        "nodefs.inodesFree": "1%",
                        "imagefs.available": "1%",
                    },
                    "imageGCHighThresholdPercent": 100,
                    "imageGCLowThresholdPercent": 99,
                    "protectKernelDefaults": False,
                    "enforceNodeAllocatable": ["pods"],
                    "nodeStatusReportFrequency": "10s",
                    "syncFrequency": "10s",
                    "fileCheckFrequency": "10s",
                    "shutdownGracePeriod": "0s",
                    # The pods' logs in the node's own directory, not /var/log/pods.
                    "podLogsDir": str(self.workdir / "pod-logs"),
                }
            )
        )
        self._spawn(
            "kubelet",
            [
                self._bin("kubelet"),
                f"--config={config}",
                f"--kubeconfig={self.workdir / 'kubelet.kubeconfig'}",
                f"--root-dir={self.workdir / 'kubelet'}",
                f"--cert-dir={self.workdir / 'kubelet-pki'}",
                f"--node-ip={lay.node_ip}",
                f"--hostname-override={lay.name}",
                "--v=1",
            ],
        )
