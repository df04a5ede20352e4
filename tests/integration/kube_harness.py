"""A real kube-apiserver and etcd on 127.0.0.1, started the way envtest starts them.

The binaries come from ``KUBE_ASSETS_DIR`` (or ``KUBEBUILDER_ASSETS``, envtest's variable):
a directory holding ``kube-apiserver`` and ``etcd``. No kubelet and no controllers run, so
objects are stored and validated but nothing reconciles them; tests simulate what kubelet
and the controllers would write. Every process started here is stopped in ``stop()``.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ASSET_VARIABLES = ("KUBE_ASSETS_DIR", "KUBEBUILDER_ASSETS")
BINARIES = ("kube-apiserver", "etcd")


def assets_dir() -> tuple[Path | None, str]:
    """The directory holding the binaries, or None and the reason it is not usable."""
    for variable in ASSET_VARIABLES:
        value = os.environ.get(variable)
        if not value:
            continue
        path = Path(value)
        missing = [b for b in BINARIES if not os.access(path / b, os.X_OK)]
        if missing:
            return None, f"{variable}={value} lacks executable {', '.join(missing)}"
        return path, ""
    return None, (
        "no real kube-apiserver: set KUBE_ASSETS_DIR (or KUBEBUILDER_ASSETS) to a directory "
        "holding the kube-apiserver and etcd binaries (`make kube-assets` builds them and "
        "prints it; `make test` sets it)"
    )


@contextlib.contextmanager
def started_apiserver(crds: Iterable[dict[str, Any]] = ()) -> Iterator[KubeApiServer]:
    """A started kube-apiserver (with etcd) with ``crds`` installed, stopped on exit;
    the test is skipped, saying why, when the binaries are absent."""
    import pytest

    path, reason = assets_dir()
    if path is None:
        pytest.skip(reason)
    server = KubeApiServer(path)
    try:
        server.start()
        for crd in crds:
            server.install_crd(crd)
        yield server
    finally:
        server.stop()


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the test process dies.

    ``stop`` ends etcd and kube-apiserver when a test finishes; a test process killed
    from outside (a ``timeout``, a second Ctrl-C) runs no ``finally`` and used to leave
    both running, bound to loopback ports, for the rest of the machine's life."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1: every socket stays bound until all are
    chosen, so the kernel cannot hand the same port out twice (etcd and kube-apiserver on one
    port failed a start with "address already in use")."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


class ApiError(Exception):
    """A non-2xx answer of the API server, with its Status object."""

    def __init__(self, code: int, status: dict[str, Any]):
        super().__init__(f"HTTP {code}: {status.get('message', status)}")
        self.code = code
        self.status = status

    @property
    def causes(self) -> list[dict[str, Any]]:
        return (self.status.get("details") or {}).get("causes") or []


@dataclass
class Client:
    """The few REST calls the tests need, with the admin bearer token."""

    base_url: str
    token: str

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # a throwaway self-signed server on loopback
        try:
            with urllib.request.urlopen(req, context=context, timeout=30) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode()
            try:
                status = json.loads(text)
            except ValueError:
                status = {"message": text}
            raise ApiError(exc.code, status) from None
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:  # /readyz, /livez, /healthz answer "ok" as text/plain
            return text

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def create(self, path: str, body: Any, dry_run: bool = False) -> Any:
        query = "?fieldValidation=Strict" + ("&dryRun=All" if dry_run else "")
        return self.request("POST", path + query, body)

    def replace(self, path: str, body: Any, dry_run: bool = False) -> Any:
        query = "?fieldValidation=Strict" + ("&dryRun=All" if dry_run else "")
        return self.request("PUT", path + query, body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)


AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""
"""Every request once (when its answer is complete), without bodies."""


class KubeApiServer:
    """etcd and kube-apiserver as child processes, and a client for them."""

    def __init__(self, assets: Path, audit_log: Path | None = None):
        """``audit_log``: where kube-apiserver writes one JSON line per request it answered
        (audit level Metadata: verb, path, user, code), for a bench that counts a pass's
        requests on the real server."""
        self.assets = assets
        self.audit_log = audit_log
        self.workdir = Path(tempfile.mkdtemp(prefix="c5c3-glance-kube-"))
        self.processes: list[subprocess.Popen] = []
        self.token = "c5c3-glance-integration-admin-token"
        self.client: Client | None = None
        self.etcd_url = ""
        self._apiserver_argv: list[str] = []

    def start(self, timeout: float = 90.0) -> Client:
        etcd_port, peer_port, api_port = _free_ports(3)
        self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                str(self.assets / "etcd"),
                "--data-dir",
                str(self.workdir / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",
            ],
        )
        key, pub = self._service_account_keys()
        tokens = self.workdir / "tokens.csv"
        tokens.write_text(f'{self.token},admin,admin-uid,"system:masters"\n')
        self._apiserver_argv = [
            str(self.assets / "kube-apiserver"),
            "--etcd-servers",
            f"http://127.0.0.1:{etcd_port}",
            "--bind-address",
            "127.0.0.1",
            "--advertise-address",
            "127.0.0.1",
            "--secure-port",
            str(api_port),
            "--cert-dir",
            str(self.workdir / "certs"),
            "--service-cluster-ip-range",
            "10.0.0.0/24",
            "--service-account-issuer",
            "https://kubernetes.default.svc",
            "--service-account-key-file",
            str(pub),
            "--service-account-signing-key-file",
            str(key),
            "--token-auth-file",
            str(tokens),
            "--authorization-mode",
            "RBAC",
            "--disable-admission-plugins",
            "ServiceAccount",
        ]
        if self.audit_log is not None:
            policy = self.workdir / "audit-policy.yaml"
            policy.write_text(AUDIT_POLICY)
            self._apiserver_argv += [
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
                "--audit-log-maxsize=0",
            ]
        self._apiserver_argv += ["--client-ca-file", str(self._client_ca())]
        self._spawn("kube-apiserver", self._apiserver_argv)
        self.client = Client(f"https://127.0.0.1:{api_port}", self.token)
        self._wait_ready(timeout)
        return self.client

    def stop_apiserver(self) -> None:
        """Stop the kube-apiserver alone (etcd runs on), as a control-plane outage does."""
        for proc in self.processes:
            if proc.args[0] == self._apiserver_argv[0] and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.processes = [p for p in self.processes if p.poll() is None]

    def start_apiserver(self, timeout: float = 90.0) -> None:
        """Start the kube-apiserver again, on the same port and etcd; return when ready."""
        self._spawn("kube-apiserver", self._apiserver_argv)
        self._wait_ready(timeout)

    def etcd(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST to etcd's v3 JSON gateway (``/v3/kv/put``, ``/v3/kv/compaction``, ...)."""
        request = urllib.request.Request(
            self.etcd_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())

    def _client_ca(self) -> Path:
        """A CA the server trusts for client certificates (``--client-ca-file``); its key
        stays in memory, for ``client_certificate``."""
        from runner.endpoints import certificates

        now = datetime.datetime.now(datetime.UTC)
        self._validity = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
        self._ca = certificates.make_ca("c5c3-glance test client CA", *self._validity)
        path = self.workdir / "client-ca.crt"
        path.write_bytes(certificates.cert_pem(self._ca[0]))
        return path

    def client_certificate(self, user: str, group: str | None = None) -> tuple[bytes, bytes]:
        """A client certificate of ``user`` (in ``group``) the server accepts: PEM
        certificate and key."""
        from cryptography.x509.oid import ExtendedKeyUsageOID

        from runner.endpoints import certificates

        cert, key = certificates.issue(
            *self._ca,
            user,
            *self._validity,
            organization=group,
            usages=(ExtendedKeyUsageOID.CLIENT_AUTH,),
        )
        return certificates.cert_pem(cert), certificates.key_pem(key)

    def serving_ca(self) -> bytes:
        """The CA of the serving certificate kube-apiserver made itself in its cert dir
        (the certificate is followed by the CA that signed it, for 127.0.0.1)."""
        return (self.workdir / "certs" / "apiserver.crt").read_bytes()

    def write_kubeconfig(
        self, path: Path, namespace: str | None = None, user: dict[str, Any] | None = None
    ) -> Path:
        """A kubeconfig for the admin token, as clients outside the tests would use one;
        ``user``: another kubeconfig user entry, on a cluster entry that verifies the
        server against ``serving_ca`` (given as ``certificate-authority-data``).

        The serving certificate is the throwaway one kube-apiserver generates in its
        cert dir, so the admin kubeconfig skips verification (loopback only)."""
        context: dict[str, Any] = {"cluster": "envtest", "user": "admin"}
        if namespace:
            context["namespace"] = namespace
        cluster: dict[str, Any] = {"server": self.client.base_url, "insecure-skip-tls-verify": True}
        if user is not None:
            cluster = {
                "server": self.client.base_url,
                "certificate-authority-data": base64.b64encode(self.serving_ca()).decode(),
            }
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "envtest", "cluster": cluster}],
            "users": [{"name": "admin", "user": user or {"token": self.token}}],
            "contexts": [{"name": "envtest", "context": context}],
            "current-context": "envtest",
        }
        path.write_text(json.dumps(doc))
        return path

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        self.processes.append(
            subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
            )
        )

    def _service_account_keys(self) -> tuple[Path, Path]:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key, pub = self.workdir / "sa.key", self.workdir / "sa.pub"
        key.write_bytes(
            private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        pub.write_bytes(
            private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        return key, pub

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for proc in self.processes:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"{proc.args[0]} exited with {proc.returncode}: {self.logs()}"
                    )
            try:
                self.client.request("GET", "/readyz")
                return
            except (ApiError, OSError) as exc:
                last = str(exc)
            time.sleep(0.5)
        raise TimeoutError(f"kube-apiserver not ready after {timeout}s: {last}\n{self.logs()}")

    def logs(self, tail: int = 4000) -> str:
        out = []
        for name in ("etcd", "kube-apiserver"):
            path = self.workdir / f"{name}.log"
            if path.exists():
                out.append(f"--- {name}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(out)

    def install_crd(self, crd: dict[str, Any], timeout: float = 30.0) -> None:
        """Create ``crd`` and wait until it is Established."""
        name = crd["metadata"]["name"]
        self.client.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conditions = {
                c["type"]: c["status"]
                for c in (got.get("status") or {}).get("conditions") or []  # null at first
            }
            if conditions.get("Established") == "True":
                return
            time.sleep(0.2)
        raise TimeoutError(f"CRD {name} not established after {timeout}s")

    def stop(self) -> None:
        """Stop the processes one by one, the last started first: the kube-apiserver
        before its etcd. A kube-apiserver whose etcd is already going drains for its whole
        grace period (15 s here); with etcd still up it is gone in about a second."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.processes.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)
