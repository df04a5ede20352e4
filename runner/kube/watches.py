"""watches.yaml: which custom resources the runner reconciles, and with which playbook.

The schema, defaults and overrides are operator-framework's ansible-operator
(``internal/ansible/watches/watches.go`` of ansible-operator-plugins v1.42), so the
same file runs on that image; see ``docs/research/ansible-operator-conventions.md``
§1.1. Where ansible-operator is lax this parser is strict, and says so:

* unknown keys are errors (ansible-operator ignores them, so a typo such as
  ``reconcilePeriods`` silently does nothing there);
* ``playbook`` and ``role`` together are an error (ansible-operator takes the
  playbook), and so are both in ``finalizer``;
* a ``finalizer.playbook``/``finalizer.role`` must exist even when ``vars`` are given
  (ansible-operator then accepts a missing path and fails at deletion time);
* negative ``reconcilePeriod``/``maxRunnerArtifacts`` and an empty list of watches are
  errors;
* relative ``playbook``/``role`` paths are resolved against the watches file's
  directory, not the process's working directory (the same directory in the image,
  ``/opt/ansible``), and made absolute when the file is read: ansible-runner runs a pass
  from another directory, so ``--watches-file ./watches.yaml`` must not leave a
  ``./playbooks/glance.yml`` behind (a relative role path from ``ANSIBLE_ROLES_PATH`` is
  taken from the working directory, as ansible-operator's ``os.Stat`` takes it, and made
  absolute too);
* ``maxConcurrentReconciles`` is accepted as a per-kind default (ansible-operator
  takes it from a flag or environment only; it ignores the key).

Every problem is reported, each with the file, line, entry and field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics import go_duration

DEFAULT_MAX_RUNNER_ARTIFACTS = 20
"""ansible-operator's ``maxRunnerArtifacts`` default (also when the file says 0)."""

RECONCILE_PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"
MAX_RUNNER_ARTIFACTS_ANNOTATION = "ansible.sdk.operatorframework.io/max-runner-artifacts"
VERBOSITY_ANNOTATION = "ansible.sdk.operatorframework.io/verbosity"

_ENTRY_KEYS = frozenset(
    {
        "group",
        "version",
        "kind",
        "playbook",
        "role",
        "vars",
        "reconcilePeriod",
        "manageStatus",
        "watchDependentResources",
        "watchClusterScopedResources",
        "watchAnnotationsChanges",
        "finalizer",
        "selector",
        "snakeCaseParameters",
        "markUnsafe",
        "maxRunnerArtifacts",
        "maxConcurrentReconciles",
        "blacklist",
    }
)
_FINALIZER_KEYS = frozenset({"name", "playbook", "role", "vars"})
_SELECTOR_KEYS = frozenset({"matchLabels", "matchExpressions"})
_REQUIREMENT_KEYS = frozenset({"key", "operator", "values"})
_GVK_KEYS = frozenset({"group", "version", "kind"})

# The boolean keys and the Watch attributes that hold them (defaults: Watch's).
_BOOLEANS = {
    "manageStatus": "manage_status",
    "watchDependentResources": "watch_dependent_resources",
    "watchClusterScopedResources": "watch_cluster_scoped_resources",
    "watchAnnotationsChanges": "watch_annotations_changes",
    "snakeCaseParameters": "snake_case_parameters",
    "markUnsafe": "mark_unsafe",
}


class WatchesError(ValueError):
    """watches.yaml is unusable; ``problems`` lists every reason, one line each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        """Go's ``schema.GroupVersionKind.String()``: ``group/version, Kind=Kind``."""
        return f"{self.group}/{self.version}, Kind={self.kind}"


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``labels.Requirement.Matches`` of apimachinery."""
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return labels.get(self.key) not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True)
class LabelSelector:
    """A ``metav1.LabelSelector``: every label and every requirement must match.

    The empty selector matches every object (ansible-operator adds no predicate then).
    """

    match_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    match_expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(labels.get(key) == value for key, value in self.match_labels.items()) and all(
            requirement.matches(labels) for requirement in self.match_expressions
        )


@dataclass(frozen=True)
class Finalizer:
    """``finalizer``: run ``playbook`` or ``role``, or the main one when only ``vars`` are set."""

    name: str
    playbook: Path | None = None
    role: Path | None = None
    vars: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Target:
    """What one ansible-runner run executes: a playbook file or a role directory."""

    playbook: Path | None = None
    role: Path | None = None


@dataclass(frozen=True)
class Watch:
    """One watches.yaml entry, with ansible-operator's defaults filled in."""

    gvk: GroupVersionKind
    playbook: Path | None = None
    role: Path | None = None
    vars: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    reconcile_period: float | None = None
    """Seconds; ``None`` (unset or ``0s``) leaves it to the runner's ``--reconcile-period``."""
    manage_status: bool = True
    watch_dependent_resources: bool = True
    watch_cluster_scoped_resources: bool = False
    watch_annotations_changes: bool = False
    snake_case_parameters: bool = True
    mark_unsafe: bool = False
    max_runner_artifacts: int = DEFAULT_MAX_RUNNER_ARTIFACTS
    max_concurrent_reconciles: int | None = None
    """``None`` leaves it to the environment and the runner's flag."""
    finalizer: Finalizer | None = None
    selector: LabelSelector = field(default_factory=LabelSelector)
    blacklist: tuple[GroupVersionKind, ...] = ()

    def target(self, finalizing: bool) -> Target:
        """The playbook or role of a normal pass, or of a deletion pass when ``finalizing``.

        A finalizer with only ``vars`` re-runs the main playbook or role (runner.go ``New``).
        """
        finalizer = self.finalizer
        if finalizing and finalizer is not None and (finalizer.playbook or finalizer.role):
            return Target(playbook=finalizer.playbook, role=finalizer.role)
        return Target(playbook=self.playbook, role=self.role)


def load_watches(
    path: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> tuple[Watch, ...]:
    """The watches of the file at ``path``; relative paths in it are taken from its directory."""
    path = Path(path)
    return parse_watches(path.read_text(encoding="utf-8"), path.parent, environ, source=str(path))


def parse_watches(
    text: str,
    base_dir: str | os.PathLike[str],
    environ: Mapping[str, str] | None = None,
    source: str = "watches.yaml",
) -> tuple[Watch, ...]:
    """The watches that ``text`` declares, after ``${VAR}`` expansion from ``environ``;
    relative paths are taken from ``base_dir`` and every path is absolute.

    Raises :class:`WatchesError` listing every problem found.
    """
    environ = os.environ if environ is None else environ
    base_dir = _absolute(base_dir)
    try:
        root = _compose(expand_env(text, environ))
        _construct(root)  # so that constructor errors (bad tags, dates) show here
    except yaml.YAMLError as error:
        raise WatchesError([f"{source}: not valid YAML: {error}"]) from None
    if root is None or (isinstance(root, yaml.SequenceNode) and not root.value):
        raise WatchesError([f"{source}: lists no watches"])
    if not isinstance(root, yaml.SequenceNode):
        raise WatchesError([f"{source}:{_line(root)}: must be a list of watches"])
    problems: list[tuple[int, str]] = []
    watches: list[Watch] = []
    seen: dict[GroupVersionKind, int] = {}
    for index, node in enumerate(root.value, start=1):
        entry = _Entry(node, source, index, base_dir, environ, problems)
        watch = entry.watch()
        if watch is None:
            continue
        if watch.gvk in seen:
            entry.problem(node, f"duplicate GVK (also entry {seen[watch.gvk]})")
            entry.report(f"entry {index} ({watch.gvk})")
            continue
        seen[watch.gvk] = index
        watches.append(watch)
    if problems:
        raise WatchesError([message for _, message in sorted(problems, key=lambda p: p[0])])
    return tuple(watches)


def _absolute(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute against the working directory, ``.`` and ``..`` removed
    (symbolic links kept: a role found through a collection's path stays in it)."""
    return Path(os.path.abspath(path))


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """Go's ``os.Expand`` with ansible-operator's mapping: an unset variable stays ``${NAME}``.

    As in Go, ``$NAME`` is expanded too, ``${}`` and an unclosed ``${`` are dropped, and a
    ``$`` before anything else (or at the end) is kept.
    """
    out: list[str] = []
    start = 0
    index = 0
    while index < len(text):
        if text[index] == "$" and index + 1 < len(text):
            out.append(text[start:index])
            name, width = _shell_name(text[index + 1 :])
            if name:
                out.append(environ.get(name, "${" + name + "}"))
            elif width == 0:
                out.append("$")
            index += width
            start = index + 1
        index += 1
    out.append(text[start:])
    return "".join(out)


_SHELL_SPECIAL = frozenset("*#$@!?-0123456789")
_SHELL_NAME = re.compile(r"[A-Za-z0-9_]*")


def _shell_name(rest: str) -> tuple[str, int]:
    """Go's ``os.getShellName``: the variable name after ``$`` and how many characters it took."""
    if rest[0] == "{":
        if len(rest) > 2 and rest[1] in _SHELL_SPECIAL and rest[2] == "}":
            return rest[1], 3
        close = rest.find("}", 1)
        if close == 1:
            return "", 2
        if close == -1:
            return "", 1
        return rest[1:close], close + 1
    if rest[0] in _SHELL_SPECIAL:
        return rest[0], 1
    name = _SHELL_NAME.match(rest).group()
    return name, len(name)


def reconcile_period(watch: Watch, annotations: Mapping[str, str] | None, default: float) -> float:
    """Seconds until the next periodic pass of one CR; 0 means none.

    The CR's ``ansible.sdk.operatorframework.io/reconcile-period`` annotation beats
    ``reconcilePeriod`` of watches.yaml, which beats the runner's ``--reconcile-period``
    (``default``). A bad annotation raises ``ValueError`` with Go's message, as the
    reconcile then fails in ansible-operator; a negative one means none, as a negative
    ``RequeueAfter`` does in controller-runtime.
    """
    text = (annotations or {}).get(RECONCILE_PERIOD_ANNOTATION)
    if text is not None:
        return max(0.0, float(go_duration.parse_duration(text)))
    return default if watch.reconcile_period is None else watch.reconcile_period


def max_runner_artifacts(watch: Watch, annotations: Mapping[str, str] | None) -> int:
    """``--rotate-artifacts`` for one CR: its annotation if an integer, else the watch's."""
    return _int_or(
        (annotations or {}).get(MAX_RUNNER_ARTIFACTS_ANNOTATION), watch.max_runner_artifacts
    )


def ansible_verbosity(
    watch: Watch, annotations: Mapping[str, str] | None, environ: Mapping[str, str], default: int
) -> int:
    """How many ``-v`` ansible-runner gets for one CR.

    The CR's ``ansible.sdk.operatorframework.io/verbosity`` annotation, else
    ``ANSIBLE_VERBOSITY_<KIND>_<GROUP>`` when it is an integer 0 to 7, else the runner's
    ``--ansible-verbosity`` (``default``; ansible-operator's is 2).
    """
    from_env = _int_or(environ.get(_env_name("ANSIBLE_VERBOSITY", watch.gvk)), default)
    if not 0 <= from_env <= 7:
        from_env = default
    return _int_or((annotations or {}).get(VERBOSITY_ANNOTATION), from_env)


def max_concurrent_reconciles(watch: Watch, environ: Mapping[str, str], default: int) -> int:
    """How many CRs of the watch's kind may be reconciled at once.

    ``MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>`` (upper case, ``.`` → ``_``), else the
    deprecated ``WORKER_<KIND>_<GROUP>``, else ``maxConcurrentReconciles`` of
    watches.yaml, else the runner's ``--max-concurrent-reconciles`` (``default``). A
    variable that is not a positive integer is ignored, as in ansible-operator.
    """
    fallback = (
        default if watch.max_concurrent_reconciles is None else watch.max_concurrent_reconciles
    )
    for prefix in ("MAX_CONCURRENT_RECONCILES", "WORKER"):
        text = environ.get(_env_name(prefix, watch.gvk))
        if text is not None:
            value = _int_or(text, fallback)
            return value if value > 0 else fallback
    return fallback


def _env_name(prefix: str, gvk: GroupVersionKind) -> str:
    return f"{prefix}_{gvk.kind}_{gvk.group}".replace(".", "_").upper()


def _int_or(text: str | None, default: int) -> int:
    """Go's ``strconv.Atoi`` of ``text``, or ``default`` when absent or not an integer."""
    if text is None or not re.fullmatch(r"[+-]?[0-9]+", text):
        return default
    return int(text)


def _compose(text: str) -> yaml.Node | None:
    """The YAML node tree of ``text`` (one document), so problems can name their line."""
    loader = yaml.SafeLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _construct(node: yaml.Node | None) -> Any:
    if node is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


class _Fields:
    """The keys of one YAML mapping with their nodes, so problems can name their line.

    A key set to ``null`` counts as absent, as in ansible-operator (Go leaves the field
    at its zero value and the default applies).
    """

    def __init__(self, node: yaml.MappingNode, items: dict[str, tuple[yaml.Node, yaml.Node]]):
        self.node = node
        self.items = items
        self.values = {key: _construct(value) for key, (_, value) in items.items()}

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def has(self, key: str) -> bool:
        return self.values.get(key) is not None

    def node_of(self, key: str) -> yaml.Node:
        """The value node of ``key``, or the mapping itself when the key is absent."""
        return self.items[key][1] if key in self.items else self.node


class _Entry:
    """Reads one list entry; records every problem instead of stopping at the first."""

    def __init__(
        self,
        node: yaml.Node,
        source: str,
        index: int,
        base_dir: Path,
        environ: Mapping[str, str],
        problems: list[tuple[int, str]],
    ) -> None:
        self.node = node
        self.source = source
        self.index = index
        self.base_dir = base_dir
        self.environ = environ
        self.problems = problems
        self.found: list[tuple[int, str]] = []

    def problem(self, where: yaml.Node, message: str) -> None:
        self.found.append((_line(where), message))

    def report(self, label: str) -> None:
        """Hand the problems found over, each with the file, line and ``label``."""
        self.problems += [
            (line, f"{self.source}:{line}: {label}: {message}") for line, message in self.found
        ]

    def watch(self) -> Watch | None:
        fields = self.mapping(self.node, "entry", _ENTRY_KEYS)
        if fields is None:
            self.report(f"entry {self.index}")
            return None
        gvk = GroupVersionKind(
            self.string(fields, "group", allow_empty=True),
            self.string(fields, "version"),
            self.string(fields, "kind"),
        )
        playbook, role = self.target(fields, "", required=True)
        options = {
            attribute: self.boolean(fields, key, getattr(Watch, attribute))
            for key, attribute in _BOOLEANS.items()
        }
        watch = Watch(
            gvk=gvk,
            playbook=playbook,
            role=role,
            vars=self.variables(fields, "vars"),
            reconcile_period=self.period(fields),
            max_runner_artifacts=self.integer(fields, "maxRunnerArtifacts", minimum=0)
            or DEFAULT_MAX_RUNNER_ARTIFACTS,
            max_concurrent_reconciles=self.integer(fields, "maxConcurrentReconciles", minimum=1),
            finalizer=self.finalizer(fields),
            selector=self.selector(fields),
            blacklist=self.blacklist(fields),
            **options,
        )
        label = f"entry {self.index} ({gvk})" if gvk.version and gvk.kind else f"entry {self.index}"
        self.report(label)
        return None if self.found else watch

    # -- shapes ---------------------------------------------------------------------

    def mapping(self, node: yaml.Node, path: str, allowed: frozenset[str]) -> _Fields | None:
        """The fields of a mapping node; unknown keys are problems."""
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{path}: must be a mapping")
            return None
        items: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        prefix = "" if path == "entry" else f"{path}."
        for key_node, value_node in node.value:
            key = _construct(key_node)
            if key in allowed:
                items[key] = (key_node, value_node)
            else:
                known = ", ".join(sorted(allowed))
                self.problem(key_node, f"{prefix}{key}: unknown field (known: {known})")
        return _Fields(node, items)

    def string(self, fields: _Fields, key: str, path: str = "", allow_empty: bool = False) -> str:
        """The string at ``key`` ("" when absent, a problem unless ``allow_empty``)."""
        value = fields.get(key)
        if value is not None and not isinstance(value, str):
            self.problem(fields.node_of(key), f"{path}{key}: must be a string, not {_shown(value)}")
            return ""
        if not value and not allow_empty:
            self.problem(fields.node_of(key), f"{path}{key}: must not be empty")
        return value or ""

    def boolean(self, fields: _Fields, key: str, default: bool) -> bool:
        value = fields.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(fields.node_of(key), f"{key}: must be true or false, not {_shown(value)}")
            return default
        return value

    def integer(self, fields: _Fields, key: str, minimum: int) -> int | None:
        value = fields.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(fields.node_of(key), f"{key}: must be an integer, not {_shown(value)}")
        elif value < minimum:
            self.problem(fields.node_of(key), f"{key}: must be at least {minimum}, not {value}")
        else:
            return value
        return None

    def variables(self, fields: _Fields, key: str, path: str = "") -> Mapping[str, Any]:
        value = fields.get(key)
        if value is None:
            return MappingProxyType({})
        if not isinstance(value, dict) or not all(isinstance(name, str) for name in value):
            message = f"{path}{key}: must be a mapping of variable names to values"
            self.problem(fields.node_of(key), message)
            return MappingProxyType({})
        return MappingProxyType(value)

    def period(self, fields: _Fields) -> float | None:
        """``reconcilePeriod`` in seconds; ``None`` when unset or zero."""
        value = fields.get("reconcilePeriod")
        node = fields.node_of("reconcilePeriod")
        if value is None:
            return None
        if not isinstance(value, str):
            self.problem(node, f'reconcilePeriod: must be a duration such as "30s", not {value!r}')
            return None
        try:
            seconds = go_duration.parse_duration(value)
        except ValueError as error:
            self.problem(node, f"reconcilePeriod: {error}")
            return None
        if seconds < 0:
            self.problem(node, f"reconcilePeriod: must not be negative, not {value!r}")
            return None
        return float(seconds) or None

    # -- paths ----------------------------------------------------------------------

    def target(self, fields: _Fields, path: str, required: bool) -> tuple[Path | None, Path | None]:
        """The checked ``playbook`` and ``role`` of an entry or of its finalizer."""
        playbook = self.string(fields, "playbook", path) if fields.has("playbook") else ""
        role = self.string(fields, "role", path) if fields.has("role") else ""
        if playbook and role:
            message = f"{path}playbook and {path}role are mutually exclusive"
            self.problem(fields.node_of("role"), message)
            return None, None
        if playbook:
            resolved = Path(playbook) if os.path.isabs(playbook) else self.base_dir / playbook
            if not resolved.is_file():
                self.problem(
                    fields.node_of("playbook"), f"{path}playbook: {resolved} was not found"
                )
            return resolved, None
        if role:
            found = next((path for path in self.role_paths(role) if path.is_dir()), None)
            if found is None:
                self.problem(fields.node_of("role"), f"{path}role: {role} was not found")
                return None, None
            return None, _absolute(found)
        if required and not fields.has("playbook") and not fields.has("role"):
            self.problem(fields.node, "must specify role or playbook")
        return None, None

    def role_paths(self, role: str) -> list[Path]:
        """Where ansible-operator looks for a role (``getPossibleRolePaths``), in its order.

        An absolute path; an FQCN ``ns.coll.role`` under each ``ANSIBLE_COLLECTIONS_PATH``
        entry (default ``/usr/share/ansible/collections`` and ``~/.ansible/collections``);
        ``<entry>/<role>`` and ``<entry>/roles/<role>`` for each ``ANSIBLE_ROLES_PATH``
        entry; finally ``roles/<role>`` next to the watches file.
        """
        if os.path.isabs(role):
            return [Path(role)]
        candidates: list[Path] = []
        parts = role.split(".")
        if len(parts) == 3:
            collections = self.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(":")
            if collections == [""]:
                home = self.environ.get("HOME")
                collections = ["/usr/share/ansible/collections"]
                collections += [f"{home}/.ansible/collections"] if home else []
            candidates += [
                Path(parent, "ansible_collections", parts[0], parts[1], "roles", parts[2])
                for parent in collections
            ]
        for parent in filter(None, self.environ.get("ANSIBLE_ROLES_PATH", "").split(":")):
            candidates += [Path(parent, role), Path(parent, "roles", role)]
        return [*candidates, self.base_dir / "roles" / role]

    # -- nested objects -------------------------------------------------------------

    def finalizer(self, fields: _Fields) -> Finalizer | None:
        if not fields.has("finalizer"):
            return None
        inner = self.mapping(fields.node_of("finalizer"), "finalizer", _FINALIZER_KEYS)
        if inner is None:
            return None
        name = self.string(inner, "name", "finalizer.")
        variables = self.variables(inner, "vars", "finalizer.")
        playbook, role = self.target(inner, "finalizer.", required=False)
        if not (inner.has("playbook") or inner.has("role") or variables):
            self.problem(inner.node, "finalizer: needs a playbook, a role or vars")
        return Finalizer(name=name, playbook=playbook, role=role, vars=variables)

    def selector(self, fields: _Fields) -> LabelSelector:
        """``selector``, checked as ``metav1.LabelSelectorAsSelector`` checks it."""
        if not fields.has("selector"):
            return LabelSelector()
        inner = self.mapping(fields.node_of("selector"), "selector", _SELECTOR_KEYS)
        if inner is None:
            return LabelSelector()
        labels = inner.get("matchLabels") or {}
        if not isinstance(labels, dict):
            self.problem(inner.node_of("matchLabels"), "selector.matchLabels: must be a mapping")
            labels = {}
        for key, value in labels.items():
            problem = _label_key_problem(key) or _label_value_problem(value)
            if problem:
                self.problem(inner.node_of("matchLabels"), f"selector.matchLabels: {problem}")
        requirements: list[LabelRequirement] = []
        if inner.has("matchExpressions"):
            node = inner.node_of("matchExpressions")
            if not isinstance(node, yaml.SequenceNode):
                self.problem(node, "selector.matchExpressions: must be a list")
            for position, item in enumerate(getattr(node, "value", [])):
                path = f"selector.matchExpressions[{position}]"
                requirement = self.requirement(item, path) if isinstance(node.value, list) else None
                if requirement is not None:
                    requirements.append(requirement)
        return LabelSelector(MappingProxyType(dict(labels)), tuple(requirements))

    def requirement(self, node: yaml.Node, path: str) -> LabelRequirement | None:
        """One ``matchExpressions`` item, checked as ``labels.NewRequirement`` checks it."""
        inner = self.mapping(node, path, _REQUIREMENT_KEYS)
        if inner is None:
            return None
        key = self.string(inner, "key", f"{path}.")
        operator = self.string(inner, "operator", f"{path}.")
        values = inner.get("values") or []
        where = inner.node_of("values")
        if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
            self.problem(where, f"{path}.values: must be a list of strings")
            return None
        for problem in filter(None, [_label_key_problem(key) if key else None]):
            self.problem(inner.node_of("key"), f"{path}.key: {problem}")
        for problem in filter(None, map(_label_value_problem, values)):
            self.problem(where, f"{path}.values: {problem}")
        if operator in ("In", "NotIn") and not values:
            self.problem(where, f"{path}.values: must not be empty for operator {operator}")
        elif operator in ("Exists", "DoesNotExist") and values:
            self.problem(where, f"{path}.values: must be empty for operator {operator}")
        elif operator and operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            message = f'{path}.operator: "{operator}" is not a valid label selector operator'
            self.problem(inner.node_of("operator"), message)
        return LabelRequirement(key, operator, tuple(values))

    def blacklist(self, fields: _Fields) -> tuple[GroupVersionKind, ...]:
        """``blacklist``: the child kinds never watched nor cached."""
        if not fields.has("blacklist"):
            return ()
        node = fields.node_of("blacklist")
        if not isinstance(node, yaml.SequenceNode):
            self.problem(node, "blacklist: must be a list of {group, version, kind}")
            return ()
        kinds = []
        for position, item in enumerate(node.value):
            path = f"blacklist[{position}]"
            inner = self.mapping(item, path, _GVK_KEYS)
            if inner is not None:
                kinds.append(
                    GroupVersionKind(
                        self.string(inner, "group", f"{path}.", allow_empty=True),
                        self.string(inner, "version", f"{path}."),
                        self.string(inner, "kind", f"{path}."),
                    )
                )
        return tuple(kinds)


def _shown(value: Any) -> str:
    """A wrong value as a problem shows it: nested values by their type only."""
    return {dict: "a mapping", list: "a list"}.get(type(value), repr(value))


# Label syntax of apimachinery's validation (IsQualifiedName, IsValidLabelValue).
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _label_key_problem(key: Any) -> str | None:
    """Why ``key`` is not a qualified label name (``[prefix/]name``), or ``None``."""
    if not isinstance(key, str):
        return f"a label key must be a string, not {key!r}"
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"{key!r}: the prefix must be a lowercase DNS subdomain of at most 253 characters"
    if not name or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (
            f"{key!r}: the name must be 1-63 characters, alphanumeric, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def _label_value_problem(value: Any) -> str | None:
    """Why ``value`` is not a valid label value, or ``None``."""
    if not isinstance(value, str):
        return f"a label value must be a string, not {value!r}"
    if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
        return (
            f"{value!r}: a label value must be at most 63 characters, alphanumeric, '-', '_' "
            "or '.', starting and ending with an alphanumeric character"
        )
    return None
