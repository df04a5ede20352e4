"""Prometheus metrics of the runner, on ``prometheus_client``.

:class:`RunnerMetrics` holds the runner's metric set in a **private**
``CollectorRegistry`` (not the library's global one, so a process or a test can hold
several runners' sets), next to the library's process, platform (``python_info``) and
garbage-collector collectors. The families:

* the Go glance operator's (``reference-spec.md`` §6.1: same names, labels, help and
  buckets): ``glance_operator_reconcile_duration_seconds``, ``_reconcile_errors_total``,
  ``_db_sync_total``, ``_db_sync_duration_seconds``, ``_db_purge_total``,
  ``_db_purge_duration_seconds``;
* controller-runtime's: ``controller_runtime_reconcile_total``,
  ``controller_runtime_reconcile_time_seconds``, ``leader_election_master_status`` and
  client-go's work queue series (``workqueue_*{name}``, fed by :class:`QueueMetrics`);
* ours: ``glance_operator_playbook_runs_total``, the upgrade phase histogram and the
  gauges of what the watches show (Glances Ready, their conditions, active and failed
  database Jobs, the upgrade phase under way), fed by ``runner.endpoints.metrics_feed``.

:meth:`RunnerMetrics.exposition` writes the page in the format a scraper asks for
(``Accept``: the text format 0.0.4 by default, OpenMetrics when asked). Counters carry
no ``_created`` series: Go's client writes none, and they would double the series.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, choose_encoder, generate_latest

# Process-wide, as the library has it: the Go client writes no ``_created`` series.
disable_created_metrics()

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The page's content type when the scraper asks for nothing else."""

RECONCILE_STEP_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
"""Buckets of ``glance_operator_reconcile_duration_seconds`` (reference-spec §6.1)."""
DB_JOB_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600)
"""Buckets of the db-sync and db-purge duration histograms (reference-spec §6.1)."""
# A phase is a Job (seconds to minutes) or a whole rollout (minutes to an hour).
UPGRADE_PHASE_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
"""Buckets of ``glance_operator_upgrade_phase_duration_seconds``."""
RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5),
    *(5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
"""Buckets of controller-runtime's ``controller_runtime_reconcile_time_seconds``."""
WORKQUEUE_DURATION_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 4))
"""controller-runtime's work queue buckets: ``ExponentialBuckets(10e-9, 10, 12)``, 10 ns
to 1000 s."""

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"
RESULT_REQUEUE = "requeue"
RESULT_REQUEUE_AFTER = "requeue_after"
RECONCILE_RESULTS = (RESULT_ERROR, RESULT_REQUEUE, RESULT_REQUEUE_AFTER, RESULT_SUCCESS)

CONDITION_STATUSES = ("True", "False", "Unknown")
"""The values of the ``status`` label of ``glance_operator_glance_condition``."""


def reconcile_result(succeeded: bool, requeue_after: float | None) -> str:
    """The ``result`` label controller-runtime gives a pass: an error beats a requeue."""
    if not succeeded:
        return RESULT_ERROR
    return RESULT_REQUEUE_AFTER if requeue_after else RESULT_SUCCESS


class QueueMetrics:
    """The ``workqueue_*`` series of one queue; a :class:`runner.kube.workqueue.QueueObserver`.

    As client-go's ``defaultQueueMetrics``: the time a key waited from its add to being
    handed out (``workqueue_queue_duration_seconds``), the time from being handed out to
    ``done`` (``workqueue_work_duration_seconds``), and, read at scrape time, the seconds of
    the passes still running (``workqueue_unfinished_work_seconds``, their sum, and
    ``workqueue_longest_running_processor_seconds``, the oldest). ``clock`` is the
    queue's, in seconds.
    """

    def __init__(
        self, metrics: RunnerMetrics, name: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._metrics = metrics
        self.name = name
        self.clock = clock
        self._lock = threading.Lock()
        self._added: dict[Hashable, float] = {}  # waiting keys: when they entered the queue
        self._started: dict[Hashable, float] = {}  # keys in process: when they were handed out

    def added(self, key: Hashable) -> None:
        self._metrics.workqueue_adds.labels(name=self.name).inc()
        now = self.clock()
        with self._lock:
            self._added.setdefault(key, now)

    def retried(self) -> None:
        self._metrics.workqueue_retries.labels(name=self.name).inc()

    def depth(self, waiting: int) -> None:
        self._metrics.workqueue_depth.labels(name=self.name).set(waiting)

    def handed_out(self, key: Hashable) -> None:
        now = self.clock()
        with self._lock:
            since = self._added.pop(key, None)
            self._started[key] = now
        if since is not None:
            self._metrics.workqueue_queue_duration.labels(name=self.name).observe(
                max(0.0, now - since)
            )

    def finished(self, key: Hashable) -> None:
        now = self.clock()
        with self._lock:
            since = self._started.pop(key, None)
        if since is not None:
            self._metrics.workqueue_work_duration.labels(name=self.name).observe(
                max(0.0, now - since)
            )

    def dropped(self) -> None:
        """The queue shut down: the keys that waited will not be handed out."""
        with self._lock:
            self._added.clear()

    def unfinished(self) -> tuple[float, float]:
        """``(sum, longest)`` of the seconds the keys in process have run so far."""
        now = self.clock()
        with self._lock:
            ages = [max(0.0, now - since) for since in self._started.values()]
        return sum(ages), max(ages, default=0.0)


class _UnfinishedWork:
    """A collector: the two work-in-progress gauges of every queue, computed when scraped
    (client-go updates them every 500 ms; a scrape reads them exactly)."""

    def __init__(self) -> None:
        self.queues: dict[str, QueueMetrics] = {}

    def _families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has done that is in progress and hasn't been "
                "observed by work_duration. Large values indicate stuck threads. One can "
                "deduce the number of stuck threads by observing the rate at which this "
                "increases.",
                labels=["name"],
            ),
            GaugeMetricFamily(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                labels=["name"],
            ),
        )

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterator[Metric]:
        unfinished, longest = self._families()
        for name, queue in sorted(self.queues.items()):
            total, oldest = queue.unfinished()
            unfinished.add_metric([name], total)
            longest.add_metric([name], oldest)
        yield unfinished
        yield longest


class RunnerMetrics:
    """The runner's metrics in a registry of their own (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)

        # -- the reference's (reference-spec §6.1) --
        self.reconcile_duration = Histogram(
            "glance_operator_reconcile_duration_seconds",
            "Duration of one reconcile step in seconds, per step.",
            ["sub_reconciler"],
            buckets=RECONCILE_STEP_BUCKETS,
            registry=registry,
        )
        self.reconcile_errors = Counter(
            "glance_operator_reconcile_errors_total",
            "Reconcile steps that returned an error, per step and the condition it sets.",
            ["sub_reconciler", "condition_type"],
            registry=registry,
        )
        self.db_sync_total = Counter(
            "glance_operator_db_sync_total",
            "Finished db-sync, expand, migrate and contract Jobs, per Glance and result.",
            ["glance", "namespace", "result"],
            registry=registry,
        )
        self.db_sync_duration = Histogram(
            "glance_operator_db_sync_duration_seconds",
            "Seconds from a db-sync Job's creation to its end, per Glance.",
            ["glance", "namespace"],
            buckets=DB_JOB_BUCKETS,
            registry=registry,
        )
        self.db_purge_total = Counter(
            "glance_operator_db_purge_total",
            "Finished db-purge Jobs, per Glance and result.",
            ["glance", "namespace", "result"],
            registry=registry,
        )
        self.db_purge_duration = Histogram(
            "glance_operator_db_purge_duration_seconds",
            "Seconds from a db-purge Job's creation to its end, per Glance.",
            ["glance", "namespace"],
            buckets=DB_JOB_BUCKETS,
            registry=registry,
        )
        # -- ours: what the watches show --
        self.upgrade_phase_duration = Histogram(
            "glance_operator_upgrade_phase_duration_seconds",
            "Seconds a release upgrade spent in each phase, per Glance (ours).",
            ["glance", "namespace", "phase"],
            buckets=UPGRADE_PHASE_BUCKETS,
            registry=registry,
        )
        self.upgrade_phase = Gauge(
            "glance_operator_upgrade_phase",
            "1 for the phase of the release upgrade a Glance is in (status.upgradePhase); "
            "no series while none is under way.",
            ["glance", "namespace", "phase"],
            registry=registry,
        )
        self.glance_ready = Gauge(
            "glance_operator_glance_ready",
            "1 when the Glance's Ready condition is True, 0 when it is False, Unknown or "
            "absent, as the runner's watch shows it.",
            ["glance", "namespace"],
            registry=registry,
        )
        self.glance_condition = Gauge(
            "glance_operator_glance_condition",
            "The Glance's status conditions: 1 on the series of the condition's status "
            "(True, False, Unknown), 0 on the other two.",
            ["glance", "namespace", "type", "status"],
            registry=registry,
        )
        self.db_jobs_active = Gauge(
            "glance_operator_db_jobs_active",
            "Database Jobs of a Glance that exist and have not finished, per component "
            "(db-sync, db-expand, db-migrate, db-contract, db-purge).",
            ["glance", "namespace", "component"],
            registry=registry,
        )
        self.db_job_failed = Gauge(
            "glance_operator_db_job_failed",
            "1 when the newest finished database Job of a Glance and component that still "
            "exists failed, 0 when it succeeded.",
            ["glance", "namespace", "component"],
            registry=registry,
        )
        self.playbook_runs = Counter(
            "glance_operator_playbook_runs_total",
            "ansible-runner runs of a reconcile playbook, per controller and run status.",
            ["controller", "status"],
            registry=registry,
        )
        # -- controller-runtime's and client-go's --
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=registry,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=registry,
        )
        self.workqueue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", ["name"], registry=registry
        )
        self.workqueue_adds = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            ["name"],
            registry=registry,
        )
        self.workqueue_retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            ["name"],
            registry=registry,
        )
        self.workqueue_queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"],
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=registry,
        )
        self.workqueue_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name"],
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=registry,
        )
        self._unfinished = _UnfinishedWork()
        registry.register(self._unfinished)

    def start_controller(
        self, controller: str, clock: Callable[[], float] = time.monotonic
    ) -> QueueMetrics:
        """Show a controller's series at zero, as controller-runtime does when one starts.

        Returns the observer to give its work queue (the queue is named after it and
        keeps time by ``clock``).
        """
        for result in RECONCILE_RESULTS:
            self.reconcile_total.labels(controller=controller, result=result)
        self.reconcile_time.labels(controller=controller)
        for family in (
            self.workqueue_depth,
            self.workqueue_adds,
            self.workqueue_retries,
            self.workqueue_queue_duration,
            self.workqueue_work_duration,
        ):
            family.labels(name=controller)
        queue = QueueMetrics(self, controller, clock)
        self._unfinished.queues[controller] = queue
        return queue

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        """Count one pass of ``controller`` with its ``result`` and duration."""
        if result not in RECONCILE_RESULTS:
            raise ValueError(f"result {result!r} is not one of {RECONCILE_RESULTS}")
        self.reconcile_total.labels(controller=controller, result=result).inc()
        self.reconcile_time.labels(controller=controller).observe(seconds)

    def forget_glance(self, name: str, namespace: str) -> None:
        """Drop the series of one Glance (its finalizer is released, or it is gone)."""
        for family in (
            self.db_sync_total,
            self.db_sync_duration,
            self.db_purge_total,
            self.db_purge_duration,
            self.upgrade_phase_duration,
            self.upgrade_phase,
            self.glance_ready,
            self.glance_condition,
            self.db_jobs_active,
            self.db_job_failed,
        ):
            family.remove_by_labels({"glance": name, "namespace": namespace})

    def page(self, accept: str = "") -> tuple[str, bytes]:
        """``(content type, page)`` of every family, in the format an ``Accept`` header
        asks for (the text format 0.0.4 when it names none the library writes)."""
        encode, content_type = choose_encoder(accept)
        return content_type, encode(self.registry)

    def exposition(self) -> str:
        """The page in the text format 0.0.4."""
        return generate_latest(self.registry).decode()
