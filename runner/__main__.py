"""``python -m runner``: the operator. Reads ``watches.yaml``, reconciles the custom
resources it lists with their playbooks, serves the admission webhook, ``/healthz``,
``/readyz`` and ``/metrics``, until SIGTERM or SIGINT. See ``docs/runner.md``.

The cluster client is the collection's ``KubeClient`` (its own, over urllib3):
the modules and the webhook talk to the API server through it too (one client, one set of
credential rules), and the runner needs only list, watch, get, patch, create and update.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    KubeClient,
    KubeConfigError,
)
from runner import logs
from runner.kube.watches import WatchesError, load_watches
from runner.manager import Manager
from runner.settings import SettingsError, parse_settings

log = logs.Log("main")

STOP_SLACK_SECONDS = 60.0
"""How long, beyond ``--graceful-shutdown-timeout``, the stop after SIGTERM may take: the
abandoned passes' kill grace, the warm server's, the Lease release and the servers' close
take seconds; past this the process dumps its threads' stacks and exits 1."""


def main(argv: list[str] | None = None) -> int:
    try:
        settings = parse_settings(argv)
    except SettingsError as error:
        logs.configure()
        log.error("bad setting", error=str(error))
        return 2
    logs.configure(getattr(logging, settings.log_level.upper()))
    try:
        watches = load_watches(settings.watches_file)
    except (OSError, WatchesError) as error:
        log.error("cannot read the watches file", path=str(settings.watches_file), error=str(error))
        return 2
    try:
        client = KubeClient.from_environment(settings.kubeconfig, origin="--kubeconfig")
    except (KubeConfigError, OSError) as error:
        log.error("no cluster connection", error=str(error))
        return 2
    log.info(
        "starting",
        watches=[f"{w.gvk.kind}.{w.gvk.group}" for w in watches],
        server=client.connection.describe(),
        namespaces=list(settings.watch_namespaces) or "all",
        max_concurrent_reconciles=settings.max_concurrent_reconciles,
        leader_elect=settings.leader_elect,
        runner_dir=str(settings.runner_dir) if settings.runner_dir else "private",
        pid=os.getpid(),
    )
    manager = Manager(settings, client, watches)
    signals = 0

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal signals
        signals += 1
        name = signal.Signals(signum).name
        if signals == 1:
            log.info("signal received, stopping", signal=name)
            # A stop that hangs (a pass or a server that does not end) must not keep the
            # process alive: past the grace period and a minute for the rest, every
            # thread's stack goes to stderr and the process exits 1.
            faulthandler.dump_traceback_later(
                settings.graceful_shutdown_timeout + STOP_SLACK_SECONDS, exit=True
            )
            manager.stop()
        else:
            log.warning("second signal, abandoning running passes", signal=name)
            manager.stop(abandon=True)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    # Every thread's stack on stderr, for a runner that does not answer or does not stop
    # (`kill -USR1 <pid>`; in a pod, `kubectl exec ... -- kill -USR1 1`): written by the
    # interpreter itself, so it works while every Python thread is blocked.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return manager.run()


if __name__ == "__main__":
    sys.exit(main())
