"""What the benches share: the API server they run on, and the floor they compare with.

* ``api_server(work)``: a real kube-apiserver and etcd when ``KUBE_ASSETS_DIR`` (or
  ``KUBEBUILDER_ASSETS``) names their binaries (``tests/integration/kube_harness.py``),
  else the REST test double (``tests/support/fake_apiserver.py``). Yields the ``ApiEnv``,
  the double (None on the real server) and a label for the output.
* ``floor(runs)``: the median wall time and CPU time of a one-task play
  (``ansible.builtin.debug``) run exactly as a pass is run (``run_playbook``: through
  ansible-runner, with the collection's ansible.cfg), measured in the same run as the
  figures it is printed next to, on the same loaded machine.
* ``timed(fn)``: wall and CPU seconds (this process and its reaped children) of a call.
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

from ansible_collections.c5c3.glance.plugins.module_utils.collection_files import (  # noqa: E402
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube_client import (  # noqa: E402
    KubeClient,
)

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


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``, its wall seconds and its CPU seconds (with the processes it waited for)."""
    cpu, start = cpu_seconds(), time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start, cpu_seconds() - cpu


def floor(work: Path, runs: int = 5) -> tuple[float, float]:
    """Median wall and CPU seconds of the one-task play, run as a pass is run."""
    play = work / "floor.yml"
    play.write_text(FLOOR_PLAY)
    walls, cpus = [], []
    for _ in range(runs):
        run, wall, cpu = timed(lambda: run_playbook(str(play), {}))
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
