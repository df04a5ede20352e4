# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The compute half of a reconcile pass: from a Glance, its backends and Secrets, everything.

``build_plan`` runs the pipeline of reference-spec §2.3 as far as it goes without a cluster:

1. judge every custom resource as the API server and the webhook would (``admission``);
2. gate the Secrets (``SecretsReady``), derive the DSN and the two pod-template digests;
3. project the backends (``BackendsReady``, each backend's ``CredentialsReady``);
4. render the configuration (only from a valid projection), content-address it;
5. decide every owned object (``desired_objects``), for the roles to emit;
6. the status the pass would write from this input alone, and its events.

Offline render and the reconcile share it, so what render shows is what the cluster gets.
There is no live Deployment offline, so an invalid projection (no single default backend)
has no last-good configuration to fall back on: only the objects that need no
configuration are emitted. The reconcile passes ``last_good``, the names the live
Deployment mounts (``live_state.mounted_artifacts``): with an invalid projection the
Deployment and the Jobs then render with those names and no new ConfigMap or Secret is
emitted (reference-spec §2.9), and ``Plan.retained`` says so.

``stored=True`` judges custom resources read from the cluster rather than an input file:
each as a no-op update of itself (the API server already admitted it, so rules that only
guard a change, such as the option-catalog check, are not re-run) and without the
single-default sibling check, so two defaults are ``BackendsReady=False/NoDefaultBackend``
(the reconciler's exactly-one rule, the real guard) instead of a refused input. A stored
GlanceBackend the rules still refuse (the webhook was bypassed, or a rule is newer than
the object) is skipped like a faulty backend (``GlanceBackendSkipped``, pending in
``BackendsReady``) instead of refusing the whole Glance.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade
from ansible_collections.c5c3.glance.plugins.module_utils.desired.backend_projection import (
    Projection,
    is_attached,
    project_backends,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.all_files import (
    config_files,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.api_conf import (
    image_cache_max_size,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.extra_config import (
    extra_config_condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    ConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    backends_base,
    config_base,
    content_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    ExternalSecrets,
    db_connection_dsn,
    dsn_digest,
    gate_secrets,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (
    InputSet,
    error_lines,
    judge_documents,
    warning_lines,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.keys import (
    MARIADB_OBJECTS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    Artifacts,
    target_cluster,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.owned import (
    desired_objects,
)

# Objects in the order a reader (and kubectl apply) meets them: what others reference first.
KIND_ORDER = (
    "Secret",
    "ConfigMap",
    "Service",
    "Deployment",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
    "NetworkPolicy",
    "HTTPRoute",
    "Database",
    "User",
    "Grant",
    "Job",
    "CronJob",
)
# A stand-in owner UID for an offline Glance that has none: stable for a namespace/name.
OFFLINE_UID_NAMESPACE = uuid.UUID("6f1c1b0e-5d1a-4a53-9a7b-2f0c6a1e0c35")


@dataclass
class Plan:
    """Everything one pass decides. ``errors`` non-empty means the input is refused."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    glance: dict[str, Any] | None = None
    backends: list[dict[str, Any]] = field(default_factory=list)
    projection: Projection | None = None
    config_map: str = ""
    backends_secret: str = ""
    desired: dict[str, Any] = field(default_factory=dict)
    glance_conditions: list[dict[str, str]] = field(default_factory=list)
    backend_conditions: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    events: list[dict[str, str]] = field(default_factory=list)
    # The names are the live Deployment's last-good ones, not a render of this input.
    retained: bool = False
    # The config step failed (SecretsReady=False/ConfigError): nothing was rendered.
    config_error: str = ""
    # installedRelease, targetRelease, upgradePhase as the database step records them.
    release_status: dict[str, str] = field(default_factory=dict)

    def status_documents(self) -> list[dict[str, Any]]:
        """The status of the Glance and of each GlanceBackend, one document each."""
        docs = []
        if self.glance is None:
            return docs
        docs.append(_status_document(self.glance, self.glance_conditions, self.release_status))
        for backend in self.backends:
            name = backend["metadata"]["name"]
            docs.append(_status_document(backend, self.backend_conditions.get(name, [])))
        return docs

    def as_dict(self) -> dict[str, Any]:
        projection = self.projection
        return {
            "errors": self.errors,
            "warnings": self.warnings,
            "valid": not self.errors,
            "config_map": self.config_map,
            "backends_secret": self.backends_secret,
            "default_backend": projection.default_backend if projection else None,
            "enabled_backends": projection.enabled_stores if projection else [],
            "desired": self.desired,
            "status": self.status_documents(),
            "events": self.events,
            "target_cluster": target_cluster(self.glance) if self.glance else None,
        }


def _status_document(
    obj: Mapping[str, Any],
    conds: list[dict[str, str]],
    fields: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    meta = obj["metadata"]
    generation = meta.get("generation", 1)
    stamped = [dict(cond, observedGeneration=generation) for cond in conds]
    status: dict[str, Any] = {"conditions": stamped, "observedGeneration": generation}
    status.update({k: v for k, v in (fields or {}).items() if v})
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "status": status,
    }


def release_status(release: str, status: Mapping[str, Any] | None) -> dict[str, str]:
    """``installedRelease``, ``targetRelease`` and ``upgradePhase`` once the database step
    has seen ``status``: an upgrade about to start is already in its first phase."""
    out = {
        key: str((status or {}).get(key) or "")
        for key in ("installedRelease", "targetRelease", "upgradePhase")
    }
    step = upgrade.database_step(release, status)
    if step.action == upgrade.INITIATE:
        out["targetRelease"], out["upgradePhase"] = step.target, step.phase
    return out


def decode_secrets(secrets: list[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Secret name -> its data as text: ``data`` base64-decoded, ``stringData`` over it."""
    decoded = {}
    for secret in secrets:
        data = {}
        for key, value in (secret.get("data") or {}).items():
            try:
                data[key] = base64.b64decode(str(value), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                data[key] = ""
        data.update({k: str(v) for k, v in (secret.get("stringData") or {}).items()})
        decoded[secret["metadata"]["name"]] = data
    return decoded


def owner_of(glance: Mapping[str, Any]) -> dict[str, str]:
    meta = glance["metadata"]
    uid = meta.get("uid") or str(
        uuid.uuid5(OFFLINE_UID_NAMESPACE, f"{meta['namespace']}/{meta['name']}")
    )
    return {
        "apiVersion": glance["apiVersion"],
        "kind": glance["kind"],
        "name": meta["name"],
        "uid": uid,
    }


def _not_required_conditions(spec: Mapping[str, Any]) -> list[dict[str, str]]:
    """The conditions an optional block's absence settles without a cluster."""
    out = []
    if spec.get("autoscaling") is None:
        out.append(
            c.condition(c.HPA_READY, True, c.HPA_NOT_REQUIRED, "Autoscaling is not configured")
        )
    if spec.get("networkPolicy") is None:
        out.append(
            c.condition(
                c.NETWORK_POLICY_READY,
                True,
                c.NETWORK_POLICY_NOT_REQUIRED,
                "Network isolation is not configured",
            )
        )
    if spec.get("gateway") is None:
        out.append(
            c.condition(
                c.HTTPROUTE_READY,
                True,
                c.HTTPROUTE_NOT_REQUIRED,
                "External Glance API exposure via Gateway API is not configured",
            )
        )
    return out


def build_plan(
    found: InputSet,
    crds: Mapping[str, Mapping[str, Any]],
    catalogs: Mapping[str, Mapping[str, Any]] | None = None,
    configmaps: Mapping[str, Mapping[str, str]] | None = None,
    *,
    last_good: tuple[str, str] | None = None,
    narrow_selector: bool = False,
    operator_namespace: str | None = None,
    stored: bool = False,
    external: ExternalSecrets | None = None,
) -> Plan:
    """Judge the input and, when it is admissible, decide everything the pass would do.

    ``last_good`` is ``(config_map, backends_secret)`` as the live Deployment mounts
    them; used only when the projection cannot be configured, and only when both names
    are set. ``narrow_selector`` and ``operator_namespace`` go to ``desired_objects``.
    ``external``: what the pass read of external-secrets.io (None: the offline render,
    which has no cluster to ask, and so never gates on a secret store).
    """
    plan = Plan()
    refused: dict[str, str] = {}
    if stored:
        verdicts = judge_documents(found, crds, catalogs, stored=True)
        # A stored backend the rules refuse is skipped like a faulty one, not fatal.
        refused = {
            v.name: "; ".join(v.messages())
            for v in verdicts
            if v.kind == "GlanceBackend" and v.errors
        }
        verdicts = [v for v in verdicts if not (v.kind == "GlanceBackend" and v.errors)]
    else:
        verdicts = judge_documents(found, crds, catalogs)
    plan.errors = error_lines(found, verdicts)
    plan.warnings = warning_lines(verdicts)
    if plan.errors:
        return plan
    admitted = {(v.kind, v.name): v.object for v in verdicts}
    glance = admitted[("Glance", found.glance["metadata"]["name"])]
    backends = [
        admitted[("GlanceBackend", b["metadata"]["name"])]
        for b in found.backends
        if b["metadata"]["name"] not in refused
    ]
    plan.glance, plan.backends = glance, backends
    secrets = decode_secrets(found.secrets)
    spec = glance["spec"]
    name = glance["metadata"]["name"]

    gate = gate_secrets(glance, secrets, external)
    dsn = None
    db_secret = secrets.get(spec["database"]["secretRef"]["name"])
    if gate.condition["status"] == c.TRUE and db_secret is not None:
        dsn = db_connection_dsn(glance, db_secret)
    secrets_condition = gate.condition

    projection = project_backends(glance, backends, secrets)
    if refused:
        _skip_refused(projection, glance, found.backends, refused)
    plan.projection = projection
    plan.backend_conditions = {
        b["metadata"]["name"]: [projection.backend_conditions[b["metadata"]["name"]]]
        if b["metadata"]["name"] in projection.backend_conditions
        else []
        for b in backends
    }
    for backend in backends:
        conds = plan.backend_conditions[backend["metadata"]["name"]]
        conds.append(c.aggregate_ready(conds, c.BACKEND_READY_PARTS))
    plan.events.extend(
        {"type": "Warning", "reason": c.EVENT_GLANCE_BACKEND_SKIPPED, "message": message}
        for message in projection.skip_messages()
    )

    extra = extra_config_condition(glance)
    if extra["status"] == c.FALSE:
        plan.events.append(
            {
                "type": "Warning",
                "reason": c.EVENT_EXTRA_CONFIG_OWNED_KEY_OVERRIDE,
                "message": extra["message"],
            }
        )

    config_data: dict[str, str] = {}
    backends_data: dict[str, str] = {}
    if projection.configurable:
        try:
            config_data = config_files(
                glance,
                enabled_backends=projection.enabled_stores,
                default_backend=projection.default_backend,
                policy_configmap_data=_policy_configmap(spec, configmaps),
            )
        except ConfigError as exc:
            secrets_condition = c.condition(c.SECRETS_READY, False, c.CONFIG_ERROR, str(exc))
            plan.config_error = str(exc)
        else:
            backends_data = projection.backends_data
            plan.config_map = content_name(config_base(name), config_data)
            plan.backends_secret = content_name(backends_base(name), backends_data)
    elif last_good is not None and all(last_good):
        plan.config_map, plan.backends_secret = last_good
        plan.retained = True

    artifacts = Artifacts(
        config_map=plan.config_map,
        backends_secret=plan.backends_secret,
        config_data=config_data,
        backends_data=backends_data,
        dsn=dsn,
        dsn_digest=dsn_digest(dsn) if dsn else None,
        authtoken_digest=gate.authtoken_digest,
        import_ca_digest=gate.import_ca_digest,
        s3_hosts=projection.s3_hosts,
        image_cache_max_size=image_cache_max_size(spec),
        owner=owner_of(glance),
    )
    stored_status = found.glance.get("status") or {}
    plan.release_status = release_status(spec["openStackRelease"], stored_status)
    desired = desired_objects(
        glance,
        artifacts,
        narrow_selector=narrow_selector,
        operator_namespace=operator_namespace,
        database_job=upgrade.database_job(spec["openStackRelease"], stored_status),
    )
    if not plan.config_map:
        # Without a configuration only the DB connection Secret and the MariaDB resources
        # of managed mode stand on their own (the database step provisions them first).
        alone = {"db_connection_secret", *MARIADB_OBJECTS}
        desired = {k: (v if k in alone else None) for k, v in desired.items()}
    if plan.retained:
        # The live copies stay as they are; nothing of this render is emitted for them.
        desired["config_map"] = None
        desired["backends_secret"] = None
    if dsn is None:
        desired["db_connection_secret"] = None
    if gate.condition["status"] != c.TRUE:
        # The pass writes nothing until the credentials are there: a Deployment without the
        # two credential digests would roll the pods again once they arrive.
        desired = dict.fromkeys(desired)
    plan.desired = desired

    conds = [secrets_condition, projection.condition, extra, *_not_required_conditions(spec)]
    conds.append(c.aggregate_ready(conds))
    plan.glance_conditions = sorted(conds, key=lambda cond: cond["type"])
    return plan


def _skip_refused(
    projection: Projection,
    glance: Mapping[str, Any],
    backends: list[dict[str, Any]],
    refused: Mapping[str, str],
) -> None:
    """Count each attached backend the rules refused as skipped and pending."""
    for backend in sorted(backends, key=lambda b: b["metadata"]["name"]):
        name = backend["metadata"]["name"]
        if name not in refused or not is_attached(backend, glance):
            continue
        why = f"refused by the admission rules: {refused[name]}"
        projection.skipped.append((name, why))
        projection.pending.append((name, why))
    projection.pending.sort(key=lambda item: item[0])
    if projection.condition.get("reason") != c.NO_DEFAULT_BACKEND and projection.pending:
        waiting = "; ".join(f"{name} ({why})" for name, why in projection.pending)
        projection.condition = c.condition(
            c.BACKENDS_READY, False, c.WAITING_FOR_BACKENDS, f"Waiting for backends: {waiting}"
        )


def _policy_configmap(
    spec: Mapping[str, Any], configmaps: Mapping[str, Mapping[str, str]] | None
) -> Mapping[str, str] | None:
    ref = (spec.get("policyOverrides") or {}).get("configMapRef")
    if not ref:
        return None
    return (configmaps or {}).get(ref["name"])


def manifest_sort_key(obj: Mapping[str, Any]) -> tuple:
    kind = obj.get("kind", "")
    rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    return (rank, kind, obj.get("metadata", {}).get("name", ""))


def summarize(plan: Mapping[str, Any], manifests: list[Mapping[str, Any]]) -> list[str]:
    """A short human summary of a render: objects, config hash, default store, conditions."""
    kinds: dict[str, int] = {}
    for obj in manifests:
        kinds[obj["kind"]] = kinds.get(obj["kind"], 0) + 1
    ordered = sorted(kinds, key=lambda k: KIND_ORDER.index(k) if k in KIND_ORDER else 99)
    lines = [
        f"objects: {len(manifests)} ({', '.join(f'{kinds[k]} {k}' for k in ordered)})",
        f"config: {plan.get('config_map') or 'none (no valid backend projection)'}",
        f"backends: {plan.get('backends_secret') or 'none'}",
        f"default store: {plan.get('default_backend') or 'none'}"
        f" of [{', '.join(plan.get('enabled_backends') or [])}]",
    ]
    for doc in plan.get("status") or []:
        phase = doc["status"].get("upgradePhase")
        if phase:
            lines.append(
                f"upgrade: {doc['status'].get('installedRelease')} → "
                f"{doc['status'].get('targetRelease')}, phase {phase}"
            )
        conds = doc["status"]["conditions"]
        shown = ", ".join(f"{cond['type']}={cond['status']}({cond['reason']})" for cond in conds)
        lines.append(f"{doc['kind']} {doc['metadata']['name']}: {shown}")
    target = plan.get("target_cluster")
    if target:
        namespace = next(iter(manifests), {}).get("metadata", {}).get("namespace", "")
        lines.append(
            f'target cluster: "{target}" (its kubeconfig Secret {target} in the clusters '
            f"namespace, default c5c3-clusters): the {len(manifests)} objects above go there, "
            f"to namespace {namespace}, labelled with their owner instead of an owner "
            "reference; the Glance, its GlanceBackends and their status stay in this cluster, "
            "the credential Secrets they name must be in the target"
        )
    lines.extend(
        f"event: {e['type']} {e['reason']}: {e['message']}" for e in plan.get("events") or []
    )
    lines.extend(f"warning: {w}" for w in plan.get("warnings") or [])
    return lines
