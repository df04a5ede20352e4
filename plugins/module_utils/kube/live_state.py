# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""What the live objects of a Glance say: readiness predicates and the objects a pass reads.

Every function here reads plain dicts shaped as the API server returns them (``metadata``
with ``uid``, ``generation``, ``ownerReferences``; ``spec``; ``status``) and decides one
thing; none of them writes, reads a clock or talks to a cluster. The predicates are also
collected in ``READY_PREDICATES``, a table by kind in the manner of kubernetes.core's wait
conditions, so a caller can ask ``is_ready(obj)`` of any object the pass waits on.

* ``deployment_ready``: the controller observed the current generation, ``readyReplicas``
  reaches the desired count (``spec.replicas``, 1 when unset) and ``Available`` is True
  (reference-spec §2.3 step 6).
* ``deployment_converged``: every pod runs the current template (§4.4): the generation is
  observed, there is at least one pod and ``updatedReplicas == replicas``. We add that the
  live template carries ``app.kubernetes.io/component: api``, so a Deployment written by
  something else cannot make the Service narrow past its pods.
* ``job_state``: ``absent``, ``running``, ``complete`` or ``failed`` from the Job's
  terminal conditions (``Complete``/``Failed`` True); anything else is running.
* ``httproute_accepted``: some parent reports ``Accepted=True`` for the route's current
  generation (a condition without ``observedGeneration`` counts).
* ``mounted_artifacts``: the ConfigMap and Secret the ``config`` and ``backends`` volumes
  of a Deployment name: the last-good configuration (§2.9).
* ``service_selector``, ``narrow_selector``: the latched two-phase Service selector
  (§4.4); narrow at once when there is no live Deployment (a first install).
* ``newest_terminal_job``: the db-purge run the DBPurgeReady condition reports on (§4.12).
* ``condition_ready``: a mariadb-operator resource (the MariaDB of ``clusterRef``, and the
  Database, User and Grant of managed mode) reports ``Ready=True`` (§4.10).

``LiveObjects`` is the gather step's answer in one value: the object of each owned name,
the content-addressed copies listed by their config-base label, the Jobs listed by the
common labels, and whether the cluster serves the Gateway API's HTTPRoute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    CONFIG_BASE_LABEL,
    backends_base,
    config_base,
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.database import (
    DB_JOB_SPECS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    COMPONENT_API,
    COMPONENT_LABEL,
    DB_CONNECTION_SUFFIX,
    OWNER_KIND_LABEL,
    OWNER_NAME_LABEL,
    OWNER_NAMESPACE_LABEL,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    BACKENDS_VOLUME,
    CONFIG_VOLUME,
)

Obj = Mapping[str, Any]

JOB_ABSENT = "absent"
JOB_RUNNING = "running"
JOB_COMPLETE = "complete"
JOB_FAILED = "failed"
JOB_STATES = (JOB_ABSENT, JOB_RUNNING, JOB_COMPLETE, JOB_FAILED)

TRUE = "True"
AVAILABLE = "Available"
ACCEPTED = "Accepted"
COMPLETE = "Complete"
FAILED = "Failed"


# ---------------------------------------------------------------------------------------
# metadata


def meta(obj: Obj | None) -> Mapping[str, Any]:
    """``metadata`` of ``obj`` ({} for None)."""
    return (obj or {}).get("metadata") or {}


def status(obj: Obj | None) -> Mapping[str, Any]:
    """``status`` of ``obj`` ({} for None)."""
    return (obj or {}).get("status") or {}


def controller_reference(obj: Obj | None) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, or None."""
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller") is True:
            return ref
    return None


def label_owner(kind: str, namespace: str, name: str) -> str:
    """The owner key of a Glance whose children live on a target cluster: no owner
    reference holds there, the ownership labels name the owner (``controller_key``)."""
    return f"{kind}/{namespace}/{name}"


def controller_key(obj: Obj | None) -> str | None:
    """Who controls ``obj``: the uid of its controller reference, else the owner the
    ownership labels name (``label_owner``; a child on a target cluster), else None."""
    ref = controller_reference(obj)
    if ref is not None:
        return str(ref.get("uid") or "")
    labels = meta(obj).get("labels") or {}
    kind, name, namespace = (
        labels.get(OWNER_KIND_LABEL),
        labels.get(OWNER_NAME_LABEL),
        labels.get(OWNER_NAMESPACE_LABEL),
    )
    if kind and name and namespace:
        return label_owner(kind, namespace, name)
    return None


def controlled_by(obj: Obj | None, owner_uid: str) -> bool:
    """``obj`` is controlled by the owner ``owner_uid`` names: its uid (a controller
    reference), or its ``label_owner`` key (ownership labels, on a target cluster)."""
    return bool(owner_uid) and controller_key(obj) == owner_uid


def controlled_by_other(obj: Obj | None, owner_uid: str) -> bool:
    """``obj`` has a controller (reference or ownership labels), and it is not ``owner_uid``.

    On a target cluster (``owner_uid`` is a ``label_owner`` key) an existing object with
    no controller counts as someone else's too: it was not written by this Glance (whose
    every child carries the labels), and taking it over would reshape it and delete it at
    the Glance's deletion sweep. On the Glance's own cluster such an object is adopted, as
    controller-runtime's SetControllerReference adopts it."""
    if obj is None:
        return False
    key = controller_key(obj)
    if key is None:
        return "/" in owner_uid
    return key != owner_uid


def describe_controller(obj: Obj | None) -> str:
    """``<Kind> <name>`` of the controller of ``obj``, or ``nothing``."""
    ref = controller_reference(obj)
    if ref is None:
        key = controller_key(obj)
        return (
            f"{key.split('/', 1)[0]} {key.split('/', 1)[1]} (by its labels)" if key else "nothing"
        )
    return f"{ref.get('kind', '?')} {ref.get('name', '?')} (uid {ref.get('uid', '?')})"


def is_deleting(obj: Obj | None) -> bool:
    """``obj`` carries a deletionTimestamp."""
    return bool(meta(obj).get("deletionTimestamp"))


def _condition(obj: Obj | None, type_: str) -> Mapping[str, Any] | None:
    for cond in status(obj).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def parse_time(stamp: Any) -> datetime:
    """An RFC 3339 timestamp (or datetime) as an aware datetime; absent sorts oldest."""
    if isinstance(stamp, datetime):
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    if not stamp:
        return datetime.min.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# ---------------------------------------------------------------------------------------
# predicates


def _generation_observed(obj: Obj | None) -> bool:
    return _int(status(obj).get("observedGeneration")) >= _int(meta(obj).get("generation"))


def desired_replicas(deploy: Obj | None) -> int:
    """``spec.replicas`` of a Deployment; the API server's default 1 when unset."""
    replicas = ((deploy or {}).get("spec") or {}).get("replicas")
    return _int(replicas, 1) if replicas is not None else 1


def deployment_ready(deploy: Obj | None) -> bool:
    """Generation observed, ``readyReplicas >= spec.replicas`` and ``Available`` True."""
    if not deploy:
        return False
    available = _condition(deploy, AVAILABLE)
    return (
        _generation_observed(deploy)
        and _int(status(deploy).get("readyReplicas")) >= desired_replicas(deploy)
        and available is not None
        and available.get("status") == TRUE
    )


def _template_labels(deploy: Obj | None) -> Mapping[str, Any]:
    template = ((deploy or {}).get("spec") or {}).get("template") or {}
    return (template.get("metadata") or {}).get("labels") or {}


def deployment_converged(deploy: Obj | None) -> bool:
    """Every pod runs the current template, and that template carries ``component: api``.

    Readiness is not part of it: an unready pod is no endpoint under either selector, and
    demanding it would keep an install that never gets fully ready on the wide selector.
    """
    if not deploy:
        return False
    replicas = _int(status(deploy).get("replicas"))
    return (
        _generation_observed(deploy)
        and replicas > 0
        and _int(status(deploy).get("updatedReplicas")) == replicas
        and _template_labels(deploy).get(COMPONENT_LABEL) == COMPONENT_API
    )


def job_state(job: Obj | None) -> str:
    """``absent``, ``running``, ``complete`` or ``failed`` (one of ``JOB_STATES``).

    Only the terminal conditions decide, as the Job controller sets them once every pod
    has stopped; ``FailureTarget`` and ``SuccessCriteriaMet`` are still running.
    """
    if not job:
        return JOB_ABSENT
    for type_, state in ((FAILED, JOB_FAILED), (COMPLETE, JOB_COMPLETE)):
        cond = _condition(job, type_)
        if cond is not None and cond.get("status") == TRUE:
            return state
    return JOB_RUNNING


def job_failure_detail(job: Obj | None) -> str:
    """The ``Failed`` condition's reason and message of a failed Job, or ``""``."""
    cond = _condition(job, FAILED) or {}
    parts = [str(cond.get(k)) for k in ("reason", "message") if cond.get(k)]
    return ": ".join(parts)


def httproute_accepted(route: Obj | None) -> bool:
    """Some parent reports ``Accepted=True`` for the route's current generation."""
    if not route:
        return False
    generation = _int(meta(route).get("generation"))
    for parent in status(route).get("parents") or []:
        for cond in parent.get("conditions") or []:
            if cond.get("type") != ACCEPTED or cond.get("status") != TRUE:
                continue
            observed = cond.get("observedGeneration")
            if observed is None or _int(observed) >= generation:
                return True
    return False


def cronjob_ready(cronjob: Obj | None) -> bool:
    """A CronJob has nothing to wait for once it exists."""
    return bool(cronjob)


READY_PREDICATES: dict[str, Callable[[Obj | None], bool]] = {
    "Deployment": deployment_ready,
    "Job": lambda job: job_state(job) == JOB_COMPLETE,
    "HTTPRoute": httproute_accepted,
    "CronJob": cronjob_ready,
}


def condition_ready(obj: Obj | None) -> bool:
    """A mariadb-operator resource (MariaDB, Database, User, Grant): ``Ready`` is True."""
    cond = _condition(obj, "Ready")
    return cond is not None and cond.get("status") == TRUE


def is_ready(obj: Obj | None) -> bool:
    """The ready predicate of ``obj``'s kind; any other kind is ready once it exists."""
    if not obj:
        return False
    predicate = READY_PREDICATES.get(str(obj.get("kind", "")))
    return predicate(obj) if predicate is not None else True


# ---------------------------------------------------------------------------------------
# the last-good configuration and the Service selector


def _volumes(deploy: Obj | None) -> list[Mapping[str, Any]]:
    template = ((deploy or {}).get("spec") or {}).get("template") or {}
    return list((template.get("spec") or {}).get("volumes") or [])


def mounted_artifacts(deploy: Obj | None) -> tuple[str, str]:
    """``(config_map, backends_secret)``: what the ``config`` and ``backends`` volumes name.

    ``""`` for a volume that is absent or not of the expected source (no Deployment yet).
    """
    config, backends = "", ""
    for volume in _volumes(deploy):
        if volume.get("name") == CONFIG_VOLUME:
            config = str((volume.get("configMap") or {}).get("name") or "")
        elif volume.get("name") == BACKENDS_VOLUME:
            backends = str((volume.get("secret") or {}).get("secretName") or "")
    return config, backends


def selector_narrowed(service: Obj | None) -> bool:
    """The live Service already selects ``app.kubernetes.io/component: api``."""
    selector = ((service or {}).get("spec") or {}).get("selector") or {}
    return selector.get(COMPONENT_LABEL) == COMPONENT_API


def service_selector(
    desired: Mapping[str, str], live_service: Obj | None, live_deployment: Obj | None
) -> dict[str, str]:
    """The Service selector to apply: ``desired`` plus ``component: api`` once latched.

    The component label is added once every pod carries it (``narrow_selector``) and is
    never removed again once the live Service has it (the latch):
    widening would let db-purge pods, which share the name and instance labels, become
    endpoints during every later rollout.
    """
    selector = {k: v for k, v in desired.items() if k != COMPONENT_LABEL}
    if narrow_selector(live_service, live_deployment):
        selector[COMPONENT_LABEL] = COMPONENT_API
    return selector


def narrow_selector(live_service: Obj | None, live_deployment: Obj | None) -> bool:
    """Whether the Service selects ``component: api``: it already does (the latch), or
    every pod it could select carries the label. That is so once the live Deployment has
    converged, and also when there is no live Deployment: the one the pass creates runs
    the current template, which carries the label, so a first install narrows in the pass
    that creates the Deployment instead of a pass of its own after the rollout. A live
    Deployment still rolling from a template without the label (an operator upgrade)
    keeps the wide selector until it converges, or its old pods would lose their
    endpoints."""
    return (
        selector_narrowed(live_service)
        or live_deployment is None
        or deployment_converged(live_deployment)
    )


def newest_terminal_job(
    jobs: Iterable[Obj], cronjob_name: str, cronjob_uid: str | None = None
) -> Obj | None:
    """The newest Job controlled by the CronJob that reached Complete or Failed, or None.

    Controlled means a controller reference of kind CronJob and that name (and that uid
    when the live CronJob's is known). Newest by creationTimestamp, ties by name.
    """
    candidates = []
    for job in jobs:
        ref = controller_reference(job)
        if ref is None or ref.get("kind") != "CronJob" or ref.get("name") != cronjob_name:
            continue
        if cronjob_uid and ref.get("uid") != cronjob_uid:
            continue
        if job_state(job) not in (JOB_COMPLETE, JOB_FAILED):
            continue
        candidates.append(job)
    if not candidates:
        return None
    return max(
        candidates,
        key=lambda j: (parse_time(meta(j).get("creationTimestamp")), meta(j).get("name", "")),
    )


# ---------------------------------------------------------------------------------------
# what the gather step hands over


@dataclass(frozen=True)
class LiveObjects:
    """The live objects one Glance pass decides from, as the gather step read them.

    * ``objects``: by ``desired_objects`` key, the object of that key's fixed name
      (``{name}``, ``{name}-db-sync``, the upgrade phase Jobs ``{name}-db-expand``,
      ``-db-migrate``, ``-db-contract``, ``{name}-db-connection``, the db-purge name),
      absent when it does not exist;
    * ``config_maps``, ``backends_secrets``: every ConfigMap / Secret listed by the label
      ``cobaltcore.c5c3.io/config-base={name}-config`` / ``{name}-backends``;
    * ``jobs``: the Jobs listed by the common labels (the db-purge runs);
    * ``gateway_api``: the cluster serves ``gateway.networking.k8s.io/v1`` HTTPRoute.

    A content-addressed name that exists without the label is invisible to the listing;
    the apply step meets it as AlreadyExists on create and decides again with
    ``apply_plan.create_only_action``.
    """

    objects: Mapping[str, Obj] = field(default_factory=dict)
    config_maps: Sequence[Obj] = ()
    backends_secrets: Sequence[Obj] = ()
    jobs: Sequence[Obj] = ()
    gateway_api: bool = True

    def get(self, key: str) -> Obj | None:
        """The live object of a fixed-name key, or None."""
        return self.objects.get(key)

    def listed(self, key: str) -> Sequence[Obj]:
        """The copies listed for a content-addressed key (``config_map``/``backends_secret``)."""
        if key == ok.CONFIG_MAP:
            return self.config_maps
        if key == ok.BACKENDS_SECRET:
            return self.backends_secrets
        return ()

    def copy_named(self, key: str, name: str) -> Obj | None:
        """The listed copy of a content-addressed key with this ``name``, or None."""
        for obj in self.listed(key):
            if meta(obj).get("name") == name:
                return obj
        return None

    @property
    def deployment(self) -> Obj | None:
        return self.get(ok.DEPLOYMENT)


def live_objects(
    glance_name: str, objects: Iterable[Obj], *, gateway_api: bool = True
) -> LiveObjects:
    """Sort a flat list of live objects of a Glance's namespace into a ``LiveObjects``.

    Objects of the owned fixed names go to ``objects``; ConfigMaps and Secrets with the
    config-base label of this Glance to the listings; Jobs other than the database Jobs
    (db-sync and the phase Jobs) to ``jobs``; anything else is ignored.
    """
    fixed = {
        (kind, name): key
        for key, kind, name in (
            (ok.DB_CONNECTION_SECRET, "Secret", glance_name + DB_CONNECTION_SUFFIX),
            (ok.DEPLOYMENT, "Deployment", glance_name),
            (ok.SERVICE, "Service", glance_name),
            (ok.PDB, "PodDisruptionBudget", glance_name),
            (ok.HPA, "HorizontalPodAutoscaler", glance_name),
            (ok.NETWORK_POLICY, "NetworkPolicy", glance_name),
            (ok.HTTP_ROUTE, "HTTPRoute", glance_name),
            *((key, "Job", glance_name + DB_JOB_SPECS[key][0]) for key in ok.DB_JOBS),
            (ok.DB_PURGE_CRONJOB, "CronJob", db_purge_cronjob_name(glance_name)),
            (ok.MARIADB_DATABASE, "Database", glance_name),
            (ok.MARIADB_USER, "User", glance_name),
            (ok.MARIADB_GRANT, "Grant", glance_name),
        )
    }
    found: dict[str, Obj] = {}
    config_maps: list[Obj] = []
    secrets: list[Obj] = []
    jobs: list[Obj] = []
    for obj in objects:
        kind = str(obj.get("kind", ""))
        name = str(meta(obj).get("name", ""))
        base = (meta(obj).get("labels") or {}).get(CONFIG_BASE_LABEL)
        if (kind, name) in fixed:
            found[fixed[(kind, name)]] = obj
        elif kind == "ConfigMap" and base == config_base(glance_name):
            config_maps.append(obj)
        elif kind == "Secret" and base == backends_base(glance_name):
            secrets.append(obj)
        elif kind == "Job":
            jobs.append(obj)
    return LiveObjects(
        objects=found,
        config_maps=tuple(config_maps),
        backends_secrets=tuple(secrets),
        jobs=tuple(jobs),
        gateway_api=gateway_api,
    )
