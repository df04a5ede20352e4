"""The control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler,
their kubeconfigs, and asking the API server as the admin."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from .base import NodeBase
from .processes import free_port, stop


class ControlPlane(NodeBase):
    """Starts (and restarts) the control plane; reads the API server."""

    def _start_etcd(self) -> int:
        client, peer = free_port(), free_port()
        self._spawn(
            "etcd",
            [
                self._bin("etcd"),
                "--name",
                "default",
                "--data-dir",
                str(self.workdir / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{client}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{client}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
            ],
        )
        (self.workdir / "etcd.url").write_text(f"http://127.0.0.1:{client}")
        return client

    def _start_apiserver(self, etcd_port: int) -> None:
        lay, pki = self.layout, self.certs
        self._spawn(
            "kube-apiserver",
            [
                self._bin("kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                f"--bind-address={lay.node_ip}",
                f"--advertise-address={lay.node_ip}",
                f"--secure-port={lay.api_port}",
                f"--tls-cert-file={pki.path('apiserver.crt')}",
                f"--tls-private-key-file={pki.path('apiserver.key')}",
                f"--client-ca-file={pki.path('ca.crt')}",
                f"--kubelet-client-certificate={pki.path('apiserver-kubelet-client.crt')}",
                f"--kubelet-client-key={pki.path('apiserver-kubelet-client.key')}",
                f"--kubelet-certificate-authority={pki.path('ca.crt')}",
                "--kubelet-preferred-address-types=InternalIP",
                f"--service-cluster-ip-range={lay.service_cidr}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki.path('sa.pub')}",
                f"--service-account-signing-key-file={pki.path('sa.key')}",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                "--allow-privileged=true",
                "--profiling=false",
            ],
        )

    def stop_apiserver(self) -> None:
        """Stop the kube-apiserver alone (SIGTERM, SIGKILL after the grace), as an outage of
        the control plane does; everything else of the node runs on."""
        pid = self._pids().get("kube-apiserver")
        stop(pid, self._matching("kube-apiserver", self.layout.node_ip))

    def start_apiserver(self, timeout: float = 120.0) -> None:
        """Start the kube-apiserver again on the node's etcd, as before; return when it is
        ready."""
        etcd = (self.workdir / "etcd.url").read_text().strip()
        self._start_apiserver(int(etcd.rsplit(":", 1)[1]))
        self._wait(self._api_ready, timeout, "kube-apiserver /readyz")

    def etcd_url(self) -> str:
        """The node's etcd client URL (loopback)."""
        return (self.workdir / "etcd.url").read_text().strip()

    def _write_kubeconfigs(self) -> None:
        url = self.layout.api_url
        for user, path in (
            ("admin", self.kubeconfig),
            ("controller-manager", self.workdir / "controller-manager.kubeconfig"),
            ("scheduler", self.workdir / "scheduler.kubeconfig"),
            ("kube-proxy", self.workdir / "kube-proxy.kubeconfig"),
            ("kubelet-client", self.workdir / "kubelet.kubeconfig"),
        ):
            path.write_text(json.dumps(self.certs.kubeconfig(url, user), indent=2))
            path.chmod(0o600)

    def _start_controllers(self) -> None:
        pki = self.certs
        self._spawn(
            "kube-controller-manager",
            [
                self._bin("kube-controller-manager"),
                f"--kubeconfig={self.workdir / 'controller-manager.kubeconfig'}",
                f"--authentication-kubeconfig={self.workdir / 'controller-manager.kubeconfig'}",
                f"--authorization-kubeconfig={self.workdir / 'controller-manager.kubeconfig'}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                f"--service-account-private-key-file={pki.path('sa.key')}",
                f"--root-ca-file={pki.path('ca.crt')}",
                f"--cluster-signing-cert-file={pki.path('ca.crt')}",
                f"--cluster-signing-key-file={pki.path('ca.key')}",
                f"--service-cluster-ip-range={self.layout.service_cidr}",
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service,-route",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [
                self._bin("kube-scheduler"),
                f"--kubeconfig={self.workdir / 'scheduler.kubeconfig'}",
                f"--authentication-kubeconfig={self.workdir / 'scheduler.kubeconfig'}",
                f"--authorization-kubeconfig={self.workdir / 'scheduler.kubeconfig'}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "--leader-elect=false",
            ],
        )

    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.certs.path("ca.crt")))
        ctx.load_cert_chain(str(self.certs.path("admin.crt")), str(self.certs.path("admin.key")))
        return ctx

    def api(self, path: str) -> object:
        """GET ``path`` from the API server as the admin; JSON decoded, or the text."""
        with urllib.request.urlopen(
            self.layout.api_url + path, context=self._ssl(), timeout=10
        ) as resp:
            text = resp.read().decode()
        try:
            return json.loads(text)
        except ValueError:  # /readyz answers "ok"
            return text

    def _api_ready(self) -> bool:
        return self.api("/readyz") == "ok"

    def node_ready(self) -> bool:
        node = self.api(f"/api/v1/nodes/{self.layout.name}")
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in node.get("status", {}).get("conditions", [])
        )

    def _default_service_account(self) -> bool:
        try:
            self.api("/api/v1/namespaces/default/serviceaccounts/default")
        except urllib.error.HTTPError:
            return False
        return True
