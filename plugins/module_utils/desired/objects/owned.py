# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Every decision about the objects a Glance owns, as data for the role templates.

The roles emit objects and decide nothing: each template lays out one object's structure
and inserts the values computed here. One function per owned object returns what its
template needs, or ``None`` when this pass renders no such object; ``desired_objects`` is
the entry point that returns all of them by key.

The decisions live in the modules of ``desired/objects/``, one per concern: ``keys`` (the
keys below and their groups), ``metadata`` (labels, names, the ``Artifacts`` handed in),
``pods`` (volumes, containers, the pod template and its hash), ``uwsgi`` (the API's
command), and one module per role's objects: ``config_secrets`` (``glance_config``),
``api`` (``glance_api``), ``exposure`` (``glance_exposure``), ``database`` and ``mariadb``
(``glance_database``). This module only gathers them by key.

``None`` means one of two things, and the apply step must tell them apart:

* ``OPTIONAL_OBJECTS`` (``hpa``, ``network_policy``, ``http_route``): the spec block is
  unset, so the object is not wanted and a live one is deleted.
* every other key: the input to build it is not there yet (no valid configuration, so no
  config ConfigMap name; or no DSN), so nothing is written and a live object is kept.

Pure: no I/O, no clock, no randomness. Maps keep a fixed insertion order and every list
has a defined order, so the same inputs give byte-identical manifests. Nothing returned
shares a mutable object with the input or with another part of the output (a YAML dumper
would otherwise write anchors).

Data shape
----------
Every entry carries ``name``, ``namespace``, ``labels`` and ``owner_references`` (the
controller reference to the Glance). A Glance whose children go to a target cluster
(``spec.targetClusterRef``) gives no owner reference, which would name a UID absent on
that cluster, and the ownership labels (``owner_labels``) join ``labels`` instead. The
rest, per key:

* ``config_map``: ``data`` (the ConfigMap data, keys sorted).
* ``backends_secret``, ``db_connection_secret``: ``data`` (base64 values, keys sorted).
* ``deployment``: ``replicas`` (None: omitted, the HPA owns it), ``selector``,
  ``strategy``, ``pod``.
* ``service``: ``type``, ``selector``, ``ports``.
* ``pdb``: ``selector``, ``min_available`` / ``max_unavailable`` (exactly one is set).
* ``hpa``: ``scale_target_ref``, ``min_replicas``, ``max_replicas``, ``metrics``.
* ``network_policy``: ``pod_selector``, ``policy_types``, ``ingress``, ``egress``.
* ``http_route``: ``annotations``, ``parent_refs``, ``hostnames``, ``path``,
  ``backend_refs``, ``timeouts``.
* ``db_sync_job``, ``db_expand_job``, ``db_migrate_job``, ``db_contract_job`` (the
  ``DB_JOBS``, one template): ``annotations`` (the pod-spec hash), ``backoff_limit``,
  ``pod``. At most one of them is set: ``database_job`` names it (the db-sync Job in the
  steady state, the Job of the current upgrade phase during an upgrade, none while an
  upgrade is refused or between phases; ``upgrade.database_job`` decides).
* ``db_purge_cronjob``: ``schedule``, ``suspend``, ``concurrency_policy``,
  ``job_labels``, ``active_deadline_seconds``, ``pod``.
* ``mariadb_database``, ``mariadb_user``, ``mariadb_grant`` (managed mode, the
  ``MARIADB_OBJECTS``; the common labels, which the reference's lack): ``mariadb_ref``, and
  ``character_set``, ``collate``, ``database`` (Database); ``password_secret_key_ref``
  (User); ``privileges``, ``database``, ``table``, ``username`` (Grant). None outside
  managed mode, and the User and Grant None with Dynamic credentials.

A ``pod`` is ``labels``, ``annotations`` ({}: omitted), ``restart_policy`` and
``termination_grace_period_seconds`` and ``priority_class_name`` (None: omitted),
``automount_service_account_token``, ``security_context``,
``topology_spread_constraints`` ([]: omitted), ``containers`` and ``volumes``. A container
is ``name``, ``image``, ``command``, ``env`` and ``ports`` ([]: omitted), ``resources``
(None: omitted), ``volume_mounts``, ``security_context``, and ``startup_probe``,
``liveness_probe``, ``readiness_probe`` and ``lifecycle`` (None: omitted).
:func:`pods.pod_template_object` builds the Kubernetes ``PodTemplateSpec`` a template renders
from a ``pod``; the Job's pod-spec hash is taken over exactly that object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.api import (
    deployment,
    hpa,
    pdb,
    service,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.config_secrets import (
    backends_secret,
    config_map,
    db_connection_secret,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.database import (
    db_job,
    db_purge_cronjob,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.exposure import (
    http_route,
    network_policy,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.keys import (
    BACKENDS_SECRET,
    CONFIG_MAP,
    DB_CONNECTION_SECRET,
    DB_JOBS,
    DB_PURGE_CRONJOB,
    DB_SYNC_JOB,
    DEPLOYMENT,
    HPA,
    HTTP_ROUTE,
    MARIADB_DATABASE,
    MARIADB_GRANT,
    MARIADB_USER,
    NETWORK_POLICY,
    PDB,
    SERVICE,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.mariadb import (
    mariadb_database,
    mariadb_grant,
    mariadb_user,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    Artifacts,
)


def desired_objects(
    glance: Mapping[str, Any],
    artifacts: Artifacts,
    *,
    narrow_selector: bool = False,
    operator_namespace: str | None = None,
    database_job: str | None = DB_SYNC_JOB,
) -> dict[str, dict[str, Any] | None]:
    """The data of every owned object, by key (see the module docstring for ``None``).

    ``glance`` is the stored Glance with defaults applied (``admission.judge(...).object``).
    ``database_job`` is the one key of ``DB_JOBS`` to render (None: none of them).
    """
    if database_job is not None and database_job not in DB_JOBS:
        raise ValueError(f"database_job must be one of {DB_JOBS}, not {database_job!r}")
    jobs = {key: db_job(glance, artifacts, key) if key == database_job else None for key in DB_JOBS}
    return {
        CONFIG_MAP: config_map(glance, artifacts),
        BACKENDS_SECRET: backends_secret(glance, artifacts),
        DB_CONNECTION_SECRET: db_connection_secret(glance, artifacts),
        MARIADB_DATABASE: mariadb_database(glance, artifacts),
        MARIADB_USER: mariadb_user(glance, artifacts),
        MARIADB_GRANT: mariadb_grant(glance, artifacts),
        DEPLOYMENT: deployment(glance, artifacts),
        SERVICE: service(glance, artifacts, narrow_selector),
        PDB: pdb(glance, artifacts),
        HPA: hpa(glance, artifacts),
        NETWORK_POLICY: network_policy(glance, artifacts, operator_namespace),
        HTTP_ROUTE: http_route(glance, artifacts),
        **jobs,
        DB_PURGE_CRONJOB: db_purge_cronjob(glance, artifacts),
    }
