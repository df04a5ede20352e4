"""What a playbook run gets for one custom resource, and what the run said back.

Both halves follow operator-framework's ansible-operator (ansible-operator-plugins
v1.42, ``internal/ansible/runner/runner.go``, ``paramconv/paramconv.go``,
``controller/reconcile.go``, ``runner/eventapi/types.go``) so the playbooks behave the
same under either runner; ``docs/research/ansible-operator-conventions.md`` §1.2 to 1.4.

Reading a run differs from ansible-operator in three places, each a fix:

* rescued failures are not failures. ansible-operator means to skip them but reads a
  ``rescued`` key that ansible-runner's ``runner_on_failed`` event never carries
  (ansible-operator-plugins#88). Here the ``playbook_on_stats`` counts decide (below);
* ``requeue_after`` is read from ``set_stats`` as well as from the
  ``operator_sdk.util.requeue_after`` module, and the whole run is still read:
  ansible-operator returns at the module's event, skipping the failure check and the
  finalizer removal of that pass;
* an unreachable host is a failure (ansible-operator ignores ``runner_on_unreachable``).
"""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics import go_duration
from runner.kube.watches import Watch

UNSAFE_KEY = "__ansible_unsafe"
"""ansible-runner's JSON marker for a string that Jinja must not template."""

REQUEUE_AFTER_ACTIONS = frozenset({"operator_sdk.util.requeue_after", "requeue_after"})
"""Task actions whose ``period`` result asks for a requeue (reconcile.go)."""

UNKNOWN_FAILURE = "unknown playbook failure"
"""ansible-operator's message for a failed task whose result has no ``msg``."""

CLUSTERS_NAMESPACE = "clusters_namespace"
"""The extra var holding the runner's ``--clusters-namespace`` (``""``: no target
clusters), in every pass of every watch: where the target clusters' kubeconfig Secrets
are (reference-spec §2.11)."""


# -- extra vars ---------------------------------------------------------------------


def object_var_name(group: str, kind: str) -> str:
    """``_<group>_<kind>``: the extra var holding the whole object (``escapeAnsibleKey``).

    The kind is lower-cased, the group is not; ``.`` and ``-`` become ``_``.
    ``("glance.openstack.c5c3.io", "Glance")`` gives ``_glance_openstack_c5c3_io_glance``.
    """
    return f"_{group}_{kind.lower()}".replace(".", "_").replace("-", "_")


def is_finalizer_run(watch: Watch, obj: Mapping[str, Any]) -> bool:
    """Whether this pass is the deletion pass: deleting, and our finalizer still listed."""
    metadata = obj.get("metadata") or {}
    return (
        watch.finalizer is not None
        and metadata.get("deletionTimestamp") is not None
        and watch.finalizer.name in (metadata.get("finalizers") or ())
    )


def extra_vars(
    watch: Watch, obj: Mapping[str, Any], runner_vars: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The extra vars of one pass for ``obj``, as ansible-operator's ``makeParameters``.

    In increasing precedence (a later key overrides an earlier one of the same name):

    1. each top-level ``spec`` key (snake_cased recursively when ``snakeCaseParameters``;
       every string wrapped as unsafe when ``markUnsafe``);
    2. ``ansible_operator_meta``: ``{name, namespace}``;
    3. ``_<group>_<kind>``: the whole object, and ``_<group>_<kind>_spec``: its spec
       unchanged (both with strings wrapped when ``markUnsafe``);
    4. the watch's ``vars``; 5. the finalizer's ``vars`` on a deletion pass;
    6. ``runner_vars``: what the runner's settings tell every pass (ours, not
       ansible-operator's: :data:`CLUSTERS_NAMESPACE`). Last, so the pass and the
       runner's own watches always agree on them: neither a spec key nor a watches.yaml
       ``vars`` entry can point the pass at another clusters namespace than the one the
       runner watches.

    An object without a spec mapping gets ``{}`` (how Secrets and ConfigMaps can be
    watched). Nothing returned shares structure with ``obj``, the watch or ``runner_vars``.
    """
    spec = obj.get("spec")
    spec = copy.deepcopy(spec) if isinstance(spec, dict) else {}
    parameters = snake_case_keys(spec) if watch.snake_case_parameters else copy.deepcopy(spec)
    if watch.mark_unsafe:
        parameters = mark_unsafe(parameters)
    metadata = obj.get("metadata") or {}
    parameters["ansible_operator_meta"] = {
        "name": metadata.get("name", ""),
        "namespace": metadata.get("namespace", ""),
    }
    object_key = object_var_name(watch.gvk.group, watch.gvk.kind)
    whole = copy.deepcopy(dict(obj))
    parameters[object_key] = mark_unsafe(whole) if watch.mark_unsafe else whole
    parameters[f"{object_key}_spec"] = mark_unsafe(spec) if watch.mark_unsafe else spec
    parameters.update(copy.deepcopy(dict(watch.vars)))
    if is_finalizer_run(watch, obj):
        parameters.update(copy.deepcopy(dict(watch.finalizer.vars)))
    parameters.update(copy.deepcopy(dict(runner_vars or {})))
    return parameters


def mark_unsafe(value: Any) -> Any:
    """``value`` with every string, however deep, as ``{"__ansible_unsafe": string}``.

    Keys stay as they are; numbers, booleans and null are not wrapped (``markUnsafe``).
    """
    if isinstance(value, str):
        return {UNSAFE_KEY: value}
    if isinstance(value, dict):
        return {key: mark_unsafe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [mark_unsafe(item) for item in value]
    return value


def snake_case_keys(value: Any) -> Any:
    """``value`` with every mapping key, however deep, passed through :func:`snake_case`.

    Lists are walked, values are kept. When two keys convert to the same name the later
    one wins (ansible-operator's winner is random: it ranges over a Go map).
    """
    if isinstance(value, dict):
        return {snake_case(key): snake_case_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [snake_case_keys(item) for item in value]
    return value


_NUMBER_SEQUENCE = re.compile(r"([a-zA-Z])([0-9]+)([a-zA-Z]([0-9]+))")
_SPECIAL_WORDS = ("HTTP", "URL", "IP")


def snake_case(key: str) -> str:
    """ansible-operator's ``paramconv.ToSnake``, quirks included.

    ``sizeK8sBuckets`` → ``size_k8s_buckets``, ``egressIPs`` → ``egress_ips``,
    ``ThisShouldHaveUnderscores`` → ``_this_should_have_underscores`` (a leading
    capital gives a leading ``_`` unless the first word is http, url or ip), ``888``
    and ``s3_bucket`` unchanged (``s_3__bucket`` of operator-sdk#1366 was an older
    converter), ``k8s var`` → ``k8s_var``, ``a1b2`` → ``a_1_b2``, ``IPs`` → ``__ips``.
    Exact for ASCII keys; beyond ASCII, Python's and Go's lower-casing can differ.
    Go panics on an empty key; this returns ``""``.
    """
    text = _NUMBER_SEQUENCE.sub(r"\1 \2 \3", key).strip(" ")
    if not text:
        return ""
    prefix = "_" if _is_upper(text[0]) else ""
    text = _isolate_special_words(text)
    bits: list[str] = []
    word = ""
    position = -1  # ToSnake's iReal: letters since the current word started
    for index, char in enumerate(text):
        position += 1
        following = text[index + 1] if index + 1 < len(text) else ""
        case_changes = (_is_upper(char) and _is_lower(following)) or (
            _is_lower(char) and _is_upper(following)
        )
        if position > 0 and word[-1] != "_" and case_changes:
            if _is_upper(char):
                bits.append(word.lower())
                word, position = char, 0
            else:
                bits.append((word + char).lower())
                word, position = "", -1
        elif char in " _-":
            bits.append(word.lower())
            word, position = "", -1
        else:
            word += char
    bits.append(word.lower())
    joined = "_".join(bits)
    return joined if bits[0] in ("http", "url", "ip") else prefix + joined


def _isolate_special_words(text: str) -> str:
    """``preprocessWordMapping``: ``_`` around the first HTTP, URL or IP (plural: ``S``).

    Go ranges over a map here, in random order; the fixed order gives the same result
    because the words never overlap.
    """
    for word in _SPECIAL_WORDS:
        index = text.find(word)
        if index < 0:
            continue
        end = index + len(word)
        if end == len(text):
            text = text[:index] + "_" + text[index:]
        elif text[end] == "s":
            if end == len(text) - 1:
                text = text[:index] + "_" + text[index:end] + "S"
            elif index == 0:
                text = text[:end] + "S_" + text[end + 1 :]
            else:
                text = text[:index] + "_" + text[index:end] + "S_" + text[end + 1 :]
        elif index == 0:
            text = text[:end] + "_" + text[end:]
        else:
            text = text[:index] + "_" + text[index:end] + "_" + text[end:]
    return text


def _is_upper(char: str) -> bool:
    return "A" <= char <= "Z"


def _is_lower(char: str) -> bool:
    return "a" <= char <= "z"


# -- reading a finished run ---------------------------------------------------------


@dataclass(frozen=True)
class FailedTask:
    """A task failure that failed the run."""

    task: str
    action: str
    host: str
    message: str


@dataclass(frozen=True)
class PlaybookStats:
    """The play recap (``playbook_on_stats``), summed over hosts."""

    ok: int = 0
    changed: int = 0
    skipped: int = 0
    failures: int = 0
    unreachable: int = 0
    rescued: int = 0
    ignored: int = 0


@dataclass(frozen=True)
class RunOutcome:
    """What one ansible-runner run said: its recap, what failed, and when to come back."""

    stats: PlaybookStats | None
    """``None`` when the run ended without a recap (killed, or ansible-playbook crashed)."""
    failed_tasks: tuple[FailedTask, ...]
    requeue_after: float | None
    """Seconds until the next pass that the playbook asked for; ``None`` if it did not."""
    requeue: bool = False
    """The playbook asked to come back at once (``requeue_after: 0``): controller-runtime's
    ``Requeue: true``, a pass after the rate limiter's delay. It wins over any later
    ``requeue_after`` (the soonest request wins)."""

    @property
    def succeeded(self) -> bool:
        """The run finished and nothing failed that a rescue did not catch."""
        return (
            self.stats is not None
            and not self.failed_tasks
            and self.stats.failures == 0
            and self.stats.unreachable == 0
        )


def run_outcome(events: Iterable[Mapping[str, Any]]) -> RunOutcome:
    """Read the events of one run, in the order ansible-runner emitted them.

    **Failures.** ``runner_on_failed`` events with ``ignore_errors`` set never count. An
    event does not say whether a ``rescue`` caught it; the recap does, per host: its
    ``failures`` counts the uncaught ones and ``rescued`` the caught ones. A caught
    failure is always followed by its rescue and the host goes on, an uncaught one
    ends the host's run (but for ``always`` sections), so a host's uncaught failures
    are its last ``failures`` failed events. ``runner_on_unreachable`` events count the
    same way against the recap's ``dark``. Without a recap every failed event counts.
    The message is the result's ``msg``, else ``"unknown playbook failure"``.

    **Requeue.** Our playbooks end with ``ansible.builtin.set_stats`` of
    ``{requeue_after: <seconds>}`` (``per_host: false``; it reaches the recap's
    ``artifact_data``; with the default ``aggregate: true`` two calls add up). A
    ``runner_on_ok`` of ``operator_sdk.util.requeue_after`` (or bare ``requeue_after``)
    with ``period: "30s"`` is read too. The soonest positive request is ``requeue_after``;
    0 leaves ``requeue_after`` unset (a ``RequeueAfter`` of 0) and sets ``requeue``: the Glance
    pass asks for 0 after adding its finalizer, meaning "at once". A value that is not
    seconds or a Go duration is a failure.
    """
    stats_data: Mapping[str, Any] | None = None
    failed: list[Mapping[str, Any]] = []
    unreachable: list[Mapping[str, Any]] = []
    requests: list[float] = []
    problems: list[FailedTask] = []
    for event in events:
        kind = event.get("event")
        data = event.get("event_data") or {}
        if kind == "playbook_on_stats":
            stats_data = data
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            failed.append(data)
        elif kind == "runner_on_unreachable":
            unreachable.append(data)
        elif kind == "runner_on_ok" and _is_requeue_action(data):
            period = (data.get("res") or {}).get("period")
            _read_requeue(period, _task_of(data, ""), requests, problems)
    stats = None
    if stats_data is not None:
        stats = PlaybookStats(
            **{field: _total(stats_data.get(key)) for field, key in _STATS_KEYS.items()}
        )
        artifact_data = stats_data.get("artifact_data") or {}
        if "requeue_after" in artifact_data:
            where = FailedTask("set_stats", "ansible.builtin.set_stats", "", "")
            _read_requeue(artifact_data["requeue_after"], where, requests, problems)
    uncaught = [
        *_uncaught(failed, None if stats_data is None else stats_data.get("failures")),
        *_uncaught(unreachable, None if stats_data is None else stats_data.get("dark")),
    ]
    return RunOutcome(
        stats=stats,
        failed_tasks=tuple(_task_of(data, _message(data)) for data in uncaught) + tuple(problems),
        requeue_after=min((seconds for seconds in requests if seconds > 0), default=None),
        requeue=0 in requests,
    )


_STATS_KEYS = {
    "ok": "ok",
    "changed": "changed",
    "skipped": "skipped",
    "failures": "failures",
    "unreachable": "dark",
    "rescued": "rescued",
    "ignored": "ignored",
}


def _total(per_host: Any) -> int:
    """A recap counter summed over hosts (ansible-runner sends ``{host: count}``)."""
    return sum(per_host.values()) if isinstance(per_host, Mapping) else 0


def _uncaught(
    events: list[Mapping[str, Any]], recap: Mapping[str, int] | None
) -> list[Mapping[str, Any]]:
    """Each host's last ``recap[host]`` events; all of them when there is no recap."""
    if recap is None:
        return events
    by_host: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for data in events:
        by_host[data.get("host", "")].append(data)
    kept = {
        id(data)
        for host, host_events in by_host.items()
        for data in host_events[len(host_events) - min(recap.get(host, 0), len(host_events)) :]
    }
    return [data for data in events if id(data) in kept]


def _is_requeue_action(data: Mapping[str, Any]) -> bool:
    return bool({data.get("task_action"), data.get("resolved_action")} & REQUEUE_AFTER_ACTIONS)


def _read_requeue(
    value: Any, where: FailedTask, requests: list[float], problems: list[FailedTask]
) -> None:
    """Add a request to ``requests`` (0 too), or a bad one to ``problems``."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = float(go_duration.parse_duration(value))
        except ValueError:
            seconds = None
        if seconds is not None and seconds < 0:
            seconds = None
    if seconds is None:
        message = (
            f'requeue_after: {value!r} is neither a number of seconds nor a duration such as "30s"'
        )
        problems.append(FailedTask(where.task, where.action, where.host, message))
    else:
        requests.append(seconds)


def _task_of(data: Mapping[str, Any], message: str) -> FailedTask:
    return FailedTask(
        task=str(data.get("task") or ""),
        action=str(data.get("resolved_action") or data.get("task_action") or ""),
        host=str(data.get("host") or ""),
        message=message,
    )


def _message(data: Mapping[str, Any]) -> str:
    """``res.msg`` of a failed task (``GetFailedPlaybookMessage``)."""
    message = (data.get("res") or {}).get("msg")
    return message if isinstance(message, str) else UNKNOWN_FAILURE
