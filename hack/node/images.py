"""Images on the node: the sandbox image built here (``pause.c``) and images loaded from
the local Docker daemon into its containerd."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .base import NodeBase
from .layout import PAUSE_IMAGE, REPO_ROOT


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


DOCKER_ID_LABEL = "io.c5c3.docker-image-id"
"""The label an image loaded from Docker carries in the node: the Docker image's ID."""


def docker_image_id(image: str) -> str:
    done = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", image],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def labels_of(listing: str) -> dict[str, dict[str, str]]:
    """Each image's labels, from ``ctr images ls`` (its last column: ``k=v,k=v``)."""
    found: dict[str, dict[str, str]] = {}
    for line in listing.splitlines()[1:]:
        words = line.split()
        if len(words) < 2:
            continue
        labels = words[-1] if "=" in words[-1] else ""
        found[words[0]] = dict(pair.split("=", 1) for pair in labels.split(",") if "=" in pair)
    return found


class Images(NodeBase):
    """Loads images into the node's containerd and lists them."""

    def load_images(self, images: Iterable[str]) -> None:
        """``docker save`` each image into the node's containerd (namespace k8s.io), but
        one the node holds already as that same Docker image (its ID in the image's label
        ``DOCKER_ID_LABEL``): running ``make cluster-addons`` or ``make
        cluster-load-images`` again copies only what changed."""
        held = labels_of(self._ctr("images", "ls", check=True).stdout)
        for image in images:
            wanted = docker_image_id(image)
            if held.get(image, {}).get(DOCKER_ID_LABEL) == wanted:
                self.say(f"{image}: in the node already ({wanted[:19]})")
                continue
            with tempfile.TemporaryFile() as archive:
                subprocess.run(["docker", "save", image], stdout=archive, check=True)
                archive.seek(0)
                self._ctr("images", "import", "-", stdin=archive, check=True)
            self._ctr("images", "label", image, f"{DOCKER_ID_LABEL}={wanted}", check=True)

    def images(self) -> list[str]:
        out = self._ctr("images", "list", "--quiet", check=True).stdout
        return [line for line in out.splitlines() if not line.startswith("sha256:")]
