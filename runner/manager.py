"""The runner's main loop: controllers for the watches, leader election, endpoints, shutdown.

One **controller** per ``watches.yaml`` entry (named after its lower-case kind): a work queue
(``runner.kube.workqueue``: level-triggered, one pass per key at a time, per-key exponential
backoff capped at ``--max-backoff``), worker threads (``max_concurrent_reconciles`` of the
kind), and a ``Reconciler``. The passes of all kinds share ``--max-concurrent-reconciles``
slots: an ansible-playbook run is CPU-bound, so the process never runs more at once than
the CPUs it may use (ansible-operator bounds each kind alone; with two kinds that ran twice
as many processes as CPUs, for longer passes and twice the memory). A freed slot goes to
the waiting pass of the highest priority (``runner.kube.workqueue.PassSlots``): the passes
events asked for before the polls.

**Informers** feed the queues: one per watched kind and one per dependent
kind (filtered by ``--dependent-label-selector``), in each watched namespace or cluster-wide,
one of the target clusters' registration Secrets in the clusters namespace
(``--clusters-namespace``, by their label; none when it is empty or not watched), and one
of mariadb-operator's MariaDBs in each watched namespace when the cluster serves them;
``runner.controller`` decides which event wakes which key.

Life of the process:

1. the runner dir is claimed (``runner.passes.runner_dir``: a private dir of the process, or the
   explicit ``--runner-dir`` locked by one process), the health and metrics endpoints and
   the admission webhook (when its cert dir has a certificate) start;
2. with leader election, the process waits for the Lease; a standby serves the webhook and
   its probes (ready) and reconciles nothing;
3. the leader starts the informers, waits until their first lists are in (``/readyz``
   turns 200), then starts the workers;
4. on SIGTERM/SIGINT (``stop``) the queues stop handing out keys, running passes may finish
   for ``--graceful-shutdown-timeout`` seconds, then the rest are abandoned
   (``PlaybookRunner`` terminates their process groups); the Lease is released and the
   endpoints close. A second signal abandons the passes at once. Losing the Lease stops the
   same way but at once and without release, and the process exits 1 (controller-runtime's
   manager exits when leadership is lost: another replica may be reconciling already).
   A private runner dir is removed last.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    CLUSTER_SECRET_STORE,
    EXTERNAL_SECRETS_API,
    SECRET_STORE,
)
from runner import controller as ctl
from runner.endpoints.metrics import RunnerMetrics
from runner.endpoints.metrics_feed import (
    DbJobCounter,
    GlanceConditions,
    UpgradePhaseTimer,
    observe_pass,
)
from runner.endpoints.probes import EndpointServer, check
from runner.kube.informer import Informer
from runner.kube.leader import LeaderElector
from runner.kube.watches import Watch, max_concurrent_reconciles
from runner.kube.workqueue import (
    HIGH_PRIORITY,
    MonotonicClock,
    ObjectKey,
    PassSlots,
    ShutDown,
    WorkQueue,
    default_rate_limiter,
)
from runner.logs import Log
from runner.passes.extravars import CLUSTERS_NAMESPACE, RunOutcome
from runner.passes.playbook import PassRun, PlaybookRunner, checkout_ansible_cfg, run_environment
from runner.passes.runner_dir import DEFAULT_PARENT, RunnerDir, RunnerDirError, claim
from runner.passes.warm.handle import WarmServer
from runner.reconciler import Reconciled, Reconciler
from runner.settings import Settings

log = Log("manager")

MAIN_LOOP_TICK = 0.5
"""The longest the main thread blocks at once while it waits for a stop: the signal
handlers run only in the main thread, between bytecodes (see ``Manager.run``)."""


@dataclass
class Controller:
    watch: Watch
    name: str
    queue: WorkQueue
    reconciler: Reconciler
    concurrency: int
    workers: list[threading.Thread] = field(default_factory=list)


class Manager:
    def __init__(
        self,
        settings: Settings,
        client: Any,
        watches: tuple[Watch, ...],
        environ: Mapping[str, str] | None = None,
        metrics: RunnerMetrics | None = None,
        identity: str | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        self.watches = watches
        self.environ = os.environ if environ is None else environ
        self.metrics = metrics or RunnerMetrics()
        self.identity = identity
        self.watched: dict[tuple[str, str], Watch] = {(w.gvk.group, w.gvk.kind): w for w in watches}
        self.stop_requested = threading.Event()
        self.stop_requested_at: float | None = None  # monotonic, when SIGTERM asked
        self.cancel = threading.Event()
        self.leading = threading.Event()
        self.lost = threading.Event()
        self.started = threading.Event()
        self.controllers: dict[tuple[str, str], Controller] = {}
        self.informers: list[Informer] = []
        self.late_informers: list[Informer] = []  # started by _discover_late
        # The gate and dependent kinds not served at start: (api_version, kind, namespaces,
        # handler, informer options), asked for again by _discover_late.
        self.unserved: list[tuple[str, str, list[str | None], Any, dict[str, Any]]] = []
        self.child_informers: list[Informer] = []
        """The informers of the kinds that have a parent (``controller.PARENT_KINDS``)."""
        self.referring_informers: list[Informer] = []
        """The informers of the kinds that name a target cluster or a MariaDB
        (``controller.TARGET_CLUSTER_KINDS``, ``DATABASE_CLUSTER_KINDS``): what a
        registration Secret's or a MariaDB's event wakes."""
        self.registrations: Informer | None = None
        """The informer of the target clusters' registration Secrets, when there is one."""
        self.elector: LeaderElector | None = None
        self.servers: list[EndpointServer] = []
        self.webhook: Any = None
        self.cert_rotator: Any = None
        self._webhook_lock = threading.Lock()
        self.runner_dir: RunnerDir | None = None
        self.runner_dir_parent = DEFAULT_PARENT
        self._workers_started = False
        self._in_flight_lock = threading.Lock()
        self.in_flight = 0
        self.leader_gauge = self.metrics.leader
        self.runs_total = self.metrics.playbook_runs
        envvars = run_environment(
            self.environ, settings.kubeconfig, checkout_ansible_cfg(settings.watches_file)
        )
        self.warm: WarmServer | None = None
        if settings.warm_passes:
            # ansible-runner runs a pass from its playbook's directory (a role's: its
            # private data dir); the server warms up where the first watch's passes run.
            playbooks = [w.playbook for w in watches if w.playbook is not None]
            self.warm = WarmServer(
                {**self.environ, **envvars},
                cwd=playbooks[0].parent if playbooks else None,
                log=Log("warm"),
            )
        self.executor = PlaybookRunner(
            settings.runner_dir or DEFAULT_PARENT,
            envvars,
            settings.ansible_verbosity,
            self.environ,
            runner_vars={CLUSTERS_NAMESPACE: settings.clusters_namespace},
        )  # its root is set when the runner dir is claimed (run)
        self.slots = PassSlots(settings.max_concurrent_reconciles)
        self.db_jobs = DbJobCounter(self.metrics)
        self.upgrade_phases = UpgradePhaseTimer(self.metrics)
        self.glance_conditions = GlanceConditions(self.metrics)
        for watch in watches:
            name = ctl.controller_name(watch)
            clock = MonotonicClock()
            queue = WorkQueue(
                clock=clock,
                rate_limiter=default_rate_limiter(clock, cap=settings.max_backoff),
                observer=self.metrics.start_controller(name, clock.now),
            )
            reconciler = Reconciler(
                watch,
                client,
                _SlotExecutor(
                    self.executor,
                    self.slots,
                    self.runs_total,
                    name,
                    self.metrics if watch.gvk.kind == "Glance" else None,
                    priority_of=queue.priority,
                ),
                settings.reconcile_period,
                on_gone=self._forget_metrics if watch.gvk.kind == "Glance" else None,
                on_released=self._forget_metrics if watch.gvk.kind == "Glance" else None,
            )
            concurrency = max_concurrent_reconciles(
                watch, self.environ, settings.max_concurrent_reconciles
            )
            self.controllers[(watch.gvk.group, watch.gvk.kind)] = Controller(
                watch, name, queue, reconciler, concurrency
            )

    # -- state for the probes --------------------------------------------------------------
    def synced(self) -> bool:
        return bool(self.informers) and all(i.synced.is_set() for i in self.informers)

    def ready(self) -> bool:
        """``/readyz``: a standby is ready; the leader once its informers have synced. With a
        self-managed webhook certificate, neither before the webhook is served: the
        webhook Service must not send the API server to a replica that cannot answer."""
        if self.stop_requested.is_set() or self.lost.is_set():
            return False
        if self.settings.webhook_cert_secret and self.webhook is None:
            return False
        if self.settings.leader_elect and not self.leading.is_set():
            return self.started.is_set()
        return self.synced()

    def healthy(self) -> bool:
        return not self.lost.is_set()

    # -- the main loop ---------------------------------------------------------------------
    def run(self) -> int:
        """Run until ``stop_requested`` is set or the Lease is lost; the exit code."""
        try:
            self._claim_runner_dir()
        except RunnerDirError as error:
            log.error(str(error), runner_dir=str(self.settings.runner_dir))
            return 1
        except OSError as error:
            log.error("cannot make the runner dir", error=str(error))
            return 1
        try:
            self._start_endpoints()
            if self.settings.leader_elect:
                self._start_election()
            else:
                self.leading.set()
            self.started.set()
            while not self.stop_requested.is_set() and not self.leading.is_set():
                self.stop_requested.wait(min(0.2, MAIN_LOOP_TICK))
            if self.leading.is_set() and not self.stop_requested.is_set():
                self._start_controllers()
            # Never an untimed wait: a process-directed SIGTERM may be delivered to any
            # thread, and CPython runs the Python handler only in the main thread, when it
            # next executes bytecode. Blocked in an untimed lock acquire, the main thread is
            # not interrupted by a signal another thread took, so the stop would never come.
            while not self.stop_requested.wait(MAIN_LOOP_TICK):
                pass
        except Exception as error:
            log.error("cannot run", error=repr(error))
            self.stop_requested.set()
            self._shutdown()
            return 1
        self._shutdown()
        return 1 if self.lost.is_set() else 0

    def stop(self, abandon: bool = False) -> None:
        """Ask the loop to end (SIGTERM); ``abandon`` cancels running passes at once."""
        if abandon:
            self.cancel.set()
        if self.stop_requested_at is None:
            self.stop_requested_at = time.monotonic()
        self.stop_requested.set()

    # -- start -----------------------------------------------------------------------------
    def _claim_runner_dir(self) -> None:
        claimed = claim(self.settings.runner_dir, self.runner_dir_parent)
        for stale in claimed.removed_stale:
            log.info("stale runner dir removed", runner_dir=str(stale))
        self.runner_dir = claimed
        self.executor.root = claimed.path
        log.info("runner dir", runner_dir=str(claimed.path), private=claimed.private)

    def _start_endpoints(self) -> None:
        settings = self.settings
        if settings.health_probe_bind_address is not None:
            server = EndpointServer(
                settings.health_probe_bind_address,
                {
                    "/healthz": check(self.healthy, "ping"),
                    "/readyz": check(self.ready, "informers"),
                },
                "health",
            ).start()
            self.servers.append(server)
            log.info(
                "serving health probes", address=str(server.address), paths=["/healthz", "/readyz"]
            )
        if settings.metrics_bind_address is not None:
            server = EndpointServer(
                settings.metrics_bind_address,
                {"/metrics": lambda headers: (200, *self.metrics.page(headers.get("Accept", "")))},
                "metrics",
            ).start()
            self.servers.append(server)
            log.info("serving metrics", address=str(server.address), paths=["/metrics"])
        if settings.webhook_cert_secret:
            self._start_cert_rotator()
        elif not self._start_webhook():
            log.info(
                "admission webhook not served: no tls.crt and tls.key in its cert dir",
                cert_dir=str(settings.webhook_cert_dir),
            )

    def _start_webhook(self) -> bool:
        """Serve the admission webhook once its cert dir holds a certificate; True when it
        is served (now or already)."""
        settings = self.settings
        cert_dir = settings.webhook_cert_dir
        with self._webhook_lock:
            if self.webhook is not None:
                return True
            if self.stop_requested.is_set():
                return False
            if not ((cert_dir / "tls.crt").is_file() and (cert_dir / "tls.key").is_file()):
                return False
            from runner.endpoints.webhook import WebhookServer

            self.webhook = WebhookServer.with_client(
                self.client,
                cert_dir=cert_dir,
                host=settings.webhook_host or "0.0.0.0",
                port=settings.webhook_port,
            ).start()
            return True

    def _start_cert_rotator(self) -> None:
        """The operator's own webhook certificate (``config/selfsigned``): checked now, then
        every few minutes; the webhook is served after the first check that succeeds."""
        from runner.endpoints.webhook_certs import CertRotator

        settings = self.settings
        self.cert_rotator = CertRotator(
            self.client,
            namespace=settings.leader_election_namespace or self.client.namespace or "default",
            secret_name=settings.webhook_cert_secret,
            service_name=settings.webhook_service,
            cert_dir=settings.webhook_cert_dir,
            webhook_configurations={
                "MutatingWebhookConfiguration": settings.mutating_webhook_configuration,
                "ValidatingWebhookConfiguration": settings.validating_webhook_configuration,
            },
            on_ready=self._start_webhook,
        ).start()

    def _start_election(self) -> None:
        namespace = self.settings.leader_election_namespace or self.client.namespace or "default"
        leader = self.leader_gauge.labels(name=self.settings.leader_election_id)
        leader.set(0)

        def won() -> None:
            leader.set(1)
            self.leading.set()

        def lost() -> None:
            leader.set(0)
            self.lost.set()
            self.stop(abandon=True)

        self.elector = LeaderElector(
            self.client,
            namespace,
            self.settings.leader_election_id,
            self.identity,
            lease_duration=self.settings.lease_duration,
            renew_deadline=self.settings.renew_deadline,
            retry_period=self.settings.retry_period,
            on_started_leading=won,
            on_lost=lost,
        ).start()
        log.info(
            "waiting for the Lease",
            lease=f"{namespace}/{self.settings.leader_election_id}",
            identity=self.elector.identity,
        )

    def _start_controllers(self) -> None:
        if self.warm is not None:
            # Only the leader runs passes; the server warms up while the informers list.
            try:
                self.warm.start(wait=None)
            except OSError as error:
                log.warning("cannot start the warm server; passes run cold", error=str(error))
            else:
                self.executor.warm = self.warm
                threading.Thread(
                    target=self.warm.wait_ready, args=(60.0,), name="warm-ready", daemon=True
                ).start()
        namespaces: list[str | None] = list(self.settings.watch_namespaces) or [None]
        for controller in self.controllers.values():
            watch = controller.watch
            api_version = (
                f"{watch.gvk.group}/{watch.gvk.version}" if watch.gvk.group else watch.gvk.version
            )
            for namespace in namespaces:
                primary = Informer(
                    self.client,
                    api_version,
                    watch.gvk.kind,
                    namespace,
                    self._primary_handler(watch),
                )
                if watch.gvk.kind == "Glance":
                    primary.handler = self._glance_handler(watch, primary)
                if (watch.gvk.group, watch.gvk.kind) in ctl.PARENT_KINDS:
                    self.child_informers.append(primary)
                if (watch.gvk.group, watch.gvk.kind) in (
                    ctl.TARGET_CLUSTER_KINDS | ctl.DATABASE_CLUSTER_KINDS
                ):
                    self.referring_informers.append(primary)
                self.informers.append(primary)
        self._watch_registrations()
        self._watch_gates(namespaces)
        self._watch_references(namespaces)
        for api_version, kind in ctl.dependent_kinds(self.watches):
            options = {
                "label_selector": self.settings.dependent_label_selector or None,
                "transform": ctl.compact_dependent,
            }
            if not self._served(api_version, kind):
                self.unserved.append(
                    (api_version, kind, namespaces, self._dependent_handler, options)
                )
                continue
            for namespace in namespaces:
                informer = Informer(
                    self.client, api_version, kind, namespace, self._dependent_handler, **options
                )
                if kind == "Job":
                    informer.handler = self._job_handler(informer)
                self.informers.append(informer)
        for informer in self.informers:
            informer.start()
        log.info(
            "informers started",
            informers=len(self.informers),
            namespaces=list(self.settings.watch_namespaces) or "all",
        )
        while not self.stop_requested.is_set() and not self.synced():
            self.stop_requested.wait(0.05)
        if self.stop_requested.is_set():
            return
        log.info("informers synced")
        for controller in self.controllers.values():
            for index in range(controller.concurrency):
                worker = threading.Thread(
                    target=self._work,
                    args=(controller,),
                    name=f"worker {controller.name} {index}",
                    daemon=True,
                )
                controller.workers.append(worker)
                worker.start()
            log.info(
                "controller started", controller=controller.name, workers=controller.concurrency
            )
        self._workers_started = True
        if self.unserved:
            discovery = threading.Thread(target=self._discover_late, name="discovery", daemon=True)
            discovery.start()

    def _watch_registrations(self) -> None:
        """The informer of the target clusters' registration Secrets: the clusters
        namespace's Secrets with the registration label, compact (no kubeconfig is kept),
        when ``controller.registrations_namespace`` says there is one to watch."""
        settings = self.settings
        namespace = ctl.registrations_namespace(
            settings.clusters_namespace, settings.watch_namespaces, self.watched
        )
        if namespace is None:
            if settings.clusters_namespace and ctl.TARGET_CLUSTER_KINDS & set(self.watched):
                log.info(
                    "target cluster registrations not watched: the clusters namespace is "
                    "not a watched namespace",
                    clusters_namespace=settings.clusters_namespace,
                    namespaces=list(settings.watch_namespaces),
                )
            return
        self.registrations = Informer(
            self.client,
            "v1",
            "Secret",
            namespace,
            self._registration_handler,
            label_selector=ctl.REGISTRATION_SELECTOR,
            transform=ctl.compact_registration,
        )
        self.informers.append(self.registrations)
        log.info(
            "watching target cluster registrations",
            namespace=namespace,
            label_selector=ctl.REGISTRATION_SELECTOR,
        )

    def _watch_gates(self, namespaces: list[str | None]) -> None:
        """The informers of what a Glance's gates wait for, compact (identity and
        readiness), where the cluster serves the kind and a Glance is watched: the MariaDBs
        managed-mode Glances name (``database.clusterRef``) and the external-secrets
        SecretStores in the watched namespaces; the ClusterSecretStores when every
        namespace is watched (a namespace-scoped install may not list a cluster-scoped
        kind; its Glances see their store's readiness at the gate's 15 s poll)."""
        if (ctl.GLANCE_GROUP, "Glance") not in self.watched:
            return
        mariadb = (ctl.DATABASE_CLUSTER_API, ctl.DATABASE_CLUSTER_KIND)
        gates = [(mariadb, namespaces, ctl.DATABASE_CLUSTER, ctl.database_cluster_keys)]
        stores = [((EXTERNAL_SECRETS_API, SECRET_STORE), namespaces)]
        if namespaces == [None]:
            stores.append(((EXTERNAL_SECRETS_API, CLUSTER_SECRET_STORE), [None]))
        gates += [(gvk, where, ctl.SECRET_STORE, ctl.secret_store_keys) for gvk, where in stores]
        for (api_version, kind), where, relation, keys_of in gates:
            handler = self._gate_handler(kind, relation, keys_of)
            options = {"transform": ctl.compact_readiness}
            if not self._served(api_version, kind):
                self.unserved.append((api_version, kind, where, handler, options))
                continue
            self._add_informers(api_version, kind, where, handler, **options)

    def _served(self, api_version: str, kind: str) -> bool:
        """Whether the cluster serves ``kind``; when it does not (or discovery failed), said
        so as ``<kind> not served, not watched yet``: :meth:`_discover_late` asks again."""
        try:
            served = self.client.serves(api_version, kind)
        except Exception as error:
            log.warning(f"cannot discover {kind}", api_version=api_version, error=str(error))
            served = False
        if not served:
            log.info(f"{kind} not served, not watched yet", api_version=api_version)
        return served

    def _discover_late(self) -> None:
        """Every ``gate_discovery_period``, ask discovery again for the gate and dependent
        kinds the cluster did not serve at start (external-secrets or mariadb-operator
        installed after the operator): one served now is watched from then on. A gate's
        informer's first list wakes the Glances it gates; a dependent kind's (a
        mariadb-operator Database, User or Grant) wakes its owner when its readiness flips,
        as if it had been served from the start. These informers do not count for
        readiness: the operator stays ready while one lists."""
        period = self.settings.gate_discovery_period
        while self.unserved and not self.stop_requested.wait(period):
            for entry in list(self.unserved):
                api_version, kind, where, handler, options = entry
                try:
                    self.client.forget_served(api_version)
                    served = self.client.serves(api_version, kind)
                except Exception as err:
                    log.warning(f"cannot discover {kind}", api_version=api_version, error=str(err))
                    continue
                if not served:
                    continue
                self.unserved.remove(entry)
                for namespace in where:
                    informer = Informer(
                        self.client, api_version, kind, namespace, handler, **options
                    )
                    self.late_informers.append(informer.start())
                log.info(f"{kind} served now, watched", api_version=api_version)

    def _watch_references(self, namespaces: list[str | None]) -> None:
        """The metadata informers of the Secrets and ConfigMaps of the watched namespaces
        (``controller.REFERENCED_KINDS``): the inputs a Glance's or a backend's spec names
        wake it when they are created, deleted or written. Metadata only: their data never
        reaches the runner, and the cache keeps identity and version."""
        if not {(ctl.GLANCE_GROUP, "Glance"), (ctl.GLANCE_GROUP, "GlanceBackend")} & set(
            self.watched
        ):
            return
        for api_version, kind in ctl.REFERENCED_KINDS:
            self._add_informers(
                api_version,
                kind,
                namespaces,
                self._reference_handler,
                transform=ctl.compact_reference,
                metadata_only=True,
            )

    def _add_informers(
        self,
        api_version: str,
        kind: str,
        namespaces: list[str | None],
        handler: Any,
        **options: Any,
    ) -> None:
        """One informer of ``kind`` per namespace (None: every namespace), to be started
        with the others."""
        for namespace in namespaces:
            self.informers.append(
                Informer(self.client, api_version, kind, namespace, handler, **options)
            )

    # -- events ----------------------------------------------------------------------------
    def _enqueue(self, key: ObjectKey, reason: str, source: dict | None) -> None:
        controller = self.controllers.get((key.group, key.kind))
        if controller is None:
            return
        queued = controller.queue.add(key, reason)
        if log.enabled_for_debug():
            meta = (source or {}).get("metadata") or {}
            log.debug(
                "enqueued" if queued else "already queued",
                controller=controller.name,
                key=ctl.describe(key),
                reason=reason,
                source=f"{(source or {}).get('kind')} {meta.get('namespace')}/{meta.get('name')}",
                resource_version=meta.get("resourceVersion"),
            )

    def _primary_handler(self, watch: Watch):
        kind = watch.gvk.kind

        def handle(event: str, new: dict | None, old: dict | None) -> None:
            obj = new if new is not None else old
            if ctl.primary_wants(watch, event, new, old):
                self._enqueue(ctl.key_of(watch, obj), ctl.event_reason(kind, event), obj)
            for key in ctl.parent_keys(watch, new, old, self.watched):
                self._enqueue(key, ctl.event_reason(kind, event, "child"), obj)

        return handle

    def _glance_handler(self, watch: Watch, informer: Informer):
        """The Glance informer's handler: time upgrade phases, show the conditions, then the
        usual."""
        primary = self._primary_handler(watch)

        def handle(event: str, new: dict | None, old: dict | None) -> None:
            listed = not informer.synced.is_set()
            self.upgrade_phases.seen(event, new, old, listed=listed)
            self.glance_conditions.seen(event, new, old, listed=listed)
            self.db_jobs.recorded(event, new, old, listed=listed)
            primary(event, new, old)

        return handle

    def _dependent_handler(self, event: str, new: dict | None, old: dict | None) -> None:
        change = ctl.dependent_change(event, new, old)
        mounts = ctl.mount_change(event, new, old)
        if change is None and not mounts:
            return
        source = new or old
        keys = ctl.owner_keys(source, self.watched)
        if new is not None and old is not None:
            keys += ctl.owner_keys(old, self.watched)
        keys = list(dict.fromkeys(keys))
        kind = str(source.get("kind"))
        if change is not None:
            reason = ctl.event_reason(kind, event, "dependent", "" if change == event else change)
            for key in keys:
                self._enqueue(key, reason, source)
        if mounts and keys:
            children = [item for informer in self.child_informers for item in informer.items()]
            reason = ctl.event_reason(kind, event, "parent's", "mounts")
            for owner in keys:
                for key in ctl.child_keys(owner, self.watched, children):
                    self._enqueue(key, reason, source)

    def _registration_handler(self, event: str, new: dict | None, old: dict | None) -> None:
        """A registration Secret created, deleted or changed wakes the Glances that name
        its cluster (``spec.targetClusterRef.name``), from the Glance informers' caches,
        and their GlanceBackends, which read their parent's target cluster too."""
        if not ctl.registration_change(event, new, old):
            return
        source = new if new is not None else old
        cluster = str(((source or {}).get("metadata") or {}).get("name") or "")
        objects = [item for informer in self.referring_informers for item in informer.items()]
        owners = ctl.target_cluster_keys(cluster, self.watched, objects)
        reason = ctl.event_reason("Secret", event, ctl.TARGET_CLUSTER)
        for key in owners:
            self._enqueue(key, reason, source)
        if not owners:
            return
        children = [item for informer in self.child_informers for item in informer.items()]
        reason = ctl.event_reason("Secret", event, f"parent's {ctl.TARGET_CLUSTER}")
        for owner in owners:
            for key in ctl.child_keys(owner, self.watched, children):
                self._enqueue(key, reason, source)

    def _gate_handler(self, kind: str, relation: str, keys_of: Callable[..., list[ObjectKey]]):
        """The handler of a gate's informer: the object created, deleted or turning Ready
        (or not) wakes the Glances ``keys_of`` finds in the Glance informers' caches
        (``controller.database_cluster_keys``, ``secret_store_keys``): a Glance waiting at
        ``ClusterNotReady`` or ``SecretStoreNotReady`` goes on at once."""

        def handle(event: str, new: dict | None, old: dict | None) -> None:
            change = ctl.readiness_change(event, new, old)
            if change is None:
                return
            source = new if new is not None else old
            objects = [item for informer in self.referring_informers for item in informer.items()]
            detail = ctl.READINESS if change == ctl.READINESS else ""
            reason = ctl.event_reason(kind, event, relation, detail)
            for key in keys_of(source or {}, self.watched, objects):
                self._enqueue(key, reason, source)

        return handle

    def _reference_handler(self, event: str, new: dict | None, old: dict | None) -> None:
        """A Secret or ConfigMap created, deleted or written wakes the Glances and backends
        of its namespace whose specs name it (from the watched kinds' caches): a rotated
        password rolls the pods now, not at the next periodic pass; a Glance waiting for a
        Secret goes on once it exists."""
        if not ctl.reference_change(event, new, old):
            return
        source = new if new is not None else old
        glances = [item for informer in self.referring_informers for item in informer.items()]
        backends = [item for informer in self.child_informers for item in informer.items()]
        reason = ctl.event_reason(str((source or {}).get("kind")), event, ctl.REFERENCED)
        for key in ctl.referenced_keys(source or {}, self.watched, glances, backends):
            self._enqueue(key, reason, source)

    def _job_handler(self, informer: Informer):
        """A Job informer's handler: count db-sync and db-purge Jobs, then the usual."""

        def handle(event: str, new: dict | None, old: dict | None) -> None:
            self.db_jobs.seen(event, new, old, listed=not informer.synced.is_set())
            self._dependent_handler(event, new, old)

        return handle

    # -- work ------------------------------------------------------------------------------
    def _work(self, controller: Controller) -> None:
        queue = controller.queue
        while True:
            try:
                key = queue.get()
            except ShutDown:
                return
            started = time.monotonic()
            with self._in_flight_lock:
                self.in_flight += 1
            try:
                result = controller.reconciler.reconcile(
                    key, self.cancel, woken_by=queue.reasons(key)
                )
            except Exception as error:
                log.error(
                    "reconcile crashed",
                    controller=controller.name,
                    key=ctl.describe(key),
                    error=repr(error),
                )
                result = Reconciled(ctl.ERROR)
            try:
                if not result.abandoned and result.requeue is not None:
                    self._requeue(queue, key, result.requeue)
                    self.metrics.observe_reconcile(
                        controller.name, result.requeue.result, time.monotonic() - started
                    )
            finally:
                with self._in_flight_lock:
                    self.in_flight -= 1
                queue.done(key)

    @staticmethod
    def _requeue(queue: WorkQueue, key: ObjectKey, requeue: ctl.Requeue) -> None:
        reason = ctl.requeue_reason(requeue)
        priority = ctl.requeue_priority(requeue)
        if requeue.how == ctl.RATE_LIMITED:
            queue.add_rate_limited(key, reason, priority)
            return
        queue.forget(key)
        if requeue.seconds:
            queue.add_after(key, requeue.seconds, reason, priority)

    def _forget_metrics(self, key: ObjectKey) -> None:
        self.metrics.forget_glance(key.name, key.namespace)

    # -- stop ------------------------------------------------------------------------------
    def _shutdown(self) -> None:
        grace = (
            0.0
            if self.lost.is_set() or self.cancel.is_set()
            else self.settings.graceful_shutdown_timeout
        )
        log.info("stopping", grace_seconds=grace, lost_lease=self.lost.is_set() or None)
        for controller in self.controllers.values():
            controller.queue.shut_down()
        deadline = time.monotonic() + grace
        for controller in self.controllers.values():
            # In ticks, so that a second signal (abandon) is handled at once (see run).
            while not self.cancel.is_set():
                remaining = max(0.0, deadline - time.monotonic())
                tick = min(remaining, MAIN_LOOP_TICK)
                if controller.queue.shut_down(drain=True, timeout=tick):
                    break
                if remaining <= MAIN_LOOP_TICK:
                    self.cancel.set()
        if self.cancel.is_set():
            log.warning("abandoning running passes", passes=self.in_flight)
        for controller in self.controllers.values():
            for worker in controller.workers:
                worker.join(self.executor.kill_grace + 10)
        for informer in [*self.informers, *self.late_informers]:
            informer.stop()
        if self.warm is not None:
            self.warm.stop()
        if self.elector is not None:
            self.elector.stop(release=not self.lost.is_set())
            self.leader_gauge.labels(name=self.settings.leader_election_id).set(0)
        if self.cert_rotator is not None:
            self.cert_rotator.stop()
        self._serve_out_webhook()
        with self._webhook_lock:
            if self.webhook is not None:
                self.webhook.stop()
        for server in self.servers:
            server.stop()
        if self.runner_dir is not None:
            self.runner_dir.release()
        log.info("stopped")

    def _serve_out_webhook(self) -> None:
        """Keep the webhook serving until ``--webhook-shutdown-delay`` after the stop was
        asked for. The API server calls the webhook through its Service: a deleted pod
        leaves the EndpointSlice, then kube-proxy's rules, a moment after its SIGTERM, and a
        call routed here meanwhile would wait out its timeout (10 s) on a pod that is gone
        (seen on the one-node cluster as a manager Deployment rolled: one admission
        failed). Passes draining take this time too; a second signal ends the wait."""
        if self.webhook is None or self.stop_requested_at is None or self.cancel.is_set():
            return
        left = self.settings.webhook_shutdown_delay - (time.monotonic() - self.stop_requested_at)
        if left > 0:
            log.info("webhook serving on while the endpoints update", seconds=round(left, 1))
            self.cancel.wait(left)


class _SlotExecutor:
    """The playbook runner behind the process-wide pass slots, counting runs per controller
    and status for ``/metrics``; with ``step_metrics`` (the Glance controller) each finished
    run's steps are observed too (``runner.endpoints.metrics_feed.observe_pass``). A pass waits for
    its slot at the priority its key was handed out with (``priority_of``)."""

    def __init__(
        self,
        executor: PlaybookRunner,
        slots: PassSlots,
        counter: Any,
        controller: str,
        step_metrics: RunnerMetrics | None = None,
        priority_of: Callable[[ObjectKey], int] | None = None,
    ) -> None:
        self.executor = executor
        self.slots = slots
        self.counter = counter
        self.controller = controller
        self.step_metrics = step_metrics
        self.priority_of = priority_of or (lambda key: HIGH_PRIORITY)
        counter.labels(controller=controller, status="successful")

    def run(
        self, watch: Watch, key: ObjectKey, obj: Mapping[str, Any], cancel: threading.Event
    ) -> PassRun:
        if not self.slots.acquire(self.priority_of(key), cancel):
            return PassRun(RunOutcome(None, (), None), "canceled", None, "", 0.0, cancelled=True)
        try:
            if cancel.is_set():
                return PassRun(
                    RunOutcome(None, (), None), "canceled", None, "", 0.0, cancelled=True
                )
            run = self.executor.run(watch, key, obj, cancel)
        finally:
            self.slots.release()
        self.counter.labels(controller=self.controller, status=run.status).inc()
        if self.step_metrics is not None and not run.cancelled:
            observe_pass(self.step_metrics, run.events)
        return run

    def forget(self, watch: Watch, key: ObjectKey) -> None:
        self.executor.forget(watch, key)
