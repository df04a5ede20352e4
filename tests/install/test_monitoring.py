"""The monitoring of config/prometheus: the Grafana dashboard, the PrometheusRule's alerts and
their runbooks, and the PromQL reader that checks both (``support.promql``).

The dashboard is checked as Grafana imports it (``__inputs`` and a datasource variable
``DS_PROMETHEUS``, no data source uid of a particular Grafana, unique panel ids, every
target a query), the PrometheusRule against the schema of the Prometheus Operator's CRD as
far as the alerts use it (written out below, offline), and with ``promtool`` (``check
rules`` and the alert unit tests of ``data/alerts_test.yaml``) when it is there: named by
``PROMTOOL``, on PATH, or unpacked by ``make promtool`` (part of ``make unit``) from Debian's
``prometheus`` package into ``.venv/promtool``. That every metric
they query is one a runner exports is ``tests/runner/test_monitoring_queries.py``'s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from support.promql import PromQLError, exported_sample_names, metric_names

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "config" / "prometheus"
DASHBOARD = PROMETHEUS / "dashboards" / "glance-operator.json"
RULES = PROMETHEUS / "rules.yaml"
MONITORING_DOC = ROOT / "docs" / "monitoring.md"
ALERT_TESTS = Path(__file__).parent / "data" / "alerts_test.yaml"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}

# -- the PromQL reader -------------------------------------------------------------------------

NAME_CASES = [
    ("up", {"up"}),
    ("workqueue_depth", {"workqueue_depth"}),
    ("sum(rate(foo_total[5m]))", {"foo_total"}),
    ("sum by (le, controller) (rate(foo_bucket[5m]))", {"foo_bucket"}),
    ("sum(rate(foo_bucket[5m])) by (le)", {"foo_bucket"}),
    ("sum without (instance, pod) (foo)", {"foo"}),
    ("count without(job)(foo)", {"foo"}),
    ('foo{job="x", le=~"0.5|1", result!="error", a!~"b"}', {"foo"}),
    ('{__name__="foo_total", job="x"}', {"foo_total"}),
    ('{"foo.bar", job="x"}', {"foo.bar"}),
    ('{__name__=~"foo.*"}', set()),  # a regular expression names no one metric
    ("foo offset 5m", {"foo"}),
    ("rate(foo[5m] offset -1h30m)", {"foo"}),
    ("foo @ 1609746000", {"foo"}),
    ("foo @ start()", {"foo"}),
    ("max_over_time(rate(foo[5m])[1h:1m])", {"foo"}),
    ("max_over_time(rate(foo[5m])[1h:])", {"foo"}),
    ("foo / on(namespace, glance) group_left(phase) bar", {"foo", "bar"}),
    ("foo * ignoring(le) group_right bar", {"foo", "bar"}),
    ("foo > bool 0", {"foo"}),
    ("foo and bar or baz unless qux", {"foo", "bar", "baz", "qux"}),
    ("foo atan2 bar", {"foo", "bar"}),
    ('label_replace(foo, "dst", "$1", "src", "(rate|sum)")', {"foo"}),
    ('count_values("value", foo)', {"foo"}),
    ("topk(5, foo) + -bar", {"foo", "bar"}),
    ("quantile(0.9, foo) * 1e3 + 0x1F - .5 + Inf - NaN", {"foo"}),
    ("histogram_quantile(0.95, sum by (le) (rate(foo_bucket[$__rate_interval])))", {"foo_bucket"}),
    ('foo{namespace=~"$namespace"}[${window}]', {"foo"}),
    ("rate(foo[$__rate_interval]) * $factor", {"foo"}),
    ("rate(foo[[[interval]]])", {"foo"}),
    ("count(foo == 0) or vector(0)", {"foo"}),
    ("# a comment naming not_a_metric\nfoo", {"foo"}),
    ("sum(foo:recorded:rate5m)", {"foo:recorded:rate5m"}),
    ("time() - process_start_time_seconds", {"process_start_time_seconds"}),
    ("by_name + without_x", {"by_name", "without_x"}),  # keywords only as whole words
]


@pytest.mark.parametrize(("expr", "names"), NAME_CASES)
def test_the_reader_finds_the_metric_names_of_an_expression(expr, names):
    assert metric_names(expr) == names


ERROR_CASES = [
    ("", "empty expression"),
    ("   ", "empty expression"),
    ("rate(foo[5m]", r"unclosed '\('"),
    ("foo)", r"unbalanced '\)'"),
    ("foo]", r"unbalanced '\]'"),
    ("foo bar", "two operands"),
    ("sum by (le)", "ends in"),
    ("sum foo", r"has no '\('"),
    ("by (le) foo", "follows no aggregation"),
    ("foo + on(a)", "ends in"),
    ("on(a) foo", "follows no binary operator"),
    ("sum by le (foo)", "needs a label list"),
    ('foo{job="x"', "expected ',' or '}'"),
    ("foo{job}", "no matcher operator"),
    ("foo{job=x}", "needs a quoted value"),
    ('foo{job="x}', "unterminated string"),
    ("histogram_quantle(0.9, foo)", "no PromQL function"),
    ("Sum(foo)", "no PromQL function"),
    ("foo +", "ends in"),
    ("(foo + )", r"'\)' at 7 follows an operator"),
    ("* foo", "has no left operand"),
    ("foo[5x]", "not a range"),
    ("foo[5m", "not a range"),
    ("5m[5m]", "follows no selector or subquery"),
    ("[5m]", "follows no selector"),
    ("foo offset", "ends in"),
    ("foo & bar", "unexpected '&'"),
    ("foo ! bar", "unexpected '!'"),
    ("1.2.3", "two operands"),
    ("atan2(foo, bar)", "has no left operand"),  # a binary operator, not a function
]


@pytest.mark.parametrize(("expr", "message"), ERROR_CASES)
def test_the_reader_refuses_what_promql_refuses_and_says_where(expr, message):
    with pytest.raises(PromQLError, match=message):
        metric_names(expr)


def test_the_names_a_page_exports_come_from_its_type_lines():
    page = (
        "# HELP a_total A.\n# TYPE a_total counter\n"
        "# HELP b B.\n# TYPE b gauge\nb 1.0\n"
        "# HELP c_seconds C.\n# TYPE c_seconds histogram\n"
        "# HELP d D.\n# TYPE d summary\n"
    )
    assert exported_sample_names(page) == {
        *("a_total", "b", "c_seconds_bucket", "c_seconds_sum", "c_seconds_count"),
        *("d", "d_sum", "d_count"),
    }


# -- the dashboard -----------------------------------------------------------------------------


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def rules() -> dict:
    return yaml.safe_load(RULES.read_text())


def all_panels(panels: list[dict]) -> list[dict]:
    """Every panel, those inside collapsed rows included."""
    found = []
    for panel in panels:
        found.append(panel)
        found += all_panels(panel.get("panels") or [])
    return found


def queries() -> dict[str, str]:
    """Where → PromQL of every query of the dashboard and the rules (variables included)."""
    found = {}
    for panel in all_panels(dashboard()["panels"]):
        for target in panel.get("targets") or []:
            found[f"panel {panel['id']} {panel['title']!r} {target['refId']}"] = target["expr"]
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else ""
            match = re.fullmatch(r"label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)", query)
            assert match, f"variable {variable['name']}: {query!r} is not label_values(...)"
            found[f"variable {variable['name']}"] = match.group(1)
    for rule in rules()["spec"]["groups"][0]["rules"]:
        found[f"alert {rule['alert']}"] = rule["expr"]
    return found


def test_the_dashboard_is_importable_with_the_datasource_as_a_variable():
    board = dashboard()
    assert (board["uid"], board["title"]) == ("glance-operator", "Glance Operator")
    assert board["id"] is None  # Grafana assigns it on import
    assert board["__inputs"] == [
        {
            "name": "DS_PROMETHEUS",
            "label": "Prometheus",
            "description": "",
            "type": "datasource",
            "pluginId": "prometheus",
            "pluginName": "Prometheus",
        }
    ]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    # The same name as the input: provisioned from the ConfigMap (no import step to fill
    # ${DS_PROMETHEUS} in), the dashboard's own variable resolves it.
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    assert isinstance(board["schemaVersion"], int) and board["schemaVersion"] >= 36


def test_every_panel_and_target_uses_the_datasource_variable_and_no_fixed_uid():
    board = dashboard()
    panels = all_panels(board["panels"])
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), f"panel ids repeat: {sorted(ids)}"
    assert all(isinstance(i, int) and i > 0 for i in ids)
    for panel in panels:
        where = f"panel {panel['id']} {panel.get('title')!r}"
        assert panel.get("title"), where
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, where
        if panel["type"] == "row":
            assert "targets" not in panel, where
            continue
        assert panel["type"] in {"timeseries", "stat", "table"}, where
        assert panel.get("description"), f"{where}: say what it shows"
        assert panel["datasource"] == DATASOURCE, where
        targets = panel.get("targets") or []
        assert targets, f"{where}: no query"
        ref_ids = [target["refId"] for target in targets]
        assert len(ref_ids) == len(set(ref_ids)), where
        for target in targets:
            assert target["datasource"] == DATASOURCE, where
            assert isinstance(target.get("expr"), str) and target["expr"].strip(), where
    # Whatever else names a data source names the variable, never a uid of one Grafana.
    uids = re.findall(r'"uid":\s*"([^"]*)"', DASHBOARD.read_text())
    assert set(uids) == {"${DS_PROMETHEUS}", "glance-operator"}


def test_the_panels_do_not_overlap():
    taken: dict[tuple[int, int], str] = {}
    for panel in all_panels(dashboard()["panels"]):
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']!r} overlaps {taken[(x, y)]!r}"
                taken[(x, y)] = panel["title"]


@pytest.mark.parametrize("where", sorted(queries()))
def test_every_query_parses(where):
    assert metric_names(queries()[where]), f"{where} selects no metric"


SHOWN = {
    "passes by kind and result": "controller_runtime_reconcile_total",
    "pass duration percentiles": "controller_runtime_reconcile_time_seconds_bucket",
    "step errors": "glance_operator_reconcile_errors_total",
    "work queue depth": "workqueue_depth",
    "work queue age": "workqueue_queue_duration_seconds_bucket",
    "passes in progress": "workqueue_longest_running_processor_seconds",
    "Glances not Ready": "glance_operator_glance_ready",
    "database Jobs running": "glance_operator_db_jobs_active",
    "database Jobs finished": "glance_operator_db_sync_total",
    "db-purge Jobs finished": "glance_operator_db_purge_total",
    "failed database Jobs": "glance_operator_db_job_failed",
    "upgrades under way": "glance_operator_upgrade_phase",
}


def test_the_dashboard_shows_what_it_is_for():
    used = set().union(
        *(metric_names(expr) for where, expr in queries().items() if where.startswith("panel"))
    )
    assert {what: name for what, name in SHOWN.items() if name not in used} == {}
    percentiles = [
        expr for expr in queries().values() if "controller_runtime_reconcile_time" in expr
    ]
    assert {re.search(r"histogram_quantile\(([\d.]+)", e).group(1) for e in percentiles} == {
        "0.5",
        "0.95",
        "0.99",
    }


# -- the PrometheusRule ------------------------------------------------------------------------

DURATION = (
    r"^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$"
)
"""The Prometheus Operator CRD's pattern of a duration (``monitoringv1.Duration``)."""

PROMETHEUS_RULE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "interval": {"type": "string", "pattern": DURATION},
                            "query_offset": {"type": "string", "pattern": DURATION},
                            "limit": {"type": "integer"},
                            "partial_response_strategy": {"type": "string"},
                            "labels": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                            "rules": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["expr"],
                                    "additionalProperties": False,
                                    "oneOf": [
                                        {"required": ["alert"], "not": {"required": ["record"]}},
                                        {"required": ["record"], "not": {"required": ["alert"]}},
                                    ],
                                    "properties": {
                                        "alert": {"type": "string", "minLength": 1},
                                        "record": {"type": "string", "minLength": 1},
                                        "expr": {"type": "string", "minLength": 1},
                                        "for": {"type": "string", "pattern": DURATION},
                                        "keep_firing_for": {
                                            "type": "string",
                                            "pattern": DURATION,
                                            "minLength": 1,
                                        },
                                        "labels": {
                                            "type": "object",
                                            "additionalProperties": {"type": "string"},
                                        },
                                        "annotations": {
                                            "type": "object",
                                            "additionalProperties": {"type": "string"},
                                        },
                                    },
                                },
                            },
                        },
                    },
                }
            },
        },
    },
}

ALERTS = {
    "GlanceOperatorPassErrors",
    "GlanceNotReady",
    "GlanceDbPurgeFailing",
    "GlanceOperatorWorkQueueGrowing",
    "GlanceOperatorPassStuck",
}


def test_the_rule_validates_against_the_prometheus_rule_schema():
    jsonschema.validate(rules(), PROMETHEUS_RULE_SCHEMA)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["spec"]["groups"][0]["rules"][0].update({"for": "15 minutes"}),
            "does not match",
        ),
        (lambda r: r["spec"]["groups"][0]["rules"][0].pop("expr"), "'expr' is a required property"),
        (
            lambda r: r["spec"]["groups"][0]["rules"][0].update({"record": "x"}),
            "is not valid under",
        ),
        (lambda r: r["spec"]["groups"][0].pop("name"), "'name' is a required property"),
        (
            lambda r: r["spec"]["groups"][0]["rules"][0].update({"fore": "5m"}),
            "Additional properties",
        ),
        (lambda r: r["spec"]["groups"][0]["rules"][0]["labels"].update({"n": 1}), "is not of type"),
    ],
)
def test_the_schema_refuses_a_broken_rule(change, message):
    broken = rules()
    change(broken)
    with pytest.raises(jsonschema.ValidationError, match=message):
        jsonschema.validate(broken, PROMETHEUS_RULE_SCHEMA)


def test_every_alert_says_what_and_where_its_runbook_is():
    doc = MONITORING_DOC.read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in doc.splitlines()
        if line.startswith("#")
    }
    (group,) = rules()["spec"]["groups"]
    found = set()
    for rule in group["rules"]:
        alert = rule["alert"]
        found.add(alert)
        assert re.fullmatch(DURATION, rule["for"]) and rule["for"] != "", alert
        assert rule["labels"]["severity"] in {"warning", "critical"}, alert
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description", "runbook_url"}, alert
        url = annotations["runbook_url"]
        base = "https://github.com/c5c3/glance-operator-ansible/blob/main/docs/monitoring.md#"
        assert url == base + alert.lower(), alert
        assert alert.lower() in anchors, f"docs/monitoring.md has no section {alert}"
    assert found == ALERTS
    rule = {r["alert"]: r for r in group["rules"]}
    assert rule["GlanceNotReady"]["for"] == "15m"


UNPACKED_PROMTOOL = ROOT / ".venv" / "promtool" / "usr" / "bin" / "promtool"
"""Where ``make promtool`` (a step of ``make unit``) unpacks Debian's promtool."""


def promtool() -> str:
    found = os.environ.get("PROMTOOL") or shutil.which("promtool")
    if not found and UNPACKED_PROMTOOL.is_file():
        found = str(UNPACKED_PROMTOOL)
    if not found:
        pytest.skip(
            "promtool not found (PROMTOOL, PATH, .venv/promtool): run `make promtool`, which "
            "unpacks it from Debian's prometheus package, or set PROMTOOL"
        )
    return found


def test_promtool_checks_the_rules(tmp_path):
    tool = promtool()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules()["spec"]))
    result = subprocess.run(
        [tool, "check", "rules", "rules.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout


def test_each_alert_fires_when_it_should_and_not_before(tmp_path):
    """promtool's unit tests (data/alerts_test.yaml) on series a runner would export."""
    tool = promtool()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules()["spec"]))
    tests = yaml.safe_load(ALERT_TESTS.read_text())
    assert tests["rule_files"] == ["rules.yaml"]
    tested = {case["alertname"] for test in tests["tests"] for case in test["alert_rule_test"]}
    assert tested == ALERTS
    (tmp_path / "alerts_test.yaml").write_text(ALERT_TESTS.read_text())
    result = subprocess.run(
        [tool, "test", "rules", "alerts_test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# -- the docs ----------------------------------------------------------------------------------


def test_the_monitoring_guide_explains_every_panel_and_alert():
    doc = MONITORING_DOC.read_text()
    for panel in all_panels(dashboard()["panels"]):
        assert f"**{panel['title']}**" in doc, panel["title"]
    for alert in ALERTS:
        assert f"### {alert}" in doc, alert
