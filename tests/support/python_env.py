"""The environment of a new Python that imports the collection as the tests' own process
does: the checkout's ``.collections`` link on ``PYTHONPATH`` (``make venv`` makes it), what
was there kept. For tests that prove something per process (a cache written by one
process and loaded by the next, as each ``ansible-playbook`` is one)."""

from __future__ import annotations

import os
from pathlib import Path

COLLECTIONS = Path(__file__).resolve().parents[2] / ".collections"


def collection_python_env(**extra: str) -> dict[str, str]:
    paths = [str(COLLECTIONS), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}
