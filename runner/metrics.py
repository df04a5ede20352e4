"""Prometheus metrics of the runner, without a client library.

:class:`Registry` holds counters, gauges and histograms with labels and writes the text
exposition format 0.0.4 (``# HELP``/``# TYPE`` lines, escaped label values and help,
``_bucket``/``_sum``/``_count`` with a ``+Inf`` bucket). Numbers are written as Go's
client writes them (``1``, ``0.25``, ``1e+06``, ``+Inf``), families sorted by name and
series by label values, so the page reads like the Go operator's.

:class:`RunnerMetrics` is the runner's set: the Go glance operator's
(``reference-spec.md`` §6.1, same names, labels and buckets) and controller-runtime's
reconcile and workqueue series.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def format_value(value: float) -> str:
    """A sample value as Go's client writes it (expfmt ``writeFloat``).

    That is ``strconv.FormatFloat(v, 'g', -1, 64)``: the shortest digits that read back
    as the same float, in exponent form when the decimal exponent is below -4 or at
    least 6 (``1e+06``, ``1.5e-05``), plain otherwise (``100000``, ``0.25``); and
    ``+Inf``, ``-Inf``, ``NaN``. Zero is ``0`` whatever its sign.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    mantissa = "".join(map(str, digits))
    point = len(mantissa) + exponent  # where the decimal point goes in the digits
    text = "-" if sign else ""
    if not -4 <= point - 1 < 6:
        fraction = "." + mantissa[1:] if len(mantissa) > 1 else ""
        return f"{text}{mantissa[0]}{fraction}e{point - 1:+03d}"
    if point <= 0:
        return f"{text}0.{'0' * -point}{mantissa}"
    if point >= len(mantissa):
        return f"{text}{mantissa}{'0' * (point - len(mantissa))}"
    return f"{text}{mantissa[:point]}.{mantissa[point:]}"


LabelPairs = tuple[tuple[str, str], ...]
Sample = tuple[str, LabelPairs, float]


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _label_text(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{name}="{_escape_label_value(value)}"' for name, value in pairs)
    return "{" + inner + "}" if inner else ""


class Family:
    """One metric name with its label names; a series per distinct set of label values."""

    kind = ""

    def __init__(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> None:
        if not _METRIC_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a valid metric name")
        for label in label_names:
            if not _LABEL_NAME.fullmatch(label) or label.startswith("__"):
                raise ValueError(f"{name}: {label!r} is not a valid label name")
        if len(set(label_names)) != len(label_names):
            raise ValueError(f"{name}: label names repeat: {list(label_names)}")
        self.name = name
        self.help = help_text
        self.label_names = tuple(label_names)
        self._series: dict[tuple[str, ...], list[float]] = {}
        self._lock = threading.Lock()
        if not self.label_names:
            self._series[()] = self._new_series()

    def _key(self, labels: Mapping[str, str]) -> tuple[str, ...]:
        if set(labels) != set(self.label_names):
            raise ValueError(
                f"{self.name}: labels {sorted(labels)} are not {sorted(self.label_names)}"
            )
        for label, value in labels.items():
            if not isinstance(value, str):
                raise TypeError(f"{self.name}: label {label} must be a string, not {value!r}")
        return tuple(labels[name] for name in self.label_names)

    def _new_series(self) -> list[float]:
        raise NotImplementedError

    def _series_for(self, labels: Mapping[str, str]) -> list[float]:
        """The series of ``labels`` (created at zero); call with the lock held."""
        key = self._key(labels)
        if key not in self._series:
            self._series[key] = self._new_series()
        return self._series[key]

    def initialize(self, **labels: str) -> None:
        """Create the series of ``labels`` at zero, so it shows before its first event."""
        with self._lock:
            self._series_for(labels)

    def remove(self, **labels: str) -> bool:
        """Drop the series whose labels are exactly ``labels``; whether there was one."""
        key = self._key(labels)
        with self._lock:
            return self._series.pop(key, None) is not None

    def remove_matching(self, **labels: str) -> int:
        """Drop every series whose labels include ``labels``; how many there were."""
        unknown = set(labels) - set(self.label_names)
        if unknown:
            raise ValueError(f"{self.name}: no labels {sorted(unknown)}")
        positions = {self.label_names.index(name): value for name, value in labels.items()}
        with self._lock:
            doomed = [
                key
                for key in self._series
                if all(key[position] == value for position, value in positions.items())
            ]
            for key in doomed:
                del self._series[key]
            return len(doomed)

    def samples(self) -> list[Sample]:
        """``(name, label pairs, value)`` of every sample, sorted by label values."""
        with self._lock:  # copies, so a histogram's buckets, sum and count agree
            series = [(key, list(state)) for key, state in sorted(self._series.items())]
        samples: list[Sample] = []
        for key, state in series:
            samples += self._samples_of(tuple(zip(self.label_names, key, strict=True)), state)
        return samples

    def _samples_of(self, pairs: LabelPairs, state: list[float]) -> list[Sample]:
        return [(self.name, pairs, state[0])]

    def exposition(self) -> str:
        """This family in the text format; ``""`` when it has no series yet."""
        samples = self.samples()
        if not samples:
            return ""
        lines = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        lines += [
            f"{name}{_label_text(pairs)} {format_value(value)}" for name, pairs, value in samples
        ]
        return "\n".join(lines) + "\n"


class Counter(Family):
    """A value that only goes up."""

    kind = "counter"

    def _new_series(self) -> list[float]:
        return [0.0]

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if amount < 0:
            raise ValueError(f"{self.name}: a counter cannot go down ({amount})")
        with self._lock:
            self._series_for(labels)[0] += amount


class Gauge(Family):
    """A value that goes up and down."""

    kind = "gauge"

    def _new_series(self) -> list[float]:
        return [0.0]

    def set(self, value: float, **labels: str) -> None:
        with self._lock:
            self._series_for(labels)[0] = float(value)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        with self._lock:
            self._series_for(labels)[0] += amount


class Histogram(Family):
    """Observations counted into cumulative buckets, with their sum and count."""

    kind = "histogram"

    def __init__(
        self, name: str, help_text: str, label_names: Sequence[str], buckets: Sequence[float]
    ) -> None:
        bounds = [float(bound) for bound in buckets if not math.isinf(bound)]
        if not bounds or any(low >= high for low, high in itertools.pairwise(bounds)):
            raise ValueError(f"{name}: buckets must be increasing, not {list(buckets)}")
        if "le" in label_names:
            raise ValueError(f"{name}: 'le' is the bucket label of a histogram")
        self.bounds = (*bounds, math.inf)
        super().__init__(name, help_text, label_names)

    def _new_series(self) -> list[float]:
        return [0.0] * len(self.bounds) + [0.0, 0.0]  # per-bucket counts, sum, count

    def observe(self, value: float, **labels: str) -> None:
        with self._lock:
            state = self._series_for(labels)
            index = next(i for i, bound in enumerate(self.bounds) if value <= bound)
            state[index] += 1
            state[-2] += value
            state[-1] += 1

    def _samples_of(self, pairs: LabelPairs, state: list[float]) -> list[Sample]:
        samples: list[Sample] = []
        cumulative = 0.0
        for bound, count in zip(self.bounds, state, strict=False):
            cumulative += count
            bucket_pairs = (*pairs, ("le", format_value(bound)))
            samples.append((f"{self.name}_bucket", bucket_pairs, cumulative))
        samples.append((f"{self.name}_sum", pairs, state[-2]))
        samples.append((f"{self.name}_count", pairs, state[-1]))
        return samples


class Registry:
    """The metric families one ``/metrics`` page shows."""

    def __init__(self) -> None:
        self._families: dict[str, Family] = {}
        self._lock = threading.Lock()

    def register(self, family: Family) -> Family:
        with self._lock:
            if family.name in self._families:
                raise ValueError(f"{family.name} is registered already")
            self._families[family.name] = family
        return family

    def counter(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> Counter:
        return self.register(Counter(name, help_text, label_names))

    def gauge(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> Gauge:
        return self.register(Gauge(name, help_text, label_names))

    def histogram(
        self, name: str, help_text: str, label_names: Sequence[str], buckets: Sequence[float]
    ) -> Histogram:
        return self.register(Histogram(name, help_text, label_names, buckets))

    def families(self) -> list[Family]:
        """The registered families, sorted by name."""
        with self._lock:
            return sorted(self._families.values(), key=lambda family: family.name)

    def exposition(self) -> str:
        """Every family with a series, sorted by name, in text format 0.0.4."""
        return "".join(family.exposition() for family in self.families())


# -- the runner's metric set ------------------------------------------------------------

RECONCILE_STEP_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
"""Buckets of ``glance_operator_reconcile_duration_seconds`` (reference-spec §6.1)."""
DB_JOB_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600)
# A phase is a Job (seconds to minutes) or a whole rollout (minutes to an hour).
UPGRADE_PHASE_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
"""Buckets of the db-sync and db-purge duration histograms (reference-spec §6.1)."""
RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5),
    *(5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
"""Buckets of controller-runtime's ``controller_runtime_reconcile_time_seconds``."""

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"
RESULT_REQUEUE = "requeue"
RESULT_REQUEUE_AFTER = "requeue_after"
RECONCILE_RESULTS = (RESULT_ERROR, RESULT_REQUEUE, RESULT_REQUEUE_AFTER, RESULT_SUCCESS)


def reconcile_result(succeeded: bool, requeue_after: float | None) -> str:
    """The ``result`` label controller-runtime gives a pass: an error beats a requeue."""
    if not succeeded:
        return RESULT_ERROR
    return RESULT_REQUEUE_AFTER if requeue_after else RESULT_SUCCESS


class QueueMetrics:
    """The ``workqueue_*`` series of one queue; a :class:`runner.workqueue.QueueObserver`."""

    def __init__(self, metrics: RunnerMetrics, name: str) -> None:
        self._metrics = metrics
        self._name = name

    def added(self) -> None:
        self._metrics.workqueue_adds.inc(name=self._name)

    def retried(self) -> None:
        self._metrics.workqueue_retries.inc(name=self._name)

    def depth(self, waiting: int) -> None:
        self._metrics.workqueue_depth.set(waiting, name=self._name)


class RunnerMetrics:
    """The runner's metrics: the Go glance operator's and controller-runtime's names."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry = registry or Registry()
        self.reconcile_duration = registry.histogram(
            "glance_operator_reconcile_duration_seconds",
            "Duration of one reconcile step in seconds, per step.",
            ["sub_reconciler"],
            RECONCILE_STEP_BUCKETS,
        )
        self.reconcile_errors = registry.counter(
            "glance_operator_reconcile_errors_total",
            "Reconcile steps that returned an error, per step and the condition it sets.",
            ["sub_reconciler", "condition_type"],
        )
        self.db_sync_total = registry.counter(
            "glance_operator_db_sync_total",
            "Finished db-sync, expand, migrate and contract Jobs, per Glance and result.",
            ["glance", "namespace", "result"],
        )
        self.db_sync_duration = registry.histogram(
            "glance_operator_db_sync_duration_seconds",
            "Seconds from a db-sync Job's creation to its end, per Glance.",
            ["glance", "namespace"],
            DB_JOB_BUCKETS,
        )
        self.db_purge_total = registry.counter(
            "glance_operator_db_purge_total",
            "Finished db-purge Jobs, per Glance and result.",
            ["glance", "namespace", "result"],
        )
        self.db_purge_duration = registry.histogram(
            "glance_operator_db_purge_duration_seconds",
            "Seconds from a db-purge Job's creation to its end, per Glance.",
            ["glance", "namespace"],
            DB_JOB_BUCKETS,
        )
        self.upgrade_phase_duration = registry.histogram(
            "glance_operator_upgrade_phase_duration_seconds",
            "Seconds a release upgrade spent in each phase, per Glance (ours).",
            ["glance", "namespace", "phase"],
            UPGRADE_PHASE_BUCKETS,
        )
        self.reconcile_total = registry.counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
        )
        self.reconcile_time = registry.histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            RECONCILE_TIME_BUCKETS,
        )
        self.workqueue_depth = registry.gauge(
            "workqueue_depth", "Current depth of workqueue", ["name"]
        )
        self.workqueue_adds = registry.counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"]
        )
        self.workqueue_retries = registry.counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", ["name"]
        )

    def start_controller(self, controller: str) -> QueueMetrics:
        """Show a controller's series at zero, as controller-runtime does when one starts.

        Returns the observer to give its work queue (the queue is named after it).
        """
        for result in RECONCILE_RESULTS:
            self.reconcile_total.initialize(controller=controller, result=result)
        self.reconcile_time.initialize(controller=controller)
        for family in (self.workqueue_depth, self.workqueue_adds, self.workqueue_retries):
            family.initialize(name=controller)
        return QueueMetrics(self, controller)

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        """Count one pass of ``controller`` with its ``result`` and duration."""
        if result not in RECONCILE_RESULTS:
            raise ValueError(f"result {result!r} is not one of {RECONCILE_RESULTS}")
        self.reconcile_total.inc(controller=controller, result=result)
        self.reconcile_time.observe(seconds, controller=controller)

    def forget_glance(self, name: str, namespace: str) -> int:
        """Drop the series of one Glance (when its finalizer is released); how many."""
        return sum(
            family.remove_matching(glance=name, namespace=namespace)
            for family in (
                self.db_sync_total,
                self.db_sync_duration,
                self.db_purge_total,
                self.db_purge_duration,
                self.upgrade_phase_duration,
            )
        )

    def exposition(self) -> str:
        return self.registry.exposition()
