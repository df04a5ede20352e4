"""The runner's metric set on prometheus_client, checked by parsing the page back: names,
types, labels, help and buckets users scrape, the work queue series, and the formats."""

from __future__ import annotations

import re
from pathlib import Path

import prometheus_client
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from runner.endpoints.metrics import (
    CONTENT_TYPE,
    DB_JOB_BUCKETS,
    RECONCILE_STEP_BUCKETS,
    RECONCILE_TIME_BUCKETS,
    UPGRADE_PHASE_BUCKETS,
    WORKQUEUE_DURATION_BUCKETS,
    RunnerMetrics,
    reconcile_result,
)
from runner.kube.workqueue import ItemExponentialBackoff, ManualClock, WorkQueue

# -- a reader of the text format 0.0.4 ---------------------------------------------------------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(\{{(.*)\}})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _go_float(text: str) -> str:
    if text in ("+Inf", "-Inf", "NaN"):
        return text
    value = float(text)
    return str(int(value)) if value.is_integer() else repr(value)


def _unescape(text: str) -> str:
    return re.sub(r'\\[\\"n]', lambda match: _UNESCAPE[match.group()], text)


class Page:
    """A parsed /metrics page: help and type per family, and every sample's value."""

    def __init__(self, text: str) -> None:
        assert text.endswith("\n") or text == ""
        self.help: dict[str, str] = {}
        self.type: dict[str, str] = {}
        self.samples: dict[tuple[str, frozenset], float] = {}
        self.order: list[str] = []
        for line in text.splitlines():
            if line.startswith("# HELP "):
                name, _, help_text = line[7:].partition(" ")
                self.help[name] = re.sub(r"\\[\\n]", lambda m: _UNESCAPE[m.group()], help_text)
                self.order.append(name)
            elif line.startswith("# TYPE "):
                name, kind = line[7:].split(" ")
                assert name == self.order[-1], "TYPE must follow its HELP"
                self.type[name] = kind
            else:
                match = _SAMPLE.match(line)
                assert match, f"not a sample line: {line!r}"
                name, _, labels, value = match.groups()
                pairs = self._labels(labels or "")
                key = (name, frozenset(pairs.items()))
                assert key not in self.samples, f"repeated sample {line!r}"
                self.samples[key] = float(value)

    @staticmethod
    def _labels(text: str) -> dict[str, str]:
        pairs: dict[str, str] = {}
        position = 0
        while position < len(text):
            match = _LABEL.match(text, position)
            assert match, f"bad labels at {text[position:]!r}"
            pairs[match.group(1)] = _unescape(match.group(2))
            position = match.end()
        return pairs

    def value(self, metric: str, /, **labels: str) -> float:
        return self.samples[(metric, frozenset(labels.items()))]

    def series(self, name: str) -> list[dict[str, str]]:
        return [dict(labels) for sample, labels in self.samples if sample == name]

    def buckets(self, metric: str, /, **labels: str) -> dict[str, float]:
        """``le`` → cumulative count of one histogram series, in page order; ``le`` as Go
        writes it (``1``, not the Python client's ``1.0``)."""
        return {
            _go_float(dict(pairs)["le"]): value
            for (sample, pairs), value in self.samples.items()
            if sample == f"{metric}_bucket" and {k: v for k, v in pairs if k != "le"} == labels
        }


# -- the runner's set -------------------------------------------------------------------------

REFERENCE_FAMILIES = {
    "glance_operator_reconcile_duration_seconds": (
        "histogram",
        ["sub_reconciler"],
        RECONCILE_STEP_BUCKETS,
    ),
    "glance_operator_reconcile_errors_total": (
        "counter",
        ["sub_reconciler", "condition_type"],
        None,
    ),
    "glance_operator_db_sync_total": ("counter", ["glance", "namespace", "result"], None),
    "glance_operator_db_sync_duration_seconds": (
        "histogram",
        ["glance", "namespace"],
        DB_JOB_BUCKETS,
    ),
    "glance_operator_db_purge_total": ("counter", ["glance", "namespace", "result"], None),
    "glance_operator_db_purge_duration_seconds": (
        "histogram",
        ["glance", "namespace"],
        DB_JOB_BUCKETS,
    ),
    "controller_runtime_reconcile_total": ("counter", ["controller", "result"], None),
    "controller_runtime_reconcile_time_seconds": (
        "histogram",
        ["controller"],
        RECONCILE_TIME_BUCKETS,
    ),
    "leader_election_master_status": ("gauge", ["name"], None),
    "workqueue_depth": ("gauge", ["name"], None),
    "workqueue_adds_total": ("counter", ["name"], None),
    "workqueue_retries_total": ("counter", ["name"], None),
    "workqueue_queue_duration_seconds": ("histogram", ["name"], WORKQUEUE_DURATION_BUCKETS),
    "workqueue_work_duration_seconds": ("histogram", ["name"], WORKQUEUE_DURATION_BUCKETS),
    # Ours, not the reference's.
    "glance_operator_playbook_runs_total": ("counter", ["controller", "status"], None),
    "glance_operator_upgrade_phase_duration_seconds": (
        "histogram",
        ["glance", "namespace", "phase"],
        UPGRADE_PHASE_BUCKETS,
    ),
    "glance_operator_upgrade_phase": ("gauge", ["glance", "namespace", "phase"], None),
    "glance_operator_glance_ready": ("gauge", ["glance", "namespace"], None),
    "glance_operator_glance_condition": (
        "gauge",
        ["glance", "namespace", "type", "status"],
        None,
    ),
    "glance_operator_db_jobs_active": ("gauge", ["glance", "namespace", "component"], None),
    "glance_operator_db_job_failed": ("gauge", ["glance", "namespace", "component"], None),
}
# Computed when scraped (a collector of the runner's, not a labelled metric object).
UNFINISHED_WORK = (
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
)
# prometheus_client's process, platform and garbage-collector collectors (Linux, CPython).
LIBRARY_FAMILIES = {
    "process_virtual_memory_bytes": "gauge",
    "process_resident_memory_bytes": "gauge",
    "process_start_time_seconds": "gauge",
    "process_cpu_seconds_total": "counter",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "python_info": "gauge",
    "python_gc_objects_collected_total": "counter",
    "python_gc_objects_uncollectable_total": "counter",
    "python_gc_collections_total": "counter",
}
# The help texts users already scrape (the hand-written exposition's, which are the Go
# operator's and controller-runtime's): kept word for word.
HELP = {
    "glance_operator_reconcile_duration_seconds": (
        "Duration of one reconcile step in seconds, per step."
    ),
    "glance_operator_reconcile_errors_total": (
        "Reconcile steps that returned an error, per step and the condition it sets."
    ),
    "glance_operator_db_sync_total": (
        "Finished db-sync, expand, migrate and contract Jobs, per Glance and result."
    ),
    "glance_operator_db_sync_duration_seconds": (
        "Seconds from a db-sync Job's creation to its end, per Glance."
    ),
    "glance_operator_db_purge_total": "Finished db-purge Jobs, per Glance and result.",
    "glance_operator_db_purge_duration_seconds": (
        "Seconds from a db-purge Job's creation to its end, per Glance."
    ),
    "glance_operator_upgrade_phase_duration_seconds": (
        "Seconds a release upgrade spent in each phase, per Glance (ours)."
    ),
    "glance_operator_playbook_runs_total": (
        "ansible-runner runs of a reconcile playbook, per controller and run status."
    ),
    "controller_runtime_reconcile_total": "Total number of reconciliations per controller",
    "controller_runtime_reconcile_time_seconds": "Length of time per reconciliation per controller",
    "leader_election_master_status": (
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
        "backup, 1 indicates master. 'name' is the string used to identify the lease."
    ),
    "workqueue_depth": "Current depth of workqueue",
    "workqueue_adds_total": "Total number of adds handled by workqueue",
    "workqueue_retries_total": "Total number of retries handled by workqueue",
}


def family_objects(metrics: RunnerMetrics) -> dict[str, object]:
    """The runner's labelled metric objects by exposed name."""
    objects = {}
    for value in vars(metrics).values():
        if isinstance(value, prometheus_client.metrics.MetricWrapperBase):
            suffix = "_total" if value._type == "counter" else ""
            objects[value._name + suffix] = value
    return objects


def test_the_page_shows_every_family_with_its_type_and_help_even_before_a_series():
    page = Page(RunnerMetrics().exposition())
    expected = {name: kind for name, (kind, _, _) in REFERENCE_FAMILIES.items()}
    expected |= dict.fromkeys(UNFINISHED_WORK, "gauge") | LIBRARY_FAMILIES
    assert page.type == expected
    for name, text in HELP.items():
        assert page.help[name] == text, name


def test_each_family_has_exactly_its_labels_and_buckets():
    metrics = RunnerMetrics()
    objects = family_objects(metrics)
    assert set(objects) == set(REFERENCE_FAMILIES)
    for name, (_, labels, buckets) in REFERENCE_FAMILIES.items():
        series = objects[name].labels(**dict.fromkeys(labels, "x"))  # other names raise
        if buckets is not None:
            series.observe(0)
    page = Page(metrics.exposition())
    for name, (kind, labels, buckets) in REFERENCE_FAMILIES.items():
        sample = f"{name}_count" if kind == "histogram" else name
        assert page.series(sample) == [dict.fromkeys(labels, "x")], name
        if buckets is not None:
            expected = [re.sub(r"\.0$", "", repr(float(b))) for b in buckets] + ["+Inf"]
            assert list(page.buckets(name, **dict.fromkeys(labels, "x"))) == expected, name


def test_the_reference_buckets_are_the_go_operator_s():
    assert RECONCILE_STEP_BUCKETS == (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
    assert DB_JOB_BUCKETS == (1, 5, 10, 30, 60, 120, 300, 600)
    assert (
        len(RECONCILE_TIME_BUCKETS) == 40
        and RECONCILE_TIME_BUCKETS[0] == 0.005
        and RECONCILE_TIME_BUCKETS[-1] == 60
    )
    # controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12)
    assert len(WORKQUEUE_DURATION_BUCKETS) == 12
    assert WORKQUEUE_DURATION_BUCKETS[0] == pytest.approx(1e-8)
    assert WORKQUEUE_DURATION_BUCKETS[-1] == pytest.approx(1000)


def test_two_runners_in_one_process_keep_their_own_series_off_the_global_registry():
    first, second = RunnerMetrics(), RunnerMetrics()
    first.observe_reconcile("glance", "success", 1.0)
    assert (
        Page(first.exposition()).value(
            "controller_runtime_reconcile_total", controller="glance", result="success"
        )
        == 1
    )
    assert Page(second.exposition()).series("controller_runtime_reconcile_total") == []
    global_page = prometheus_client.generate_latest().decode()
    assert "controller_runtime_reconcile_total" not in global_page


def test_the_page_is_text_format_0_0_4_unless_openmetrics_is_asked_for():
    metrics = RunnerMetrics()
    metrics.observe_reconcile("glance", "error", 0.5)
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"
    content_type, body = metrics.page("")
    assert content_type == CONTENT_TYPE
    assert (
        Page(body.decode()).value(
            "controller_runtime_reconcile_total", controller="glance", result="error"
        )
        == 1
    )
    assert "_created" not in body.decode()  # the Go client writes none
    # Prometheus's default Accept header asks for OpenMetrics first.
    accept = (
        "application/openmetrics-text;version=1.0.0;q=0.5,"
        "application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
    )
    content_type, body = metrics.page(accept)
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    total = families["controller_runtime_reconcile"]
    assert total.type == "counter"
    assert {(s.name, s.labels["result"], s.value) for s in total.samples} >= {
        ("controller_runtime_reconcile_total", "error", 1.0)
    }
    assert not any(s.name.endswith("_created") for f in families.values() for s in f.samples)


def test_a_started_controller_shows_its_series_at_zero():
    metrics = RunnerMetrics()
    metrics.start_controller("glance")
    page = Page(metrics.exposition())
    assert {s["result"] for s in page.series("controller_runtime_reconcile_total")} == {
        "success",
        "error",
        "requeue",
        "requeue_after",
    }
    assert page.value("controller_runtime_reconcile_time_seconds_count", controller="glance") == 0
    for name in (
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
        *UNFINISHED_WORK,
    ):
        assert page.value(name, name="glance") == 0, name
    assert page.type["controller_runtime_reconcile_time_seconds"] == "histogram"


@pytest.mark.parametrize(
    ("succeeded", "requeue_after", "expected"),
    [
        (True, None, "success"),
        (True, 0, "success"),
        (True, 30.0, "requeue_after"),
        (False, 30.0, "error"),
        (False, None, "error"),
    ],
)
def test_the_result_label_of_a_pass(succeeded, requeue_after, expected):
    assert reconcile_result(succeeded, requeue_after) == expected


def test_passes_are_counted_and_timed_per_controller_and_result():
    metrics = RunnerMetrics()
    metrics.start_controller("glance")
    metrics.observe_reconcile("glance", "success", 12.0)
    metrics.observe_reconcile("glance", "error", 0.3)
    metrics.observe_reconcile("glancebackend", "requeue_after", 2.0)
    page = Page(metrics.exposition())
    total = "controller_runtime_reconcile_total"
    assert page.value(total, controller="glance", result="success") == 1
    assert page.value(total, controller="glance", result="error") == 1
    assert page.value(total, controller="glance", result="requeue") == 0
    assert page.value(total, controller="glancebackend", result="requeue_after") == 1
    assert page.value(
        "controller_runtime_reconcile_time_seconds_sum", controller="glance"
    ) == pytest.approx(12.3)
    buckets = page.buckets("controller_runtime_reconcile_time_seconds", controller="glance")
    assert (buckets["0.3"], buckets["10"], buckets["15"], buckets["+Inf"]) == (1, 1, 2, 2)


def test_an_unknown_result_is_refused():
    with pytest.raises(ValueError, match="result 'done' is not one of"):
        RunnerMetrics().observe_reconcile("glance", "done", 1.0)


def test_a_step_duration_lands_in_the_reference_buckets():
    metrics = RunnerMetrics()
    metrics.reconcile_duration.labels(sub_reconciler="Config").observe(0.2)
    metrics.reconcile_errors.labels(sub_reconciler="Config", condition_type="SecretsReady").inc()
    page = Page(metrics.exposition())
    buckets = page.buckets("glance_operator_reconcile_duration_seconds", sub_reconciler="Config")
    assert list(buckets) == [
        *("0.01", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "+Inf")
    ]
    assert (buckets["0.1"], buckets["0.25"]) == (0, 1)
    errors = "glance_operator_reconcile_errors_total"
    assert page.value(errors, sub_reconciler="Config", condition_type="SecretsReady") == 1


def test_the_work_queue_reports_adds_retries_and_depth():
    metrics = RunnerMetrics()
    clock = ManualClock()
    queue = WorkQueue(
        clock,
        rate_limiter=ItemExponentialBackoff(),
        observer=metrics.start_controller("glance", clock.now),
    )
    queue.add("a")
    queue.add("b")
    queue.add("a")
    queue.add_rate_limited("c")
    page = Page(metrics.exposition())
    assert (
        page.value("workqueue_adds_total", name="glance"),
        page.value("workqueue_retries_total", name="glance"),
        page.value("workqueue_depth", name="glance"),
    ) == (2, 1, 2)
    queue.get()
    clock.advance(1)
    assert len(queue) == 2
    page = Page(metrics.exposition())
    assert (
        page.value("workqueue_adds_total", name="glance"),
        page.value("workqueue_depth", name="glance"),
    ) == (3, 2)


def test_the_work_queue_times_the_wait_the_work_and_the_work_in_progress():
    metrics = RunnerMetrics()
    clock = ManualClock()
    queue = WorkQueue(clock, observer=metrics.start_controller("glance", clock.now))
    queue.add("a")
    clock.advance(3)
    queue.add("b")
    clock.advance(2)
    first = queue.get()  # "a" waited 5 s
    clock.advance(10)
    second = queue.get()  # "b" waited 12 s
    clock.advance(4)  # "a" has run 14 s, "b" 4 s
    page = Page(metrics.exposition())
    assert page.value("workqueue_queue_duration_seconds_sum", name="glance") == 17
    assert page.value("workqueue_queue_duration_seconds_count", name="glance") == 2
    assert page.buckets("workqueue_queue_duration_seconds", name="glance")["10"] == 1
    assert page.value("workqueue_unfinished_work_seconds", name="glance") == 18
    assert page.value("workqueue_longest_running_processor_seconds", name="glance") == 14
    assert page.value("workqueue_work_duration_seconds_count", name="glance") == 0
    queue.done(first)
    clock.advance(1)
    page = Page(metrics.exposition())
    assert page.value("workqueue_work_duration_seconds_sum", name="glance") == 14
    assert page.value("workqueue_unfinished_work_seconds", name="glance") == 5
    assert page.value("workqueue_longest_running_processor_seconds", name="glance") == 5
    queue.done(second)
    page = Page(metrics.exposition())
    assert page.value("workqueue_work_duration_seconds_count", name="glance") == 2
    assert page.value("workqueue_unfinished_work_seconds", name="glance") == 0
    assert page.value("workqueue_longest_running_processor_seconds", name="glance") == 0


def test_forgetting_a_glance_drops_its_series_and_no_other():
    metrics = RunnerMetrics()
    for glance, namespace in [("glance", "a"), ("glance", "b"), ("other", "a")]:
        labels = {"glance": glance, "namespace": namespace}
        metrics.db_sync_total.labels(**labels, result="succeeded").inc()
        metrics.db_sync_duration.labels(**labels).observe(42)
        metrics.db_purge_total.labels(**labels, result="failed").inc()
        metrics.db_purge_duration.labels(**labels).observe(7)
        metrics.glance_ready.labels(**labels).set(1)
        metrics.glance_condition.labels(**labels, type="Ready", status="True").set(1)
        metrics.db_jobs_active.labels(**labels, component="db-sync").set(1)
        metrics.db_job_failed.labels(**labels, component="db-purge").set(1)
        metrics.upgrade_phase.labels(**labels, phase="Expanding").set(1)
    metrics.reconcile_duration.labels(sub_reconciler="Config").observe(1)
    metrics.forget_glance("glance", "a")
    page = Page(metrics.exposition())
    for name in (
        "glance_operator_db_sync_total",
        "glance_operator_db_purge_total",
        "glance_operator_db_sync_duration_seconds_count",
        "glance_operator_glance_ready",
        "glance_operator_glance_condition",
        "glance_operator_db_jobs_active",
        "glance_operator_db_job_failed",
        "glance_operator_upgrade_phase",
    ):
        assert sorted((s["glance"], s["namespace"]) for s in page.series(name)) == [
            ("glance", "b"),
            ("other", "a"),
        ], name
    assert (
        page.value("glance_operator_reconcile_duration_seconds_count", sub_reconciler="Config") == 1
    )


def test_every_line_of_a_busy_page_is_valid_text_format():
    metrics = RunnerMetrics()
    metrics.start_controller("glance")
    metrics.observe_reconcile("glance", "success", 3.0)
    metrics.db_sync_total.labels(glance='we"ird\\name', namespace="n\n", result="succeeded").inc()
    page = Page(metrics.exposition())  # the reader asserts every line's grammar
    assert (
        page.value(
            "glance_operator_db_sync_total",
            glance='we"ird\\name',
            namespace="n\n",
            result="succeeded",
        )
        == 1
    )
    assert set(page.type) == set(page.help)
    for name, _ in page.samples:
        family = name if name in page.type else re.sub(r"_(bucket|sum|count)$", "", name)
        assert page.type[family] in (("histogram",) if family != name else ("counter", "gauge"))


def test_the_runner_guide_tables_every_family_with_its_type_and_labels():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "runner.md").read_text()
    rows = {}
    for line in doc.splitlines():
        match = re.match(r"\| `([a-z_]+)` \| (counter|gauge|histogram) \| ([^|]*) \|", line)
        if match:
            rows[match.group(1)] = (match.group(2), re.findall(r"`([a-z_]+)`", match.group(3)))
    expected = {name: (kind, labels) for name, (kind, labels, _) in REFERENCE_FAMILIES.items()}
    expected |= dict.fromkeys(UNFINISHED_WORK, ("gauge", ["name"]))
    assert rows == expected
