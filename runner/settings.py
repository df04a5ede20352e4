"""The runner's settings: a flag, else an environment variable, else the default.

The flags are ansible-operator's and controller-runtime's where both have one
(``--watches-file``, ``--max-concurrent-reconciles``, ``--leader-elect``, ``--reconcile-period``,
``--ansible-verbosity``, ...); the environment variables are what ``config/manager`` sets.
See ``docs/runner.md`` for the table.

Durations are Go durations (``15s``, ``1m30s``, ``10h``) or plain seconds. A bind address is
``host:port``; an empty host listens on every interface (``:8080``), port 0 picks a free
port, and ``0`` alone turns the listener off (controller-runtime's convention).

An environment variable set to the empty string counts as unset: the default applies. A
setting whose empty value means something (``--clusters-namespace=``: no target clusters,
``--dependent-label-selector=``: every object) is given that value as a flag.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics import go_duration

DEFAULT_RECONCILE_PERIOD = 10 * 3600.0
"""ansible-operator's ``--reconcile-period`` default (10h): a pass per object even when
nothing changed. ``0`` turns it off."""
DEFAULT_MAX_BACKOFF = 30.0
"""The longest per-object backoff after failed passes: the reference Go operator's 30 s
(controller-runtime's default is 1000 s)."""
DEFAULT_GRACEFUL_SHUTDOWN = 25.0
"""How long running passes may finish after SIGTERM: under the manager pod's 30 s
``terminationGracePeriodSeconds``, so the Lease is released before the kubelet kills."""
DEFAULT_DEPENDENT_SELECTOR = "app.kubernetes.io/managed-by=glance-operator"
"""The label every object a Glance pass writes carries: dependents are watched through it,
so the runner never caches the cluster's other Secrets and ConfigMaps."""
DEFAULT_LEADER_ELECTION_ID = "c5c3-glance-operator"
DEFAULT_CLUSTERS_NAMESPACE = "c5c3-clusters"
"""Where target clusters are registered (reference-spec §2.11, the reference operator's
``--clusters-namespace``): a kubeconfig Secret per cluster, named like it. Empty: no
target clusters (the namespace-scoped install, which cannot read another namespace)."""
_NAMESPACE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class SettingsError(ValueError):
    """A flag or an environment variable has a value the runner cannot use."""


@dataclass(frozen=True)
class BindAddress:
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class Settings:
    watches_file: Path
    kubeconfig: str | None
    metrics_bind_address: BindAddress | None
    health_probe_bind_address: BindAddress | None
    watch_namespaces: tuple[str, ...]
    """Empty: every namespace."""
    max_concurrent_reconciles: int
    leader_elect: bool
    leader_election_id: str
    leader_election_namespace: str | None
    """``None``: the kubeconfig context's namespace (or the pod's), else ``default``."""
    lease_duration: float
    renew_deadline: float
    retry_period: float
    reconcile_period: float
    max_backoff: float
    graceful_shutdown_timeout: float
    webhook_host: str
    webhook_port: int
    webhook_cert_dir: Path
    runner_dir: Path | None
    """``None``: a private dir of the process (``runner.passes.runner_dir``)."""
    ansible_verbosity: int
    dependent_label_selector: str
    log_level: str
    warm_passes: bool = True
    """Passes through the warm fork server (``runner/passes/warm/``); false: a cold
    ``ansible-playbook`` per pass."""
    webhook_cert_secret: str | None = None
    """The Secret (in the operator's namespace) where the operator keeps the webhook's CA
    and serving certificate, made and renewed by itself (``runner.endpoints.webhook_certs``);
    ``None``: the certificate is put into ``webhook_cert_dir`` by someone else
    (cert-manager)."""
    webhook_service: str = ""
    mutating_webhook_configuration: str = ""
    validating_webhook_configuration: str = ""
    webhook_shutdown_delay: float = 5.0
    """After SIGTERM, how long the admission webhook keeps serving at least: the pod leaves
    the webhook Service's endpoints, and kube-proxy's rules, a moment after it is deleted,
    and a call routed here meanwhile must be answered, not left to time out on a pod that
    is gone. ``0``: it stops with the rest."""
    gate_discovery_period: float = 30.0
    """How often a gate's kind the cluster did not serve at start (external-secrets' stores,
    mariadb-operator's MariaDB) is asked for again; it is watched from when it is served."""
    clusters_namespace: str = DEFAULT_CLUSTERS_NAMESPACE
    """Where target clusters' kubeconfig Secrets are (``--clusters-namespace``); every pass
    gets it as ``clusters_namespace``, and the runner watches its registration Secrets.
    Empty: target clusters are off."""


def cpu_limit(
    cgroup_root: Path = Path("/sys/fs/cgroup"), proc_cgroup: Path = Path("/proc/self/cgroup")
) -> int | None:
    """The CPUs the cgroup lets this process use (quota / period, rounded up), or None.

    cgroup v2 ``cpu.max`` (``"200000 100000"``; ``"max ..."`` is no limit), else cgroup v1
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota -1 is no limit); in the process's
    own cgroup first (``/proc/self/cgroup``), then at the root (a container sees its own
    cgroup there).
    """
    v2_paths, v1_paths = [], []
    try:
        for entry in proc_cgroup.read_text().splitlines():
            hierarchy, _, rest = entry.partition(":")
            controllers, _, path = rest.partition(":")
            relative = path.lstrip("/")
            if hierarchy == "0" and controllers == "":
                v2_paths.append(cgroup_root / relative)
            elif "cpu" in controllers.split(","):
                v1_paths += [cgroup_root / "cpu" / relative, cgroup_root / controllers / relative]
    except OSError:
        pass
    for directory in [*v2_paths, cgroup_root]:
        try:
            quota, _, period = (directory / "cpu.max").read_text().strip().partition(" ")
        except OSError:
            continue
        if quota == "max":
            return None
        return _cpus(quota, period or "100000")
    for directory in [*v1_paths, cgroup_root / "cpu", cgroup_root / "cpu,cpuacct"]:
        try:
            quota = (directory / "cpu.cfs_quota_us").read_text().strip()
            period = (directory / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            continue
        if quota.startswith("-"):
            return None
        return _cpus(quota, period)
    return None


def _cpus(quota: str, period: str) -> int | None:
    try:
        value = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None
    return max(1, math.ceil(value)) if value > 0 else None


def default_concurrency() -> int:
    """The CPU limit of the cgroup, else ``os.cpu_count()``.

    Not more: at 2 slots a pass ran 60 % of its wall time on a CPU and waited the rest, yet
    at 50 Glances on 2 CPUs 3 and 4 pass slots ran no more passes a second than 2 did,
    within the noise of a shared host (the cores were full with the API server, etcd and
    the bench on them), and took about 40 and 95 MiB more (docs/runner.md, "Concurrency").
    """
    return cpu_limit() or os.cpu_count() or 1


def parse_bind_address(text: str, name: str) -> BindAddress | None:
    """``host:port`` (``:8080``, ``127.0.0.1:0``, ``[::1]:8080``); ``0`` is off (None)."""
    text = text.strip()
    if text == "0":
        return None
    host, sep, port = text.rpartition(":")
    if not sep:
        raise SettingsError(f"{name}: {text!r} is not host:port (or 0 to turn it off)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        number = int(port)
    except ValueError:
        raise SettingsError(f"{name}: the port of {text!r} is not a number") from None
    if not 0 <= number <= 65535:
        raise SettingsError(f"{name}: port {number} is out of range")
    return BindAddress(host, number)


def parse_seconds(text: str, name: str, allow_zero: bool = True) -> float:
    """A Go duration (``15s``) or plain seconds (``15``, ``0.5``)."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        try:
            value = float(go_duration.parse_duration(text))
        except ValueError as error:
            raise SettingsError(f"{name}: {error}") from None
    if value < 0 or (value == 0 and not allow_zero) or math.isnan(value):
        raise SettingsError(
            f"{name}: {text!r} must be {'' if allow_zero else 'more than '}0s or more"
        )
    return value


def parse_bool(text: str, name: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise SettingsError(f"{name}: {text!r} is neither true nor false")


def parse_positive_int(text: str, name: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise SettingsError(f"{name}: {text!r} is not a whole number") from None
    if value < 1:
        raise SettingsError(f"{name}: {value} must be 1 or more")
    return value


# (flag, environment variable, default, help). A default of None is worked out later.
_OPTIONS: tuple[tuple[str, str | None, str | None, str], ...] = (
    ("--watches-file", "WATCHES_FILE", "./watches.yaml", "the watches.yaml to run"),
    (
        "--kubeconfig",
        None,
        None,
        "kubeconfig (default: K8S_AUTH_KUBECONFIG, KUBECONFIG, "
        "~/.kube/config, else the pod's service account)",
    ),
    ("--metrics-bind-address", "METRICS_BIND_ADDRESS", ":8080", "/metrics; 0 turns it off"),
    (
        "--health-probe-bind-address",
        "HEALTH_PROBE_BIND_ADDRESS",
        ":8081",
        "/healthz and /readyz; 0 turns them off",
    ),
    (
        "--watch-namespace",
        "WATCH_NAMESPACE",
        "",
        "namespaces to watch, comma-separated; empty: all",
    ),
    (
        "--max-concurrent-reconciles",
        "MAX_CONCURRENT_RECONCILES",
        None,
        "passes at once, all kinds together (default: the CPU limit, else the CPU count)",
    ),
    ("--leader-elect", "LEADER_ELECT", "true", "true: only the Lease holder reconciles"),
    ("--leader-election-id", "LEADER_ELECTION_ID", DEFAULT_LEADER_ELECTION_ID, "the Lease's name"),
    (
        "--leader-election-namespace",
        "POD_NAMESPACE",
        None,
        "the Lease's namespace (default: the kubeconfig context's, else default)",
    ),
    (
        "--leader-elect-lease-duration",
        "LEADER_ELECT_LEASE_DURATION",
        "15s",
        "how long a Lease holds without renewal",
    ),
    (
        "--leader-elect-renew-deadline",
        "LEADER_ELECT_RENEW_DEADLINE",
        "10s",
        "how long the leader retries renewing before it gives up",
    ),
    (
        "--leader-elect-retry-period",
        "LEADER_ELECT_RETRY_PERIOD",
        "2s",
        "between two attempts to acquire or renew",
    ),
    (
        "--reconcile-period",
        "RECONCILE_PERIOD",
        "10h",
        "a pass per object at least this often; 0 turns it off",
    ),
    ("--max-backoff", "MAX_BACKOFF", "30s", "the longest retry delay after failed passes"),
    (
        "--gate-discovery-period",
        "GATE_DISCOVERY_PERIOD",
        "30s",
        "how often a gate's or dependent's kind not served at start (external-secrets', "
        "mariadb-operator's) is asked for again; watched once it is served",
    ),
    (
        "--graceful-shutdown-timeout",
        "GRACEFUL_SHUTDOWN_TIMEOUT",
        "25s",
        "how long running passes may finish after SIGTERM before they are abandoned",
    ),
    ("--webhook-host", "WEBHOOK_HOST", "", "the admission webhook's address; empty: all"),
    ("--webhook-port", "WEBHOOK_PORT", "9443", "the admission webhook's port"),
    (
        "--webhook-shutdown-delay",
        "WEBHOOK_SHUTDOWN_DELAY",
        "5s",
        "after SIGTERM, how long the webhook keeps serving at least, while the pod leaves the "
        "webhook Service's endpoints; 0: it stops with the rest",
    ),
    (
        "--webhook-cert-dir",
        "WEBHOOK_CERT_DIR",
        "/tmp/k8s-webhook-server/serving-certs",
        "tls.crt and tls.key of the webhook; without them no webhook is served",
    ),
    (
        "--webhook-cert-secret",
        "WEBHOOK_CERT_SECRET",
        None,
        "make and renew the webhook's certificate in this Secret of the operator's namespace "
        "and inject its CA into the webhook configurations; empty: the certificate comes "
        "from elsewhere (cert-manager)",
    ),
    (
        "--webhook-service",
        "WEBHOOK_SERVICE",
        None,
        "the Service the API server calls the webhook through (the certificate's names)",
    ),
    (
        "--mutating-webhook-configuration",
        "MUTATING_WEBHOOK_CONFIGURATION",
        None,
        "the MutatingWebhookConfiguration to inject the CA bundle into",
    ),
    (
        "--validating-webhook-configuration",
        "VALIDATING_WEBHOOK_CONFIGURATION",
        None,
        "the ValidatingWebhookConfiguration to inject the CA bundle into",
    ),
    (
        "--runner-dir",
        "RUNNER_DIR",
        None,
        "ansible-runner's private data dirs, one per object, kept and locked by one process "
        "(default: a private dir of the process under <tmp>/c5c3-glance-runner-<uid>, "
        "removed on exit)",
    ),
    ("--ansible-verbosity", None, "2", "-v count of each ansible-playbook run (0 to 7)"),
    (
        "--dependent-label-selector",
        "DEPENDENT_LABEL_SELECTOR",
        DEFAULT_DEPENDENT_SELECTOR,
        "label selector of the owned objects the runner watches; empty: every object",
    ),
    (
        "--clusters-namespace",
        "CLUSTERS_NAMESPACE",
        DEFAULT_CLUSTERS_NAMESPACE,
        "the namespace of the target clusters' kubeconfig Secrets; empty "
        "(--clusters-namespace=) turns target clusters off",
    ),
    ("--log-level", "LOG_LEVEL", "info", "debug, info, warning or error"),
    (
        "--warm-passes",
        "WARM_PASSES",
        "true",
        "run passes through the warm fork server (pre-imported ansible-playbook); "
        "false: a cold ansible-playbook per pass",
    ),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runner",
        description="Reconcile the custom resources of watches.yaml with their playbooks.",
    )
    for flag, variable, default, text in _OPTIONS:
        shown = f"{text} [env {variable}]" if variable else text
        if default:
            shown += f" (default: {default})"
        parser.add_argument(flag, default=None, help=shown)
    return parser


def parse_settings(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    concurrency: int | None = None,
) -> Settings:
    """The settings of ``argv`` and ``environ``; ``SettingsError`` names a bad one.

    ``concurrency`` stands in for :func:`default_concurrency` (tests).
    """
    environ = os.environ if environ is None else environ
    args = vars(_parser().parse_args(list(argv) if argv is not None else None))
    raw: dict[str, str | None] = {}
    source: dict[str, str] = {}
    for flag, variable, default, _ in _OPTIONS:
        dest = flag[2:].replace("-", "_")
        if args[dest] is not None:
            raw[dest], source[dest] = args[dest], flag
        elif variable and environ.get(variable, "") != "":
            raw[dest], source[dest] = environ[variable], variable
        else:
            raw[dest], source[dest] = default, flag

    def text(name: str) -> str:
        return raw[name] or ""

    lease = parse_seconds(
        text("leader_elect_lease_duration"), source["leader_elect_lease_duration"], False
    )
    renew = parse_seconds(
        text("leader_elect_renew_deadline"), source["leader_elect_renew_deadline"], False
    )
    retry = parse_seconds(
        text("leader_elect_retry_period"), source["leader_elect_retry_period"], False
    )
    if not retry < renew < lease:
        raise SettingsError(
            "leader election: the retry period must be shorter than the renew deadline, "
            f"and that shorter than the lease duration (now {retry}s, {renew}s, {lease}s)"
        )
    concurrent = raw["max_concurrent_reconciles"]
    verbosity = text("ansible_verbosity").strip()
    if not verbosity.isdigit() or int(verbosity) > 7:
        raise SettingsError(f"--ansible-verbosity: {verbosity!r} is not 0 to 7")
    cert_secret = text("webhook_cert_secret").strip() or None
    if cert_secret:
        needed = [
            source[name]
            for name in (
                "webhook_service",
                "mutating_webhook_configuration",
                "validating_webhook_configuration",
            )
            if not text(name).strip()
        ]
        if needed:
            raise SettingsError(
                f"{source['webhook_cert_secret']}: a self-managed webhook certificate also "
                f"needs {', '.join(needed)}"
            )
    clusters_namespace = text("clusters_namespace").strip()
    if clusters_namespace and (
        len(clusters_namespace) > 63 or not _NAMESPACE_NAME.fullmatch(clusters_namespace)
    ):
        raise SettingsError(
            f"{source['clusters_namespace']}: {clusters_namespace!r} is not a namespace name "
            "(at most 63 lower-case letters, digits and '-', starting and ending with a "
            "letter or digit), nor empty"
        )
    level = text("log_level").lower()
    if level not in ("debug", "info", "warning", "error"):
        raise SettingsError(
            f"{source['log_level']}: {raw['log_level']!r} is not debug, info, warning or error"
        )
    return Settings(
        watches_file=Path(text("watches_file")),
        kubeconfig=raw["kubeconfig"] or None,
        metrics_bind_address=parse_bind_address(
            text("metrics_bind_address"), source["metrics_bind_address"]
        ),
        health_probe_bind_address=parse_bind_address(
            text("health_probe_bind_address"), source["health_probe_bind_address"]
        ),
        watch_namespaces=tuple(
            dict.fromkeys(
                part.strip() for part in text("watch_namespace").split(",") if part.strip()
            )
        ),
        max_concurrent_reconciles=(
            parse_positive_int(concurrent, source["max_concurrent_reconciles"])
            if concurrent
            else concurrency or default_concurrency()
        ),
        leader_elect=parse_bool(text("leader_elect"), source["leader_elect"]),
        leader_election_id=text("leader_election_id"),
        leader_election_namespace=raw["leader_election_namespace"] or None,
        lease_duration=lease,
        renew_deadline=renew,
        retry_period=retry,
        reconcile_period=parse_seconds(text("reconcile_period"), source["reconcile_period"]),
        max_backoff=parse_seconds(text("max_backoff"), source["max_backoff"], False),
        gate_discovery_period=parse_seconds(
            text("gate_discovery_period"), source["gate_discovery_period"], False
        ),
        graceful_shutdown_timeout=parse_seconds(
            text("graceful_shutdown_timeout"), source["graceful_shutdown_timeout"]
        ),
        webhook_host=text("webhook_host"),
        webhook_port=_port(text("webhook_port"), source["webhook_port"]),
        webhook_shutdown_delay=parse_seconds(
            text("webhook_shutdown_delay"), source["webhook_shutdown_delay"]
        ),
        webhook_cert_dir=Path(text("webhook_cert_dir")),
        runner_dir=Path(raw["runner_dir"]) if raw["runner_dir"] else None,
        ansible_verbosity=int(verbosity),
        dependent_label_selector=text("dependent_label_selector").strip(),
        log_level=level,
        warm_passes=parse_bool(text("warm_passes"), source["warm_passes"]),
        webhook_cert_secret=cert_secret,
        webhook_service=text("webhook_service").strip(),
        mutating_webhook_configuration=text("mutating_webhook_configuration").strip(),
        validating_webhook_configuration=text("validating_webhook_configuration").strip(),
        clusters_namespace=clusters_namespace,
    )


def _port(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SettingsError(f"{name}: {text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise SettingsError(f"{name}: port {value} is out of range")
    return value
