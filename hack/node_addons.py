"""What the node's add-ons share (``make cluster-gateway``: hack/gateway_tool.py, ``make
cluster-netpol``: hack/netpol_tool.py, ``make cluster-addons``: hack/addons_tool.py): their
command line (``Tool``, ``main``: ``--dry-run``, ``--uninstall``), kubectl and helm against
the node, a ``List`` of objects for ``kubectl apply -f -``, and component images built on a
Debian base of hack/kind_node.py. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import go_build
import kind_node


class AddonError(RuntimeError):
    """What stopped an add-on's install; the message says what to do."""


class Cluster:
    """kubectl (and helm, where given) against the node of ``kubeconfig``; a failing
    command raises ``AddonError`` with the end of what it printed."""

    def __init__(self, kubeconfig: Path, kubectl: Path, helm: Path | None = None):
        self.env = dict(os.environ, KUBECONFIG=str(kubeconfig))
        self.kubectl_bin, self.helm_bin = kubectl, helm

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        done = subprocess.run(
            argv, input=stdin, env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise AddonError(
                f"{' '.join(argv)[:400]}: exit {done.returncode}: "
                f"{(done.stdout + done.stderr)[-3000:]}"
            )
        return done.stdout

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return self._run([str(self.kubectl_bin), *args], stdin)

    def helm(self, *args: str) -> str:
        if self.helm_bin is None:
            raise AddonError("no helm given for this cluster")
        return self._run([str(self.helm_bin), *args])

    def helm_uninstall(self, release: str, namespace: str) -> None:
        """``helm uninstall`` of ``release`` where it is installed."""
        if release in self.helm("list", "--namespace", namespace, "--short").split():
            self.helm("uninstall", release, "--namespace", namespace, "--wait")

    def wait_established(self, *crds: str, timeout: float = 60.0) -> None:
        """Until every CRD named is Established. Polled: ``kubectl wait`` fails at once,
        instead of waiting, on a CRD the API server has not written a status for yet
        ("status.conditions accessor error"), as it may be just after the apply."""
        deadline = time.monotonic() + timeout
        left = list(crds)
        while left:
            found = json.loads(self.kubectl("get", *(f"crd/{c}" for c in left), "-o", "json"))
            items = found.get("items", [found]) if found.get("kind") == "List" else [found]
            left = [
                item["metadata"]["name"]
                for item in items
                if not any(
                    c.get("type") == "Established" and c.get("status") == "True"
                    for c in (item.get("status") or {}).get("conditions") or []
                )
            ]
            if left and time.monotonic() > deadline:
                raise AddonError(f"CRDs not Established within {timeout:.0f} s: {', '.join(left)}")
            if left:
                time.sleep(0.5)

    def get(self, *args: str) -> dict[str, Any]:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def apply(self, objects: list[dict[str, Any]]) -> str:
        """Server-side apply of ``objects``, taking over fields an earlier install set."""
        return self.kubectl(
            "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=as_list(objects)
        )


class Node:
    """The node of ``make cluster-up`` as an add-on sees it: its images (``load_images``),
    its kubeconfig, and a ``Cluster`` for it once it is up."""

    def __init__(self, say: Callable[[str], None]):
        from node.images import Images
        from node.packages import assets_dir

        self.assets, self.why = assets_dir()
        self.images = Images(assets=self.assets or Path("/nonexistent"), say=say)
        self.kubeconfig = self.images.kubeconfig
        self.workdir = self.images.workdir

    def cluster(self, helm: Callable[[], Path] | None = None) -> Cluster:
        """kubectl (and the helm ``helm()`` finds, asked only then) against the running
        node; ``AddonError`` saying what to do where the binaries or the node are missing."""
        if self.assets is None:
            raise AddonError(self.why)
        if not self.kubeconfig.is_file():
            raise AddonError(f"no node: {self.kubeconfig} is missing (make cluster-up first)")
        return Cluster(self.kubeconfig, self.assets / "kubectl", helm() if helm else None)


def helm_binary(say: Callable[[str], None]) -> Path:
    """``$HELM`` where set (make test sets it), else helm built by hack/helm_tool.py."""
    if os.environ.get("HELM"):
        return Path(os.environ["HELM"])
    import helm_tool

    return helm_tool.ensure(say)


def as_list(objects: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


def build_images(
    components: Iterable[kind_node.Component],
    base: kind_node.Base,
    say: Callable[[str], None],
) -> None:
    """Each component's image on ``base`` (made first unless Docker has it), in Docker; a
    table of what each step took, through ``say``."""
    timing = kind_node.Timing()
    ref = kind_node.make_base(base, timing)
    for component in components:
        files: dict[str, Path | bytes] = {f"rootfs{dest}": src for src, dest in component.files}
        dockerfile = kind_node.component_dockerfile(component, ref)
        kind_node.build_image(component.ref, dockerfile, files, timing)
    for line in timing.lines():
        say(line)


@dataclass(frozen=True)
class Tool:
    """An add-on's command line (``main``): what it builds and loads, said by ``--dry-run``;
    ``install`` (the lines it prints, the last one the interface) and ``uninstall`` (what it
    removed, said) on the running node."""

    doc: str  # the module's docstring: its first paragraph is the description
    uninstall_help: str
    say: Callable[[str], None]
    builds: Callable[[], list[go_build.GoBuild]]
    images: Callable[[], list[str]]
    install: Callable[[Node, Cluster], list[str]]
    uninstall: Callable[[Node, Cluster], str]
    helm: bool = False


def main(tool: Tool, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=tool.doc.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would be done")
    parser.add_argument("--uninstall", action="store_true", help=tool.uninstall_help)
    args = parser.parse_args(argv)
    try:
        node = Node(tool.say)
        if args.dry_run:
            env = go_build.build_env()
            for build in tool.builds():
                tool.say(f"would build {build.label} into {go_build.output_dir(build, env)}")
            tool.say(f"would build and load {', '.join(tool.images())}")
            tool.say(f"would install into the cluster of {node.kubeconfig}")
            return 0
        cluster = node.cluster((lambda: helm_binary(tool.say)) if tool.helm else None)
        if args.uninstall:
            tool.say(tool.uninstall(node, cluster))
            return 0
        for line in tool.install(node, cluster):
            print(line, flush=True)
    except (AddonError, go_build.BuildError, kind_node.KindNodeError) as exc:
        tool.say(f"error: {exc}")
        return 1
    return 0
