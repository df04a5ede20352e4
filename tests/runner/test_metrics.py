"""The Prometheus registry and the runner's metric set, checked by parsing the page back."""

from __future__ import annotations

import math
import re

import pytest

from runner.metrics import (
    CONTENT_TYPE,
    DB_JOB_BUCKETS,
    RECONCILE_STEP_BUCKETS,
    RECONCILE_TIME_BUCKETS,
    UPGRADE_PHASE_BUCKETS,
    Registry,
    RunnerMetrics,
    format_value,
    reconcile_result,
)
from runner.workqueue import ItemExponentialBackoff, ManualClock, WorkQueue

# -- a reader of the text format 0.0.4 ---------------------------------------------------------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(\{{(.*)\}})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


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
        """``le`` → cumulative count of one histogram series, in page order."""
        return {
            dict(pairs)["le"]: value
            for (sample, pairs), value in self.samples.items()
            if sample == f"{metric}_bucket" and {k: v for k, v in pairs if k != "le"} == labels
        }


# -- values ---------------------------------------------------------------------------------

# Outputs of Go's strconv.FormatFloat(v, 'g', -1, 64), which the Go client writes.
FORMAT_CASES = [
    (0.0, "0"),
    (-0.0, "0"),
    (1.0, "1"),
    (-1.0, "-1"),
    (0.5, "0.5"),
    (2.5, "2.5"),
    (30.0, "30"),
    (100000.0, "100000"),
    (999999.0, "999999"),
    (1e6, "1e+06"),
    (1234567.0, "1.234567e+06"),
    (-123456789.0, "-1.23456789e+08"),
    (0.0001, "0.0001"),
    (0.00001, "1e-05"),
    (1.5e-05, "1.5e-05"),
    (0.1, "0.1"),
    (12345.678, "12345.678"),
    (3.141592653589793, "3.141592653589793"),
    (1e21, "1e+21"),
    (5e-324, "5e-324"),
    (1e308, "1e+308"),
    (math.inf, "+Inf"),
    (-math.inf, "-Inf"),
    (math.nan, "NaN"),
]


@pytest.mark.parametrize(("value", "expected"), FORMAT_CASES)
def test_values_are_written_as_the_go_client_writes_them(value, expected):
    assert format_value(value) == expected


def test_the_content_type_is_text_format_0_0_4():
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


# -- families -------------------------------------------------------------------------------


def test_a_counter_adds_up_per_label_set():
    registry = Registry()
    counter = registry.counter("jobs_total", "Jobs done.", ["kind", "result"])
    counter.inc(kind="db-sync", result="succeeded")
    counter.inc(2, kind="db-sync", result="succeeded")
    counter.inc(kind="db-sync", result="failed")
    assert registry.exposition() == (
        "# HELP jobs_total Jobs done.\n"
        "# TYPE jobs_total counter\n"
        'jobs_total{kind="db-sync",result="failed"} 1\n'
        'jobs_total{kind="db-sync",result="succeeded"} 3\n'
    )


def test_a_gauge_goes_up_and_down():
    registry = Registry()
    gauge = registry.gauge("depth", "Depth.", ["name"])
    gauge.set(5, name="q")
    gauge.inc(-2, name="q")
    gauge.inc(name="q")
    assert Page(registry.exposition()).value("depth", name="q") == 4


def test_a_histogram_writes_cumulative_buckets_sum_and_count():
    registry = Registry()
    histogram = registry.histogram("step_seconds", "Step time.", ["step"], [0.5, 1, 2.5])
    for seconds in (0.1, 0.5, 0.7, 2.5, 9):
        histogram.observe(seconds, step="Config")
    assert registry.exposition() == (
        "# HELP step_seconds Step time.\n"
        "# TYPE step_seconds histogram\n"
        'step_seconds_bucket{step="Config",le="0.5"} 2\n'
        'step_seconds_bucket{step="Config",le="1"} 3\n'
        'step_seconds_bucket{step="Config",le="2.5"} 4\n'
        'step_seconds_bucket{step="Config",le="+Inf"} 5\n'
        'step_seconds_sum{step="Config"} 12.8\n'
        'step_seconds_count{step="Config"} 5\n'
    )


def test_label_values_and_help_are_escaped_and_read_back():
    registry = Registry()
    registry.counter("odd_total", 'Help with \\ and\na newline and "quotes".', ["v"]).inc(
        v='a\\b"c\nd'
    )
    text = registry.exposition()
    assert 'odd_total{v="a\\\\b\\"c\\nd"} 1\n' in text
    assert '# HELP odd_total Help with \\\\ and\\na newline and "quotes".\n' in text
    page = Page(text)
    assert page.value("odd_total", v='a\\b"c\nd') == 1
    assert page.help["odd_total"] == 'Help with \\ and\na newline and "quotes".'


def test_a_family_shows_only_once_it_has_a_series_and_one_without_labels_shows_at_once():
    registry = Registry()
    labelled = registry.counter("labelled_total", "L.", ["x"])
    registry.gauge("plain", "P.")
    assert registry.exposition() == "# HELP plain P.\n# TYPE plain gauge\nplain 0\n"
    labelled.initialize(x="a")
    assert Page(registry.exposition()).value("labelled_total", x="a") == 0


def test_families_are_sorted_by_name_and_series_by_label_values():
    registry = Registry()
    late = registry.counter("zz_total", "Z.", ["k"])
    early = registry.counter("aa_total", "A.", ["k"])
    for value in ("b", "a", "c"):
        late.inc(k=value)
        early.inc(k=value)
    page = Page(registry.exposition())
    assert page.order == ["aa_total", "zz_total"]
    assert [series["k"] for series in page.series("zz_total")] == ["a", "b", "c"]


def test_series_are_removed_exactly_or_by_partial_labels():
    registry = Registry()
    counter = registry.counter("db_total", "D.", ["glance", "namespace", "result"])
    for glance, namespace, result in [
        ("a", "x", "ok"),
        ("a", "x", "failed"),
        ("a", "y", "ok"),
        ("b", "x", "ok"),
    ]:
        counter.inc(glance=glance, namespace=namespace, result=result)
    assert counter.remove(glance="a", namespace="y", result="ok")
    assert not counter.remove(glance="a", namespace="y", result="ok")
    assert counter.remove_matching(glance="a", namespace="x") == 2
    assert Page(registry.exposition()).series("db_total") == [
        {"glance": "b", "namespace": "x", "result": "ok"}
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda r: r.counter("0bad", "h"), "'0bad' is not a valid metric name"),
        (
            lambda r: r.counter("ok_total", "h", ["bad-label"]),
            "'bad-label' is not a valid label name",
        ),
        (
            lambda r: r.counter("ok_total", "h", ["__reserved"]),
            "'__reserved' is not a valid label name",
        ),
        (lambda r: r.counter("ok_total", "h", ["a", "a"]), "label names repeat"),
        (lambda r: r.histogram("h_seconds", "h", ["le"], [1]), "'le' is the bucket label"),
        (lambda r: r.histogram("h_seconds", "h", [], [1, 1]), "buckets must be increasing"),
        (lambda r: r.histogram("h_seconds", "h", [], []), "buckets must be increasing"),
        (lambda r: r.counter("ok_total", "h", ["a"]).inc(b="x"), r"labels \['b'\] are not \['a'\]"),
        (lambda r: r.counter("ok_total", "h", ["a"]).inc(-1, a="x"), "a counter cannot go down"),
        (lambda r: r.counter("ok_total", "h", ["a"]).remove_matching(b="x"), r"no labels \['b'\]"),
        (lambda r: [r.counter("twice", "h"), r.gauge("twice", "h")], "twice is registered already"),
    ],
)
def test_a_misuse_is_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make(Registry())


def test_a_label_value_must_be_a_string():
    with pytest.raises(TypeError, match="label a must be a string"):
        Registry().counter("ok_total", "h", ["a"]).inc(a=1)


def test_infinity_in_the_buckets_is_the_implicit_inf_bucket():
    registry = Registry()
    registry.histogram("h_seconds", "h", [], [1, math.inf]).observe(5)
    assert Page(registry.exposition()).buckets("h_seconds") == {"1": 0, "+Inf": 1}


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
    "workqueue_depth": ("gauge", ["name"], None),
    "workqueue_adds_total": ("counter", ["name"], None),
    "workqueue_retries_total": ("counter", ["name"], None),
    # Ours, not the reference's: the time of each release upgrade phase.
    "glance_operator_upgrade_phase_duration_seconds": (
        "histogram",
        ["glance", "namespace", "phase"],
        UPGRADE_PHASE_BUCKETS,
    ),
}


def test_the_runner_exposes_the_reference_and_controller_runtime_families():
    metrics = RunnerMetrics()
    for family in metrics.registry.families():
        kind, labels, buckets = REFERENCE_FAMILIES[family.name]
        assert (family.kind, list(family.label_names)) == (kind, labels), family.name
        if buckets is not None:
            assert family.bounds == (*map(float, buckets), math.inf), family.name
    assert [family.name for family in metrics.registry.families()] == sorted(REFERENCE_FAMILIES)


def test_the_reference_buckets_are_the_go_operator_s():
    assert RECONCILE_STEP_BUCKETS == (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
    assert DB_JOB_BUCKETS == (1, 5, 10, 30, 60, 120, 300, 600)
    assert (
        len(RECONCILE_TIME_BUCKETS) == 40
        and RECONCILE_TIME_BUCKETS[0] == 0.005
        and RECONCILE_TIME_BUCKETS[-1] == 60
    )


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
    for name in ("workqueue_depth", "workqueue_adds_total", "workqueue_retries_total"):
        assert page.value(name, name="glance") == 0
    assert page.type["controller_runtime_reconcile_time_seconds"] == "histogram"
    assert page.help["workqueue_depth"] == "Current depth of workqueue"


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
    assert (
        page.value("controller_runtime_reconcile_total", controller="glance", result="success") == 1
    )
    assert (
        page.value("controller_runtime_reconcile_total", controller="glance", result="error") == 1
    )
    assert (
        page.value("controller_runtime_reconcile_total", controller="glance", result="requeue") == 0
    )
    assert (
        page.value(
            "controller_runtime_reconcile_total", controller="glancebackend", result="requeue_after"
        )
        == 1
    )
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
    metrics.reconcile_duration.observe(0.2, sub_reconciler="Config")
    metrics.reconcile_errors.inc(sub_reconciler="Config", condition_type="SecretsReady")
    page = Page(metrics.exposition())
    buckets = page.buckets("glance_operator_reconcile_duration_seconds", sub_reconciler="Config")
    assert list(buckets) == [
        "0.01",
        "0.05",
        "0.1",
        "0.25",
        "0.5",
        "1",
        "2.5",
        "5",
        "10",
        "30",
        "+Inf",
    ]
    assert (buckets["0.1"], buckets["0.25"]) == (0, 1)
    assert (
        page.value(
            "glance_operator_reconcile_errors_total",
            sub_reconciler="Config",
            condition_type="SecretsReady",
        )
        == 1
    )


def test_the_work_queue_reports_adds_retries_and_depth():
    metrics = RunnerMetrics()
    clock = ManualClock()
    queue = WorkQueue(
        clock, rate_limiter=ItemExponentialBackoff(), observer=metrics.start_controller("glance")
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


def test_forgetting_a_glance_drops_its_series_and_no_other():
    metrics = RunnerMetrics()
    for glance, namespace in [("glance", "a"), ("glance", "b"), ("other", "a")]:
        metrics.db_sync_total.inc(glance=glance, namespace=namespace, result="succeeded")
        metrics.db_sync_duration.observe(42, glance=glance, namespace=namespace)
        metrics.db_purge_total.inc(glance=glance, namespace=namespace, result="failed")
        metrics.db_purge_duration.observe(7, glance=glance, namespace=namespace)
    metrics.reconcile_duration.observe(1, sub_reconciler="Config")
    assert metrics.forget_glance("glance", "a") == 4
    page = Page(metrics.exposition())
    for name in (
        "glance_operator_db_sync_total",
        "glance_operator_db_purge_total",
        "glance_operator_db_sync_duration_seconds_count",
    ):
        assert sorted((s["glance"], s["namespace"]) for s in page.series(name)) == [
            ("glance", "b"),
            ("other", "a"),
        ]
    assert (
        page.value("glance_operator_reconcile_duration_seconds_count", sub_reconciler="Config") == 1
    )


def test_every_line_of_a_busy_page_is_valid_text_format():
    metrics = RunnerMetrics()
    metrics.start_controller("glance")
    metrics.observe_reconcile("glance", "success", 3.0)
    metrics.db_sync_total.inc(glance='we"ird\\name', namespace="n\n", result="succeeded")
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
