"""kube-proxy (iptables mode): the node's Services."""

from __future__ import annotations

import json

from .base import NodeBase
from .processes import free_port


class KubeProxy(NodeBase):
    """Starts kube-proxy."""

    def _start_kube_proxy(self) -> None:
        lay = self.layout
        config = self.workdir / "kube-proxy-config.json"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                    "kind": "KubeProxyConfiguration",
                    "clientConnection": {"kubeconfig": str(self.workdir / "kube-proxy.kubeconfig")},
                    "mode": "iptables",
                    "clusterCIDR": lay.pod_cidr,
                    "hostnameOverride": lay.name,
                    "bindAddress": lay.node_ip,
                    "healthzBindAddress": f"127.0.0.1:{free_port()}",
                    "metricsBindAddress": f"127.0.0.1:{free_port()}",
                    "nodePortAddresses": [f"{lay.node_ip}/32"],
                    "iptables": {"masqueradeAll": True, "minSyncPeriod": "1s"},
                    # Leave the machine's conntrack sysctls as they are.
                    "conntrack": {
                        "maxPerCore": 0,
                        "min": 0,
                        "tcpEstablishedTimeout": "0s",
                        "tcpCloseWaitTimeout": "0s",
                    },
                }
            )
        )
        self._spawn("kube-proxy", [self._bin("kube-proxy"), f"--config={config}", "--v=1"])
