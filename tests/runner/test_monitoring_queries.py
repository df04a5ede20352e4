"""Every metric the dashboard and the alerts of config/prometheus query is one a running
runner exports.

The exported names come from a real ``python -m runner``'s ``/metrics`` over HTTP, on the
API double always and on a real kube-apiserver when ``KUBE_ASSETS_DIR`` is set (skipped,
saying why, otherwise), with the minimal sample's Glance in its namespace: the page's
``# TYPE`` lines give every family, those with no series yet included, and a histogram's
``_bucket``/``_sum``/``_count`` and a counter's ``_total`` names are derived from its type
(``support.promql.exported_sample_names``), not stripped from the query by guesswork. The
queried names come from the dashboard's targets and variables and the rules' expressions
(``support.promql.metric_names``).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from support.api_env import sample_documents
from support.promql import exported_sample_names, metric_names
from test_runner_support import RunnerProcess, wait_until

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "config" / "prometheus" / "dashboards" / "glance-operator.json"
RULES = ROOT / "config" / "prometheus" / "rules.yaml"
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;"
    "version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)


def queried() -> dict[str, set[str]]:
    """Where → the metric names it queries, for the dashboard and the rules."""
    board = json.loads(DASHBOARD.read_text())
    found: dict[str, set[str]] = {}
    panels = list(board["panels"])
    while panels:
        panel = panels.pop()
        panels += panel.get("panels") or []
        for target in panel.get("targets") or []:
            found[f"panel {panel['title']!r} {target['refId']}"] = metric_names(target["expr"])
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            selector = query.removeprefix("label_values(").rpartition(",")[0]
            found[f"variable {variable['name']}"] = metric_names(selector)
    for group in yaml.safe_load(RULES.read_text())["spec"]["groups"]:
        for rule in group["rules"]:
            found[f"alert {rule['alert']}"] = metric_names(rule["expr"])
    return found


def test_every_metric_the_dashboard_and_the_alerts_query_is_exported(api, tmp_path):
    api.create_all(sample_documents())
    runner = RunnerProcess(api, tmp_path).start()
    try:
        runner.wait_for("informers synced")
        # The Glance's gauges are fed by the watch: wait until its series is on the page.
        wait_until(
            lambda: "glance_operator_glance_ready{" in runner.http_get("metrics", "/metrics")[1],
            what="the Glance's ready gauge",
        )
        status, page = runner.http_get("metrics", "/metrics")
        # Prometheus's own Accept header gets OpenMetrics, with the same samples.
        request = urllib.request.Request(
            runner.url("metrics", "/metrics"), headers={"Accept": PROMETHEUS_ACCEPT}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            openmetrics_type = answer.headers["Content-Type"]
            openmetrics = answer.read().decode()
    finally:
        runner.close()
    assert status == 200
    assert openmetrics_type.startswith("application/openmetrics-text; version=1.0.0")
    families = {f.name: f for f in text_string_to_metric_families(openmetrics)}
    ready = {(s.name, s.labels["glance"]) for s in families["glance_operator_glance_ready"].samples}
    assert ready == {("glance_operator_glance_ready", "glance")}
    exported = exported_sample_names(page)
    # The derivation is the page's: a histogram exports _bucket, a counter its _total name.
    assert "controller_runtime_reconcile_time_seconds_bucket" in exported
    assert "controller_runtime_reconcile_time_seconds" not in exported
    assert "workqueue_adds_total" in exported and "workqueue_adds" not in exported
    missing = {
        where: sorted(names - exported) for where, names in queried().items() if names - exported
    }
    assert missing == {}
    assert len(queried()) > 30  # the dashboard's targets and the rules were all read
