# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The data files the collection ships: its CRDs and the Glance option catalogs; and the
user's cache directory, where a pass keeps what it would otherwise build from them again
in every ``ansible-playbook`` (the CEL parser, the compiled role templates).

This is the one place on the controller side that reads them; the validation library
itself takes them as arguments and does no I/O. Files are read once per process.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

COLLECTION_ROOT = Path(__file__).resolve().parents[3]
CRD_FILES = {
    "Glance": "config/crd/bases/glance.openstack.c5c3.io_glances.yaml",
    "GlanceBackend": "config/crd/bases/glance.openstack.c5c3.io_glancebackends.yaml",
}
CATALOG_DIR = "catalogs"


# libyaml's loader where PyYAML has it: the same safe schema, about ten times faster on
# the CRDs (about 0.1 s of every pass's decision in pure Python).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def load_crds(root: Path = COLLECTION_ROOT) -> dict[str, dict[str, Any]]:
    """Both CRDs, by kind."""
    return {
        kind: yaml.load((root / path).read_text(), Loader=_SAFE_LOADER)
        for kind, path in CRD_FILES.items()
    }


@functools.cache
def load_catalogs(root: Path = COLLECTION_ROOT) -> dict[str, dict[str, Any]]:
    """Every option catalog the collection ships, by release (``2026.2``)."""
    catalogs = {}
    for path in sorted((root / CATALOG_DIR).glob("glance-*.json")):
        catalog = json.loads(path.read_text())
        catalogs[catalog["release"]] = catalog
    return catalogs


def user_cache_dir(sub: str, env: Mapping[str, str] = os.environ) -> Path | None:
    """``${XDG_CACHE_HOME:-~/.cache}/c5c3-glance/<sub>``, made 0700 where it is missing, or
    None where it cannot be made or written, or where it or ``c5c3-glance`` belongs to
    someone else or others may write to it: what is cached there is code the pass loads
    (a pickled parser, compiled templates), so only a directory of the user's own is read."""
    home = env.get("HOME") or ""
    base = env.get("XDG_CACHE_HOME") or (str(Path(home) / ".cache") if home else "")
    if not base:
        return None
    top = Path(base) / "c5c3-glance"
    path = top / sub
    try:
        top.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
        infos = [top.stat(), path.stat()]
    except OSError:
        return None
    for info in infos:
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
    return path if os.access(path, os.W_OK | os.X_OK) else None
