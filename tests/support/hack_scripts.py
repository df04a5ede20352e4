"""The scripts under hack/ imported as modules, for the tests that reuse them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def hack_script(name: str) -> ModuleType:
    """``hack/<name>.py`` loaded as the module ``hack_<name>`` (registered in
    ``sys.modules`` first, as an import does: dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(f"hack_{name}", ROOT / "hack" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
