"""A unit-test double of the Kubernetes API server: in process, HTTPS on 127.0.0.1.

``FakeAPIServer`` serves the Kubernetes REST API (standard paths, JSON bodies, ``Status``
errors) from memory so the HTTP client, the Ansible modules and the runner can be tested
end to end on a machine without a kube-apiserver binary. It is a test double, **not** a
substitute for the integration suite on a real kube-apiserver and etcd
(``tests/integration``): where the two disagree, the real server is right and this file
is the bug.

Start it as a context manager (or ``start()``/``stop()``); ``stop()`` ends every thread
and closes every socket it opened::

    with FakeAPIServer(tmp_path / "apiserver") as server:
        server.write_kubeconfig(tmp_path / "kubeconfig", namespace="openstack")
        ...  # the code under test talks to server.url with server.token
        server.set_status("apps/v1", "Deployment", "openstack", "glance-api", {...})
        assert not server.writes()

Implemented, after the real server:

* Resources from one registry table (``RESOURCES``): core v1 Secrets, ConfigMaps,
  Services, Events, Namespaces; apps/v1 Deployments; policy/v1 PodDisruptionBudgets;
  autoscaling/v2 HorizontalPodAutoscalers; networking.k8s.io/v1 NetworkPolicies;
  batch/v1 Jobs and CronJobs; events.k8s.io/v1 Events; coordination.k8s.io/v1 Leases;
  scheduling.k8s.io/v1 PriorityClasses (cluster-scoped); the Glance and GlanceBackend
  custom resources (status subresource, schema defaults, OpenAPI and CEL validation from
  ``config/crd/bases``); gateway.networking.k8s.io/v1 HTTPRoutes when
  ``gateway_api=True``.
* Discovery: ``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}``,
  ``/apis/{group}/{version}`` (subresources listed), ``/version``; an unserved group or
  version is 404.
* Bearer-token authentication on every path (401 ``Unauthorized`` otherwise).
* GET, LIST (namespaced and across namespaces) with ``labelSelector`` (``=``, ``==``,
  ``!=``, ``in``, ``notin``, exists, ``!`` not-exists) and ``fieldSelector``
  (``metadata.name``, ``metadata.namespace``; on core Events also ``involvedObject.kind``,
  ``.name``, ``.namespace``, ``.uid``, ``reason``, ``type``); list items of built-in kinds carry no
  ``apiVersion``/``kind`` (custom resources' do), as the real server encodes them.
* WATCH (``watch=1|true``) from a ``resourceVersion`` (or from now, with synthetic ADDED
  events, when it is absent or ``0``), ``timeoutSeconds``, ``allowWatchBookmarks``
  (a BOOKMARK every ``bookmark_interval`` seconds); label/field selectors, including
  ADDED/DELETED when an update makes an object start/stop matching; a resourceVersion
  older than the kept history (``history_size`` events) gets an ERROR event carrying a
  410 ``Expired`` Status. One global resourceVersion counter.
* POST (``generateName``, uid, creationTimestamp, generation, resourceVersion, 409
  AlreadyExists), PUT (409 Conflict on a stale ``metadata.resourceVersion``), DELETE
  and DELETE of a collection (``propagationPolicy`` Background/Foreground/Orphan in the
  query or a DeleteOptions body; Jobs default to Orphan as batch/v1 does; finalizers
  keep an object with ``deletionTimestamp`` until they are removed; the garbage
  collector runs synchronously: dependents are deleted or orphaned by ownerReference
  uid, a dependent with another live owner only loses the reference, Foreground keeps
  the owner with the ``foregroundDeletion`` finalizer until its blocking dependents are
  gone). ``dryRun=All`` on create, update, patch and delete.
* PATCH: JSON merge patch, JSON patch (RFC 6902), strategic merge patch (approximated:
  a merge patch in which the keyed lists of ``_MAP_LISTS`` merge by key, honouring
  ``$patch: delete|replace`` and ``$deleteFromPrimitiveList``; ``$setElementOrder`` and
  ``$retainKeys`` are ignored; refused with 415 for custom resources as the real server
  does), and server-side apply (``application/apply-patch+yaml``, JSON or YAML) with
  ``fieldManager`` (required) and ``force``.
* Field management: ``managedFields`` per manager and operation (``Apply``/``Update``,
  ``subresource: status`` for status writes) in the real ``FieldsV1`` encoding
  (``f:`` fields, ``k:{...}`` items of associative lists, ``v:`` items of set lists,
  ``.`` for list items and empty values), with ``time``. Apply merges (associative lists
  by key, atomic lists and selectors replaced), removes a field its manager applied
  before and no longer applies unless another manager owns it, shares fields applied
  with the same value, and fails with 409 (``FieldManagerConflict`` causes) when it
  would change another manager's field, unless ``force`` takes the field over. Updates
  take the fields they change from other managers; their entries list leaf fields only
  (the real server also marks some maps and lists with ``.``, following Go types). The
  manager of a write without ``fieldManager`` is the User-Agent's product name. A write that changes nothing (a
  no-op apply) writes nothing: no resourceVersion bump, no event.
* ``metadata.generation`` starts at 1 and increments when anything outside metadata and
  status changes, and when a deletion is pending on finalizers.
* Status subresource: ``/status`` GET/PUT/PATCH/apply change only ``.status``; writes to
  the main resource of such a kind ignore ``.status`` (and POST drops it).
* Validation the operator relies on (422 ``Invalid`` with causes): immutable ConfigMap
  and Secret data, Secret ``type``; Deployment selector required, matching the template
  labels, immutable; Job ``spec.selector`` and ``spec.template`` immutable,
  ``restartPolicy`` OnFailure/Never; Service ``clusterIP`` allocated from 10.96.0.0/16
  (not for ExternalName; ``None`` stays headless), kept when an update omits it, and
  immutable; at most one ownerReference with ``controller: true``; no new finalizers on
  an object being deleted; object names (DNS subdomain, DNS label for Services).
* Defaults: Deployment replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit,
  progressDeadlineSeconds; Job parallelism/completions/backoffLimit/completionMode/
  suspend, its generated selector and controller-uid/job-name labels; CronJob policies
  and history limits; pod templates (restartPolicy, dnsPolicy, schedulerName,
  terminationGracePeriodSeconds, securityContext, container termination message,
  imagePullPolicy, port protocol, probe periods, volume defaultMode); Service type,
  port protocol and targetPort, sessionAffinity, IP families; Secret type Opaque and
  ``stringData`` folded into base64 ``data``; HPA minReplicas; NetworkPolicy
  policyTypes; HTTPRoute parent and backend reference defaults; CRD schema defaults.
* Service proxy: ``/api/v1/namespaces/{ns}/services/[http:|https:]{name}[:{port}]/proxy/...``
  forwards to a backend registered with ``set_service_backend``; a Service without one
  answers 503 ``no endpoints available for service "<name>"``, a missing Service 404.

Not implemented (the real server differs): any other resource, aggregated discovery,
OpenAPI documents, protobuf and table output; authorization (any valid token may do
anything) and admission webhooks (so test objects must carry what the operator's
defaulting webhook would add, e.g. a Glance's ``spec.cache.backend``); Namespace lifecycle (objects may be created in a
Namespace that does not exist, and deleting a Namespace deletes nothing in it);
``limit``/``continue`` paging and ``resourceVersion``/``resourceVersionMatch`` on LIST
(always the latest state, in one page); ``sendInitialEvents`` watches and the legacy
``/watch/`` paths; field selectors other than metadata.name/namespace; quantity
canonicalisation (``"0.5"`` stays ``"0.5"``); schema validation and unknown-field pruning
of built-in kinds (only the checks listed above); the full strategic merge patch
semantics (see above) and ``fieldValidation``; structured-merge-diff's exact list
ordering after a merge (kept live items first, new ones appended) and its schema (a
name-based table here, the CRD schema for custom resources); core/v1 and
events.k8s.io/v1 Events are stored apart, not as one resource; graceful deletion
periods (deletion is immediate or waits for finalizers); every object has
``metadata.generation``, where the real server leaves it out for some kinds.

Test controls (Python, not HTTP): ``store`` (``get``/``list``/``put``/``delete`` objects
directly, with resourceVersion bumps and watch events), ``set_status`` (play kubelet and
controllers), ``requests`` (every request as ``Request(method, path, query,
content_type)``), ``writes()`` (the mutating ones) and ``reset_requests()``.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import copy
import functools
import http.client
import http.server
import json
import re
import secrets
import shutil
import socket
import socketserver
import ssl
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from support.tls import make_server_tls

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "config" / "crd" / "bases"


# ---------------------------------------------------------------------------------------
# the registry


@dataclass(frozen=True)
class Resource:
    """One served resource: what the registry table knows of it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    has_status: bool
    crd_file: str = ""  # a custom resource: its CRD under config/crd/bases
    extra_subresources: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified_resource(self) -> str:
        """``deployments.apps``, ``configmaps``: how NotFound and Conflict name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """``Deployment.apps``, ``ConfigMap``: how Invalid names it."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def custom(self) -> bool:
        """Served from a CustomResourceDefinition (no strategic merge patch, typed lists)."""
        return self.group.endswith(("c5c3.io", "gateway.networking.k8s.io"))


GATEWAY_GROUP = "gateway.networking.k8s.io"
GLANCE_GROUP = "glance.openstack.c5c3.io"

RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "Secret", "secrets", True, False),
    Resource("", "v1", "ConfigMap", "configmaps", True, False),
    Resource("", "v1", "Service", "services", True, True, extra_subresources=("proxy",)),
    Resource("", "v1", "Event", "events", True, False),
    Resource("", "v1", "Namespace", "namespaces", False, True),
    Resource("apps", "v1", "Deployment", "deployments", True, True),
    Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, True),
    Resource(
        "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, True
    ),
    Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, False),
    Resource("batch", "v1", "Job", "jobs", True, True),
    Resource("batch", "v1", "CronJob", "cronjobs", True, True),
    Resource("events.k8s.io", "v1", "Event", "events", True, False),
    Resource("coordination.k8s.io", "v1", "Lease", "leases", True, False),
    Resource("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, False),
    Resource(
        GLANCE_GROUP,
        "v1alpha1",
        "Glance",
        "glances",
        True,
        True,
        crd_file="glance.openstack.c5c3.io_glances.yaml",
    ),
    Resource(
        GLANCE_GROUP,
        "v1alpha1",
        "GlanceBackend",
        "glancebackends",
        True,
        True,
        crd_file="glance.openstack.c5c3.io_glancebackends.yaml",
    ),
    Resource(GATEWAY_GROUP, "v1", "HTTPRoute", "httproutes", True, True),
)

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "proxy": ["create", "delete", "get", "patch", "update"],
}

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)

BACKGROUND, FOREGROUND, ORPHAN = "Background", "Foreground", "Orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"

_MISSING: Any = object()


@functools.cache
def crd_schema(crd_file: str, version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` in a CRD file (read once; never mutated)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load((CRD_DIR / crd_file).read_text(), Loader=loader)
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    return served["schema"]["openAPIV3Schema"]


# ---------------------------------------------------------------------------------------
# errors


class APIError(Exception):
    """A request the server refuses: answered with a ``Status`` of ``code``."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.reason, self.message, self.details)


def status_object(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    """A ``Status`` of failure, as the API server answers errors."""
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        out["details"] = details
    return out


def _details(res: Resource, name: str, kind: str | None = None, **extra: Any) -> dict:
    out: dict[str, Any] = {"name": name}
    if res.group:
        out["group"] = res.group
    out["kind"] = kind if kind is not None else res.plural
    out.update(extra)
    return out


def not_found(res: Resource, name: str) -> APIError:
    return APIError(
        404, "NotFound", f'{res.qualified_resource} "{name}" not found', _details(res, name)
    )


def already_exists(res: Resource, name: str) -> APIError:
    return APIError(
        409,
        "AlreadyExists",
        f'{res.qualified_resource} "{name}" already exists',
        _details(res, name),
    )


def conflict(res: Resource, name: str) -> APIError:
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.qualified_resource} "{name}": the object has '
        "been modified; please apply your changes to the latest version and try again",
        _details(res, name),
    )


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


# One field error: (type, path, value or _MISSING, detail). Types as field.ErrorType prints.
_CAUSE_REASONS = {
    "Invalid value": "FieldValueInvalid",
    "Required value": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Unsupported value": "FieldValueNotSupported",
    "Duplicate value": "FieldValueDuplicate",
    "Not found": "FieldValueNotFound",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Type invalid": "FieldValueTypeInvalid",
    "Internal error": "InternalError",
}


@dataclass(frozen=True)
class FieldProblem:
    type: str
    path: str
    detail: str = ""
    value: Any = _MISSING

    def body(self) -> str:
        shown = "Invalid value" if self.type == "Type invalid" else self.type
        if self.value is _MISSING or self.type in ("Required value", "Forbidden", "Too long"):
            text = shown
        else:
            text = f"{shown}: {_go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}"


def _go_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def invalid(res: Resource, name: str, problems: list[FieldProblem]) -> APIError:
    """422 Invalid, worded as the API server words a list of field errors."""
    text = str(problems[0]) if len(problems) == 1 else "[" + ", ".join(map(str, problems)) + "]"
    causes = [
        {
            "reason": _CAUSE_REASONS.get(p.type, "FieldValueInvalid"),
            "message": p.body(),
            "field": p.path,
        }
        for p in problems
    ]
    return APIError(
        422,
        "Invalid",
        f'{res.qualified_kind} "{name}" is invalid: {text}',
        _details(res, name, kind=res.kind, causes=causes),
    )


# ---------------------------------------------------------------------------------------
# selectors


_LABEL_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_LABEL_VALUE = r"[-A-Za-z0-9_.]*"


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _requirement(key: str, op: str, values: frozenset[str]) -> Callable[[dict], bool]:
    def holds(labels: dict) -> bool:
        if op == "exists":
            return key in labels
        if op == "!":
            return key not in labels
        if op in ("=", "==", "in"):
            return key in labels and labels[key] in values
        return labels.get(key) not in values  # "!=", "notin": absent labels match

    return holds


def parse_label_selector(text: str) -> Callable[[dict], bool]:
    """A predicate on a labels map for a ``labelSelector`` string (400 if malformed)."""
    reqs: list[Callable[[dict], bool]] = []
    for part in _split_top(text or ""):
        if m := re.fullmatch(rf"(!)?\s*({_LABEL_KEY})", part):
            reqs.append(_requirement(m.group(2), "!" if m.group(1) else "exists", frozenset()))
        elif m := re.fullmatch(rf"({_LABEL_KEY})\s*(==|=|!=)\s*({_LABEL_VALUE})", part):
            reqs.append(_requirement(m.group(1), m.group(2), frozenset({m.group(3)})))
        elif m := re.fullmatch(rf"({_LABEL_KEY})\s+(in|notin)\s*\(([^)]*)\)", part):
            values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append(_requirement(m.group(1), m.group(2), values))
        else:
            raise bad_request(
                f"unable to parse requirement: found '{part}', expected: !, identifier, or "
                "'end of string'"
            )
    return lambda labels: all(r(labels or {}) for r in reqs)


_FIELD_LABELS = {"metadata.name", "metadata.namespace"}
# The field labels core/v1 Events add (a subset of the API server's: what kubectl users type).
_EVENT_FIELD_LABELS = {
    "involvedObject.kind",
    "involvedObject.name",
    "involvedObject.namespace",
    "involvedObject.uid",
    "reason",
    "type",
}


def parse_field_selector(text: str, res: Resource) -> Callable[[dict], bool]:
    reqs: list[Callable[[dict], bool]] = []
    for part in _split_top(text or ""):
        m = re.fullmatch(r"([A-Za-z.]+)\s*(==|=|!=)\s*(.*)", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key, op, val = m.groups()
        event = res.kind == "Event" and res.group == ""
        if key not in _FIELD_LABELS and not (event and key in _EVENT_FIELD_LABELS):
            raise bad_request(f"field label not supported: {key}")
        path = tuple(key.split("."))

        def pred(obj: dict, path: tuple = path, op: str = op, val: str = val) -> bool:
            have: Any = obj
            for part in path:
                have = (have or {}).get(part) if isinstance(have, dict) else None
            have = "" if have is None else str(have)
            return have != val if op == "!=" else have == val

        reqs.append(pred)
    return lambda obj: all(r(obj) for r in reqs)


# ---------------------------------------------------------------------------------------
# the shape of objects: which lists are associative, which maps atomic


# Associative lists of the built-in kinds by field name (their list-map keys).
_MAP_LISTS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "resourceClaims": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
_SET_LISTS = frozenset({"finalizers"})
# Maps and structs the schema marks atomic (replaced whole): label selectors, node selector.
_ATOMIC_MAPS = frozenset(
    {"selector", "podSelector", "namespaceSelector", "labelSelector", "nodeSelector"}
)
_KEY_DEFAULTS = {"protocol": "TCP"}


class Shape:
    """What structured-merge-diff would read from the schema, for one resource."""

    def __init__(self, crd_schema: dict | None = None) -> None:
        self.crd = crd_schema

    def _crd_node(self, names: tuple[str, ...]) -> dict | None:
        node = self.crd
        for name in names:
            while node is not None and node.get("type") == "array":
                node = node.get("items")
            if node is None:
                return None
            props = node.get("properties") or {}
            extra = node.get("additionalProperties")
            node = props.get(name) or (extra if isinstance(extra, dict) else None)
        return node

    def _uses_crd(self, names: tuple[str, ...]) -> bool:
        return self.crd is not None and bool(names) and names[0] in ("spec", "status")

    def list_keys(self, names: tuple[str, ...], items: list) -> tuple[str, ...] | str | None:
        """The list-map keys of the list at ``names``, ``"set"``, or None (atomic)."""
        if self._uses_crd(names):
            node = self._crd_node(names) or {}
            kind = node.get("x-kubernetes-list-type")
            if kind == "map":
                return tuple(node.get("x-kubernetes-list-map-keys") or ()) or None
            return "set" if kind == "set" else None
        name = names[-1] if names else ""
        if name == "ports":
            if any(isinstance(i, dict) and "containerPort" in i for i in items):
                return ("containerPort", "protocol")
            if names == ("spec", "ports"):
                return ("port", "protocol")
            return None
        if name in _SET_LISTS:
            return "set"
        return _MAP_LISTS.get(name)

    def atomic_map(self, names: tuple[str, ...]) -> bool:
        if not names:
            return False
        if self._uses_crd(names):
            node = self._crd_node(names) or {}
            if node.get("type") == "array":
                node = node.get("items") or {}
            return node.get("x-kubernetes-map-type") == "atomic"
        return names[-1] in _ATOMIC_MAPS


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _key_value(item: dict, key: str) -> Any:
    return item.get(key, _KEY_DEFAULTS.get(key, _MISSING))


def _keyed(items: list, keys: tuple[str, ...]) -> bool:
    """Every item is a map with the first key, and no two items share a key."""
    seen = set()
    for item in items:
        if not isinstance(item, dict) or keys[0] not in item:
            return False
        pe = _key_pe(item, keys)
        if pe in seen:
            return False
        seen.add(pe)
    return True


def _key_pe(item: dict, keys: tuple[str, ...]) -> str:
    key = {k: v for k in keys if (v := _key_value(item, k)) is not _MISSING}
    return "k:" + _dumps(key)


def _find(items: list, pe: str) -> int | None:
    want = json.loads(pe[2:])
    for i, item in enumerate(items):
        if pe.startswith("v:"):
            if item == want:
                return i
        elif isinstance(item, dict) and all(_key_value(item, k) == v for k, v in want.items()):
            return i
    return None


Path_ = tuple[str, ...]


def field_set(value: Any, shape: Shape, names: tuple = (), path: Path_ = ()) -> set[Path_]:
    """The field paths ``value`` sets, as structured-merge-diff's ``ToFieldSet`` lists them."""
    out: set[Path_] = set()
    _walk_set(value, shape, names, path, out)
    return out


def _walk_set(value: Any, shape: Shape, names: tuple, path: Path_, out: set) -> None:
    if isinstance(value, dict) and value and not shape.atomic_map(names):
        for key, child in value.items():
            _walk_set(child, shape, (*names, key), (*path, f"f:{key}"), out)
        return
    if isinstance(value, list) and value:
        keys = shape.list_keys(names, value)
        if keys == "set":
            for item in value:
                out.add((*path, "v:" + _dumps(item)))
            return
        if keys and _keyed(value, keys):
            for item in value:
                item_path = (*path, _key_pe(item, keys))
                out.add(item_path)
                for key, child in item.items():
                    _walk_set(child, shape, (*names, key), (*item_path, f"f:{key}"), out)
            return
    if path:
        out.add(path)


def fields_v1(paths: Iterable[Path_]) -> dict[str, Any]:
    """A set of field paths as a ``fieldsV1`` tree."""
    root: dict[str, Any] = {}
    members: set[int] = set()
    nodes: dict[Path_, dict] = {(): root}
    for path in sorted(paths):
        node = root
        for i in range(len(path)):
            prefix = path[: i + 1]
            if prefix not in nodes:
                nodes[prefix] = node.setdefault(path[i], {})
            node = nodes[prefix]
        members.add(id(node))

    def finish(node: dict) -> dict:
        out: dict[str, Any] = {}
        if node and id(node) in members:
            out["."] = {}
        for key in sorted(node):
            out[key] = finish(node[key])
        return out

    return finish(root)


def paths_of(tree: dict[str, Any], prefix: Path_ = ()) -> set[Path_]:
    """The field paths of a ``fieldsV1`` tree."""
    out: set[Path_] = set()
    for key, child in (tree or {}).items():
        if key == ".":
            if prefix:
                out.add(prefix)
            continue
        path = (*prefix, key)
        if not child:
            out.add(path)
        else:
            out |= paths_of(child, path)
    return out


def _get_at(obj: Any, path: Path_) -> Any:
    cur = obj
    for pe in path:
        if pe.startswith("f:"):
            if not isinstance(cur, dict) or pe[2:] not in cur:
                return _MISSING
            cur = cur[pe[2:]]
        else:
            if not isinstance(cur, list):
                return _MISSING
            i = _find(cur, pe)
            if i is None:
                return _MISSING
            cur = cur[i]
    return cur


def _delete_at(obj: Any, path: Path_) -> None:
    parent = _get_at(obj, path[:-1])
    pe = path[-1]
    if pe.startswith("f:") and isinstance(parent, dict):
        parent.pop(pe[2:], None)
    elif isinstance(parent, list):
        i = _find(parent, pe)
        if i is not None:
            del parent[i]


def path_string(path: Path_) -> str:
    """A field path as structured-merge-diff prints it: ``.spec.containers[name="api"].image``."""
    out = ""
    for pe in path:
        if pe.startswith("f:"):
            out += "." + pe[2:]
        elif pe.startswith("k:"):
            key = json.loads(pe[2:])
            out += "[" + ",".join(f"{k}={_dumps(v)}" for k, v in key.items()) + "]"
        else:
            out += "[=" + pe[2:] + "]"
    return out


def ssa_merge(live: Any, applied: Any, shape: Shape, names: tuple = ()) -> Any:
    """``applied`` merged over ``live``: maps by field, associative lists by key, the rest replaced."""
    if isinstance(applied, dict) and isinstance(live, dict) and not shape.atomic_map(names):
        out = copy.deepcopy(live)
        for key, value in applied.items():
            if value is None:
                out.pop(key, None)
                continue
            out[key] = ssa_merge(live.get(key, _MISSING), value, shape, (*names, key))
        return out
    if isinstance(applied, list) and isinstance(live, list):
        keys = shape.list_keys(names, applied + live)
        if keys == "set":
            return copy.deepcopy(live) + [copy.deepcopy(x) for x in applied if x not in live]
        if keys and _keyed(applied, keys) and _keyed(live, keys):
            out = copy.deepcopy(live)
            for item in applied:
                i = _find(out, _key_pe(item, keys))
                if i is None:
                    out.append(copy.deepcopy(item))
                else:
                    out[i] = ssa_merge(out[i], item, shape, names)
            return out
    return copy.deepcopy(applied)


def _under(path: Path_, paths: Iterable[Path_]) -> bool:
    """Some path of ``paths`` is ``path`` or lies below it."""
    n = len(path)
    return any(p[:n] == path for p in paths)


def remove_fields(obj: dict, paths: Iterable[Path_], keep: set[Path_]) -> None:
    """Remove ``paths`` from ``obj`` (a list item whole, before its fields), sparing what ``keep`` owns below them,
    and maps or lists the removal leaves empty that nobody owns."""
    for path in sorted(paths, key=len):
        if _under(path, keep):
            continue
        if _get_at(obj, path) is _MISSING:
            continue
        _delete_at(obj, path)
        parent = path[:-1]
        while len(parent) > 1:
            value = _get_at(obj, parent)
            if value not in ({}, []) or _under(parent, keep):
                break
            _delete_at(obj, parent)
            parent = parent[:-1]


# ---------------------------------------------------------------------------------------
# patches


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _pointer(text: str) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise ValueError(f"JSON pointer must start with '/': {text!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/")]


def _ptr_parent(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, list):
            cur = cur[int(part)]
        elif isinstance(cur, dict):
            cur = cur[part]
        else:
            raise KeyError(part)
    return cur


def _ptr_get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent = _ptr_parent(doc, parts)
    return parent[int(parts[-1])] if isinstance(parent, list) else parent[parts[-1]]


def _ptr_remove(doc: Any, parts: list[str]) -> Any:
    parent = _ptr_parent(doc, parts)
    if isinstance(parent, list):
        return parent.pop(int(parts[-1]))
    return parent.pop(parts[-1])


def _ptr_add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _ptr_parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if not 0 <= index <= len(parent):
            raise IndexError(last)
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise KeyError(last)
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch (ValueError on a bad or failing operation)."""
    if not isinstance(ops, list):
        raise ValueError("a JSON patch is a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        try:
            kind, path = op["op"], _pointer(op["path"])
            if kind == "add":
                doc = _ptr_add(doc, path, copy.deepcopy(op["value"]))
            elif kind == "remove":
                _ptr_remove(doc, path)
            elif kind == "replace":
                _ptr_get(doc, path)
                if path:
                    _ptr_remove(doc, path)
                doc = _ptr_add(doc, path, copy.deepcopy(op["value"]))
            elif kind in ("move", "copy"):
                source = _pointer(op["from"])
                value = copy.deepcopy(_ptr_get(doc, source))
                if kind == "move":
                    _ptr_remove(doc, source)
                doc = _ptr_add(doc, path, value)
            elif kind == "test":
                if _ptr_get(doc, path) != op["value"]:
                    raise ValueError(f"testing value {op['path']} failed")
            else:
                raise ValueError(f"Unexpected kind: {kind}")
        except (KeyError, IndexError, TypeError) as err:
            raise ValueError(
                f"{op.get('op')} operation does not apply: doc is missing path: {op.get('path')}: {err}"
            ) from err
    return doc


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def strategic_merge_patch(target: Any, patch: Any, shape: Shape, names: tuple = ()) -> Any:
    """An approximation of strategic merge patch (see the module docstring)."""
    if isinstance(patch, dict):
        directive = patch.get("$patch")
        if directive == "delete":
            return _MISSING
        if directive == "replace" or not isinstance(target, dict) or shape.atomic_map(names):
            return _strip_directives(patch)
        out = copy.deepcopy(target)
        for key, value in patch.items():
            if key.startswith("$deleteFromPrimitiveList/"):
                name = key.split("/", 1)[1]
                out[name] = [x for x in out.get(name) or [] if x not in (value or [])]
                continue
            if key.startswith("$"):
                continue
            if value is None:
                out.pop(key, None)
                continue
            merged = strategic_merge_patch(out.get(key, _MISSING), value, shape, (*names, key))
            if merged is _MISSING:
                out.pop(key, None)
            else:
                out[key] = merged
        return out
    if isinstance(patch, list) and isinstance(target, list):
        keys = shape.list_keys(names, patch + target)
        if keys == "set":
            return copy.deepcopy(target) + [x for x in patch if x not in target]
        items = [p for p in patch if isinstance(p, dict)]
        if (
            keys
            and len(items) == len(patch)
            and _keyed(target, keys)
            and all(keys[0] in p for p in items)
        ):
            out = copy.deepcopy(target)
            for item in items:
                i = _find(out, _key_pe(item, keys))
                if item.get("$patch") == "delete":
                    if i is not None:
                        del out[i]
                elif i is None:
                    out.append(_strip_directives(item))
                else:
                    out[i] = strategic_merge_patch(out[i], item, shape, names)
            return out
    if isinstance(patch, list):
        return [
            _strip_directives(p)
            for p in patch
            if not (isinstance(p, dict) and p.get("$patch") == "delete")
        ]
    return copy.deepcopy(patch)


# ---------------------------------------------------------------------------------------
# defaults and validation of the built-in kinds


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _probe_defaults(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        probe["httpGet"].setdefault("scheme", "HTTP")
        probe["httpGet"].setdefault("path", "/")


def _pod_template_defaults(template: Any) -> None:
    if not isinstance(template, dict):
        return
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault(
                "imagePullPolicy", _image_pull_policy(str(container.get("image", "")))
            )
            container.setdefault("resources", {})
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                _probe_defaults(container.get(probe))
            for env in container.get("env") or []:
                ref = ((env or {}).get("valueFrom") or {}).get("fieldRef")
                if isinstance(ref, dict):
                    ref.setdefault("apiVersion", "v1")
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        for source in ("configMap", "secret", "projected", "downwardAPI"):
            if isinstance(volume.get(source), dict):
                volume[source].setdefault("defaultMode", 420)


def _job_spec_defaults(spec: dict) -> None:
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    _pod_template_defaults(spec.get("template"))


def _route_defaults(spec: dict) -> None:
    for ref in spec.get("parentRefs") or []:
        if isinstance(ref, dict):
            ref.setdefault("group", GATEWAY_GROUP)
            ref.setdefault("kind", "Gateway")
    rules = spec.setdefault(
        "rules", [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}]
    )
    for rule in rules or []:
        if not isinstance(rule, dict):
            continue
        rule.setdefault("matches", [{"path": {"type": "PathPrefix", "value": "/"}}])
        for match in rule["matches"] or []:
            if isinstance(match, dict) and isinstance(match.get("path"), dict):
                match["path"].setdefault("type", "PathPrefix")
                match["path"].setdefault("value", "/")
        for ref in rule.get("backendRefs") or []:
            if isinstance(ref, dict):
                ref.setdefault("group", "")
                ref.setdefault("kind", "Service")
                ref.setdefault("weight", 1)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def builtin_defaults(kind: str, obj: dict) -> None:
    """Fill in what the real server's defaulting (and Secret conversion) fills in."""
    spec = obj.get("spec")
    if kind == "Secret":
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = obj.setdefault("data", {}) or {}
            obj["data"] = data
            for key, value in string_data.items():
                data[key] = _b64(str(value))
    if kind == "Namespace":
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("finalizers", ["kubernetes"])
        labels = obj["metadata"].setdefault("labels", {})
        labels.setdefault("kubernetes.io/metadata.name", obj["metadata"].get("name", ""))
    if not isinstance(spec, dict):
        return
    if kind == "Deployment":
        spec.setdefault("replicas", 1)
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxSurge", "25%")
            rolling.setdefault("maxUnavailable", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        _pod_template_defaults(spec.get("template"))
    elif kind == "Job":
        _job_spec_defaults(spec)
    elif kind == "CronJob":
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        job_spec = (spec.get("jobTemplate") or {}).get("spec")
        if isinstance(job_spec, dict):
            job_spec.setdefault("backoffLimit", 6)
            job_spec.setdefault("completionMode", "NonIndexed")
            job_spec.setdefault("suspend", False)
            job_spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
            _pod_template_defaults(job_spec.get("template"))
    elif kind == "Service":
        spec.setdefault("type", "ClusterIP")
        if spec["type"] != "ExternalName":
            spec.setdefault("sessionAffinity", "None")
            spec.setdefault("internalTrafficPolicy", "Cluster")
            for port in spec.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
                    if "port" in port:
                        port.setdefault("targetPort", port["port"])
    elif kind == "HorizontalPodAutoscaler":
        spec.setdefault("minReplicas", 1)
    elif kind == "NetworkPolicy":
        if "policyTypes" not in spec:
            spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
        for direction in ("ingress", "egress"):
            for rule in spec.get(direction) or []:
                for port in (rule or {}).get("ports") or []:
                    if isinstance(port, dict):
                        port.setdefault("protocol", "TCP")
    elif kind == "HTTPRoute":
        _route_defaults(spec)


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def _name_problems(res: Resource, name: str) -> list[FieldProblem]:
    if res.kind == "Service":
        if len(name) > 63 or not _DNS_LABEL_1035.fullmatch(name):
            return [
                FieldProblem(
                    "Invalid value",
                    "metadata.name",
                    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                    "start with an alphabetic character, and end with an alphanumeric character",
                    name,
                )
            ]
    elif len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return [
            FieldProblem(
                "Invalid value",
                "metadata.name",
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                name,
            )
        ]
    return []


def _selector_matches(selector: dict, labels: dict) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def builtin_problems(res: Resource, old: dict | None, new: dict) -> list[FieldProblem]:
    """What the real server's validation of ``res`` refuses (the subset listed above)."""
    out: list[FieldProblem] = []
    kind = res.kind
    spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    old_spec = (old or {}).get("spec") or {}
    if kind in ("ConfigMap", "Secret") and old is not None and old.get("immutable"):
        for data_field in ("data", "binaryData") if kind == "ConfigMap" else ("data",):
            if (old.get(data_field) or {}) != (new.get(data_field) or {}):
                out.append(
                    FieldProblem(
                        "Forbidden", data_field, "field is immutable when `immutable` is set"
                    )
                )
        if not new.get("immutable"):
            out.append(
                FieldProblem("Forbidden", "immutable", "field is immutable when `immutable` is set")
            )
    if kind == "Secret" and old is not None and old.get("type") != new.get("type"):
        out.append(FieldProblem("Invalid value", "type", "field is immutable", new.get("type")))
    if kind == "Deployment":
        selector = spec.get("selector")
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not isinstance(selector, dict) or not selector:
            out.append(FieldProblem("Required value", "spec.selector"))
        elif not _selector_matches(selector, labels):
            out.append(
                FieldProblem(
                    "Invalid value",
                    "spec.template.metadata.labels",
                    "`selector` does not match template `labels`",
                    labels,
                )
            )
        if old is not None and old_spec.get("selector") != spec.get("selector"):
            out.append(
                FieldProblem(
                    "Invalid value", "spec.selector", "field is immutable", spec.get("selector")
                )
            )
    if kind == "Job":
        policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            out.append(
                FieldProblem(
                    "Unsupported value",
                    "spec.template.spec.restartPolicy",
                    'supported values: "OnFailure", "Never"',
                    policy,
                )
            )
        if old is not None:
            if old_spec.get("selector") != spec.get("selector"):
                out.append(
                    FieldProblem(
                        "Invalid value", "spec.selector", "field is immutable", spec.get("selector")
                    )
                )
            if old_spec.get("template") != spec.get("template"):
                out.append(
                    FieldProblem(
                        "Invalid value", "spec.template", "field is immutable", spec.get("template")
                    )
                )
    if kind == "Service":
        if old is not None:
            was, now = old_spec.get("clusterIP"), spec.get("clusterIP")
            if was and was != now and old_spec.get("type") != "ExternalName":
                out.append(
                    FieldProblem(
                        "Invalid value",
                        "spec.clusterIPs[0]",
                        "may not change once set",
                        spec.get("clusterIPs") or [now],
                    )
                )
        if (
            spec.get("type") != "ExternalName"
            and spec.get("clusterIP") != "None"
            and not spec.get("ports")
        ):
            out.append(FieldProblem("Required value", "spec.ports"))
    refs = (new.get("metadata") or {}).get("ownerReferences") or []
    controllers = [r for r in refs if isinstance(r, dict) and r.get("controller")]
    if len(controllers) > 1:
        names = ", ".join(f"{r.get('kind')}/{r.get('name')}" for r in controllers)
        out.append(
            FieldProblem(
                "Invalid value",
                "metadata.ownerReferences",
                f'Only one reference can have Controller set to true. Found "true" in references for {names}',
                refs,
            )
        )
    for i, ref in enumerate(refs):
        for key in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(key):
                out.append(
                    FieldProblem(
                        "Invalid value",
                        f"metadata.ownerReferences[{i}].{key}",
                        f"{key} must not be empty",
                        "",
                    )
                )
    if old is not None and old["metadata"].get("deletionTimestamp"):
        added = [
            f
            for f in new["metadata"].get("finalizers") or []
            if f not in (old["metadata"].get("finalizers") or [])
        ]
        if added:
            out.append(
                FieldProblem(
                    "Forbidden",
                    "metadata.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new finalizers {added}",
                )
            )
    return out


# ---------------------------------------------------------------------------------------
# the store


class Request(NamedTuple):
    method: str
    path: str
    query: dict[str, str]
    content_type: str


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class _Event:
    rv: int
    res: Resource
    type: str
    obj: dict
    old: dict | None


@dataclass
class _Managed:
    """One ``managedFields`` entry, its field set parsed."""

    fields: set
    api_version: str
    time: str


ManagerId = tuple[str, str, str]  # manager, operation, subresource

_META_SYSTEM = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}


def _labels(obj: dict | None) -> dict:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


class _Watch:
    """A streamed response: an iterator of byte chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks


@dataclass
class _Response:
    code: int
    body: bytes
    content_type: str = "application/json"


class StoreView:
    """Direct access to the stored objects for tests (no HTTP, no request records)."""

    def __init__(self, server: FakeAPIServer) -> None:
        self._server = server

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict | None:
        s = self._server
        res = s.resource_for(api_version, kind)
        with s._lock:
            obj = s._objects[res].get((namespace or "", name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict]:
        s = self._server
        res = s.resource_for(api_version, kind)
        with s._lock:
            return [
                copy.deepcopy(o)
                for (ns, _), o in sorted(s._objects[res].items())
                if namespace is None or ns == namespace
            ]

    def put(self, obj: dict) -> dict:
        """Store ``obj`` as given (created or replaced, no validation), as another writer would."""
        s = self._server
        res = s.resource_for(obj["apiVersion"], obj["kind"])
        with s._lock:
            new = copy.deepcopy(obj)
            meta = new.setdefault("metadata", {})
            ns = meta.get("namespace", "") if res.namespaced else ""
            key = (ns, meta["name"])
            live = s._objects[res].get(key)
            if live is None:
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", s._now())
                meta.setdefault("generation", 1)
                s._store(res, new, "ADDED", None)
            else:
                for f in ("uid", "creationTimestamp"):
                    meta[f] = live["metadata"][f]
                meta["generation"] = live["metadata"].get("generation", 1) + (
                    _spec_part(new) != _spec_part(live)
                )
                s._store(res, new, "MODIFIED", live)
            return copy.deepcopy(new)

    def delete(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        propagation: str = BACKGROUND,
    ) -> None:
        s = self._server
        res = s.resource_for(api_version, kind)
        with s._lock:
            live = s._objects[res].get((namespace or "", name))
            if live is None:
                raise KeyError(name)
            s._delete(res, live, propagation)


class FakeAPIServer:
    """The Kubernetes REST API from memory over HTTPS on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        directory: Path | str | None = None,
        *,
        gateway_api: bool = True,
        token: str | None = None,
        history_size: int = 1000,
        bookmark_interval: float = 5.0,
        watch_timeout: float = 300.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._own_dir = directory is None
        self.directory = (
            Path(directory)
            if directory is not None
            else Path(tempfile.mkdtemp(prefix="fake-apiserver-"))
        )
        self.gateway_api = gateway_api
        self.token = token or secrets.token_urlsafe(24)
        self.history_size = history_size
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.clock = clock or (lambda: datetime.now(UTC))
        self.resources = tuple(r for r in RESOURCES if gateway_api or r.group != GATEWAY_GROUP)
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._objects: dict[Resource, dict[tuple[str, str], dict]] = {r: {} for r in self.resources}
        self._rv = 0
        self._history: collections.deque[_Event] = collections.deque()
        self._compacted = 0
        self._cluster_ips = 10
        self._backends: dict[tuple[str, str, str], str] = {}
        self._pending_policy: dict[str, str] = {}
        self._shapes: dict[Resource, Shape] = {}
        self._schemas: dict[Resource, dict] = {}
        for res in self.resources:
            schema = None
            if res.crd_file:
                schema = crd_schema(res.crd_file, res.version)
                self._schemas[res] = schema
            self._shapes[res] = Shape(schema)
        self.requests: list[Request] = []
        self.store = StoreView(self)
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.tls = None
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeAPIServer:
        self.tls = make_server_tls(self.directory / "tls")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.tls.cert_file, self.tls.key_file)
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, context, self)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-apiserver",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.close_connections()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> FakeAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        assert self.tls is not None, "start() the server first"
        return self.tls.ca_file

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that verifies this server's certificate."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def write_kubeconfig(self, path: Path | str, namespace: str | None = None) -> Path:
        """A kubeconfig for this server (CA data, token), loadable like a real one."""
        context: dict[str, Any] = {"cluster": "fake", "user": "fake"}
        if namespace:
            context["namespace"] = namespace
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "fake",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self.tls.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": "fake", "user": {"token": self.token}}],
            "contexts": [{"name": "fake", "context": context}],
            "current-context": "fake",
            "preferences": {},
        }
        path = Path(path)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)
        return path

    # -- test controls --------------------------------------------------------------------
    def resource_for(self, api_version: str, kind: str) -> Resource:
        for res in self.resources:
            if res.api_version == api_version and res.kind == kind:
                return res
        raise KeyError(f"{api_version} {kind} is not served")

    def set_status(
        self, api_version: str, kind: str, namespace: str | None, name: str, status: dict
    ) -> dict:
        """Replace ``.status`` as a controller would (resourceVersion bump, MODIFIED event)."""
        res = self.resource_for(api_version, kind)
        with self._lock:
            live = self._objects[res].get((namespace or "", name))
            if live is None:
                raise KeyError(f"{kind} {namespace}/{name} not found")
            new = copy.deepcopy(live)
            new["status"] = copy.deepcopy(status)
            if new != live:
                self._store(res, new, "MODIFIED", live)
            return copy.deepcopy(new)

    def set_service_backend(
        self, namespace: str, name: str, port: int | str, url: str | None
    ) -> None:
        """Make the service proxy forward ``{name}:{port}`` to ``url`` (None: no endpoints)."""
        with self._lock:
            key = (namespace, name, str(port))
            if url is None:
                self._backends.pop(key, None)
            else:
                self._backends[key] = url.rstrip("/")

    def writes(self) -> list[Request]:
        """The mutating requests recorded so far."""
        with self._lock:
            return [r for r in self.requests if r.method in WRITE_METHODS]

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    # -- internals: store -----------------------------------------------------------------
    def _now(self) -> str:
        return self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _store(self, res: Resource, obj: dict, event: str, old: dict | None) -> dict:
        """Write ``obj`` (or remove it for DELETED) with a new resourceVersion and an event."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        ns = obj["metadata"].get("namespace", "") if res.namespaced else ""
        key = (ns, obj["metadata"]["name"])
        if event == "DELETED":
            self._objects[res].pop(key, None)
        else:
            self._objects[res][key] = obj
        self._history.append(_Event(self._rv, res, event, copy.deepcopy(obj), copy.deepcopy(old)))
        while len(self._history) > self.history_size:
            self._compacted = self._history.popleft().rv
        self._cond.notify_all()
        return obj

    def _all_objects(self) -> Iterator[tuple[Resource, dict]]:
        for res, objs in self._objects.items():
            for obj in list(objs.values()):
                yield res, obj

    def _uid_exists(self, uid: str) -> bool:
        return any(o["metadata"].get("uid") == uid for _, o in self._all_objects())

    def _dependents(self, uid: str) -> list[tuple[Resource, dict]]:
        return [
            (res, obj)
            for res, obj in self._all_objects()
            if any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])
        ]

    def _drop_owner_ref(self, res: Resource, obj: dict, uid: str) -> None:
        new = copy.deepcopy(obj)
        refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        prefix = ("f:metadata", "f:ownerReferences", "k:" + _dumps({"uid": uid}))
        entries = []
        for entry in new["metadata"].get("managedFields") or []:
            paths = {p for p in paths_of(entry.get("fieldsV1") or {}) if p[: len(prefix)] != prefix}
            if paths:
                entries.append({**entry, "fieldsV1": fields_v1(paths)})
        if entries:
            new["metadata"]["managedFields"] = entries
        else:
            new["metadata"].pop("managedFields", None)
        self._store(res, new, "MODIFIED", obj)
        self._finish_if_released(res, new)

    def _delete(self, res: Resource, live: dict, policy: str) -> dict | None:
        """Delete ``live`` with ``policy``; the object if it stays (finalizers), else None."""
        meta = live["metadata"]
        uid = meta["uid"]
        if meta.get("deletionTimestamp"):
            return live
        if policy == ORPHAN:
            for dep_res, dep in self._dependents(uid):
                self._drop_owner_ref(dep_res, dep, uid)
        finalizers = list(meta.get("finalizers") or [])
        if (
            policy == FOREGROUND
            and self._dependents(uid)
            and FOREGROUND_FINALIZER not in finalizers
        ):
            finalizers.append(FOREGROUND_FINALIZER)
        if finalizers:
            new = copy.deepcopy(live)
            new["metadata"]["finalizers"] = finalizers
            new["metadata"]["deletionTimestamp"] = self._now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["metadata"]["generation"] = meta.get("generation", 1) + 1
            self._pending_policy[uid] = BACKGROUND if policy == ORPHAN else policy
            self._store(res, new, "MODIFIED", live)
            if FOREGROUND_FINALIZER in finalizers:
                for dep_res, dep in self._dependents(uid):
                    current = self._objects[dep_res].get(self._key(dep_res, dep))
                    if current is not None:
                        self._delete(dep_res, current, FOREGROUND)
                self._release_foreground()
            return self._objects[res].get(self._key(res, new))
        self._remove(res, live, policy)
        return None

    def _key(self, res: Resource, obj: dict) -> tuple[str, str]:
        meta = obj["metadata"]
        return (meta.get("namespace", "") if res.namespaced else "", meta["name"])

    def _remove(self, res: Resource, live: dict, policy: str) -> None:
        """The object is gone: DELETED, then the garbage collector for its dependents."""
        gone = copy.deepcopy(live)
        uid = gone["metadata"]["uid"]
        self._pending_policy.pop(uid, None)
        self._store(res, gone, "DELETED", live)
        if policy == ORPHAN:
            for dep_res, dep in self._dependents(uid):
                self._drop_owner_ref(dep_res, dep, uid)
        else:
            for dep_res, dep in self._dependents(uid):
                current = self._objects[dep_res].get(self._key(dep_res, dep))
                if current is None:
                    continue
                owners = [
                    r
                    for r in current["metadata"].get("ownerReferences") or []
                    if r.get("uid") != uid
                ]
                if any(self._uid_exists(r.get("uid", "")) for r in owners):
                    self._drop_owner_ref(dep_res, current, uid)
                else:
                    self._delete(dep_res, current, BACKGROUND)
        self._release_foreground()

    def _release_foreground(self) -> None:
        """Owners deleted in the foreground whose blocking dependents are all gone go too."""
        changed = True
        while changed:
            changed = False
            for res, obj in self._all_objects():
                meta = obj["metadata"]
                if not meta.get("deletionTimestamp") or FOREGROUND_FINALIZER not in (
                    meta.get("finalizers") or []
                ):
                    continue
                blocking = [
                    d
                    for _, d in self._dependents(meta["uid"])
                    if any(
                        r.get("uid") == meta["uid"] and r.get("blockOwnerDeletion")
                        for r in d["metadata"].get("ownerReferences") or []
                    )
                ]
                if blocking:
                    continue
                new = copy.deepcopy(obj)
                new["metadata"]["finalizers"] = [
                    f for f in meta["finalizers"] if f != FOREGROUND_FINALIZER
                ]
                self._store(res, new, "MODIFIED", obj)
                self._finish_if_released(res, new)
                changed = True
                break

    def _finish_if_released(self, res: Resource, obj: dict) -> None:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            current = self._objects[res].get(self._key(res, obj))
            if current is not None:
                self._remove(res, current, self._pending_policy.get(meta["uid"], BACKGROUND))

    # -- internals: writes ----------------------------------------------------------------
    def _managed(self, obj: dict | None) -> dict[ManagerId, _Managed]:
        out: dict[ManagerId, _Managed] = {}
        for entry in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
            ident = (
                entry.get("manager", ""),
                entry.get("operation", ""),
                entry.get("subresource", ""),
            )
            out[ident] = _Managed(
                paths_of(entry.get("fieldsV1") or {}),
                entry.get("apiVersion", ""),
                entry.get("time", ""),
            )
        return out

    def _managed_fields(self, entries: dict[ManagerId, _Managed]) -> list[dict]:
        out = []
        for (manager, operation, sub), entry in entries.items():
            if not entry.fields:
                continue
            item = {
                "manager": manager,
                "operation": operation,
                "apiVersion": entry.api_version,
                "time": entry.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_v1(entry.fields),
            }
            if sub:
                item["subresource"] = sub
            out.append(item)
        return out

    @staticmethod
    def _managed_paths(paths: set[Path_], res: Resource, sub: str) -> set[Path_]:
        """The paths a write of ``sub`` may own (structured-merge-diff's stripped fields out)."""
        out = set()
        for path in paths:
            head = path[0]
            if head in ("f:apiVersion", "f:kind"):
                continue
            if head == "f:metadata" and (len(path) == 1 or path[1][2:] in _META_SYSTEM):
                continue
            if sub == "status":
                if head != "f:status":
                    continue
            elif res.has_status and head == "f:status":
                continue
            out.add(path)
        return out

    def _custom_problems(self, res: Resource, old: dict | None, new: dict) -> list[FieldProblem]:
        schema = self._schemas.get(res)
        if schema is None:
            return []
        from ansible_collections.c5c3.glance.plugins.module_utils.admission import openapi_schema

        errors = list(
            openapi_schema.validate(schema, {k: v for k, v in new.items() if k != "metadata"})
        )
        try:
            from ansible_collections.c5c3.glance.plugins.module_utils.admission import (
                cel_validation,
            )
        except ImportError:  # pragma: no cover - celpy is in the test requirements
            cel_validation = None
        if cel_validation is not None:
            body = {k: v for k, v in new.items() if k != "metadata"}
            if old is None:
                errors += cel_validation.validate(schema, body)
            else:
                errors += cel_validation.validate(
                    schema, body, {k: v for k, v in old.items() if k != "metadata"}
                )
        return [
            FieldProblem(e.type, e.path, e.detail, e.value if e.has_value else _MISSING)
            for e in errors
        ]

    def _defaults(self, res: Resource, obj: dict) -> dict:
        schema = self._schemas.get(res)
        if schema is not None:
            from ansible_collections.c5c3.glance.plugins.module_utils.admission import (
                openapi_schema,
            )

            meta = obj.get("metadata")
            obj = openapi_schema.apply_defaults(
                schema, {k: v for k, v in obj.items() if k != "metadata"}
            )
            obj["metadata"] = meta
        builtin_defaults(res.kind, obj)
        return obj

    def _check(self, res: Resource, old: dict | None, new: dict) -> None:
        name = new["metadata"].get("name", "")
        problems = builtin_problems(res, old, new) + self._custom_problems(res, old, new)
        if problems:
            raise invalid(res, name, problems)

    def _allocate(self, res: Resource, obj: dict) -> None:
        """What the registry fills in on create: a Service's cluster IP, a Job's selector."""
        spec = obj.get("spec")
        if res.kind == "Service" and isinstance(spec, dict) and spec.get("type") != "ExternalName":
            if not spec.get("clusterIP"):
                self._cluster_ips += 1
                n = self._cluster_ips
                spec["clusterIP"] = f"10.96.{n // 256}.{n % 256}"
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            if spec["clusterIP"] != "None":
                spec.setdefault("ipFamilies", ["IPv4"])
                spec.setdefault("ipFamilyPolicy", "SingleStack")
        if res.kind == "Job" and isinstance(spec, dict) and not spec.get("manualSelector"):
            uid = obj["metadata"]["uid"]
            name = obj["metadata"]["name"]
            spec.setdefault(
                "selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
            )
            template = spec.setdefault("template", {})
            labels = template.setdefault("metadata", {}).setdefault("labels", {})
            labels.setdefault("batch.kubernetes.io/controller-uid", uid)
            labels.setdefault("batch.kubernetes.io/job-name", name)
            labels.setdefault("controller-uid", uid)
            labels.setdefault("job-name", name)

    def _prepare_new(self, res: Resource, ns: str, obj: Any) -> dict:
        if not isinstance(obj, dict):
            raise bad_request("the body of the request is not a JSON object")
        obj = copy.deepcopy(obj)
        if obj.get("apiVersion") not in (None, res.api_version):
            raise bad_request(
                f"the API version in the data ({obj.get('apiVersion')}) does not match the expected API version ({res.api_version})"
            )
        if obj.get("kind") not in (None, res.kind):
            raise bad_request(
                f"the kind in the data ({obj.get('kind')}) does not match the expected kind ({res.kind})"
            )
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if res.namespaced:
            if meta.get("namespace") not in (None, "", ns):
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        return obj

    def _create(
        self,
        res: Resource,
        ns: str,
        body: Any,
        manager: str,
        dry_run: bool,
        apply_fields: set | None = None,
    ) -> dict:
        obj = self._prepare_new(res, ns, body)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise APIError(
                500, "InternalError", "resourceVersion should not be set on objects to be created"
            )
        for key in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
            "managedFields",
        ):
            meta.pop(key, None)
        if not meta.get("name") and meta.get("generateName"):
            for _ in range(100):
                suffix = "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
                candidate = meta["generateName"] + suffix
                if (ns if res.namespaced else "", candidate) not in self._objects[res]:
                    meta["name"] = candidate
                    break
        name = meta.get("name") or ""
        if not name:
            raise invalid(
                res,
                "",
                [
                    FieldProblem(
                        "Required value", "metadata.name", "name or generateName is required"
                    )
                ],
            )
        if problems := _name_problems(res, name):
            raise invalid(res, name, problems)
        if (ns if res.namespaced else "", name) in self._objects[res]:
            raise already_exists(res, name)
        if res.has_status:
            obj.pop("status", None)
            if not res.custom:
                obj["status"] = {
                    "Service": {"loadBalancer": {}},
                    "Namespace": {"phase": "Active"},
                }.get(res.kind, {})
        obj = self._defaults(res, obj)
        meta = obj["metadata"]
        if apply_fields is not None:
            entries = {(manager, "Apply", ""): _Managed(apply_fields, res.api_version, self._now())}
        else:
            fields = self._managed_paths(field_set(obj, self._shapes[res]), res, "")
            entries = {(manager, "Update", ""): _Managed(fields, res.api_version, self._now())}
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self._now()
        meta["generation"] = 1
        self._allocate(res, obj)
        self._check(res, None, obj)
        managed = self._managed_fields(entries)
        if managed:
            meta["managedFields"] = managed
        if dry_run:
            return obj
        return copy.deepcopy(self._store(res, obj, "ADDED", None))

    def _finish(self, res: Resource, live: dict, new: Any, sub: str) -> dict:
        """The object a write of ``new`` over ``live`` stores (before field management)."""
        if not isinstance(new, dict):
            raise bad_request("the body of the request is not a JSON object")
        new = copy.deepcopy(new)
        new["apiVersion"], new["kind"] = res.api_version, res.kind
        if not isinstance(new.get("metadata"), dict):
            new["metadata"] = {}
        meta, lmeta = new["metadata"], live["metadata"]
        for key in _META_SYSTEM:
            if key in lmeta:
                meta[key] = copy.deepcopy(lmeta[key])
            else:
                meta.pop(key, None)
        if sub == "status":
            out = copy.deepcopy(live)
            if "status" in new:
                out["status"] = new["status"]
            else:
                out.pop("status", None)
            new = out
        elif res.has_status:
            if "status" in live:
                new["status"] = copy.deepcopy(live["status"])
            else:
                new.pop("status", None)
        new = self._defaults(res, new)
        if res.kind == "Service":
            spec, lspec = new.get("spec") or {}, live.get("spec") or {}
            if (
                isinstance(spec, dict)
                and not spec.get("clusterIP")
                and lspec.get("clusterIP")
                and spec.get("type") != "ExternalName"
            ):
                spec["clusterIP"] = lspec["clusterIP"]
                spec.setdefault(
                    "clusterIPs", copy.deepcopy(lspec.get("clusterIPs") or [lspec["clusterIP"]])
                )
            if isinstance(spec, dict) and spec.get("clusterIP") and spec.get("clusterIP") != "None":
                for key in ("clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                    if key not in spec and key in lspec:
                        spec[key] = copy.deepcopy(lspec[key])
        self._check(res, live, new)
        if _spec_part(new) != _spec_part(live):
            new["metadata"]["generation"] = lmeta.get("generation", 1) + 1
        return new

    def _commit(
        self,
        res: Resource,
        live: dict,
        new: dict,
        entries: dict[ManagerId, _Managed],
        writer: ManagerId,
        dry_run: bool,
    ) -> dict:
        """Store ``new`` with ``entries`` unless nothing changed (then ``live`` is returned)."""
        old_entries = self._managed(live)
        now = self._now()
        content_changed = {k: v for k, v in new.items() if k != "metadata"} != {
            k: v for k, v in live.items() if k != "metadata"
        } or {k: v for k, v in new["metadata"].items() if k != "managedFields"} != {
            k: v for k, v in live["metadata"].items() if k != "managedFields"
        }
        for ident, entry in entries.items():
            before = old_entries.get(ident)
            if (
                before is None
                or before.fields != entry.fields
                or (ident == writer and content_changed)
            ):
                entry.time = now
        fields_changed = {i: e.fields for i, e in entries.items() if e.fields} != {
            i: e.fields for i, e in old_entries.items() if e.fields
        }
        if not content_changed and not fields_changed:
            return copy.deepcopy(live)
        managed = self._managed_fields(entries)
        if managed:
            new["metadata"]["managedFields"] = managed
        else:
            new["metadata"].pop("managedFields", None)
        if dry_run:
            return new
        self._store(res, new, "MODIFIED", live)
        self._finish_if_released(res, new)
        return copy.deepcopy(new)

    def _update(
        self, res: Resource, live: dict, candidate: Any, manager: str, sub: str, dry_run: bool
    ) -> dict:
        """PUT and non-apply PATCH: operation ``Update`` takes the fields it changes."""
        new = self._finish(res, live, candidate, sub)
        shape = self._shapes[res]
        old_paths = self._managed_paths(field_set(live, shape), res, sub)
        new_paths = self._managed_paths(field_set(new, shape), res, sub)
        changed = (old_paths ^ new_paths) | {
            p for p in old_paths & new_paths if self._differs(live, new, p)
        }
        entries = self._managed(live)
        writer = (manager, "Update", sub)
        for ident, entry in entries.items():
            if ident != writer:
                entry.fields = entry.fields - changed
        mine = entries.get(writer)
        owned = (mine.fields if mine else set()) - (old_paths - new_paths)
        owned |= changed & new_paths
        entries.pop(writer, None)
        entries[writer] = _Managed(owned, res.api_version, mine.time if mine else "")
        return self._commit(res, live, new, entries, writer, dry_run)

    @staticmethod
    def _differs(old: dict, new: dict, path: Path_) -> bool:
        a, b = _get_at(old, path), _get_at(new, path)
        if path[-1].startswith(("k:", "v:")):
            return (a is _MISSING) != (b is _MISSING)
        return a is _MISSING or b is _MISSING or _dumps(a) != _dumps(b)

    def _apply(
        self, res: Resource, ns: str, name: str, body: Any, query: dict, sub: str, dry_run: bool
    ) -> tuple[int, dict]:
        manager = query.get("fieldManager", "")
        if not manager:
            raise APIError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
                {
                    "group": "meta.k8s.io",
                    "kind": "PatchOptions",
                    "causes": [
                        {
                            "reason": "FieldValueRequired",
                            "message": "Required value: is required for apply patch",
                            "field": "fieldManager",
                        }
                    ],
                },
            )
        force = query.get("force", "").lower() in ("true", "1")
        if not isinstance(body, dict):
            raise bad_request("the body of the request is not a YAML or JSON object")
        if not body.get("apiVersion") or not body.get("kind"):
            raise bad_request(
                "invalid object type: apiVersion and kind must be set in an apply configuration"
            )
        config = self._prepare_new(res, ns, body)
        meta = config["metadata"]
        if meta.get("name") not in (None, name):
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        meta["name"] = name
        shape = self._shapes[res]
        applied = self._managed_paths(field_set(config, shape), res, sub)
        live = self._objects[res].get((ns if res.namespaced else "", name))
        if live is None:
            if sub:
                raise not_found(res, name)
            return 201, self._create(res, ns, config, manager, dry_run, apply_fields=applied)
        if (
            meta.get("resourceVersion")
            and meta["resourceVersion"] != live["metadata"]["resourceVersion"]
        ):
            raise conflict(res, name)
        for key in _META_SYSTEM - {"name", "namespace"}:
            meta.pop(key, None)
        if sub == "status":
            effective = {"status": config.get("status")} if "status" in config else {}
        else:
            effective = {k: v for k, v in config.items() if not (res.has_status and k == "status")}
        merged = ssa_merge(live, effective, shape)
        entries = self._managed(live)
        writer = (manager, "Apply", sub)
        previous = entries[writer].fields if writer in entries else set()
        others: set[Path_] = set()
        for ident, entry in entries.items():
            if ident != writer:
                others |= entry.fields
        remove_fields(merged, previous - applied - others, keep=others | applied)
        new = self._finish(res, live, merged, sub)
        conflicts = []
        for ident, entry in entries.items():
            if ident == writer:
                continue
            for path in sorted(applied & entry.fields):
                if self._differs(live, new, path):
                    conflicts.append((ident, path))
        if conflicts and not force:
            raise self._apply_conflict(res, name, conflicts, entries)
        for ident, path in conflicts:
            entries[ident].fields = entries[ident].fields - {path}
        entries.pop(writer, None)
        entries[writer] = _Managed(set(applied), res.api_version, "")
        previous_entry = self._managed(live).get(writer)
        if previous_entry is not None:
            entries[writer].time = previous_entry.time
        # keep the entry's position when it existed
        ordered = {}
        for ident in self._managed(live):
            if ident in entries:
                ordered[ident] = entries[ident]
        for ident, entry in entries.items():
            ordered.setdefault(ident, entry)
        return 200, self._commit(res, live, new, ordered, writer, dry_run)

    @staticmethod
    def _apply_conflict(res: Resource, name: str, conflicts: list, entries: dict) -> APIError:
        causes = []
        lines = []
        for (manager, operation, _sub), path in conflicts:
            who = f'conflict with "{manager}"'
            if operation == "Update":
                who += f" using {entries[(manager, operation, _sub)].api_version}"
            causes.append(
                {"reason": "FieldManagerConflict", "message": who, "field": path_string(path)}
            )
            lines.append((who, path_string(path)))
        if len(lines) == 1:
            message = f"Apply failed with 1 conflict: {lines[0][0]}: {lines[0][1]}"
        else:
            message = f"Apply failed with {len(lines)} conflicts: " + "\n".join(
                f"{w}: {p}" for w, p in lines
            )
        return APIError(409, "Conflict", message, _details(res, name, causes=causes))

    # -- internals: HTTP ------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: Any, body: bytes) -> _Response | _Watch:
        split = urllib.parse.urlsplit(raw_path)
        query = {
            k: v[0] for k, v in urllib.parse.parse_qs(split.query, keep_blank_values=True).items()
        }
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip()
        with self._lock:
            self.requests.append(Request(method, split.path, query, content_type))
        auth = headers.get("Authorization") or ""
        if auth != f"Bearer {self.token}":
            return self._error(APIError(401, "Unauthorized", "Unauthorized"))
        try:
            return self._route(method, split.path, query, content_type, headers, body)
        except APIError as err:
            return self._error(err)
        except Exception as err:  # a bug in the double: say so instead of hanging up
            return self._error(
                APIError(500, "InternalError", f"fake apiserver: {type(err).__name__}: {err}")
            )

    @staticmethod
    def _json(code: int, obj: Any) -> _Response:
        return _Response(code, json.dumps(obj).encode())

    def _error(self, err: APIError) -> _Response:
        return self._json(err.code, err.status())

    def _route(
        self, method: str, path: str, query: dict, content_type: str, headers: Any, body: bytes
    ) -> _Response | _Watch:
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return _Response(200, b"ok", "text/plain")
        if parts == ["version"]:
            return self._json(
                200,
                {
                    "major": "1",
                    "minor": "33",
                    "gitVersion": "v1.33.0-fake",
                    "platform": "linux/amd64",
                },
            )
        if parts == ["api"]:
            return self._json(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}
                    ],
                },
            )
        if parts == ["apis"]:
            return self._json(200, self._group_list())
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) == 2 and parts[0] == "apis":
            groups = [g for g in self._group_list()["groups"] if g["name"] == parts[1]]
            if not groups:
                raise APIError(404, "NotFound", "the server could not find the requested resource")
            return self._json(200, {"kind": "APIGroup", "apiVersion": "v1", **groups[0]})
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        served = [r for r in self.resources if r.group == group and r.version == version]
        if not served:
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            if method != "GET":
                raise APIError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            return self._json(200, self._resource_list(group, version, served))
        ns = ""
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and any(r.plural == rest[2] and r.namespaced for r in served)
        ):
            ns, rest = rest[1], rest[2:]
        res = next((r for r in served if r.plural == rest[0]), None)
        if (
            res is None
            or (not res.namespaced and ns)
            or (res.namespaced and not ns and len(rest) > 1)
        ):
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub == "proxy" and res.kind == "Service" and name is not None:
            consumed = len(parts) - len(rest) + 3  # the segments up to and including "proxy"
            head = re.match(r"(/+[^/]+){" + str(consumed) + "}", path)
            remainder = path[head.end() :] if head else ""
            return self._proxy(method, ns, name, remainder or "/", query, headers, body)
        if sub and (sub != "status" or not res.has_status or len(rest) > 3):
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        dry_run = query.get("dryRun") == "All"
        manager = (
            query.get("fieldManager") or (headers.get("User-Agent") or "unknown").split("/")[0]
        )
        if name is None:
            if method == "GET":
                if query.get("watch", "").lower() in ("1", "true"):
                    return self._watch(res, ns, query)
                return self._json(200, self._list(res, ns, query))
            if method == "POST":
                obj = self._decode(body, content_type)
                with self._lock:
                    return self._json(201, self._create(res, ns, obj, manager, dry_run))
            if method == "DELETE":
                return self._json(200, self._delete_collection(res, ns, query, body, dry_run))
            raise APIError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        key = (ns, name)
        with self._lock:
            if method == "GET":
                live = self._objects[res].get(key)
                if live is None:
                    raise not_found(res, name)
                return self._json(200, live)
            if method == "PUT":
                live = self._objects[res].get(key)
                if live is None:
                    raise not_found(res, name)
                obj = self._decode(body, content_type)
                if not isinstance(obj, dict):
                    raise bad_request("the body of the request is not a JSON object")
                obj_meta = obj.get("metadata") or {}
                if obj_meta.get("name") not in (None, name):
                    raise bad_request(
                        f"the name of the object ({obj_meta.get('name')}) does not match the name on the URL ({name})"
                    )
                if (
                    obj_meta.get("resourceVersion")
                    and obj_meta["resourceVersion"] != live["metadata"]["resourceVersion"]
                ):
                    raise conflict(res, name)
                self._prepare_new(res, ns, obj)
                if obj.get("metadata", {}).get("managedFields") == [{}]:
                    live = {
                        **live,
                        "metadata": {
                            k: v for k, v in live["metadata"].items() if k != "managedFields"
                        },
                    }
                return self._json(200, self._update(res, live, obj, manager, sub, dry_run))
            if method == "PATCH":
                return self._patch(res, ns, name, query, content_type, body, manager, sub, dry_run)
            if method == "DELETE" and not sub:
                return self._delete_one(res, key, name, query, body, dry_run)
        raise APIError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    @staticmethod
    def _decode(body: bytes, content_type: str) -> Any:
        text = body.decode() or "null"
        try:
            if content_type in ("application/yaml", APPLY_PATCH):
                with contextlib.suppress(ValueError):
                    return json.loads(text)  # JSON first: PyYAML reads YAML 1.1, not all JSON
                return yaml.safe_load(text)
            return json.loads(text)
        except (ValueError, yaml.YAMLError) as err:
            raise bad_request(f"the body of the request could not be decoded: {err}") from err

    def _patch(
        self,
        res: Resource,
        ns: str,
        name: str,
        query: dict,
        content_type: str,
        body: bytes,
        manager: str,
        sub: str,
        dry_run: bool,
    ) -> _Response:
        if content_type not in PATCH_TYPES:
            raise APIError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: {', '.join(PATCH_TYPES)}",
            )
        if content_type == STRATEGIC_PATCH and res.custom:
            raise APIError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: {JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}",
            )
        patch = self._decode(body, content_type)
        if content_type == APPLY_PATCH:
            code, obj = self._apply(res, ns, name, patch, query, sub, dry_run)
            return self._json(code, obj)
        live = self._objects[res].get((ns, name))
        if live is None:
            raise not_found(res, name)
        try:
            if content_type == MERGE_PATCH:
                patched = merge_patch(live, patch)
            elif content_type == STRATEGIC_PATCH:
                patched = strategic_merge_patch(live, patch, self._shapes[res])
            else:
                patched = json_patch(live, patch)
        except ValueError as err:
            raise APIError(422, "Invalid", str(err)) from err
        if not isinstance(patched, dict):
            raise bad_request("the patch does not produce an object")
        rv = (patched.get("metadata") or {}).get("resourceVersion")
        if rv and rv != live["metadata"]["resourceVersion"]:
            raise conflict(res, name)
        if (patched.get("metadata") or {}).get("name") != name:
            raise bad_request("the name of the object cannot be changed by a patch")
        return self._json(200, self._update(res, live, patched, manager, sub, dry_run))

    @staticmethod
    def _delete_options(query: dict, body: bytes) -> tuple[str | None, dict]:
        options: dict = {}
        if body.strip():
            try:
                options = json.loads(body.decode())
            except ValueError as err:
                raise bad_request(f"invalid DeleteOptions: {err}") from err
            if not isinstance(options, dict):
                raise bad_request("invalid DeleteOptions")
        policy = query.get("propagationPolicy") or options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = ORPHAN if options["orphanDependents"] else BACKGROUND
        if policy is None and query.get("orphanDependents") is not None:
            policy = ORPHAN if query["orphanDependents"] == "true" else BACKGROUND
        if policy not in (None, BACKGROUND, FOREGROUND, ORPHAN):
            raise bad_request(f"propagationPolicy: Unsupported value: {policy!r}")
        return policy, options

    def _delete_one(
        self,
        res: Resource,
        key: tuple[str, str],
        name: str,
        query: dict,
        body: bytes,
        dry_run: bool,
    ) -> _Response:
        policy, options = self._delete_options(query, body)
        if "dryRun" in options and options["dryRun"] == ["All"]:
            dry_run = True
        live = self._objects[res].get(key)
        if live is None:
            raise not_found(res, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != live["metadata"]["uid"]:
            raise conflict(res, name)
        if (
            pre.get("resourceVersion")
            and pre["resourceVersion"] != live["metadata"]["resourceVersion"]
        ):
            raise conflict(res, name)
        if dry_run:
            return self._json(200, live)
        policy = policy or (ORPHAN if res.kind == "Job" else BACKGROUND)
        remaining = self._delete(res, live, policy)
        if remaining is not None:
            return self._json(200, remaining)
        return self._json(
            200,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {**_details(res, name), "uid": live["metadata"]["uid"]},
            },
        )

    def _delete_collection(
        self, res: Resource, ns: str, query: dict, body: bytes, dry_run: bool
    ) -> dict:
        policy, _ = self._delete_options(query, body)
        with self._lock:
            listed = self._list(res, ns, query)
            if not dry_run:
                for item in listed["items"]:
                    key = (
                        item["metadata"].get("namespace", "") if res.namespaced else "",
                        item["metadata"]["name"],
                    )
                    live = self._objects[res].get(key)
                    if live is not None:
                        self._delete(
                            res, live, policy or (ORPHAN if res.kind == "Job" else BACKGROUND)
                        )
            return listed

    def _matcher(self, res: Resource, ns: str, query: dict) -> Callable[[dict], bool]:
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""), res)

        def match(obj: dict) -> bool:
            meta = obj.get("metadata") or {}
            if ns and meta.get("namespace") != ns:
                return False
            return labels(meta.get("labels") or {}) and fields(obj)

        return match

    def _list(self, res: Resource, ns: str, query: dict) -> dict:
        match = self._matcher(res, ns, query)
        with self._lock:
            items = []
            for _, obj in sorted(self._objects[res].items()):
                if match(obj):
                    item = copy.deepcopy(obj)
                    if not res.custom:
                        item.pop("apiVersion", None)
                        item.pop("kind", None)
                    items.append(item)
            return {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(self._rv)},
                "items": items,
            }

    def _group_list(self) -> dict:
        groups: dict[str, list[str]] = {}
        for res in self.resources:
            if res.group:
                versions = groups.setdefault(res.group, [])
                if res.version not in versions:
                    versions.append(res.version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                }
                for g, vs in groups.items()
            ],
        }

    @staticmethod
    def _resource_list(group: str, version: str, served: list[Resource]) -> dict:
        resources = []
        for res in served:
            resources.append(
                {
                    "name": res.plural,
                    "singularName": res.kind.lower(),
                    "namespaced": res.namespaced,
                    "kind": res.kind,
                    "verbs": list(VERBS),
                }
            )
            subs = (["status"] if res.has_status else []) + list(res.extra_subresources)
            for sub in subs:
                resources.append(
                    {
                        "name": f"{res.plural}/{sub}",
                        "singularName": "",
                        "namespaced": res.namespaced,
                        "kind": res.kind,
                        "verbs": list(SUBRESOURCE_VERBS[sub]),
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    # -- watch ----------------------------------------------------------------------------
    def _watch(self, res: Resource, ns: str, query: dict) -> _Watch:
        match = self._matcher(res, ns, query)
        try:
            timeout = float(query.get("timeoutSeconds") or 0) or self.watch_timeout
        except ValueError as err:
            raise bad_request(f"invalid timeoutSeconds: {err}") from err
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("1", "true")
        rv_param = query.get("resourceVersion", "")
        initial: list[dict] = []
        with self._lock:
            if rv_param in ("", "0"):
                start = self._rv
                for _, obj in sorted(self._objects[res].items()):
                    if match(obj):
                        initial.append({"type": "ADDED", "object": copy.deepcopy(obj)})
            else:
                try:
                    start = int(rv_param)
                except ValueError as err:
                    raise bad_request(f"invalid resource version: {rv_param}") from err
                if start < self._compacted:
                    gone = status_object(
                        410, "Expired", f"too old resource version: {start} ({self._compacted + 1})"
                    )
                    return _Watch(
                        iter([(json.dumps({"type": "ERROR", "object": gone}) + "\n").encode()])
                    )

        def chunks() -> Iterator[bytes]:
            for event in initial:
                yield (json.dumps(event) + "\n").encode()
            pos = start
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + self.bookmark_interval
            while not self._stopping.is_set():
                now = time.monotonic()
                if now >= deadline:
                    return
                with self._cond:
                    if pos < self._compacted:
                        gone = status_object(
                            410,
                            "Expired",
                            f"too old resource version: {pos} ({self._compacted + 1})",
                        )
                        yield (json.dumps({"type": "ERROR", "object": gone}) + "\n").encode()
                        return
                    batch = [e for e in self._history if e.rv > pos]
                    if not batch:
                        wait = min(deadline - now, 0.5)
                        if bookmarks:
                            wait = max(0.0, min(wait, next_bookmark - now))
                        self._cond.wait(wait)
                        batch = [e for e in self._history if e.rv > pos]
                    current = self._rv
                for event in batch:
                    out = self._event_for(event, res, match)
                    if out is not None:
                        yield (json.dumps(out) + "\n").encode()
                pos = max(pos, current)
                if bookmarks and time.monotonic() >= next_bookmark:
                    next_bookmark = time.monotonic() + self.bookmark_interval
                    mark = {
                        "kind": res.kind,
                        "apiVersion": res.api_version,
                        "metadata": {"resourceVersion": str(pos)},
                    }
                    yield (json.dumps({"type": "BOOKMARK", "object": mark}) + "\n").encode()

        return _Watch(chunks())

    @staticmethod
    def _event_for(event: _Event, res: Resource, match: Callable[[dict], bool]) -> dict | None:
        if event.res != res:
            return None
        now = match(event.obj)
        if event.type == "MODIFIED":
            was = event.old is not None and match(event.old)
            kind = "MODIFIED" if now and was else "ADDED" if now else "DELETED" if was else None
        else:
            kind = event.type if now else None
        if kind is None:
            return None
        return {"type": kind, "object": event.obj}

    # -- service proxy --------------------------------------------------------------------
    def _proxy(
        self,
        method: str,
        ns: str,
        target: str,
        remainder: str,
        query: dict,
        headers: Any,
        body: bytes,
    ) -> _Response:
        parts = target.split(":")
        if parts[0] in ("http", "https") and len(parts) >= 2:
            parts = parts[1:]
        name = parts[0]
        port = parts[1] if len(parts) > 1 else ""
        res = self.resource_for("v1", "Service")
        with self._lock:
            service = self._objects[res].get((ns, name))
            if service is None:
                raise not_found(res, name)
            ports = (service.get("spec") or {}).get("ports") or []
            entry = None
            for p in ports:
                if port in (str(p.get("port")), p.get("name")) or (not port and len(ports) == 1):
                    entry = p
                    break
            candidates = [port] if port else []
            if entry is not None:
                candidates += [str(entry.get("port")), str(entry.get("name", ""))]
            backend = next(
                (
                    self._backends[(ns, name, c)]
                    for c in candidates
                    if c and (ns, name, c) in self._backends
                ),
                None,
            )
        unavailable = APIError(
            503, "ServiceUnavailable", f'no endpoints available for service "{name}"'
        )
        if backend is None or entry is None:
            raise unavailable
        target_url = urllib.parse.urlsplit(backend)
        conn_class = (
            http.client.HTTPSConnection
            if target_url.scheme == "https"
            else http.client.HTTPConnection
        )
        conn = conn_class(target_url.hostname, target_url.port, timeout=30)
        forward = remainder
        qs = urllib.parse.urlencode(query)
        if qs:
            forward += "?" + qs
        send_headers = {k: v for k, v in headers.items() if k.lower() in ("content-type", "accept")}
        try:
            conn.request(method, forward, body=body or None, headers=send_headers)
            reply = conn.getresponse()
            data = reply.read()
            return _Response(
                reply.status, data, reply.getheader("Content-Type") or "application/octet-stream"
            )
        except OSError as err:
            raise APIError(
                503,
                "ServiceUnavailable",
                f"error trying to reach service: dial tcp {target_url.netloc}: {err}",
            ) from err
        finally:
            conn.close()


# ---------------------------------------------------------------------------------------
# HTTP plumbing


class _HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], handler: type, context: ssl.SSLContext, api: FakeAPIServer
    ) -> None:
        self.context = context
        self.api = api
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms delayed-ACK stalls
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self._connections.add(request)
        try:
            request.settimeout(60)
            request.do_handshake()
            self.finish_request(request, client_address)
        except (OSError, ValueError):
            pass
        finally:
            with self._conn_lock:
                self._connections.discard(request)
            with contextlib.suppress(OSError):
                self.shutdown_request(request)

    def close_connections(self) -> None:
        with self._conn_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(conn, socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:  # quiet
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        body = self._read_body()
        response = self.server.api.handle(self.command, self.path, self.headers, body)
        if isinstance(response, _Watch):
            self._stream(response)
            return
        self.send_response(response.code)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    def _stream(self, watch: _Watch) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            for chunk in watch.chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (OSError, ValueError):
            pass
        finally:
            close = getattr(watch.chunks, "close", None)
            if close is not None:
                close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


__all__ = [
    "RESOURCES",
    "APIError",
    "FakeAPIServer",
    "FieldProblem",
    "Request",
    "Resource",
    "Shape",
    "StoreView",
    "field_set",
    "fields_v1",
    "paths_of",
    "status_object",
]
