# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The CEL verdicts of the objects a pass reads back, kept between passes.

A pass judges the Glance and the GlanceBackends it read from the cluster as a no-op update
of themselves (``input_documents.judge_documents(stored=True)``), CEL rules included. On a
workstation every pass is a new ``ansible-playbook``: evaluating the rules meant importing
cel-python (with lark and pendulum, about 0.1 CPU-s) and compiling the CRDs' rules in every
pass, though a Glance that has not changed gets the same verdict every time.

A verdict is a function of the schema of the CRD version, the object and the old object as
CEL sees them (``cel_visible``: of the metadata only the name), this collection's CEL code
and the cel-python installed; ``remembered_validate`` keeps it in
``${XDG_CACHE_HOME:-~/.cache}/c5c3-glance/cel-verdicts/`` as JSON, in a file named by the
SHA-256 of all of these, and a later pass that finds the file uses it instead of evaluating.
A pass of an unchanged Glance then does not import cel-python at all. The directory is
the user's own (``collection_files.user_cache_dir``, 0700); a file that cannot be read or
parsed, or holds anything but a list of errors, is evaluated again and written anew, and
any failure to write only costs the evaluation. At most ``KEEP`` files are kept: the
oldest go when a new one is written.

Only the pass's judge of stored objects uses it: the admission webhook and the offline
``judge_input``/``render`` evaluate every object they are given.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    user_cache_dir,
)

CACHE_NAME = "cel-verdicts"
KEEP = 256
FORMAT = 1
"""Bumped when what a file holds changes shape."""

_CODE_DIGEST: str | None = None


CODE_FILES = ("cel_validation.py", "openapi_schema.py", "field_errors.py")
"""The collection's modules a verdict comes from: the CEL walk and the schema helpers and
errors it uses."""


def _code_digest() -> str:
    """What the verdicts' code is: the bytes of ``CODE_FILES`` and the cel-python and lark
    installed (their package files' size and modification time, found without importing
    them)."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        digest = hashlib.sha256(f"format {FORMAT}\n".encode())
        for name in CODE_FILES:
            digest.update(Path(__file__).with_name(name).read_bytes())
        for package in ("celpy", "lark"):
            spec = importlib.util.find_spec(package)
            origin = spec.origin if spec is not None else None
            if origin:
                info = os.stat(origin)
                digest.update(f"{package} {origin} {info.st_size} {info.st_mtime_ns}\n".encode())
        _CODE_DIGEST = digest.hexdigest()
    return _CODE_DIGEST


CEL_METADATA = ("name", "generateName")
"""The metadata a CRD's CEL rule may read (the API server gives it nothing else)."""


def cel_visible(obj: Any) -> Any:
    """``obj`` as the CEL rules see it: its ``metadata`` cut to ``CEL_METADATA``. A status
    write moves ``resourceVersion`` and ``managedFields``; the verdict cannot change with
    them, and the kept one still serves the next pass."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("metadata"), Mapping):
        return obj
    meta = obj["metadata"]
    return {**obj, "metadata": {k: meta[k] for k in CEL_METADATA if k in meta}}


def verdict_key(schema: Mapping[str, Any], obj: Any, old: Any) -> str:
    """The file name of the verdict on ``obj`` (``old`` the stored object) under ``schema``."""
    digest = hashlib.sha256(_code_digest().encode())
    for part in (schema, cel_visible(obj), cel_visible(old)):
        digest.update(json.dumps(part, sort_keys=True, separators=(",", ":")).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _encode(error: fe.FieldError) -> dict[str, Any]:
    encoded = {"type": error.type, "path": error.path, "detail": error.detail}
    encoded["origin"] = error.origin
    if error.has_value:
        encoded["value"] = error.value
    return encoded


def _decode(encoded: Any) -> list[fe.FieldError] | None:
    if not isinstance(encoded, list):
        return None
    errors = []
    for item in encoded:
        fields = ("type", "path", "detail", "origin")
        if not isinstance(item, dict) or not all(isinstance(item.get(f), str) for f in fields):
            return None
        where = (item["type"], item["path"], item["detail"])
        if "value" in item:
            errors.append(fe.FieldError(*where, item["value"], item["origin"]))
        else:
            errors.append(fe.FieldError(*where, origin=item["origin"]))
    return errors


def evaluate(schema: Mapping[str, Any], obj: Any, old: Any = None) -> list[fe.FieldError]:
    """``cel_validation.validate``, which is imported here, when first used: a pass whose
    verdicts are all kept never loads cel-python. ``old`` None: a create."""
    from ansible_collections.c5c3.glance.plugins.module_utils.admission import cel_validation

    if old is None:
        return cel_validation.validate(schema, obj)
    return cel_validation.validate(schema, obj, old)


def remembered_validate(
    schema: Mapping[str, Any],
    obj: Any,
    old: Any,
    evaluate: Callable[[Mapping[str, Any], Any, Any], list[fe.FieldError]] = evaluate,
    cache_dir: Path | None = None,
) -> list[fe.FieldError]:
    """``cel_validation.validate(schema, obj, old)``, from the kept verdict when there is
    one (see the module docstring). ``cache_dir`` defaults to the user's."""
    directory = cache_dir if cache_dir is not None else user_cache_dir(CACHE_NAME)
    if directory is None:
        return evaluate(schema, obj, old)
    key = verdict_key(schema, obj, old)
    path = directory / f"{key}.json"
    try:
        kept = _decode(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        kept = None
    if kept is not None:
        return kept
    errors = evaluate(schema, obj, old)
    try:
        text = json.dumps([_encode(e) for e in errors])
    except (TypeError, ValueError):  # a value JSON cannot hold: evaluated every time
        return errors
    _write(directory, path, text)
    return errors


def _write(directory: Path, path: Path, text: str) -> None:
    """``text`` into ``path`` whole (a reader sees the old file or the new one), then the
    oldest files beyond ``KEEP`` removed. Failures are ignored: the verdict is only kept."""
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
        return
    try:
        kept = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for stale in kept[:-KEEP]:
            stale.unlink(missing_ok=True)
    except OSError:
        return
