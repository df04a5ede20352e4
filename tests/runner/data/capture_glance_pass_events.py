"""Capture ``glance_pass_events.json``: the ansible-runner result events of real passes.

    .venv/bin/python tests/runner/data/capture_glance_pass_events.py

Runs, on the REST test double of the API server (``tests/support``'s ``ApiEnv``, as the
reconcile tests do), the minimal sample's first pass (the full one: finalizer, objects,
status), the pass after the controllers settled, a GlanceBackend pass from a workstation
(it runs the parent's pass too), and the pass of the Glance being deleted (it releases the
finalizer); keeps each run's result events with ``event_data`` trimmed to what
``runner/endpoints/metrics_feed.py`` reads. Run it again when the pass's tasks change; the metrics
feed tests read the file.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for entry in (ROOT / "tests", ROOT / ".collections", ROOT):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from support.api_env import (  # noqa: E402
    ApiEnv,
    HealthServer,
    sample_documents,
)
from support.fake_apiserver import FakeAPIServer  # noqa: E402

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (  # noqa: E402
    KubeClient,
)

RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")
KEPT = ("task", "task_action", "resolved_action", "role", "duration", "start", "end")
GROUP_VERSION = "glance.openstack.c5c3.io/v1alpha1"


def trimmed(run) -> list[dict]:
    out = []
    for event in run.events:
        if event.get("event") not in RESULT_EVENTS:
            continue
        data = event.get("event_data") or {}
        kept = {key: data[key] for key in KEPT if data.get(key) not in (None, "")}
        if data.get("ignore_errors"):
            kept["ignore_errors"] = True
        out.append({"event": event["event"], "event_data": kept})
    return out


def main() -> None:
    health = HealthServer()
    runs: dict[str, list[dict]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp, FakeAPIServer() as double:
            kubeconfig = Path(tmp) / "kubeconfig"
            double.write_kubeconfig(kubeconfig)
            client = KubeClient.from_environment(str(kubeconfig))
            env = ApiEnv("double", kubeconfig, client, double=double, health=health)
            env.create_all(sample_documents())
            runs["glance pass 1 (first full pass)"] = trimmed(env.glance_pass())
            env.settle()
            runs["glance pass 2"] = trimmed(env.glance_pass())
            env.settle()
            runs["glancebackend pass with the parent glance_pass (workstation mode)"] = trimmed(
                env.backend_pass("s3-default")
            )
            client.delete(GROUP_VERSION, "Glance", "glance", env.namespace)
            runs["glance pass of a Glance being deleted (releases the finalizer)"] = trimmed(
                env.glance_pass()
            )
    finally:
        health.stop()
    about = (
        "ansible-runner result events of real passes (tests/support ApiEnv on the API double), "
        "event_data trimmed to what runner/endpoints/metrics_feed.py reads; written by "
        "capture_glance_pass_events.py."
    )
    text = json.dumps({"_about": about, "runs": runs}, indent=1, ensure_ascii=False)
    (HERE / "glance_pass_events.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
