"""The floors of docs/architecture.md, held: imports only go down, no folder grows past twelve.

Read from the source with ``ast`` (every ``import`` and ``from ... import``, also those inside
functions), so a new import that goes up fails here, naming the file, the line and both
floors, before it makes a circle nobody sees in a folder listing.

A floor may have sub-folders (``desired/objects/``, ``runner/passes/warm/``): a file in one
belongs to its floor, and a sub-folder is a folder like any other, twelve files at most.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE_UTILS = ROOT / "plugins" / "module_utils"
RUNNER = ROOT / "runner"
PREFIX = "ansible_collections.c5c3.glance.plugins.module_utils."

# Bottom first: a floor may import its own and those before it.
MODULE_UTILS_FLOORS = ["gosemantics", "admission", "desired", "kube", "passes", "diagnose"]
# settings and logs are the ground every runner floor stands on; the controller-runtime
# trio at the top of runner/ ties the floors below together, one on the other.
RUNNER_FLOORS = {
    "settings": 0,
    "logs": 0,
    "kube": 1,
    "endpoints": 1,
    "passes": 2,
    "controller": 3,
    "reconciler": 4,
    "manager": 5,
    "__main__": 6,
}
MAX_FILES = 12


def imported(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, absolute, with its line; ``from a import b`` gives
    ``a.b`` too (``b`` may be a module)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return out


def module_utils_floor(module: str) -> str | None:
    if not module.startswith(PREFIX):
        return None
    floor = module[len(PREFIX) :].split(".")[0]
    return floor if floor in MODULE_UTILS_FLOORS else None


def runner_floor(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "runner" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in RUNNER_FLOORS else None


def sources(top: Path) -> list[Path]:
    return sorted(p for p in top.rglob("*.py") if "__pycache__" not in p.parts)


def folders(top: Path) -> list[Path]:
    """``top`` and every folder below it."""
    below = (p for p in top.rglob("*") if p.is_dir() and "__pycache__" not in p.parts)
    return [top, *sorted(below)]


def floor_of(path: Path) -> str:
    """The floor of a file under ``plugins/module_utils``: its first folder there."""
    return path.relative_to(MODULE_UTILS).parts[0]


def test_every_module_utils_file_is_on_a_floor():
    loose = [p.name for p in MODULE_UTILS.glob("*.py")]
    floors = {p.name for p in MODULE_UTILS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert not loose, f"plugins/module_utils/ holds files outside a floor: {loose}"
    assert floors == set(MODULE_UTILS_FLOORS), floors


@pytest.mark.parametrize(
    "path", sources(MODULE_UTILS), ids=lambda p: str(p.relative_to(MODULE_UTILS))
)
def test_module_utils_imports_only_go_down(path):
    mine = floor_of(path)
    own = MODULE_UTILS_FLOORS.index(mine)
    up = [
        f"line {line}: {module} ({floor} is above {mine})"
        for line, module in imported(path)
        if (floor := module_utils_floor(module)) and MODULE_UTILS_FLOORS.index(floor) > own
    ]
    runner = [f"line {line}: {module}" for line, module in imported(path) if runner_floor(module)]
    assert not up, f"{path.relative_to(ROOT)} imports upwards: {up}"
    assert not runner, f"{path.relative_to(ROOT)} imports the runner: {runner}"


@pytest.mark.parametrize("path", sources(RUNNER), ids=lambda p: str(p.relative_to(RUNNER)))
def test_runner_imports_only_go_down(path):
    rel = path.relative_to(RUNNER)
    # A file of a floor's sub-folder (passes/warm/) is on that floor.
    mine = rel.parts[0] if len(rel.parts) > 1 else rel.stem
    if mine == "__init__":
        return
    own = RUNNER_FLOORS[mine]
    up = [
        f"line {line}: {module} ({floor} is not below {mine})"
        for line, module in imported(path)
        if (floor := runner_floor(module)) and floor != mine and RUNNER_FLOORS[floor] >= own
    ]
    assert not up, f"runner/{rel} imports sideways or upwards: {up}"


def test_the_plugins_never_import_the_runner():
    found = [
        f"{p.relative_to(ROOT)}:{line}: {module}"
        for p in sources(ROOT / "plugins")
        for line, module in imported(p)
        if runner_floor(module)
    ]
    assert not found, found


@pytest.mark.parametrize(
    "folder",
    [folder for f in MODULE_UTILS_FLOORS for folder in folders(MODULE_UTILS / f)] + folders(RUNNER),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_folder_holds_more_than_twelve_files(folder):
    files = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
    assert files, f"{folder.relative_to(ROOT)} is empty"
    assert len(files) <= MAX_FILES, f"{folder.relative_to(ROOT)}: {len(files)} files: {files}"


def test_the_floors_are_the_folders_of_the_runner():
    folders = {p.name for p in RUNNER.iterdir() if p.is_dir() and p.name != "__pycache__"}
    top = {p.stem for p in RUNNER.glob("*.py")} - {"__init__"}
    assert folders | top == set(RUNNER_FLOORS), (folders, top)
