"""``make kube-assets`` as docs/cluster.md shows it, in a user's shell in the checkout.

The binaries are the ones every real-apiserver and cluster test runs: built from the Go
module proxy at the versions of ``hack/kube/go.mod`` (``make test`` builds them first, so
here the cache is warm and the command reuses it). The doc's lines run as written; what
they leave in the environment is what the checks read.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.hack_scripts import hack_script

kube_assets = hack_script("kube_assets")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cluster.md"
SECTION = "## The Kubernetes binaries\n"


def doc_block() -> list[str]:
    text = DOC.read_text().split(SECTION, 1)[1]
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def user_environment() -> dict[str, str]:
    """A user's shell: none of make's, pytest's or the suite's variables, and no
    KUBE_ASSETS_DIR (the doc's lines set it)."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "MAKE", "MFLAGS", "C5C3_", "KUBE"))
    }


def test_the_documented_commands_give_the_pinned_binaries_outside_the_checkout():
    lines = doc_block()
    assert lines[0] == "make kube-assets", lines
    script = "set -e\n" + "\n".join(lines) + '\nprintf "%s\\n" "$KUBE_ASSETS_DIR" "$PATH"\n'
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env=user_environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout.splitlines()
    assets, path = Path(printed[-2]), printed[-1]
    # `make kube-assets` printed the same directory last
    assert printed[-3] == str(assets), printed
    assert path.split(":")[0] == str(assets)
    assert not assets.is_relative_to(ROOT), "the binaries must live outside the checkout"

    build = kube_assets.kube_build()
    assert assets.name.startswith(build.label + "-")
    record = json.loads((assets / "versions.json").read_text())
    assert record["label"] == build.label
    assert set(record["sizes"]) == set(kube_assets.BINARIES)

    def run(*argv: str) -> str:
        return subprocess.run(
            argv, capture_output=True, text=True, check=True, env={"PATH": path}
        ).stdout

    kubernetes = build.label.split("-")[1]
    etcd = build.label.split("-")[3].removeprefix("v")
    assert run("kube-apiserver", "--version").strip() == f"Kubernetes {kubernetes}"
    assert run("kubelet", "--version").strip() == f"Kubernetes {kubernetes}"
    assert f"Client Version: {kubernetes}" in run("kubectl", "version", "--client")
    assert f"etcd Version: {etcd}" in run("etcd", "--version")
    # kubeadm runs the etcd this module pins, and control plane images of its own release
    images = run("kubeadm", "config", "images", "list", "--kubernetes-version", kubernetes)
    assert f"registry.k8s.io/etcd:{etcd}-0" in images.split()
    assert f"registry.k8s.io/kube-apiserver:{kubernetes}" in images.split()
