"""hack/node/images.py: an image the node holds already as the same Docker image is not
copied again; a changed one is, and is labelled with its Docker image ID."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "hack"))

from node import images  # noqa: E402

LISTING = """REF TYPE DIGEST SIZE PLATFORMS LABELS
ghcr.io/c5c3/glance:2026.2 application/vnd.oci.image.manifest.v1+json sha256:aa 436.9 MiB linux/amd64 io.c5c3.docker-image-id=sha256:same,io.cri-containerd.image=managed
ghcr.io/c5c3/glance-operator:0.1.0 application/vnd.oci.image.manifest.v1+json sha256:bb 324.6 MiB linux/amd64 io.c5c3.docker-image-id=sha256:old,io.cri-containerd.image=managed
registry.k8s.io/pause:3.10 application/vnd.oci.image.manifest.v1+json sha256:cc 300 KiB linux/amd64 -
"""


def test_labels_are_read_from_the_listings_last_column():
    found = images.labels_of(LISTING)
    assert found["ghcr.io/c5c3/glance:2026.2"] == {
        images.DOCKER_ID_LABEL: "sha256:same",
        "io.cri-containerd.image": "managed",
    }
    assert found["registry.k8s.io/pause:3.10"] == {}


def test_only_what_changed_is_saved_imported_and_labelled(monkeypatch):
    calls: list[tuple[str, ...]] = []
    ids = {
        "ghcr.io/c5c3/glance:2026.2": "sha256:same",
        "ghcr.io/c5c3/glance-operator:0.1.0": "sha256:new",
        "localhost/new:1": "sha256:first",
    }

    def ctr(*args, check=False, **kw):
        calls.append(("ctr", *args))
        return SimpleNamespace(stdout=LISTING if args[:2] == ("images", "ls") else "")

    def run(argv, **kw):
        calls.append(tuple(argv))
        return SimpleNamespace(returncode=0)

    monkeypatch.setattr(images, "docker_image_id", ids.__getitem__)
    monkeypatch.setattr(subprocess, "run", run)
    said: list[str] = []
    node = SimpleNamespace(_ctr=ctr, say=said.append)
    images.Images.load_images(node, list(ids))
    saved = [c[2] for c in calls if c[:2] == ("docker", "save")]
    assert saved == ["ghcr.io/c5c3/glance-operator:0.1.0", "localhost/new:1"]
    labelled = [c[3:] for c in calls if c[:3] == ("ctr", "images", "label")]
    assert labelled == [
        ("ghcr.io/c5c3/glance-operator:0.1.0", f"{images.DOCKER_ID_LABEL}=sha256:new"),
        ("localhost/new:1", f"{images.DOCKER_ID_LABEL}=sha256:first"),
    ]
    assert said == ["ghcr.io/c5c3/glance:2026.2: in the node already (sha256:same)"]
