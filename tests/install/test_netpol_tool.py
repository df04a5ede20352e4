"""``make cluster-netpol``'s decisions without a cluster (hack/netpol_tool.py): what it
builds and the objects it applies, valid for the Kubernetes release the node runs, kube-router
running its network policy controller alone. The install, the enforcement and the clean-up
are tests/cluster/test_the_gateway.py's.
"""

from __future__ import annotations

import subprocess
import sys

import kubernetes_validate
from support.hack_scripts import ROOT, hack_script
from test_kustomize import KUBERNETES_VERSION

netpol_tool = hack_script("netpol_tool")
IMAGE = "localhost/c5c3-netpol/kube-router:v2.1.0"


def test_the_pin_is_the_one_the_docs_name():
    assert netpol_tool.version() == "v2.1.0"
    assert netpol_tool.image_ref() == IMAGE
    build = netpol_tool.build()
    assert build.packages == ("github.com/cloudnativelabs/kube-router/v2/cmd/kube-router",)
    assert "pkg/version.Version=v2.1.0" in build.ldflags  # what its log says it runs
    assert "kube-router v2.1.0" in (ROOT / "docs" / "cluster.md").read_text()


def test_every_object_is_valid_for_the_nodes_kubernetes():
    objects = [*netpol_tool.rbac_objects(), netpol_tool.daemonset(IMAGE, "10.96.0.0/24")]
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    assert [o["kind"] for o in objects] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "DaemonSet",
    ]


def test_only_the_network_policy_controller_runs_on_the_hosts_network():
    ds = netpol_tool.daemonset(IMAGE, "10.96.0.0/24")
    pod = ds["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == IMAGE and container["imagePullPolicy"] == "IfNotPresent"
    assert {
        "--run-firewall=true",
        "--run-router=false",
        "--run-service-proxy=false",
        "--service-cluster-ip-range=10.96.0.0/24",
    } <= set(container["args"])
    assert pod["hostNetwork"] is True and container["securityContext"] == {"privileged": True}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 20244}
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"/lib/modules", "/run/xtables.lock"}  # the lock kube-proxy shares


def test_it_reads_what_a_policy_controller_needs_and_writes_nothing_else():
    role = next(o for o in netpol_tool.rbac_objects() if o["kind"] == "ClusterRole")
    writes = {
        (group, resource)
        for rule in role["rules"]
        if set(rule["verbs"]) - {"get", "list", "watch"}
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert writes == {("coordination.k8s.io", "leases"), ("", "services/status")}
    reads = {r for rule in role["rules"] for r in rule["resources"]}
    assert {"networkpolicies", "pods", "namespaces", "nodes"} <= reads


def test_the_clean_up_takes_kube_routers_chains_and_only_those():
    ours = [c for c in ("KUBE-ROUTER-INPUT", "KUBE-POD-FW-X", "KUBE-NWPLCY-Y")]
    theirs = ["KUBE-SERVICES", "KUBE-FORWARD", "KUBE-FIREWALL", "C5C3-NODE"]
    assert all(c.startswith(netpol_tool.CHAIN_PREFIXES) for c in ours)
    assert not any(c.startswith(netpol_tool.CHAIN_PREFIXES) for c in theirs)


def test_dry_run_says_what_it_would_build_and_install():
    done = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "netpol_tool.py"), "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "would build kube-router-v2.1.0" in done.stderr
    assert f"would build and load {IMAGE}" in done.stderr
