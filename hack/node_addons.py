"""What the node's add-ons share (``make cluster-gateway``: hack/gateway_tool.py, ``make
cluster-netpol``: hack/netpol_tool.py): kubectl and helm against the node, a ``List`` of
objects for ``kubectl apply -f -``, and component images built on a Debian base of
hack/kind_node.py. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

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
