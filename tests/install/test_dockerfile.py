"""The operator's Dockerfile, checked statically (no container engine is needed).

What the image must be, and what config/manager's Deployment expects of it: an official
Python 3.12 slim base pinned to a patch release; Python packages only from
requirements-runtime.txt, the runtime subset of requirements.txt; the collection built from this checkout and installed where
ansible-runner finds it; runner/, playbooks/ and watches.yaml in /opt/operator; the
non-root uid, the command, the ports and Ansible's temp settings of the Deployment. The
build context is filtered by .dockerignore exactly as the tests here filter it, and the
collection is built and installed from that filtered copy as the image build does.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from support import dockerfiles

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
MANAGER = ROOT / "config" / "manager" / "manager.yaml"
COLLECTIONS = "/usr/share/ansible/collections"
WORKDIR = "/opt/operator"
BASE_IMAGE = re.compile(r"python:3\.12\.\d+-slim(-[a-z]+)?(@sha256:[0-9a-f]{64})?")
PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+")
# Owned by the runner's authors; the image cannot be built until they exist.
RUNNER_FILES = {"watches.yaml", "runner/"}


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    stage: int  # index of the FROM it follows; -1 before the first FROM


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and comments dropped."""
    found, stage, pending = [], -1, ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        pending = ""
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        found.append(Instruction(keyword, " ".join(arguments.split()), stage))
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


INSTRUCTIONS = instructions(DOCKERFILE.read_text())
FINAL_STAGE = max(i.stage for i in INSTRUCTIONS)


def of(keyword: str, stage: int | None = None) -> list[Instruction]:
    return [i for i in INSTRUCTIONS if i.keyword == keyword and stage in (None, i.stage)]


def manager_container() -> dict:
    deployment = yaml.safe_load(MANAGER.read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def manager_pod_security() -> dict:
    return yaml.safe_load(MANAGER.read_text())["spec"]["template"]["spec"]["securityContext"]


def shell_commands(run: str) -> list[list[str]]:
    """A RUN line split into its simple commands (at &&, ||, ; and |)."""
    tokens = shlex.split(run, posix=True)
    commands, current = [], []
    for token in tokens:
        if token in {"&&", "||", ";", "|"}:
            commands.append(current)
            current = []
        elif token.endswith(";"):
            current.append(token[:-1])
            commands.append(current)
            current = []
        else:
            current.append(token)
    commands.append(current)
    return [c for c in commands if c]


def copies(stage: int | None = None) -> list[tuple[list[str], str]]:
    """(sources, destination) of each COPY from the build context."""
    found = []
    for copy in of("COPY", stage):
        words = copy.arguments.split()
        if any(w.startswith("--from=") for w in words):
            continue
        paths = [w for w in words if not w.startswith("--")]
        found.append((paths[:-1], paths[-1]))
    return found


# --- .dockerignore, as Docker reads it -----------------------------------------------------------


def ignore_patterns() -> list[str]:
    return dockerfiles.ignore_patterns(DOCKERIGNORE)


def ignored(relative: str, patterns: list[str]) -> bool:
    return dockerfiles.ignored(relative, patterns)


def build_context(target: Path) -> None:
    """Copy the checkout as Docker would send it: every file .dockerignore leaves in."""
    for relative in dockerfiles.context_files(ROOT, ignore_patterns()):
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target / relative)


# --- the tests ----------------------------------------------------------------------------------


def test_every_base_image_is_official_python_3_12_slim_pinned_to_a_patch_release():
    arguments = {}
    for arg in of("ARG", -1):
        name, _, default = arg.arguments.partition("=")
        arguments[name] = default
    stages = []
    for number, base in enumerate(of("FROM")):
        image, *alias = base.arguments.split()
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: arguments[m[1]], image)
        if image in stages:
            continue  # FROM an earlier stage
        assert BASE_IMAGE.fullmatch(image), f"FROM #{number}: {image} is not pinned"
        if alias:
            stages.append(alias[-1])


def test_the_image_runs_as_the_manager_deployments_non_root_uid():
    users = of("USER", FINAL_STAGE)
    assert users, "the final stage sets no USER: it would run as root"
    user, _, group = users[-1].arguments.partition(":")
    assert user.isdigit() and int(user) != 0, "numeric non-root uid (runAsNonRoot checks it)"
    pod = manager_pod_security()
    assert int(user) == pod["runAsUser"]
    assert group and int(group) == pod["runAsGroup"]


def stage_named(name: str) -> int:
    [stage] = [i.stage for i in of("FROM") if i.arguments.split()[-1] == name]
    return stage


def test_python_packages_come_only_from_the_pinned_requirements():
    """Every pip install is a whole pinned file with --no-deps: requirements-runtime.txt
    (the image's), or requirements-sbom.txt in the sbom stage alone, whose tool never
    reaches the image (no stage takes anything from it)."""
    sbom = stage_named("sbom")
    allowed = {
        dest: sources[0]
        for sources, dest in copies()
        if sources in (["requirements-runtime.txt"], ["requirements-sbom.txt"])
    }
    assert "requirements-runtime.txt" in allowed.values(), "requirements-runtime.txt not copied"
    installs = 0
    for run in of("RUN"):
        for command in shell_commands(run.arguments):
            if "pip" not in Path(command[0]).name or "install" not in command:
                continue
            installs += 1
            options = command[command.index("install") + 1 :]
            assert "--no-deps" in options or "--require-hashes" in options, command
            assert options.count("-r") == 1, command
            source = allowed.get(options[options.index("-r") + 1])
            assert source is not None, command
            assert (source == "requirements-sbom.txt") == (run.stage == sbom), command
            positional = [o for o in options if not o.startswith("-")]
            assert positional == [options[options.index("-r") + 1]], (
                f"packages named outside the pinned files: {command}"
            )
    assert installs >= 2
    taken = [c for c in of("COPY") if "--from=sbom" in c.arguments.split()]
    later = [f for f in of("FROM") if f.arguments.split()[0] == "sbom"]
    assert taken == [] and later == [], "nothing of the sbom stage may enter the image"
    for name in ("requirements.txt", "requirements-runtime.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                assert PIN.fullmatch(line), f"{name}: {line!r} is not pinned"


def pins(name: str) -> set[str]:
    lines = (ROOT / name).read_text().splitlines()
    return {line.split("#", 1)[0].strip() for line in lines} - {""}


def test_the_image_pins_are_a_subset_of_the_one_pinned_set():
    runtime = pins("requirements-runtime.txt")
    assert runtime <= pins("requirements.txt"), sorted(runtime - pins("requirements.txt"))
    names = {line.split("==")[0].lower() for line in runtime}
    assert {"ansible-core", "ansible-runner", "cel-python", "pyyaml"} <= names
    assert not names & {"pytest", "ansible-lint", "ruff", "yamllint", "kubernetes-validate"}


LAZY_OUTSIDE_THE_IMAGE = {
    # kube_config.OidcCredential, for a workstation kubeconfig's oidc auth-provider alone;
    # refused with a message where it is not installed (the image)
    "kubernetes": {"plugins/module_utils/kube/kube_config.py"},
}


def imported_distributions() -> dict[str, set[str]]:
    """The distributions the image's code (plugins/, runner/) imports, anywhere in a file
    (a lazy import inside a function too), each with the files that import it."""
    import ast
    import importlib.metadata

    owners = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in [*ROOT.glob("plugins/**/*.py"), *ROOT.glob("runner/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("ansible_collections", "runner"):
                    continue
                for dist in owners.get(top) or [top]:
                    found.setdefault(dist.lower(), set()).add(str(path.relative_to(ROOT)))
    return found


def declared(name: str) -> set[str]:
    lines = (ROOT / name).read_text().splitlines()
    return {re.split("[=<>~ ]", line.split("#", 1)[0].strip())[0].lower() for line in lines} - {""}


def test_what_the_image_code_imports_is_declared_in_the_runtime_requirements():
    """Declared where imported (the issue found urllib3, cryptography and jinja2 arriving
    only through other packages): every distribution the collection and the runner import
    is named in requirements-runtime.in, but the two that are lazy and refused with a
    message where absent; ``kubernetes`` is not in the image at all."""
    runtime = declared("requirements-runtime.in")
    imported = imported_distributions()
    missing = {
        dist: sorted(files)
        for dist, files in imported.items()
        if dist not in runtime and files != LAZY_OUTSIDE_THE_IMAGE.get(dist)
    }
    assert missing == {}
    assert {"urllib3", "cryptography", "jinja2"} <= runtime
    image = {line.split("==")[0].lower() for line in pins("requirements-runtime.txt")}
    assert "kubernetes" not in image and "kubernetes" in declared("requirements.in")


@pytest.mark.parametrize("source", sorted({s for sources, _ in copies() for s in sources}))
def test_every_copied_path_exists_and_is_in_the_build_context(source):
    path = ROOT / source
    if not path.exists() and source in RUNNER_FILES:
        pytest.skip(f"{source} is not in the repository yet (the runner's; the image needs it)")
    assert path.exists(), f"COPY {source}: no such file in the repository"
    if source != ".":
        assert not ignored(source, ignore_patterns()), f"COPY {source}: .dockerignore drops it"


def test_runner_playbooks_and_watches_go_to_the_workdir():
    final = of("WORKDIR", FINAL_STAGE)
    assert final and final[-1].arguments == WORKDIR
    copied = dict((tuple(sources), dest) for sources, dest in copies(FINAL_STAGE))
    assert copied[("runner/",)].rstrip("/") == f"{WORKDIR}/runner"
    assert copied[("playbooks/",)].rstrip("/") == f"{WORKDIR}/playbooks"
    assert copied[("watches.yaml",)] == f"{WORKDIR}/watches.yaml"
    # The manager's --watches-file is that file.
    args = manager_container()["args"]
    assert args[args.index("--watches-file") + 1] == f"{WORKDIR}/watches.yaml"


def test_the_collection_is_built_from_the_checkout_and_installed_for_ansible_runner():
    commands = [c for run in of("RUN") for c in shell_commands(run.arguments)]
    galaxy = [c for c in commands if Path(c[0]).name == "ansible-galaxy"]
    builds = [c for c in galaxy if c[1:3] == ["collection", "build"]]
    installs = [c for c in galaxy if c[1:3] == ["collection", "install"]]
    assert builds and installs
    for install in installs:
        assert "--offline" in install, "no download from Galaxy"
        assert install[install.index("-p") + 1] == COLLECTIONS
    final_copies = [i.arguments for i in of("COPY", FINAL_STAGE)]
    assert f"--from=build {COLLECTIONS} {COLLECTIONS}" in final_copies


def test_entrypoint_and_cmd_are_the_manager_command_and_args():
    container = manager_container()
    (entrypoint,) = of("ENTRYPOINT", FINAL_STAGE)
    assert json.loads(entrypoint.arguments) == ["python3", "-m", "runner"]
    assert json.loads(entrypoint.arguments) == container["command"]
    (cmd,) = of("CMD", FINAL_STAGE)
    assert json.loads(cmd.arguments) == container["args"]


def test_exposed_ports_are_the_manager_container_ports():
    exposed = {int(p) for e in of("EXPOSE", FINAL_STAGE) for p in e.arguments.split()}
    assert exposed == {p["containerPort"] for p in manager_container()["ports"]}


def test_ansible_home_and_temp_dirs_are_the_managers():
    env = {}
    for instruction in of("ENV", FINAL_STAGE):
        for pair in shlex.split(instruction.arguments):
            name, _, value = pair.partition("=")
            env[name] = value
    deployment_env = {e["name"]: e.get("value") for e in manager_container()["env"]}
    for name in ("HOME", "ANSIBLE_LOCAL_TEMP", "ANSIBLE_REMOTE_TEMP"):
        assert env[name] == deployment_env[name], name
    assert env["ANSIBLE_COLLECTIONS_PATH"] == COLLECTIONS
    assert env["PYTHONPATH"] == COLLECTIONS  # the runner imports the collection's module_utils


def test_dockerignore_keeps_local_state_out_and_the_build_inputs_in():
    patterns = ignore_patterns()
    for path in (".git", ".venv/bin/python", ".venv-glance", ".collections", "out/x", "build"):
        assert ignored(path, patterns), path
    for path in (
        "tests/unit/test_quantity.py",
        "plugins/filter/__pycache__/x.cpython-312.pyc",
        "molecule/default/molecule.yml",
    ):
        assert ignored(path, patterns), path
    for path in (
        "galaxy.yml",
        "requirements.txt",
        "requirements-runtime.txt",
        "meta/runtime.yml",
        "plugins/module_utils/admission/collection_files.py",
        "roles",
        "playbooks/render.yml",
        "config/crd/bases/glance.openstack.c5c3.io_glances.yaml",
        "catalogs/glance-2026.2.json",
        "runner/__init__.py",
        "watches.yaml",
        "README.md",
        "LICENSE",
    ):
        assert not ignored(path, patterns), path


def test_the_collection_builds_and_installs_from_the_docker_build_context(tmp_path):
    """The image build's two ansible-galaxy steps, on the context .dockerignore leaves."""
    context = tmp_path / "src"
    build_context(context)
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\n")
    env.update(ANSIBLE_CONFIG=str(config), HOME=str(tmp_path), ANSIBLE_NOCOLOR="1")
    target = tmp_path / "collections"

    def galaxy(*argv: str) -> None:
        result = subprocess.run(
            [str(bin_dir / "ansible-galaxy"), "collection", *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr

    galaxy("build", "--output-path", str(tmp_path / "dist"), str(context))
    (tarball,) = (tmp_path / "dist").glob("c5c3-glance-*.tar.gz")
    galaxy("install", "--offline", "-p", str(target), str(tarball))
    installed = target / "ansible_collections" / "c5c3" / "glance"
    for needed in (
        "config/crd/bases/glance.openstack.c5c3.io_glances.yaml",
        "config/crd/bases/glance.openstack.c5c3.io_glancebackends.yaml",
        "plugins/module_utils/admission/collection_files.py",
        "meta/runtime.yml",
    ):
        assert (installed / needed).is_file(), needed
    assert list((installed / "catalogs").glob("glance-*.json"))
    assert not (installed / "tests").exists() and not (installed / ".venv").exists()
