"""The molecule scenarios, each run as docs/molecule.md tells a user to run it.

pytest-ansible's ``molecule_scenario`` fixture gives one test per scenario git tracks
(``molecule/*/molecule.yml``), its id naming the scenario and its cluster
(``tests/molecule/conftest.py``). The test then runs the scenario's command exactly as
docs/molecule.md shows it, read from the doc's ``console`` blocks: typed into ``bash`` in
the checkout, after the block's activation line, with a user's environment (a home of its
own, none of make's or pytest's variables, no ``.venv/bin`` on ``PATH`` but through the
activation line). So the doc's commands are what is tested, and a command the doc shows
that no test runs fails ``test_the_doc_shows_only_commands_that_are_run``.

* ``offline``: ``molecule test -s offline``; always.
* ``default-kube-apiserver``: ``KUBECONFIG=~/.kube/config molecule test -s default``, that
  file naming a real kube-apiserver and etcd started here without the CRDs (the scenario's
  prepare installs them); when ``KUBE_ASSETS_DIR`` is set.
* ``default-api-double``: the doc's two commands for the API test double of
  ``tests/support/fake_apiserver.py`` (a unit-test double, not a cluster): the double in
  the background until it says ``serving``, then the scenario, then Ctrl-C; otherwise.
* ``kind``: ``make kind-node-image``, then ``GLANCE_MOLECULE_KIND_IMAGE=<that image>
  molecule test -s kind`` (the node image built here with no registry,
  ``hack/kind_node.py``); the home's ``~/.cache/c5c3-glance`` is the test process's, so the
  cached programs are reused, as in a user's own home. Skipped, naming what is missing,
  without a running Docker daemon, without kind on ``PATH`` and Go to build it, or
  without the Kubernetes binaries of ``make kube-assets`` in that cache;
  ``molecule destroy -s kind`` runs afterwards, whatever the outcome.
* ``node``: ``KUBE_ASSETS_DIR=~/kube molecule test -s node``, ``~/kube`` the directory of
  the Kubernetes binaries (a link to ``KUBE_ASSETS_DIR``): the one-node cluster of
  ``docs/cluster.md``; skipped, saying why, where that cluster cannot run (root, the
  binaries, Debian's packages) or no Docker daemon runs (as in CI). It runs after the
  cluster tier (``tests/cluster`` ends by taking its node down), the machine's one node.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from integration.kube_harness import ASSET_VARIABLES, started_apiserver
from pytest_ansible import plugin as pytest_ansible_plugin
from support.container_engine import engine_problem
from support.hack_scripts import hack_script

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "molecule.md"
ACTIVATE = ". .venv/bin/activate"
VENV_BIN = ROOT / ".venv" / "bin"
# What make, pytest and the suite set that a user's shell does not have.
NOT_A_USERS = ("ANSIBLE_", "PYTEST_", "C5C3_", "MOLECULE_", "GLANCE_MOLECULE_")
NOT_A_USERS_NAMES = {"PYTHONPATH", "KUBECONFIG", "VIRTUAL_ENV", *ASSET_VARIABLES}
node_cluster = hack_script("node_cluster")
kind_node = hack_script("kind_node")
go_build = hack_script("go_build")
kube_assets = hack_script("kube_assets")
KIND_NODE_IMAGE = kind_node.node_image(kind_node.versions())
KIND_IMAGE_SETTING = f"GLANCE_MOLECULE_KIND_IMAGE={KIND_NODE_IMAGE}"
MAKE_KIND_NODE_IMAGE = "make kind-node-image"


def doc_blocks() -> list[list[str]]:
    """The commands (``$ `` lines) of each ``console`` block of docs/molecule.md."""
    blocks = re.findall(r"^```console\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)
    return [[line[2:] for line in block.splitlines() if line.startswith("$ ")] for block in blocks]


def doc_commands() -> list[str]:
    return [c for block in doc_blocks() for c in block if c != ACTIVATE]


def doc_script(wanted) -> str:
    """The one command the doc shows that ``wanted`` accepts, after its block's activation
    line: what a user types into a shell, as one ``bash`` script."""
    found = [
        (block, command)
        for block in doc_blocks()
        for command in block
        if command != ACTIVATE and wanted(command)
    ]
    assert len(found) == 1, f"docs/molecule.md shows {len(found)} such commands: {found}"
    block, command = found[0]
    prelude = [line for line in block[: block.index(command)] if line == ACTIVATE]
    assert prelude, f"docs/molecule.md runs {command!r} without activating .venv first"
    return "\n".join([*prelude, command])


def molecule_test(
    scenario: str,
    kubeconfig: str | None = None,
    assets: str | None = None,
    setting: str | None = None,
):
    """A predicate: ``[KUBECONFIG=<kubeconfig>] [KUBE_ASSETS_DIR=<assets>] [<setting>]
    molecule test -s <scenario>``."""

    def wanted(command: str) -> bool:
        words = shlex.split(command, posix=False)
        prefix = [] if kubeconfig is None else [f"KUBECONFIG={kubeconfig}"]
        prefix += [] if assets is None else [f"KUBE_ASSETS_DIR={assets}"]
        prefix += [] if setting is None else [setting]
        return words == [*prefix, "molecule", "test", "-s", scenario]

    return wanted


NODE_ASSETS = "~/kube"


def make_kind_node_image(command: str) -> bool:
    return command == MAKE_KIND_NODE_IMAGE


def serve_double(command: str) -> bool:
    return "tests/support/serve_api_double.py" in command


def double_kubeconfig() -> str:
    """The kubeconfig path the doc's double command writes, as typed (``~`` and all)."""
    words = shlex.split(doc_script(serve_double).splitlines()[-1], posix=False)
    return words[words.index("--kubeconfig") + 1]


def claimed_commands() -> set[str]:
    """Every command of the doc some test here runs."""
    scripts = [
        doc_script(molecule_test("offline")),
        doc_script(molecule_test("default", "~/.kube/config")),
        doc_script(serve_double),
        doc_script(molecule_test("default", double_kubeconfig())),
        doc_script(make_kind_node_image),
        doc_script(molecule_test("kind", setting=KIND_IMAGE_SETTING)),
        doc_script(molecule_test("node", assets=NODE_ASSETS)),
    ]
    return {script.splitlines()[-1] for script in scripts}


def user_environment(home: Path) -> dict[str, str]:
    """A user's shell in a home of its own: the test process's environment less what make,
    pytest and the suite add, and without this checkout's .venv/bin on PATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(NOT_A_USERS) and key not in NOT_A_USERS_NAMES
    }
    env["PATH"] = os.pathsep.join(
        entry
        for entry in env.get("PATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != VENV_BIN.resolve()
    )
    env["HOME"] = str(home)
    return env


def run_as_user(script: str, home: Path) -> None:
    """Run the lines in bash in the checkout; molecule's output goes to the test's output."""
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=user_environment(home), check=False)
    assert done.returncode == 0, f"{script!r} failed ({done.returncode}); its output is above"


def kind_missing() -> str:
    """What the kind scenario lacks here, or "" when it can run: a Docker daemon (the node
    image and the images are built with it) and kind, or Go for the doc's `make
    kind-node-image` to build it."""
    missing = []
    if not shutil.which("kind") and not shutil.which("go"):
        missing.append("no kind on PATH and no Go to build it (make kind-node-image)")
    if not kube_assets_cached():
        missing.append(
            "the Kubernetes binaries are not built in the cache (`make kube-assets`, "
            "hack/kube_assets.py): make kind-node-image would build them first"
        )
    problem = engine_problem("docker")
    if problem:
        missing.append(f"no running Docker daemon ({problem})")
    return "; ".join(missing)


def kube_assets_cached() -> bool:
    """Whether hack/kube_assets.py's binaries are complete in the cache, where the doc's
    `make kind-node-image` takes them from (a user's shell has no KUBE_ASSETS_DIR)."""
    build = kube_assets.kube_build()
    try:
        return go_build.complete(build, go_build.output_dir(build, go_build.build_env()))
    except go_build.BuildError:
        return False


def users_caches(home: Path) -> None:
    """The home's cache of built programs is the user's (this process's): what `make
    kind-node-image` built before is reused, as it is from a user's own home."""
    cache = go_build.cache_root()
    (home / ".cache").mkdir(parents=True, exist_ok=True)
    if cache.is_dir():
        (home / ".cache" / cache.name).symlink_to(cache)


def node_missing() -> str:
    """What the node scenario lacks here (the one-node cluster's needs, a Docker daemon to
    build the images), or "" when it can run."""
    missing = node_cluster.problems()
    problem = engine_problem("docker")
    if problem:
        missing.append(f"no running Docker daemon ({problem})")
    return "; ".join(missing)


def run_on_api_double(home: Path) -> None:
    """The doc's double in the background until it says ``serving``, the scenario, Ctrl-C."""
    served = subprocess.Popen(
        ["bash", "-c", doc_script(serve_double)],
        cwd=ROOT,
        env=user_environment(home),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        first = served.stdout.readline()
        assert first.startswith("serving"), f"the double did not start: {first!r}"
        run_as_user(doc_script(molecule_test("default", double_kubeconfig())), home)
    finally:
        os.killpg(served.pid, signal.SIGINT)  # Ctrl-C, as the doc says
        rest, _ = served.communicate(timeout=60)
    hits = re.search(r"health probes answered: (\d+)", rest)
    assert hits, f"the double did not say how many probes it answered: {rest!r}"
    assert int(hits.group(1)) >= 1  # verify's Ready=True came through the service proxy


def run_then_destroy(script: str, home: Path) -> None:
    """``script`` (a ``molecule test``) as the user, then its ``molecule destroy`` whatever
    the outcome: molecule stops at a failed step without destroying, and no cluster, node
    or service may outlive the test."""
    try:
        run_as_user(script, home)
    finally:
        destroy = script.replace("molecule test", "molecule destroy")
        subprocess.run(["bash", "-c", destroy], cwd=ROOT, env=user_environment(home))


def test_molecule_scenario(molecule_scenario, tmp_path):
    name = molecule_scenario.name
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    if name == "offline":
        run_as_user(doc_script(molecule_test("offline")), home)
    elif molecule_scenario.test_id == "default-kube-apiserver":
        with started_apiserver(()) as server:  # skips, saying why, without the binaries
            server.write_kubeconfig(home / ".kube" / "config")
            run_as_user(doc_script(molecule_test("default", "~/.kube/config")), home)
    elif name == "default":
        run_on_api_double(home)
    elif name == "kind":
        missing = kind_missing()
        if missing:
            pytest.skip(f"kind scenario needs Docker and kind: {missing}")
        users_caches(home)
        run_as_user(doc_script(make_kind_node_image), home)
        run_then_destroy(doc_script(molecule_test("kind", setting=KIND_IMAGE_SETTING)), home)
    elif name == "node":
        missing = node_missing()
        if missing:
            pytest.skip(f"node scenario needs the one-node cluster and Docker: {missing}")
        assets, _ = node_cluster.assets_dir()
        (home / NODE_ASSETS.removeprefix("~/")).symlink_to(assets)
        run_then_destroy(doc_script(molecule_test("node", assets=NODE_ASSETS)), home)
    else:
        pytest.fail(f"scenario {name} has no test: show its command in docs/molecule.md")


def test_every_scenario_is_a_test_named_for_its_cluster():
    """The plugin finds this checkout's four scenarios; their ids name the cluster."""
    ids = {s.name: s.test_id for s in pytest_ansible_plugin.scenarios}
    assert set(ids) >= {"default", "kind", "node", "offline"}, ids
    assert ids["node"] == "node"
    assert ids["offline"] == "offline"
    assert ids["kind"] == "kind"
    assert ids["default"] in {"default-kube-apiserver", "default-api-double"}


def test_the_doc_shows_only_commands_that_are_run():
    """Every command docs/molecule.md shows in a console block is one a test here runs,
    and the doc tells a user to activate .venv before each (molecule needs it on PATH)."""
    assert set(doc_commands()) == claimed_commands()
    assert all(block[0] == ACTIVATE for block in doc_blocks() if block), doc_blocks()


def test_a_user_environment_has_no_venv_until_activated(tmp_path):
    env = user_environment(tmp_path)
    assert str(VENV_BIN) not in env["PATH"].split(os.pathsep)
    assert "VIRTUAL_ENV" not in env and env["HOME"] == str(tmp_path)
    assert not [key for key in env if key.startswith(("ANSIBLE_", "PYTEST_"))]
