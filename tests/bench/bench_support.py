"""What the benches share: the API server they run on, and the floor they compare with.

* ``api_server(work)``: a real kube-apiserver and etcd when ``KUBE_ASSETS_DIR`` (or
  ``KUBEBUILDER_ASSETS``) names their binaries (``tests/integration/kube_harness.py``),
  else the REST test double (``tests/support/fake_apiserver.py``). Yields the ``ApiEnv``,
  the double (None on the real server) and a label for the output.
* ``floor(runs)``: the median wall time and CPU time of a one-task play
  (``ansible.builtin.debug``) run exactly as a pass is run (``run_playbook``: through
  ansible-runner, with the collection's ansible.cfg), measured in the same run as the
  figures it is printed next to, on the same loaded machine.
* ``timed(fn, warm)``: wall and CPU seconds (this process and its reaped children, and
  with ``warm`` the warm server and the passes it forked and reaped) of a call.
* ``warm_server(work)``: the runner's warm fork server (``runner.passes.warm``), started with the
  environment a pass gets, stopped on exit.
"""

from __future__ import annotations

import contextlib
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for entry in (ROOT / "tests" / "runner", ROOT / "tests", ROOT / ".collections", ROOT):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from integration.kube_harness import KubeApiServer, assets_dir  # noqa: E402
from support.api_env import ApiEnv, HealthServer  # noqa: E402
from support.fake_apiserver import FakeAPIServer  # noqa: E402
from support.playbook_run import run_playbook  # noqa: E402

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (  # noqa: E402
    COLLECTION_ROOT,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (  # noqa: E402
    KubeClient,
)
from runner.passes.warm.handle import WarmServer  # noqa: E402

FLOOR_PLAY = """\
- name: One task
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Say nothing
      ansible.builtin.debug:
        msg: floor
"""


def cpu_seconds() -> float:
    """User + system CPU of this process and of its children that were waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn: Callable[[], Any], warm: WarmServer | None = None) -> tuple[Any, float, float]:
    """``fn()``, its wall seconds and its CPU seconds (with the processes it waited for, and
    the warm server's passes: the server reaps them, so its ``/proc`` counts them)."""
    cpu, start = cpu_seconds(), time.perf_counter()
    served = warm.cpu_seconds() if warm is not None else 0.0
    value = fn()
    served = warm.cpu_seconds() - served if warm is not None else 0.0
    return value, time.perf_counter() - start, cpu_seconds() - cpu + served


@contextlib.contextmanager
def warm_server() -> Iterator[WarmServer]:
    """The warm fork server, as the runner starts it (the environment of a pass)."""
    root = Path(COLLECTION_ROOT)
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(root / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    server = WarmServer(env, cwd=root)
    try:
        server.start()
        if server.ready is None:
            raise SystemExit("the warm server did not start")
        yield server
    finally:
        server.stop()


def floor(work: Path, runs: int = 5, warm: WarmServer | None = None) -> tuple[float, float]:
    """Median wall and CPU seconds of the one-task play, run as a pass is run (through
    ``warm`` when given; the floor of the targets is the cold one)."""
    play = work / "floor.yml"
    play.write_text(FLOOR_PLAY)
    walls, cpus = [], []
    binary = warm.binary() if warm is not None else None
    for _ in range(runs):
        run, wall, cpu = timed(lambda: run_playbook(str(play), {}, binary=binary), warm)
        if not run.ok:
            raise SystemExit(f"the floor play failed:\n{run.stdout[-2000:]}")
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


@contextlib.contextmanager
def api_server(
    work: Path, namespace: str = "openstack", **double_options: Any
) -> Iterator[tuple[ApiEnv, FakeAPIServer | None, str]]:
    """The API server of the run (see the module docstring)."""
    kubeconfig = work / "kubeconfig"
    health = HealthServer()
    path, _ = assets_dir()
    try:
        if path is None:
            with FakeAPIServer(**double_options) as double:
                double.write_kubeconfig(kubeconfig)
                client = KubeClient.from_environment(str(kubeconfig))
                env = ApiEnv(
                    "double", kubeconfig, client, namespace=namespace, double=double, health=health
                )
                yield env, double, "the API test double"
        else:
            server = KubeApiServer(path)
            try:
                server.start()
                for crd in load_crds().values():
                    server.install_crd(crd)
                server.write_kubeconfig(kubeconfig)
                client = KubeClient.from_environment(str(kubeconfig))
                env = ApiEnv("kube-apiserver", kubeconfig, client, namespace=namespace)
                env.ensure_namespace(namespace)
                yield env, None, f"a real kube-apiserver ({path})"
            finally:
                server.stop()
    finally:
        health.stop()


def verdict(value: float, limit: float) -> str:
    return "met" if value <= limit else "NOT met"


def host_line() -> str:
    load = os.getloadavg()
    return f"host: {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
