#!/usr/bin/env python3
"""A real one-node Kubernetes cluster on this machine: for the cluster tests and for people.

    make cluster-up       # start it; prints the KUBECONFIG to use
    make cluster-down     # stop it and remove everything it made
    make cluster-status   # what runs, and the node's state

Every part is real: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a
kubelet on containerd (runc, bridge + host-local CNI) and kube-proxy (iptables). The
Kubernetes binaries come from ``KUBE_ASSETS_DIR`` (no package registry ships them; see
docs/cluster.md); containerd, runc, the CNI plugins, iptables and conntrack are Debian's
(``install_packages`` installs the missing ones). Images come from the local Docker
daemon (``load_images``: ``docker save`` into containerd); the node never pulls from a
registry, and pod traffic never leaves the node.

One such node runs per machine at a time: its names are fixed (the bridges, the iptables
chain, ``/run/c5c3-node``, the cgroups), so ``down`` can clean up after a run that was
killed, and ``up`` starts with ``down``. What it needs and why:

* The node's address is on a bridge of its own (``c5c3-node0``, 10.250.0.1): the kubelet
  refuses a loopback node IP, and there is no ``dummy`` module here. The API server listens
  on that address (6443) and advertises it, so pods reach it through the ``kubernetes``
  Service; MariaDB, Keystone and the S3 server the tests start listen there too.
* Pods get 10.244.0.0/24 on bridge ``c5c3-cni0`` without masquerading; the ``C5C3-NODE``
  chain, first in ``FORWARD``, accepts traffic between pods (Docker's FORWARD policy is
  DROP and bridged packets traverse iptables here) and drops whatever a pod sends off
  the node. Services are 10.96.0.0/24; kube-proxy masquerades all Service traffic, so a
  pod reaching a Service backed by a pod on the same bridge gets its reply.
* containerd (its own instance: ``/run/c5c3-node/containerd.sock``, state in the work
  directory) with ``restrict_oom_score_adj`` (root here lacks CAP_SYS_RESOURCE: without
  it every sandbox fails "can't get final child's PID from pipe"), cgroupfs, the network
  namespaces under its state directory, and every registry a mirror on a closed port.
* The sandbox image is ours: ``hack/node/pause.c``, compiled statically and written as an
  OCI archive here, so no registry is needed.
* The kubelet: cgroup v1 (``failCgroupV1: false``), cgroupfs, webhook authentication and
  authorisation against the API server, a serving certificate for the node IP (so
  ``kubectl logs``, ``exec`` and ``port-forward`` work), no cluster DNS (tests use IPs).

Standard library, plus ``cryptography`` (in ``.venv``) for the certificates, which the
runner's certificate maker (``runner/endpoints/certificates.py``) makes.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import hashlib
import io
import ipaddress
import json
import os
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))
import debian_packages
import kube_assets

REPO_ROOT = Path(__file__).resolve().parent.parent
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
    "ip": "iproute2",
    "gcc": "gcc",
}
CNI_BIN_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = {"bridge": "containernetworking-plugins", "host-local": "containernetworking-plugins"}
CNI_PLUGINS["loopback"] = "containernetworking-plugins"
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


# --- certificates ------------------------------------------------------------------------


def _certificate_maker() -> ModuleType:
    """The runner's certificate maker (``runner/endpoints/certificates.py``), imported when
    the certificates are made: ``check`` and ``install-packages`` run without
    ``cryptography``."""
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


# --- the sandbox image --------------------------------------------------------------------


def pause_archive(path: Path, build_dir: Path, name: str = PAUSE_IMAGE) -> Path:
    """An OCI image archive of one static program, ``hack/node/pause.c``: the sandbox image,
    named ``name`` (hack/kind_node.py names it as kubeadm's pause image)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / "pause"
    subprocess.run(
        ["gcc", "-Os", "-static", "-s", "-o", str(binary), str(REPO_ROOT / "hack/node/pause.c")],
        check=True,
    )
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        info = tar.gettarinfo(str(binary), arcname="pause")
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        with binary.open("rb") as f:
            tar.addfile(info, f)
    diff = layer.getvalue()
    compressed = gzip.compress(diff, mtime=0)
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    config = blob(
        json.dumps(
            {
                "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(
                    os.uname().machine, os.uname().machine
                ),
                "os": "linux",
                "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
                "rootfs": {
                    "type": "layers",
                    "diff_ids": ["sha256:" + hashlib.sha256(diff).hexdigest()],
                },
            }
        ).encode()
    )
    manifest = blob(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        **blob(compressed),
                    }
                ],
            }
        ).encode()
    )
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **manifest,
                "annotations": {"io.containerd.image.name": name},
            }
        ],
    }
    with tarfile.open(path, "w") as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        add("index.json", json.dumps(index).encode())
        for digest, data in blobs.items():
            add("blobs/sha256/" + digest.split(":", 1)[1], data)
    return path


# --- processes ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeError(RuntimeError):
    """A step of bringing the node up failed; the message says which and why."""


def _run(argv: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Run ``argv`` to completion; with ``check``, a failure raises ``NodeError`` with what
    the command printed."""
    kw.setdefault("text", "stdin" not in kw)
    done = subprocess.run(argv, check=False, capture_output=True, **kw)
    if check and done.returncode != 0:
        out = done.stdout + done.stderr
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        raise NodeError(f"{' '.join(argv)}: exit {done.returncode}: {out.strip()[-2000:]}")
    return done


@dataclass
class NodeCluster:
    """The node: ``up()`` starts it, ``down()`` stops it and removes all it made."""

    assets: Path
    workdir: Path = DEFAULT_WORKDIR
    layout: Layout = LAYOUT
    say: Callable[[str], None] = field(default=lambda line: print(line, flush=True))

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig (client certificate in ``system:masters``)."""
        return self.workdir / "admin.kubeconfig"

    @property
    def logs_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def certs(self) -> Certificates:
        return Certificates(self.workdir / "pki")

    # -- up ---------------------------------------------------------------------------

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

    def _network_up(self) -> None:
        lay = self.layout
        _run(["ip", "link", "add", lay.node_bridge, "type", "bridge"])
        _run(["ip", "addr", "add", f"{lay.node_ip}/{lay.node_prefix}", "dev", lay.node_bridge])
        _run(["ip", "link", "set", lay.node_bridge, "up"])
        _run(["iptables", "-w", "-N", FORWARD_CHAIN])
        for rule in (
            ["-i", lay.cni_bridge, "-o", lay.cni_bridge, "-j", "ACCEPT"],
            ["-s", lay.pod_cidr, "!", "-o", lay.cni_bridge, "-j", "DROP"],
        ):
            _run(["iptables", "-w", "-A", FORWARD_CHAIN, *rule])
        _run(["iptables", "-w", "-I", "FORWARD", "1", "-j", FORWARD_CHAIN])
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

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.logs_dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.workdir,
        )
        log.close()
        pids = self._pids()
        pids[name] = proc.pid
        (self.workdir / "pids.json").write_text(json.dumps(pids))

    def _pids(self) -> dict[str, int]:
        try:
            return json.loads((self.workdir / "pids.json").read_text())
        except (OSError, ValueError):
            return {}

    def _bin(self, name: str) -> str:
        return str(self.assets / name)

    def _start_etcd(self) -> int:
        client, peer = _free_port(), _free_port()
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
        _stop(pid, self._matching("kube-apiserver", self.layout.node_ip))

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

    def _ctr(self, *args: str, check: bool = False, **kw) -> subprocess.CompletedProcess:
        argv = ["ctr", "--address", str(self.layout.containerd_socket), "--namespace", "k8s.io"]
        return _run([*argv, *args], check=check, **kw)

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
                f"--secure-port={_free_port()}",
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
                f"--secure-port={_free_port()}",
                "--leader-elect=false",
            ],
        )

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
                    "healthzPort": _free_port(),
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
                    "healthzBindAddress": f"127.0.0.1:{_free_port()}",
                    "metricsBindAddress": f"127.0.0.1:{_free_port()}",
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

    # -- readiness --------------------------------------------------------------------

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = self.exited()
            if dead:
                raise RuntimeError(
                    f"{', '.join(dead)} exited while waiting for {what}\n{self.tails()}"
                )
            with contextlib.suppress(Exception):
                if ready():
                    return
            time.sleep(0.5)
        raise TimeoutError(f"{what}: not after {timeout:.0f} s\n{self.tails()}")

    def exited(self) -> list[str]:
        """The components started by this node that are no longer running."""
        return [name for name, pid in self._pids().items() if not _alive(pid)]

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

    # -- using it ---------------------------------------------------------------------

    def kubectl(self, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig))
        return _run([self._bin("kubectl"), *args], check=check, env=env, **kw)

    def load_images(self, images: Iterable[str]) -> None:
        """``docker save`` each image into the node's containerd (namespace k8s.io)."""
        for image in images:
            with tempfile.TemporaryFile() as archive:
                subprocess.run(["docker", "save", image], stdout=archive, check=True)
                archive.seek(0)
                self._ctr("images", "import", "-", stdin=archive, check=True)

    def images(self) -> list[str]:
        out = self._ctr("images", "list", "--quiet", check=True).stdout
        return [line for line in out.splitlines() if not line.startswith("sha256:")]

    def tails(self, lines: int = 25) -> str:
        out = []
        for log in sorted(self.logs_dir.glob("*.log")) if self.logs_dir.is_dir() else []:
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def diagnostics(self) -> str:
        """What a failed test should show: pods, events, the node and the components."""
        parts = []
        for args in (
            ("get", "nodes", "-o", "wide"),
            ("get", "pods", "-A", "-o", "wide"),
            ("get", "events", "-A", "--sort-by=.lastTimestamp"),
        ):
            done = self.kubectl(*args, check=False)
            parts.append(f"$ kubectl {' '.join(args)}\n{done.stdout}{done.stderr}")
        parts.append(self.tails())
        return "\n".join(parts)

    # -- down -------------------------------------------------------------------------

    def down(self, quiet: bool = False) -> None:
        """Stop every process and remove every device, chain, mount and cgroup the node
        made; safe to run when nothing runs, and after a run that was killed."""
        say = (lambda _line: None) if quiet else self.say
        pids = self._pids()
        for name in ("kube-proxy", "kubelet", "kube-scheduler", "kube-controller-manager"):
            _stop(pids.get(name), self._matching(name, str(self.workdir)))
        killed = _kill_cgroup_tree("kubepods")
        shims = self._matching("containerd-shim-runc-v2", str(self.layout.containerd_socket))
        for pid in shims:
            _signal(pid, signal.SIGKILL)
        _stop(pids.get("containerd"), self._matching("containerd", str(self.workdir)))
        # The API server before etcd: it would retry etcd for a while.
        _stop(pids.get("kube-apiserver"), self._matching("kube-apiserver", self.layout.node_ip))
        _stop(pids.get("etcd"), self._matching("etcd", str(self.workdir)))
        if (self.assets / "kube-proxy").exists():
            _run([self._bin("kube-proxy"), "--cleanup"], check=False)
        # What kube-proxy leaves and the kubelet made (KUBE-FIREWALL, KUBE-KUBELET-CANARY),
        # and the node's own chain.
        chains = _remove_chains(lambda chain: chain.startswith("KUBE-") or chain == FORWARD_CHAIN)
        unmounted = _unmount_under(self.workdir, self.layout.run_dir)
        # The kubelet links every container's log into /var/log/containers.
        for link in Path("/var/log/containers").glob("*.log"):
            with contextlib.suppress(OSError):
                if str(self.workdir) in os.readlink(link):
                    link.unlink()
        for link in (self.layout.cni_bridge, self.layout.node_bridge):
            _run(["ip", "link", "del", link], check=False)
        _remove_cgroup_tree("kubepods")
        shutil.rmtree(self.layout.run_dir, ignore_errors=True)
        shutil.rmtree(self.workdir, ignore_errors=True)
        if pids or killed or shims or unmounted or chains:
            say(
                f"node {self.layout.name} down: {len(pids)} components, {len(shims)} shims, "
                f"{killed} pod processes stopped, {unmounted} mounts and {chains} iptables "
                "chains removed"
            )

    def _matching(self, program: str, *needles: str) -> list[int]:
        """Pids of ``program`` whose command line holds every one of ``needles`` (the
        node's own, not another containerd's or etcd's)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if not argv or Path(argv[0].decode(errors="replace")).name != program:
                continue
            line = b" ".join(argv).decode(errors="replace")
            if all(n in line for n in needles):
                found.append(int(entry.name))
        return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _signal(pid: int, signo: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signo)


def _stop(pid: int | None, also: Iterable[int] = (), grace: float = 15.0) -> None:
    """SIGTERM ``pid`` and ``also``; SIGKILL what is left after ``grace`` seconds."""
    targets = {p for p in [pid, *also] if p}
    for p in targets:
        _signal(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in targets):
        time.sleep(0.1)
    for p in targets:
        if _alive(p):
            _signal(p, signal.SIGKILL)


def _cgroup_dirs(name: str) -> Iterator[Path]:
    """Every cgroup directory named ``name`` or below it, deepest first, in every hierarchy."""
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else []:
        top = hierarchy / name
        if top.is_dir() and not top.is_symlink():
            dirs = [Path(d) for d, _, _ in os.walk(top)]
            yield from sorted(dirs, key=lambda p: len(p.parts), reverse=True)


def _kill_cgroup_tree(name: str) -> int:
    """SIGKILL every process in the cgroups under ``name``; how many there were."""
    pids: set[int] = set()
    for d in _cgroup_dirs(name):
        with contextlib.suppress(OSError):
            pids.update(int(p) for p in (d / "cgroup.procs").read_text().split())
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return len(pids)


def _remove_cgroup_tree(name: str) -> None:
    for d in _cgroup_dirs(name):
        for _ in range(20):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


def _remove_chains(ours: Callable[[str], bool]) -> int:
    """Delete the iptables and ip6tables chains ``ours`` accepts, and every rule that jumps
    to one, in every table; how many chains."""
    removed = 0
    for program in ("iptables", "ip6tables"):
        if shutil.which(program) is None:
            continue
        for table in ("filter", "nat", "mangle", "raw"):
            listed = _run([program, "-w", "-t", table, "-S"], check=False)
            if listed.returncode != 0:
                continue
            chains = [
                line.split()[1]
                for line in listed.stdout.splitlines()
                if line.startswith("-N ") and ours(line.split()[1])
            ]
            for line in listed.stdout.splitlines():
                words = shlex.split(line)
                if words[:1] == ["-A"] and "-j" in words and words[words.index("-j") + 1] in chains:
                    _run([program, "-w", "-t", table, "-D", *words[1:]], check=False)
            for chain in chains:
                _run([program, "-w", "-t", table, "-F", chain], check=False)
            for chain in chains:
                if _run([program, "-w", "-t", table, "-X", chain], check=False).returncode == 0:
                    removed += 1
    return removed


def _unmount_under(*roots: Path) -> int:
    """Unmount everything mounted under ``roots``, deepest first; how many."""
    prefixes = tuple(str(r).rstrip("/") + "/" for r in roots)
    count = 0
    for _ in range(5):
        mounts = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].encode().decode("unicode_escape")
            if point.startswith(prefixes) or point in {p.rstrip("/") for p in prefixes}:
                mounts.append(point)
        if not mounts:
            break
        for point in sorted(set(mounts), key=len, reverse=True):
            if _run(["umount", "-l", point], check=False).returncode == 0:
                count += 1
    return count


# --- command line ---------------------------------------------------------------------------


def _node(args: argparse.Namespace) -> NodeCluster:
    assets, why = assets_dir()
    if assets is None:
        # down works without the binaries (kube-proxy --cleanup is skipped).
        assets = Path(os.environ.get("KUBE_ASSETS_DIR", "/nonexistent"))
        if args.command != "down":
            raise SystemExit(why)
    return NodeCluster(assets=assets, workdir=Path(args.workdir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR), help="state directory")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="start the node (after cleaning up any earlier one)")
    sub.add_parser("down", help="stop the node and remove what it made")
    sub.add_parser("status", help="the components and the node's state")
    sub.add_parser("check", help="say what this machine lacks for a node")
    sub.add_parser("install-packages", help="apt-get install the Debian packages it needs")
    load = sub.add_parser("load-images", help="docker save images into the node's containerd")
    load.add_argument("images", nargs="+")
    args = parser.parse_args(argv)

    if args.command == "check":
        found = problems()
        print("\n".join(found) or "this machine can run the node")
        return 1 if found else 0
    if args.command == "install-packages":
        try:
            install_packages()
        except debian_packages.PackagesError as exc:
            print(exc, file=sys.stderr)
            return 1
        return 0
    node = _node(args)
    if args.command == "up":
        try:
            node.up()
        except (RuntimeError, TimeoutError, OSError) as exc:
            print(exc, file=sys.stderr)
            node.down()
            return 1
        print(f"export KUBECONFIG={node.kubeconfig}")
    elif args.command == "down":
        node.down()
    elif args.command == "status":
        pids = node._pids()
        if not pids:
            print("no node")
            return 1
        for name, pid in pids.items():
            print(f"{name:24} {pid:>8} {'running' if _alive(pid) else 'EXITED'}")
        print(node.kubectl("get", "nodes", "-o", "wide", check=False).stdout)
    elif args.command == "load-images":
        node.load_images(args.images)
        print("\n".join(node.images()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
