"""The cluster tier: the operator as users run it, on a real one-node cluster.

Package fixtures, each started once and stopped when the tier ends (so a later tier, the
molecule `node` scenario, finds the machine free), also after a failure:

* ``shell``: docs/cluster.md's commands, each run as written (``DocShell``): the fixtures
  below take theirs from it, and the last test checks that every command the doc shows
  was run. Skipped, saying why, without root, the Kubernetes binaries
  (``KUBE_ASSETS_DIR``), Debian's packages the node needs, or a running Docker daemon to
  build the images with. CI has no Kubernetes binaries: there the tier skips.
* ``node``: ``make cluster-packages`` and ``make cluster-up``: the one-node cluster of
  ``hack/node_cluster.py``, the machine's one node (a node left running is taken down
  first); ``make cluster-down`` at the end, which must leave nothing behind.
* ``images``: ``make images`` and ``make cluster-load-images`` for the Glance release the
  tests run. Nothing is pulled from a registry.
* ``services``: MariaDB, Keystone and the S3 server of ``tests/e2e/stack.py`` on the
  node's address, where the pods reach them (``make e2e-env`` installs them).
* ``operator``: ``kubectl apply -k config/selfsigned``, as docs/install.md and
  docs/cluster.md show it, until the manager Deployment is rolled out. The first modules,
  ``test_helm.py`` and ``test_install_upgrade.py``, install the chart and the previous
  release instead and remove them, CRDs included, before it.

When a test fails, its report gets ``kubectl get pods -A -o wide``, the events and the
components' log tails; when the tier ends the same goes to ``cluster.log`` in
the session's temporary directory, whose path is printed.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from e2e.stack import Stack, StackError, http, missing_programs
from support.container_engine import engine_problem
from support.hack_scripts import hack_script

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2026.2"
SECOND_BUCKET = "glance-second"
"""The bucket of the sample's second store (cluster.objects.sample_documents); the services
fixture makes it beside the stack's own."""
node_cluster = hack_script("node_cluster")


def galaxy_version() -> str:
    return yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]


OPERATOR_IMAGE = f"ghcr.io/c5c3/glance-operator:{galaxy_version()}"
GLANCE_IMAGE = f"ghcr.io/c5c3/glance:{RELEASE}"
OPERATOR_NAMESPACE = "c5c3-glance-system"
MANAGER = "c5c3-glance-controller-manager"

_current: dict[str, object] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the cluster's pods, events and component logs."""
    report = yield
    node = _current.get("node")
    if report.failed and node is not None and call.when != "teardown":
        try:
            report.sections.append(("cluster", node.diagnostics()))
        except Exception as exc:  # the report must not fail for its diagnostics
            report.sections.append(("cluster", f"diagnostics unavailable: {exc}"))
    return report


def pytest_collection_modifyitems(items):
    """The chaos faults near the end (``make cluster-test``, ``make chaos``): their module
    leaves the kustomize install in place for the modules after it, and the chart's modules
    (test_helm.py, test_install_upgrade.py) must find no operator installed. test_demo.py
    last of all: README's ``make demo`` starts from no cluster and ``make demo-down`` takes
    the node down. Only this package's items move, among their own places; every other
    module keeps its order."""
    here = Path(__file__).parent
    places = [i for i, item in enumerate(items) if here in Path(item.path).parents]
    ours = sorted(
        (items[i] for i in places),
        key=lambda item: (
            Path(item.path).name == "test_demo.py",
            bool(item.get_closest_marker("chaos")),
        ),
    )
    for place, item in zip(places, ours, strict=True):
        items[place] = item


# --- the commands docs/cluster.md shows, run as written ------------------------------------

DOC = ROOT / "docs" / "cluster.md"
START = "Start it, use it, stop it"
YOUR_GLANCE = "A Glance of your own"


def doc_commands(section: str = START) -> list[str]:
    """The lines of the first ``sh`` block under the heading ``section`` of docs/cluster.md."""
    text = DOC.read_text().split(f"## {section}\n", 1)[1]
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


class DocShell:
    """Runs docs/cluster.md's commands one by one, as typed in a shell in the checkout:
    the ``export`` lines (evaluated by bash) and ``.`` (source) lines of a block kept for
    the commands after them, none of pytest's or make's variables; ``KUBE_ASSETS_DIR``
    as the run has it (the binaries of ``make kube-assets`` unless it names others).
    Records what it ran."""

    def __init__(self, assets: Path):
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTEST_", "MAKE", "MFLAGS", "KUBECONFIG"))
        }
        self.env["KUBE_ASSETS_DIR"] = str(assets)
        self.ran: list[str] = []

    def export(self, line: str) -> None:
        """An ``export NAME=VALUE`` line, evaluated by bash as a user's shell would (the
        value may hold ``$VAR`` and ``$(command)``), kept for the commands after it."""
        name = line.removeprefix("export ").partition("=")[0]
        done = subprocess.run(
            ["bash", "-c", f'{line} && printf %s "${name}"'],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0 and done.stdout, f"{line}:\n{done.stderr[-3000:]}"
        self.env[name] = done.stdout

    def _command(self, wanted: str, section: str) -> list[str]:
        """``bash -c`` of the block's one command that is ``wanted`` or starts with it, after the
        block's ``export`` lines (into the environment) and ``.`` lines (sourced first)."""
        commands = doc_commands(section)
        found = [c for c in commands if c == wanted] or [
            c for c in commands if c.startswith(wanted)
        ]
        assert len(found) == 1, f"docs/cluster.md shows {len(found)} commands like {wanted!r}"
        command = found[0]
        sourced = []
        for line in commands[: commands.index(command)]:
            if line.startswith("export ") and line not in self.ran:
                self.export(line)
                self.ran.append(line)
            elif line.startswith(". "):
                sourced.append(line)
                self.ran.append(line)
        self.ran.append(command)
        return ["bash", "-c", " && ".join([*sourced, command])]

    def run(self, wanted: str, section: str = START) -> subprocess.CompletedProcess:
        return subprocess.run(
            self._command(wanted, section),
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )

    def start(self, wanted: str, section: str) -> subprocess.Popen:
        """A command that runs in the foreground until stopped (a second terminal's), in a
        session of its own: stop it with ``os.killpg(process.pid, SIGINT)``, as Ctrl-C."""
        return subprocess.Popen(
            self._command(wanted, section),
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def ok(self, wanted: str, section: str = START) -> subprocess.CompletedProcess:
        done = self.run(wanted, section)
        assert done.returncode == 0, f"{wanted}:\n{done.stdout[-3000:]}{done.stderr[-5000:]}"
        return done


@pytest.fixture(scope="package")
def shell() -> DocShell:
    found = node_cluster.problems()
    if found:
        pytest.skip("the one-node cluster cannot run here: " + "; ".join(found))
    problem = engine_problem("docker")
    if problem:
        pytest.skip(f"the cluster tests build their images with docker: {problem}")
    assets, _ = node_cluster.assets_dir()
    return DocShell(assets)


@pytest.fixture(scope="package")
def node(shell, say, tmp_path_factory) -> Iterator[object]:
    cluster = node_cluster.NodeCluster(Path(shell.env["KUBE_ASSETS_DIR"]), say=say)
    log = tmp_path_factory.mktemp("cluster") / "cluster.log"
    try:
        started = time.monotonic()
        shell.ok("make cluster-packages")
        up = shell.ok("make cluster-up")
        say(f"[cluster] make cluster-up: node Ready {time.monotonic() - started:.1f}s")
        # What it prints is what the doc exports next.
        exported = f"export KUBECONFIG={cluster.kubeconfig}"
        assert exported in up.stdout.splitlines() and exported in doc_commands()
        _current["node"] = cluster
        yield cluster
    finally:
        _current.pop("node", None)
        try:
            log.write_text(cluster.diagnostics())
            say(f"[cluster] pods, events and component logs: {log}")
        finally:
            down = shell.run("make cluster-down")
            say(f"[cluster] make cluster-down: {(down.stdout + down.stderr).strip()[-300:]}")
        assert down.returncode == 0, down.stdout + down.stderr
        assert not cluster.layout.run_dir.exists(), "make cluster-down left /run/c5c3-node"
        assert not cluster.workdir.exists(), "make cluster-down left the node's state"


@pytest.fixture(scope="package")
def images(shell, node, say) -> list[str]:
    started = time.monotonic()
    shell.ok("make images")
    say(f"[cluster] make images: {time.monotonic() - started:.1f}s")
    started = time.monotonic()
    shell.ok("make cluster-load-images")
    say(f"[cluster] images loaded into the node: {time.monotonic() - started:.1f}s")
    loaded = node.images()
    assert {OPERATOR_IMAGE, GLANCE_IMAGE} <= set(loaded), loaded
    return [OPERATOR_IMAGE, GLANCE_IMAGE]


@pytest.fixture(scope="package")
def services(node, say, tmp_path_factory) -> Iterator[Stack]:
    missing = missing_programs()
    if missing:
        pytest.skip("the services need the e2e environment (make e2e-env): " + ", ".join(missing))
    stack = Stack(tmp_path_factory.mktemp("services"), log=say, host=node.layout.node_ip)
    try:
        try:
            stack.start_services()
        except StackError as exc:
            pytest.fail(f"MariaDB, Keystone and S3 did not come up: {exc}", pytrace=False)
        # The sample's second store (cluster.objects.sample_documents) keeps its images here.
        made = http("PUT", f"{stack.s3_url}/{SECOND_BUCKET}", body=b"")
        assert made.status == 200, (made.status, made.body[:300])
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="package")
def operator(shell, node, images, say) -> dict[str, float]:
    """The operator installed as docs/install.md and docs/cluster.md show; the seconds."""
    started = time.monotonic()
    shell.ok("kubectl apply -k config/selfsigned")
    rolled = node.kubectl(
        "-n",
        OPERATOR_NAMESPACE,
        "rollout",
        "status",
        f"deployment/{MANAGER}",
        "--timeout=300s",
        check=False,
    )
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    took = time.monotonic() - started
    say(f"[cluster] kubectl apply -k config/selfsigned to the manager rolled out: {took:.1f}s")
    return {"install": took}


def wait_until(what: str, check: Callable[[], object], timeout: float, interval: float = 1.0):
    """``check()``'s first truthy value, polled; AssertionError naming ``what`` after
    ``timeout`` seconds (with the last exception, if any)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # the cluster may answer errors while it converges
            last = exc
        else:
            if value:
                return value
            last = value
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")
