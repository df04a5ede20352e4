# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""An offline input: one Glance, its GlanceBackends and the Secrets (and ConfigMaps) they use.

``judge_documents`` judges every custom resource of such a set as the API server and the
webhook would on create, with the set's own GlanceBackends as the siblings of the
single-default check. Objects without a namespace take the Glance's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import (
    API_VERSION,
    Verdict,
    judge,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
)


@dataclass
class InputSet:
    """The documents of one input, sorted by kind, each with its namespace resolved."""

    glance: dict[str, Any] | None = None
    backends: list[dict[str, Any]] = field(default_factory=list)
    secrets: list[dict[str, Any]] = field(default_factory=list)
    configmaps: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_documents(text: str) -> list[Any]:
    """The documents of a multi-document YAML text; ValueError naming the problem if invalid."""
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ValueError(f"the input is not valid YAML: {exc}") from exc


def read_input(text: str) -> InputSet:
    """The input set of a YAML text; ValueError when the text is not YAML."""
    return split_documents(parse_documents(text))


def _where(doc: Mapping[str, Any], i: int) -> str:
    name = (doc.get("metadata") or {}).get("name", "")
    return f"document {i + 1} ({doc.get('kind', '?')} {name})".replace(" )", ")")


def split_documents(docs: Iterable[Any]) -> InputSet:
    """Sort ``docs`` into the Glance, its backends and Secrets; errors for anything else."""
    found = InputSet()
    glances = []
    for i, doc in enumerate(d for d in docs if d is not None):
        if not isinstance(doc, Mapping):
            found.errors.append(f"document {i + 1}: not a Kubernetes object")
            continue
        doc = copy.deepcopy(dict(doc))
        kind, api = doc.get("kind"), doc.get("apiVersion")
        if kind == "Glance" and api == API_VERSION:
            glances.append(doc)
        elif kind == "GlanceBackend" and api == API_VERSION:
            found.backends.append(doc)
        elif kind == "Secret" and api == "v1":
            found.secrets.append(doc)
        elif kind == "ConfigMap" and api == "v1":
            found.configmaps.append(doc)
        else:
            found.errors.append(
                f"{_where(doc, i)}: only {API_VERSION} Glance and GlanceBackend, and v1 Secret "
                "and ConfigMap objects belong in an input"
            )
    if len(glances) != 1:
        found.errors.append(f"an input holds exactly one Glance, this one holds {len(glances)}")
        return found
    found.glance = glances[0]
    namespace = (found.glance.get("metadata") or {}).get("namespace") or "default"
    for doc in [found.glance, *found.backends, *found.secrets, *found.configmaps]:
        meta = doc.setdefault("metadata", {})
        meta.setdefault("namespace", namespace)
    return found


def judge_documents(
    found: InputSet,
    crds: Mapping[str, Mapping[str, Any]],
    catalogs: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    stored: bool = False,
) -> list[Verdict]:
    """A verdict for the Glance and each GlanceBackend of ``found``.

    An input file is judged as a create, with the set's GlanceBackends as the siblings of
    the single-default check. ``stored`` objects, read back from the cluster, are judged as
    a no-op update of themselves and without the sibling check: the API server already
    admitted them, and two defaults there are a condition of the reconcile, not a refusal.
    Their CEL verdicts are kept between passes (``cel_verdicts``).
    """

    def context(obj: dict[str, Any], **kw: Any) -> AdmissionContext:
        if stored:
            return AdmissionContext(operation="UPDATE", old=obj, **kw)
        return AdmissionContext(**kw)

    verdicts = []
    if found.glance is not None:
        verdicts.append(
            judge(
                crds["Glance"],
                found.glance,
                context(found.glance, catalogs=catalogs),
                remember_cel=stored,
            )
        )
    for backend in found.backends:
        namespace = backend["metadata"]["namespace"]
        siblings = (
            None
            if stored
            else [b for b in found.backends if b["metadata"]["namespace"] == namespace]
        )
        verdicts.append(
            judge(
                crds["GlanceBackend"],
                backend,
                context(backend, siblings=siblings),
                remember_cel=stored,
            )
        )
    return verdicts


def error_lines(found: InputSet, verdicts: Iterable[Verdict]) -> list[str]:
    """One line per problem, each naming the object, the field path and the rule."""
    lines = list(found.errors)
    for verdict in verdicts:
        for error in verdict.errors:
            lines.append(f"{verdict.kind} {verdict.name}: {error}")
    return lines


def warning_lines(verdicts: Iterable[Verdict]) -> list[str]:
    return [f"{v.kind} {v.name}: warning: {w}" for v in verdicts for w in v.warnings]


def describe(found: InputSet, verdicts: Iterable[Verdict]) -> list[str]:
    """A short human summary of what a judged input describes."""
    verdicts = list(verdicts)
    lines = []
    stored = {(v.kind, v.name): v.object for v in verdicts if v.object is not None}
    glance = found.glance or {}
    meta = glance.get("metadata") or {}
    spec = (stored.get(("Glance", meta.get("name"))) or glance).get("spec") or {}
    image = spec.get("image") or {}
    reference = image.get("repository", "?")
    reference += f"@{image['digest']}" if image.get("digest") else f":{image.get('tag', '?')}"
    lines.append(
        f"Glance {meta.get('namespace')}/{meta.get('name')}: release "
        f"{spec.get('openStackRelease', '?')}, image {reference}, "
        f"{(spec.get('deployment') or {}).get('replicas', '?')} replicas"
    )
    optional = [
        b
        for b in (
            "importFiltering",
            "importMethods",
            "importPlugins",
            "dbPurge",
            "staging",
            "imageCache",
            "gateway",
            "networkPolicy",
            "autoscaling",
            "policyOverrides",
            "middleware",
            "plugins",
            "extraConfig",
        )
        if spec.get(b) is not None
    ]
    lines.append("  optional blocks: " + (", ".join(optional) if optional else "none"))
    for backend in found.backends:
        b_meta = backend["metadata"]
        b_spec = (stored.get(("GlanceBackend", b_meta["name"])) or backend).get("spec") or {}
        s3 = b_spec.get("s3") or {}
        default = " (default)" if b_spec.get("isDefault") else ""
        lines.append(
            f"  backend {b_meta['name']}{default}: {b_spec.get('type', '?')} "
            f"{s3.get('host', '?')} bucket {s3.get('bucket', '?')}, "
            f"attached to {(b_spec.get('glanceRef') or {}).get('name', '?')}"
        )
    lines.append(
        f"  secrets: {', '.join(sorted(s['metadata']['name'] for s in found.secrets)) or 'none'}"
    )
    accepted = sum(1 for v in verdicts if v.allowed)
    lines.append(f"  verdict: {accepted} of {len(verdicts)} custom resources accepted")
    return lines
