"""The node's CA and the certificates its components present, made by the runner's
certificate maker (``runner/endpoints/certificates.py``)."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from types import ModuleType

from .layout import REPO_ROOT, Layout


def _certificate_maker() -> ModuleType:
    """The runner's certificate maker (``runner/endpoints/certificates.py``), imported when
    the certificates are made: ``check``, ``install-packages`` and hack/kind_node.py run on
    a Python without ``cryptography``."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from runner.endpoints import certificates

    return certificates


class Certificates:
    """One CA and the certificates the components present, as PEM files in ``directory``."""

    def __init__(self, directory: Path):
        self.directory = directory

    def path(self, name: str) -> Path:
        return self.directory / name

    def make(self, layout: Layout) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import ExtendedKeyUsageOID

        certificates = _certificate_maker()
        self.directory.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.UTC)
        start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=30)

        def write(name: str, data: bytes, mode: int = 0o644) -> None:
            self.path(name).write_bytes(data)
            self.path(name).chmod(mode)

        ca, ca_key = certificates.make_ca("c5c3-node CA", start, end, path_length=None)
        write("ca.crt", certificates.cert_pem(ca))
        write("ca.key", certificates.key_pem(ca_key), 0o600)

        def leaf(
            name: str,
            common_name: str,
            organization: str | None = None,
            ips: tuple[str, ...] = (),
            dns: tuple[str, ...] = (),
        ) -> None:
            # Every component's certificate is a client's; one with names serves too.
            usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
            if ips or dns:
                usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            cert, key = certificates.issue(
                ca,
                ca_key,
                common_name,
                start,
                end,
                organization=organization,
                ips=ips,
                dns_names=dns,
                usages=usages,
            )
            write(f"{name}.crt", certificates.cert_pem(cert))
            write(f"{name}.key", certificates.key_pem(key), 0o600)

        leaf(
            "apiserver",
            "kube-apiserver",
            ips=(layout.node_ip, layout.kubernetes_service_ip, "127.0.0.1"),
            dns=(
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "localhost",
            ),
        )
        leaf("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
        leaf("admin", "c5c3-node-admin", "system:masters")
        leaf("controller-manager", "system:kube-controller-manager")
        leaf("scheduler", "system:kube-scheduler")
        leaf("kube-proxy", "system:kube-proxy")
        leaf("kubelet-client", f"system:node:{layout.name}", "system:nodes")
        leaf("kubelet", layout.name, ips=(layout.node_ip,), dns=(layout.name,))

        sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        write("sa.key", certificates.key_pem(sa), 0o600)
        write(
            "sa.pub",
            sa.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        )

    def kubeconfig(self, server: str, user: str) -> dict:
        """A kubeconfig with the CA and ``user``'s client certificate embedded."""
        import base64

        def b64(name: str) -> str:
            return base64.b64encode(self.path(name).read_bytes()).decode()

        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "c5c3-node",
                    "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": b64(f"{user}.crt"),
                        "client-key-data": b64(f"{user}.key"),
                    },
                }
            ],
            "contexts": [{"name": "c5c3-node", "context": {"cluster": "c5c3-node", "user": user}}],
            "current-context": "c5c3-node",
        }
