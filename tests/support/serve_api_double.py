"""Serve the API test double (``fake_apiserver.py``) and a stand-in Glance ``/healthcheck``
until SIGTERM/SIGINT, for running a molecule scenario by hand without a cluster::

    python tests/support/serve_api_double.py --kubeconfig ~/.kube/glance-api-double
    KUBECONFIG=~/.kube/glance-api-double molecule test -s default   # in a second shell

(both with ``.venv`` active: docs/molecule.md, whose commands tests/molecule runs).

It prints ``serving`` once the kubeconfig is written, and how many health probes the
stand-in answered when it stops. The double's service proxy forwards ``glance:9292`` of
each ``--namespace`` (default ``molecule``, the scenario's) to the stand-in, as
``ApiEnv.ensure_namespace`` does in the tests. A unit-test double, not a cluster: see the
module docstring of ``fake_apiserver.py``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# ROOT for the runner's certificate maker (support/tls.py): without it ``runner`` would be
# the tests' own folder of that name.
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / ".collections"), str(ROOT)]

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (  # noqa: E402
    API_PORT,
)
from support.api_env import HealthServer  # noqa: E402
from support.fake_apiserver import FakeAPIServer  # noqa: E402

DEFAULT_NAMESPACES = ("molecule",)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True, type=Path)
    parser.add_argument("--namespace", action="append", default=[])
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    health = HealthServer()
    try:
        with FakeAPIServer() as double:
            args.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
            double.write_kubeconfig(args.kubeconfig)
            for namespace in args.namespace or DEFAULT_NAMESPACES:
                double.set_service_backend(namespace, "glance", API_PORT, health.url)
            print(f"serving; KUBECONFIG={args.kubeconfig}", flush=True)
            stop.wait()
    finally:
        health.stop()
    print(f"health probes answered: {health.hits}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
