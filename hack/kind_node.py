#!/usr/bin/env python3
"""Build a kind node image here, with no registry: ``make kind-node-image``.

    make kind-node-image                     # build (or reuse) it; its name is the last line
    python3 hack/kind_node.py --dry-run      # the decisions (images, names); nothing is built
    python3 hack/kind_node.py --link-dir .venv/bin   # also link kind and kubectl there
    python3 hack/kind_node.py mariadb        # the kind scenario's MariaDB image
    kind create cluster --image localhost/c5c3-kind-node:v1.36.3

``kind build node-image`` cannot run here: it pulls etcd, CoreDNS, pause, kindnetd and the
storage images from registries, and kind's base image too. So this script makes what kind
expects of a node image from what this machine can have:

* the programs: kind, crictl, CoreDNS and local-path-provisioner built from the Go module
  proxy (``hack/kind/**/go.mod``, each its own small module so no upstream moves another's
  dependency versions) and the Kubernetes binaries and etcd of ``hack/kube_assets.py``;
  all built once into the cache of ``hack/go_build.py`` (outside the checkout);
* two Debian bookworm bases made with ``mmdebstrap`` and ``docker import`` (as
  ``hack/images.py`` makes its Python bases): a small one the component images share
  (``COMPONENT_PACKAGES``) and the node's (``NODE_PACKAGES``: systemd, containerd, runc,
  the CNI plugins, iptables ...). Each is tagged with a digest of its package list, made
  once and reused;
* the component images, with the names ``kubeadm config images list`` gives for the
  Kubernetes release (kube-apiserver, kube-controller-manager, kube-scheduler,
  kube-proxy, etcd, CoreDNS, pause: ``hack/node/pause.c``), and ours: local-path-provisioner
  and its helper, and the default CNI. kubeadm's names are given only inside the node; in
  Docker these images are ``localhost/c5c3-kind/<name>``, never standing in for the
  registry's own. kindnetd, kind's own CNI, cannot be had: its
  modules are not served by the Go module proxy (403 / 404), so the node's default CNI is
  ours (``hack/kind/cni/``: Debian's bridge, host-local and portmap plugins over each
  node's ``spec.podCIDR``, and routes to the other nodes' pod CIDRs);
* the node image: the node base with our files (``hack/kind/node/``: the entrypoint, the
  containerd and kubelet units and configuration, a kubeadm wrapper), kubelet, kubeadm,
  kubectl, crictl, ``/kind/version`` and ``/kind/manifests`` (``hack/kind/manifests/``,
  which name the images above), and every component image imported into its containerd
  (namespace ``k8s.io``, not unpacked, pinned) in a build container that is then
  committed. The image carries a label with a digest of all its inputs; an image with
  the same digest is reused.

``mariadb`` builds the kind scenario's MariaDB image instead (Debian's mariadb-server with
``hack/kind/mariadb/entrypoint``). Standard library only; the decisions are functions
tests/install/test_kind_node_script.py calls without Docker.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build
import kube_assets
from node.images import pause_archive

import images

ROOT = Path(__file__).resolve().parent.parent
KIND_DIR = ROOT / "hack" / "kind"
NODE_FILES = KIND_DIR / "node"
MANIFESTS = KIND_DIR / "manifests"
CNI_FILES = KIND_DIR / "cni"

NODE_REPOSITORY = "localhost/c5c3-kind-node"
LOCAL_REPOSITORY = "localhost/c5c3-kind"
SUITE = "bookworm"
# Every image this script makes carries these labels; the node image also the digest of
# its inputs (INPUTS_LABEL), by which a finished one is reused.
VENDOR_LABEL = "io.c5c3.built-by"
VENDOR = "c5c3-glance hack/kind_node.py"
INPUTS_LABEL = "io.c5c3.kind-node.inputs"


class KindNodeError(RuntimeError):
    """Something the user must change or look at: the message says what."""


def say(message: str) -> None:
    print(f"[kind-node] {message}", file=sys.stderr, flush=True)


# --- the programs from the Go module proxy ---------------------------------------------------


@dataclass(frozen=True)
class Tool:
    """One small Go module of ``hack/kind``: the upstream module it pins and its program."""

    name: str  # the program, and the cache label's start
    subdir: str  # its module's directory under hack/kind
    module: str  # the upstream module whose version labels the build


TOOLS = (
    Tool("kind", "kind", "sigs.k8s.io/kind"),
    Tool("crictl", "crictl", "sigs.k8s.io/cri-tools"),
    Tool("coredns", "coredns", "github.com/coredns/coredns"),
    Tool(
        "local-path-provisioner",
        "local-path-provisioner",
        "github.com/rancher/local-path-provisioner",
    ),
)


def tool_build(tool: Tool, kind_dir: Path = KIND_DIR) -> go_build.GoBuild:
    module_dir = kind_dir / tool.subdir
    version = go_build.required_version(module_dir, tool.module)
    return go_build.GoBuild(
        kind="kind-tools",
        label=f"{tool.name}-{version}",
        module_dir=module_dir,
        packages=go_build.tools(module_dir),
        binaries=(tool.name,),
    )


def tool_version(name: str, kind_dir: Path = KIND_DIR) -> str:
    tool = next(t for t in TOOLS if t.name == name)
    return tool_build(tool, kind_dir).label.removeprefix(f"{name}-")


def ensure_tools(env: dict[str, str] | None = None) -> dict[str, Path]:
    """{program: its path}, each built first unless its cache directory is complete."""
    found = {}
    for tool in TOOLS:
        directory = go_build.ensure(tool_build(tool), say, env)
        found[tool.name] = directory / tool.name
    return found


# --- the images kubeadm deploys, and ours -----------------------------------------------------

# The control plane's images, as `kubeadm config images list` names them (the last path
# segment of each reference).
KUBEADM_COMPONENTS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "coredns",
    "pause",
    "etcd",
)


def kubeadm_images(listed: Iterable[str]) -> dict[str, str]:
    """{component: image reference} from the lines of ``kubeadm config images list``."""
    found = {}
    for line in listed:
        ref = line.strip()
        if not ref:
            continue
        name = ref.rsplit(":", 1)[0].rsplit("/", 1)[-1]
        if name in KUBEADM_COMPONENTS:
            found[name] = ref
    missing = [c for c in KUBEADM_COMPONENTS if c not in found]
    if missing:
        raise KindNodeError(f"kubeadm config images list named no {', '.join(missing)}")
    return found


def image_tag(ref: str) -> str:
    return ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else "latest"


def docker_ref(ref: str) -> str:
    """The name an image has in the host's Docker while it is built: kubeadm's names
    (registry.k8s.io/...) are given to our images only inside the node, so that they never
    stand in Docker for the registry's own; ours keep theirs."""
    if ref.startswith(LOCAL_REPOSITORY + "/"):
        return ref
    return f"{LOCAL_REPOSITORY}/{ref.rsplit('/', 1)[-1]}"


def check_versions(wanted: dict[str, str], kubernetes: str, etcd: str, coredns: str) -> None:
    """The images kubeadm wants are of the versions built here: the Kubernetes release of
    every component, etcd ``<version>-<n>``, CoreDNS's; else the message says which go.mod
    to move."""
    problems = []
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"):
        if image_tag(wanted[name]) != kubernetes:
            problems.append(f"{wanted[name]}: the Kubernetes binaries are {kubernetes}")
    if not image_tag(wanted["etcd"]).startswith(etcd.removeprefix("v") + "-"):
        problems.append(f"{wanted['etcd']}: hack/kube/go.mod pins etcd {etcd}")
    if image_tag(wanted["coredns"]) != coredns:
        problems.append(f"{wanted['coredns']}: hack/kind/coredns/go.mod pins {coredns}")
    if problems:
        raise KindNodeError("kubeadm wants other versions than are built: " + "; ".join(problems))


@dataclass(frozen=True)
class Component:
    """A component image: its reference, what goes into it (source, path in the image),
    its entrypoint, its title (a label), and the user it runs as where not root (a chart
    that asks for ``runAsNonRoot`` without a ``runAsUser`` needs a numeric one)."""

    ref: str
    files: tuple[tuple[Path, str], ...]
    entrypoint: tuple[str, ...]
    title: str
    user: str = ""


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    etcd: str
    coredns: str
    local_path: str


def versions(kube_dir: Path = kube_assets.MODULE_DIR, kind_dir: Path = KIND_DIR) -> Versions:
    return Versions(
        kubernetes=go_build.required_version(kube_dir, kube_assets.KUBERNETES_MODULE),
        etcd=go_build.required_version(kube_dir, kube_assets.ETCD_MODULE),
        coredns=tool_version("coredns", kind_dir),
        local_path=tool_version("local-path-provisioner", kind_dir),
    )


def our_images(v: Versions) -> dict[str, str]:
    """The images of ours the manifests name: only in the node image, never pulled."""
    return {
        "cni": f"{LOCAL_REPOSITORY}/cni:{v.kubernetes}",
        "local-path-provisioner": f"{LOCAL_REPOSITORY}/local-path-provisioner:{v.local_path}",
        "local-path-helper": f"{LOCAL_REPOSITORY}/local-path-helper:{v.local_path}",
    }


def node_image(v: Versions) -> str:
    return f"{NODE_REPOSITORY}:{v.kubernetes}"


def components(
    wanted: dict[str, str], ours: dict[str, str], assets: Path, tools: dict[str, Path]
) -> list[Component]:
    """Every image built with Docker on the component base (pause is not: it is the OCI
    archive of hack/node/pause.c)."""
    found = []
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"):
        binary = f"/usr/local/bin/{name}"
        found.append(Component(wanted[name], ((assets / name, binary),), (binary,), name))
    etcd = "/usr/local/bin/etcd"
    found.append(Component(wanted["etcd"], ((assets / "etcd", etcd),), (etcd,), "etcd"))
    found.append(
        Component(wanted["coredns"], ((tools["coredns"], "/coredns"),), ("/coredns",), "CoreDNS")
    )
    provisioner = "/usr/local/bin/local-path-provisioner"
    found.append(
        Component(
            ours["local-path-provisioner"],
            ((tools["local-path-provisioner"], provisioner),),
            (provisioner,),
            "local-path-provisioner",
        )
    )
    found.append(Component(ours["local-path-helper"], (), ("/bin/sh",), "local-path helper"))
    script = "/usr/local/bin/c5c3-kind-cni"
    found.append(
        Component(
            ours["cni"],
            ((CNI_FILES / "c5c3-kind-cni", script), (assets / "kubectl", "/usr/local/bin/kubectl")),
            (script,),
            "c5c3 kind CNI",
        )
    )
    return found


def labels(title: str) -> dict[str, str]:
    return {VENDOR_LABEL: VENDOR, "org.opencontainers.image.title": title}


def label_lines(values: dict[str, str]) -> str:
    return "LABEL " + " ".join(f"{k}={json.dumps(v)}" for k, v in sorted(values.items()))


def component_dockerfile(component: Component, base: str) -> str:
    lines = [f"FROM {base}"]
    if component.files:
        lines.append("COPY rootfs/ /")
    lines.append(label_lines(labels(component.title)))
    if component.user:
        lines.append(f"USER {component.user}")
    lines.append(f"ENTRYPOINT {json.dumps(list(component.entrypoint))}")
    return "\n".join(lines) + "\n"


# --- the manifests and the node's files -------------------------------------------------------


def placeholders(wanted: dict[str, str], ours: dict[str, str]) -> dict[str, str]:
    return {
        "@@PAUSE_IMAGE@@": wanted["pause"],
        "@@CNI_IMAGE@@": ours["cni"],
        "@@LOCAL_PATH_PROVISIONER_IMAGE@@": ours["local-path-provisioner"],
        "@@LOCAL_PATH_HELPER_IMAGE@@": ours["local-path-helper"],
    }


def render(text: str, values: dict[str, str], what: str = "text") -> str:
    """``text`` with each ``@@NAME@@`` replaced; one left over is an error naming it."""
    for key, value in values.items():
        text = text.replace(key, value)
    left = sorted(set(re.findall(r"@@[A-Z_]+@@", text)))
    if left:
        raise KindNodeError(f"{what}: nothing to fill in for {', '.join(left)}")
    return text


def node_files(values: dict[str, str], files: Path = NODE_FILES) -> dict[str, tuple[bytes, int]]:
    """{path in the node: (content, mode)} of hack/kind/node, rendered."""
    found = {}
    for path in sorted(p for p in files.rglob("*") if p.is_file()):
        relative = "/" + str(path.relative_to(files))
        text = render(path.read_text(), values, relative)
        found[relative] = (text.encode(), path.stat().st_mode & 0o777)
    return found


def manifests(values: dict[str, str], directory: Path = MANIFESTS) -> dict[str, str]:
    """{file name: rendered text} of /kind/manifests."""
    return {
        p.name: render(p.read_text(), values, f"hack/kind/manifests/{p.name}")
        for p in sorted(directory.glob("*.yaml"))
    }


# --- the Debian bases -------------------------------------------------------------------------

# The component images' base: what kube-proxy runs (iptables, conntrack; Debian's default
# nft backend, as the node's), the CNI image's plugins and `ip`, CA certificates. One
# base for all of them, so the node's containerd stores its layer once.
COMPONENT_PACKAGES = (
    "ca-certificates",
    "iptables",
    "conntrack",
    "iproute2",
    "containernetworking-plugins",
)
# The node: systemd as init, with D-Bus (the kubelet's and runc's systemd cgroup driver
# talk to it), Debian's containerd and runc, what kubeadm's preflight and the kubelet call
# (mount, nsenter, iptables, conntrack, ip, tc, ethtool, socat, crictl, which is ours).
NODE_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "containerd",
    "runc",
    "containernetworking-plugins",
    "iptables",
    "conntrack",
    "iproute2",
    "ethtool",
    "socat",
    "kmod",
    "mount",
    "util-linux",
    "procps",
    "ca-certificates",
    "libseccomp2",
)


@dataclass(frozen=True)
class Base:
    name: str  # "component" or "node"
    packages: tuple[str, ...]

    @property
    def ref(self) -> str:
        digest = hashlib.sha256(" ".join((SUITE, *self.packages)).encode()).hexdigest()[:12]
        return f"{LOCAL_REPOSITORY}-{self.name}-base:{SUITE}-{digest}"


BASES = (Base("component", COMPONENT_PACKAGES), Base("node", NODE_PACKAGES))
# The kind scenario's MariaDB (molecule/kind/prepare.yml): Debian's server with our
# entrypoint (hack/kind/mariadb/entrypoint), which honours the public image's MARIADB_*
# variables the scenario sets.
MARIADB_BASE = Base("mariadb", ("mariadb-server",))
MARIADB_IMAGE = f"{LOCAL_REPOSITORY}/mariadb:{SUITE}"
MARIADB_FILES = KIND_DIR / "mariadb"


# --- Docker -----------------------------------------------------------------------------------


def docker(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Run ``docker argv`` to completion, its output captured; with ``check`` a failure
    raises ``KindNodeError`` with what it printed."""
    kw.setdefault("text", True)
    done = subprocess.run(["docker", *argv], capture_output=True, check=False, **kw)
    if check and done.returncode != 0:
        out = (done.stdout or "") + (done.stderr or "")
        raise KindNodeError(
            f"docker {shlex.join(argv)[:300]}: exit {done.returncode}: {out[-2000:]}"
        )
    return done


def image_id(ref: str) -> str:
    """The image's ID, or "" where Docker has no such image."""
    done = docker("image", "inspect", "--format", "{{.Id}}", ref, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def image_label(ref: str, label: str) -> str:
    done = docker("image", "inspect", "--format", "{{json .Config.Labels}}", ref, check=False)
    if done.returncode != 0:
        return ""
    return (json.loads(done.stdout) or {}).get(label, "")


@dataclass
class Timing:
    """What each step took, for the summary."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, what: str, seconds: float | None, size: int = 0) -> None:
        took = "reused" if seconds is None else f"{seconds:.0f} s"
        self.rows.append((what, took, f"{size / 2**20:.0f} MiB" if size else ""))

    def lines(self) -> list[str]:
        rows = [("step", "time", "size"), *self.rows]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        return [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        ]


def make_base(base: Base, timing: Timing) -> str:
    """The Debian base ``base``: made with mmdebstrap and ``docker import`` unless Docker
    has it already (its tag holds the digest of its package list)."""
    ref = base.ref
    if image_id(ref):
        say(f"{ref}: there already")
        timing.add(f"base {ref}", None, images.Docker().size(ref))
        return ref
    if shutil.which("mmdebstrap") is None:
        raise KindNodeError(f"the base {ref} needs mmdebstrap (Debian: apt-get install mmdebstrap)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="c5c3-kind-base-") as scratch:
        rootfs = Path(scratch) / "rootfs.tar"
        command = images.mmdebstrap_command(SUITE, None, rootfs, packages=base.packages)
        say("$ " + shlex.join(command))
        if subprocess.run(command, check=False).returncode != 0:
            raise KindNodeError(f"mmdebstrap could not make {ref} (above)")
        changes = [f"LABEL {k}={json.dumps(v)}" for k, v in labels(f"{base.name} base").items()]
        changes.append("ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        argv = ["import"]
        for change in changes:
            argv += ["--change", change]
        message = f"c5c3 kind {base.name} base: Debian {SUITE} minbase + {' '.join(base.packages)}"
        docker(*argv, "--message", message, str(rootfs), ref)
    seconds = time.monotonic() - started
    timing.add(f"base {ref}", seconds, images.Docker().size(ref))
    return ref


def build_image(ref: str, dockerfile: str, files: dict[str, Path | bytes], timing: Timing) -> None:
    """``docker build -t ref`` of ``dockerfile`` with ``files`` ({path under the context:
    a file to copy, or content}) as its context; Docker's cache makes a rebuild of the same
    inputs cheap."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="c5c3-kind-context-") as scratch:
        context = Path(scratch)
        (context / "Dockerfile").write_text(dockerfile)
        for relative, source in files.items():
            target = context / relative.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, bytes):
                target.write_bytes(source)
            else:
                shutil.copy2(source, target)
        done = docker("build", "-q", "-t", ref, str(context), check=False)
        if done.returncode != 0:
            raise KindNodeError(f"docker build of {ref} failed: {done.stderr[-3000:]}")
    timing.add(ref, time.monotonic() - started, images.Docker().size(ref))


def build_component(component: Component, base: str, timing: Timing) -> None:
    files: dict[str, Path | bytes] = {f"rootfs{dest}": src for src, dest in component.files}
    build_image(docker_ref(component.ref), component_dockerfile(component, base), files, timing)


def renames(refs: Iterable[str]) -> list[tuple[str, str]]:
    """(name in Docker, name in the node) of each image imported under another name."""
    return [(docker_ref(ref), ref) for ref in refs if docker_ref(ref) != ref]


def mariadb_dockerfile(base: str) -> str:
    """Debian's post-installation made a data directory: the first start makes its own."""
    return "\n".join(
        [
            f"FROM {base}",
            # a server that runs as another user than root (mariadb-operator's pods: 999)
            # needs its socket directory writable
            "RUN rm -rf /var/lib/mysql/* && mkdir -p /run/mysqld && chmod 1777 /run/mysqld",
            "COPY rootfs/ /",
            label_lines(labels("MariaDB (Debian) for the kind scenario")),
            "EXPOSE 3306",
            'ENTRYPOINT ["/usr/local/bin/c5c3-mariadb"]',
            "",
        ]
    )


def build_mariadb() -> str:
    """The kind scenario's MariaDB image, on its own Debian base; its name."""
    problem = images.Docker().problem()
    if problem:
        raise KindNodeError(f"the MariaDB image is built with Docker: {problem}")
    timing = Timing()
    base = make_base(MARIADB_BASE, timing)
    files: dict[str, Path | bytes] = {
        "rootfs/usr/local/bin/c5c3-mariadb": MARIADB_FILES / "entrypoint"
    }
    build_image(MARIADB_IMAGE, mariadb_dockerfile(base), files, timing)
    for line in timing.lines():
        say(line)
    return MARIADB_IMAGE


# --- the node image ---------------------------------------------------------------------------


def stage_dockerfile(base: str) -> str:
    """The node base with our files and the binaries (rootfs/), set up for systemd."""
    return "\n".join(
        [
            f"FROM {base}",
            "COPY rootfs/ /",
            # multi-user.target is what runs; the units that have no place in a node
            # container are masked; containerd and the kubelet start at boot.
            "RUN systemctl set-default multi-user.target"
            " && systemctl mask getty.target console-getty.service systemd-udevd.service"
            " systemd-modules-load.service systemd-binfmt.service"
            " apt-daily.timer apt-daily-upgrade.timer"
            " && systemctl enable containerd.service kubelet.service"
            " && mkdir -p /etc/kubernetes/manifests /opt/cni/bin /etc/cni/net.d"
            " && chmod 755 /kind /kind/manifests",
            "ENV container=docker",
            "STOPSIGNAL SIGRTMIN+3",
            label_lines(labels("kind node")),
            'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]',
            "",
        ]
    )


def stage_files(
    v: Versions, values: dict[str, str], assets: Path, tools: dict[str, Path]
) -> dict[str, Path | bytes]:
    """The node image's own files under rootfs/: ours, the binaries, /kind."""
    files: dict[str, Path | bytes] = {}
    for path, (content, _mode) in node_files(values).items():
        files[f"rootfs{path}"] = content
    for name in ("kubelet", "kubeadm", "kubectl"):
        files[f"rootfs/usr/bin/{name}"] = assets / name
    files["rootfs/usr/local/bin/crictl"] = tools["crictl"]
    files["rootfs/kind/version"] = (v.kubernetes + "\n").encode()
    for name, text in manifests(values).items():
        files[f"rootfs/kind/manifests/{name}"] = text.encode()
    return files


def write_stage_context(context: Path, files: dict[str, Path | bytes], modes: dict[str, int]):
    for relative, source in files.items():
        target = context / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            target.write_bytes(source)
            target.chmod(modes.get(relative, 0o644))
        else:
            shutil.copy2(source, target)


def inputs_digest(parts: Iterable[str]) -> str:
    """The digest the node image carries: of its base, its own files, every image in it."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


# Imported as kind's own builder imports the images it preloads: not unpacked (the node
# unpacks them into the snapshotter of its /var volume), every platform; then labelled
# pinned, which containerd 1.7 and later keep from the kubelet's image garbage collection
# (Debian's 1.6 cannot label at import, and kind's kubelet configuration never collects).
CTR = "ctr --namespace k8s.io"
IMPORT = f"{CTR} images import --no-unpack --all-platforms --digests"
PIN = (
    "ctr --namespace k8s.io images list --quiet | while read -r image; do "
    'ctr --namespace k8s.io images label "$image" io.cri-containerd.pinned=pinned >/dev/null; '
    "done"
)
BUILD_CONTAINERD_CONFIG = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'


def preload(
    stage: str,
    archives: list[Path],
    renamed: list[tuple[str, str]],
    target: str,
    changes: list[str],
) -> None:
    """Run ``stage`` with containerd, import ``archives`` into it, give each image of
    ``renamed`` its name in the node, commit it as ``target``."""
    container = f"c5c3-kind-node-build-{os.getpid()}"
    mount = archives[0].parent
    try:
        # Inside the try: a run that fails to start still leaves a created container.
        docker(
            "run", "--detach", "--privileged", "--name", container,
            "--tmpfs", "/run", "--tmpfs", "/tmp",
            "--volume", f"{mount}:/c5c3-images:ro",
            "--entrypoint", "/bin/sleep", stage, "infinity",
        )  # fmt: skip
        script = "\n".join(
            [
                "set -eu",
                "printf '%s' \"$CONFIG\" >/tmp/containerd.toml",
                "containerd --config /tmp/containerd.toml >/tmp/containerd.log 2>&1 &",
                "pid=$!",
                "until ctr version >/dev/null 2>&1; do",
                "  kill -0 $pid || { cat /tmp/containerd.log; exit 1; }",
                "  sleep 0.1",
                "done",
                *[f"{IMPORT} /c5c3-images/{a.name} >/dev/null" for a in archives],
                *[f"{CTR} images tag {old} {new} >/dev/null" for old, new in renamed],
                *[f"{CTR} images rm {old} >/dev/null" for old, _new in renamed],
                PIN,
                "ctr --namespace k8s.io images list --quiet",
                "kill $pid",
                "while kill -0 $pid 2>/dev/null; do sleep 0.1; done",
            ]
        )
        done = docker(
            "exec", "--env", f"CONFIG={BUILD_CONTAINERD_CONFIG}", container, "sh", "-c", script
        )
        say("preloaded:\n  " + "\n  ".join(done.stdout.split()))
        argv = ["commit"]
        for change in changes:
            argv += ["--change", change]
        docker(*argv, container, target)
    finally:
        docker("rm", "--force", container, check=False)


def save_archives(refs: list[str], directory: Path) -> list[Path]:
    found = []
    for ref in refs:
        path = directory / (re.sub(r"[^A-Za-z0-9_.-]", "_", ref) + ".tar")
        docker("save", "--output", str(path), ref)
        found.append(path)
    return found


# --- the run ----------------------------------------------------------------------------------


def kube_assets_dir(environ: dict[str, str] | None = None) -> Path:
    """``KUBE_ASSETS_DIR`` where it names a complete directory, else the one
    ``hack/kube_assets.py`` builds (or finds in its cache)."""
    env = os.environ if environ is None else environ
    given = env.get("KUBE_ASSETS_DIR")
    if given:
        missing = [b for b in kube_assets.BINARIES if not os.access(Path(given) / b, os.X_OK)]
        if missing:
            raise KindNodeError(f"KUBE_ASSETS_DIR={given} lacks {', '.join(missing)}")
        return Path(given)
    return go_build.ensure(kube_assets.kube_build(), say)


def listed_images(assets: Path, kubernetes: str) -> dict[str, str]:
    done = subprocess.run(
        [str(assets / "kubeadm"), "config", "images", "list", "--kubernetes-version", kubernetes],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise KindNodeError(f"kubeadm config images list: {done.stderr.strip()[-500:]}")
    return kubeadm_images(done.stdout.splitlines())


def link_programs(link_dir: Path, programs: dict[str, Path]) -> None:
    """Symlink each program into ``link_dir`` (``.venv/bin``: on PATH once activated)."""
    link_dir.mkdir(parents=True, exist_ok=True)
    for name, target in programs.items():
        link = link_dir / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target.resolve())
        say(f"{link} -> {target}")


def build(link_dir: Path | None = None, force: bool = False) -> str:
    """Everything, in order; the node image's name."""
    problem = images.Docker().problem()
    if problem:
        raise KindNodeError(f"the node image is built with Docker: {problem}")
    timing = Timing()
    started = time.monotonic()
    v = versions()
    assets = kube_assets_dir()
    tools = ensure_tools()
    if link_dir is not None:
        link_programs(link_dir, {"kind": tools["kind"], "kubectl": assets / "kubectl"})
    wanted = listed_images(assets, v.kubernetes)
    check_versions(wanted, v.kubernetes, v.etcd, v.coredns)
    ours = our_images(v)
    values = placeholders(wanted, ours)
    component_base, node_base = (make_base(b, timing) for b in BASES)
    built = components(wanted, ours, assets, tools)
    for component in built:
        build_component(component, component_base, timing)
    target = node_image(v)
    stage = f"{NODE_REPOSITORY}-stage:{v.kubernetes}"
    files = stage_files(v, values, assets, tools)
    modes = {f"rootfs{p}": mode for p, (_c, mode) in node_files(values).items()}
    with tempfile.TemporaryDirectory(prefix="c5c3-kind-node-") as scratch:
        work = Path(scratch)
        context = work / "context"
        write_stage_context(context, files, modes)
        (context / "Dockerfile").write_text(stage_dockerfile(node_base))
        began = time.monotonic()
        done = docker("build", "-q", "-t", stage, str(context), check=False)
        if done.returncode != 0:
            raise KindNodeError(f"docker build of {stage} failed: {done.stderr[-3000:]}")
        timing.add(stage, time.monotonic() - began, images.Docker().size(stage))
        (work / "archives").mkdir()
        pause = pause_archive(
            work / "archives" / "pause.oci.tar", work / "pause-build", wanted["pause"]
        )
        refs = [c.ref for c in built]
        digest = inputs_digest(
            [image_id(stage), hashlib.sha256(pause.read_bytes()).hexdigest()]
            + [f"{ref} {image_id(docker_ref(ref))}" for ref in refs]
        )
        if not force and image_label(target, INPUTS_LABEL) == digest:
            say(f"{target}: there already, of the same inputs ({INPUTS_LABEL}={digest})")
            timing.add(target, None, images.Docker().size(target))
        else:
            began = time.monotonic()
            archives = [*save_archives([docker_ref(r) for r in refs], work / "archives"), pause]
            changes = [
                'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]',
                "CMD []",
                f"LABEL {INPUTS_LABEL}={digest}",
            ]
            preload(stage, archives, renames(refs), target, changes)
            timing.add(target, time.monotonic() - began, images.Docker().size(target))
    say(f"done in {time.monotonic() - started:.0f} s")
    for line in timing.lines():
        say(line)
    return target


def dry_run() -> str:
    v = versions()
    say(
        f"Kubernetes {v.kubernetes}, etcd {v.etcd}, CoreDNS {v.coredns}, "
        f"local-path-provisioner {v.local_path}"
    )
    for tool in TOOLS:
        build_ = tool_build(tool)
        say(f"would build {build_.label} in {build_.module_dir}: {' '.join(build_.packages)}")
    for base in BASES:
        say(f"base {base.ref}: {' '.join(base.packages)}")
    for ref in our_images(v).values():
        say(f"our image {ref}")
    say("the control plane's images: as `kubeadm config images list` names them")
    return node_image(v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "image",
        nargs="?",
        choices=("node", "mariadb"),
        default="node",
        help="the kind node image (default), or the kind scenario's MariaDB image",
    )
    parser.add_argument("--dry-run", action="store_true", help="say what would be built")
    parser.add_argument(
        "--link-dir", type=Path, help="link kind and kubectl into this directory (.venv/bin)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="make the node image even where one of the same inputs is there",
    )
    args = parser.parse_args(argv)
    try:
        if args.image == "mariadb":
            name = MARIADB_IMAGE if args.dry_run else build_mariadb()
        else:
            name = dry_run() if args.dry_run else build(args.link_dir, args.force)
    except (KindNodeError, go_build.BuildError, images.ImagesError) as exc:
        say(f"error: {exc}")
        return 1
    print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
