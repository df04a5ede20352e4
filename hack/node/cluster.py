"""The node: ``NodeCluster``, its parts together, and ``up()`` in their order."""

from __future__ import annotations

import time

from .control_plane import ControlPlane
from .images import Images
from .kube_proxy import KubeProxy
from .packages import problems
from .teardown import Teardown
from .worker import Worker


class NodeCluster(ControlPlane, Worker, KubeProxy, Images, Teardown):
    """The node: ``up()`` starts it, ``down()`` stops it and removes all it made."""

    def up(self, timeout: float = 180.0) -> None:
        found = problems()
        if found:
            raise RuntimeError("the node cannot run here:\n  " + "\n  ".join(found))
        self.down(quiet=True)
        started = time.monotonic()
        for d in (self.workdir, self.logs_dir, self.layout.run_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.certs.make(self.layout)
        self._network_up()
        etcd_port = self._start_etcd()
        self._start_apiserver(etcd_port)
        self._wait(lambda: self._api_ready(), timeout, "kube-apiserver /readyz")
        self._write_kubeconfigs()
        self._start_containerd()
        self._start_controllers()
        self._start_kubelet()
        self._start_kube_proxy()
        self._wait(self.node_ready, timeout, f"node {self.layout.name} Ready")
        self._wait(self._default_service_account, timeout, "ServiceAccount default/default")
        self.say(
            f"node {self.layout.name} Ready in {time.monotonic() - started:.1f} s; "
            f"KUBECONFIG={self.kubeconfig}"
        )
