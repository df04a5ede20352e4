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

This file is the command; the node's parts are in ``hack/node/``, a module for each job
(``packages``, ``pki``, ``control_plane``, ``worker``, ``kube_proxy``, ``images``,
``teardown``: its ``__init__`` lists them). Standard library, plus ``cryptography`` (in
``.venv``) for the certificates, which the runner's certificate maker
(``runner/endpoints/certificates.py``) makes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import debian_packages
from node.cluster import NodeCluster
from node.layout import DEFAULT_WORKDIR
from node.packages import assets_dir, install_packages, problems
from node.processes import alive


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
            print(f"{name:24} {pid:>8} {'running' if alive(pid) else 'EXITED'}")
        print(node.kubectl("get", "nodes", "-o", "wide", check=False).stdout)
    elif args.command == "load-images":
        node.load_images(args.images)
        print("\n".join(node.images()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
