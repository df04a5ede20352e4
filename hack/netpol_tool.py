#!/usr/bin/env python3
"""NetworkPolicy enforced on the one-node cluster: ``make cluster-netpol`` (docs/cluster.md).

    make cluster-up && export KUBECONFIG=/var/lib/c5c3-node/admin.kubeconfig
    make cluster-netpol         # installs it; its last line says what enforces the policies
    python3 hack/netpol_tool.py --dry-run   # what it would build and install; nothing done
    make cluster-netpol-down    # remove it and the rules it wrote (--uninstall)

What it installs: **kube-router v2.1.0 with only its network policy controller**
(``--run-firewall``; no routing, no service proxy: the node's bridge CNI and kube-proxy stay),
as kube-router's own ``kube-router-firewall-daemonset.yaml`` does it: a DaemonSet in
``kube-system`` on the host's network, privileged, with the host's xtables lock, and the
ClusterRole of kube-router's manifests. It turns each NetworkPolicy into iptables chains and
ipsets on the node (``KUBE-ROUTER-*``, ``KUBE-POD-FW-*``, ``KUBE-NWPLCY-*``); what a policy
does not allow is rejected.

Why this one (docs/decisions.md "NetworkPolicy on the test node"): kind's own
kube-network-policies (v0.8.0, served) queues packets with nftables' queue expression, which
this machine's kernel is built without (``CONFIG_NFT_QUEUE``); Calico's module is not served
(v3.29.3: 403); kube-router v2.1.0 is the one served release, and security flaws are reported
for it. It runs on this test node only, never in what users install.

What it builds (nothing is pulled): ``kube-router`` from ``hack/netpol/go.mod`` (Go module
proxy), cached like the Kubernetes binaries, in an image on a Debian base with the
``iptables`` and ``ipset`` it calls (``localhost/c5c3-netpol/kube-router:<version>``), loaded
into the node.

``--uninstall`` deletes the DaemonSet, then removes kube-router's chains and ipsets from the
node (with the node's ``iptables`` and ``ipset``, as ``make cluster-down`` removes
kube-proxy's), then its RBAC: a node that enforces nothing again. Not ``kube-router
--cleanup-config``, its own way: in v2.1.0 it leaves every chain of the policy controller
(it cleans through handlers only a running controller has) and then panics in the service
proxy's clean-up on a kernel without IPVS. Standard library only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build
import kind_node
import node_addons
from node_addons import Cluster

ROOT = Path(__file__).resolve().parents[1]
MODULE_DIR = ROOT / "hack" / "netpol"
KR_MODULE = "github.com/cloudnativelabs/kube-router/v2"
IMAGE_REPOSITORY = "localhost/c5c3-netpol"
BASE = kind_node.Base("kube-router", ("ca-certificates", "iptables", "ipset", "iproute2"))
NAMESPACE = "kube-system"
NAME = "kube-router"
# kube-router's iptables chains: the hooks, each pod's firewall, each policy's
CHAIN_PREFIXES = ("KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-")
HEALTH_PORT = 20244
WAIT = "300s"
LABELS = {"k8s-app": NAME}


def say(message: str) -> None:
    print(f"[netpol] {message}", file=sys.stderr, flush=True)


def version(module_dir: Path = MODULE_DIR) -> str:
    return go_build.required_version(module_dir, KR_MODULE)


def build(module_dir: Path = MODULE_DIR) -> go_build.GoBuild:
    v = version(module_dir)
    return go_build.GoBuild(
        kind="netpol",
        label=f"kube-router-{v}",
        module_dir=module_dir,
        packages=go_build.tools(module_dir),
        binaries=("kube-router",),
        ldflags=f"-s -w -X {KR_MODULE}/pkg/version.Version={v}",
    )


def image_ref() -> str:
    return f"{IMAGE_REPOSITORY}/kube-router:{version()}"


def build_image(env: dict[str, str] | None = None) -> str:
    binary = go_build.ensure(build(), say, env) / "kube-router"
    ref = image_ref()
    program = "/usr/local/bin/kube-router"
    node_addons.build_images(
        [kind_node.Component(ref, ((binary, program),), (program,), NAME)], BASE, say
    )
    return ref


# --- the objects ------------------------------------------------------------------------------


def host_pod_spec(image: str, args: list[str]) -> dict[str, Any]:
    """What kube-router's pods need of the node: its network, privilege (iptables, ipset),
    the kernel's modules and the xtables lock the node's kube-proxy shares."""
    return {
        "hostNetwork": True,
        "priorityClassName": "system-node-critical",
        "serviceAccountName": NAME,
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": NAME,
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "args": args,
                "env": [
                    {
                        "name": "NODE_NAME",
                        "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                    }
                ],
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
                    {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                ],
            }
        ],
        "volumes": [
            {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}},
            {
                "name": "xtables-lock",
                "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"},
            },
        ],
    }


def rbac_objects() -> list[dict[str, Any]]:
    """kube-router's ServiceAccount and the ClusterRole of its manifests."""
    read = ["get", "list", "watch"]
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": NAME},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["namespaces", "pods", "services", "nodes", "endpoints"],
                    "verbs": read,
                },
                {
                    "apiGroups": ["networking.k8s.io"],
                    "resources": ["networkpolicies"],
                    "verbs": read,
                },
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["get", "create", "update"],
                },
                {"apiGroups": [""], "resources": ["services/status"], "verbs": ["update"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": NAME},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
        },
    ]


def daemonset(image: str, service_cidr: str) -> dict[str, Any]:
    """The firewall-only DaemonSet, its pod ready once kube-router's health endpoint
    answers."""
    args = [
        "--run-router=false",
        "--run-firewall=true",
        "--run-service-proxy=false",
        f"--service-cluster-ip-range={service_cidr}",
        f"--health-port={HEALTH_PORT}",
    ]
    spec = host_pod_spec(image, args)
    probe = {"httpGet": {"path": "/healthz", "port": HEALTH_PORT}, "periodSeconds": 3}
    spec["containers"][0]["readinessProbe"] = probe
    spec["containers"][0]["livenessProbe"] = dict(probe, initialDelaySeconds=10)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": LABELS},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS}, "spec": spec},
        },
    }


# --- the install ------------------------------------------------------------------------------


def install(cluster: Cluster, image: str, service_cidr: str) -> str:
    cluster.apply([*rbac_objects(), daemonset(image, service_cidr)])
    cluster.kubectl("-n", NAMESPACE, "rollout", "status", f"daemonset/{NAME}", f"--timeout={WAIT}")
    return f"NetworkPolicy enforced by kube-router {version()} (daemonset {NAMESPACE}/{NAME})"


def uninstall(cluster: Cluster) -> tuple[int, int]:
    """The DaemonSet and its pods first, then kube-router's chains and ipsets on the node,
    then the RBAC; what is already gone is skipped. How many chains and ipsets went."""
    from node.teardown import NETPOL_IPSET_PREFIXES, destroy_ipsets, remove_chains

    gone = ("--ignore-not-found", "--wait=true", "--timeout=120s")
    cluster.kubectl("-n", NAMESPACE, "delete", f"daemonset/{NAME}", *gone)
    cluster.kubectl("-n", NAMESPACE, "delete", "pod", "-l", f"k8s-app={NAME}", *gone)
    chains = remove_chains(lambda chain: chain.startswith(CHAIN_PREFIXES))
    sets = destroy_ipsets(NETPOL_IPSET_PREFIXES)
    for obj in reversed(rbac_objects()):
        kind = obj["kind"].lower()
        where = ("-n", NAMESPACE) if kind == "serviceaccount" else ()
        cluster.kubectl("delete", *where, f"{kind}/{obj['metadata']['name']}", *gone)
    return chains, sets


def install_on(node: node_addons.Node, cluster: Cluster) -> list[str]:
    from node.layout import LAYOUT

    ref = build_image()
    node.images.load_images([ref])
    return [install(cluster, ref, LAYOUT.service_cidr)]


def uninstall_from(node: node_addons.Node, cluster: Cluster) -> str:
    chains, sets = uninstall(cluster)
    return f"removed: kube-router, {chains} iptables chains, {sets} ipsets"


TOOL = node_addons.Tool(
    doc=__doc__,
    uninstall_help="remove kube-router, its chains and its ipsets",
    say=say,
    builds=lambda: [build()],
    images=lambda: [image_ref()],
    install=install_on,
    uninstall=uninstall_from,
)


def main(argv: list[str] | None = None) -> int:
    return node_addons.main(TOOL, argv)


if __name__ == "__main__":
    sys.exit(main())
