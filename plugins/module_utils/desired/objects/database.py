# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The database Jobs (role ``glance_database``): the db-sync Job and the upgrade's
db-expand, db-migrate and db-contract Jobs (reference-spec §4.11, §4.13), one shape, and
the db-purge CronJob (§4.12).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    DEFAULT_RETENTION_DAYS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    CONFIG_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    DB_TLS_MOUNT_PATH as DB_TLS_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.keys import (
    DB_CONTRACT_JOB,
    DB_EXPAND_JOB,
    DB_MIGRATE_JOB,
    DB_SYNC_JOB,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    COMPONENT_DB_PURGE,
    DB_CONTRACT_SUFFIX,
    DB_EXPAND_SUFFIX,
    DB_MIGRATE_SUFFIX,
    DB_SYNC_SUFFIX,
    POD_SPEC_HASH_ANNOTATION,
    Artifacts,
    _metadata,
    _name,
    _spec,
    common_labels,
    component_labels,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    CONFIG_VOLUME,
    DB_TLS_VOLUME,
    TMP_PATH,
    TMP_VOLUME,
    _config_volume,
    _container,
    _db_connection_env,
    _db_tls_volume,
    _mount,
    _pod,
    _tmp_volume,
    db_tls_enabled,
    image_reference,
    pod_spec_hash,
)

# --- ports, paths, identities ------------------------------------------------------------
DB_SYNC_CONTAINER = "db-sync"
DB_PURGE_CONTAINER = "db-purge"
METADEFS_PATH = "/var/lib/openstack/etc/glance/metadefs"

# --- database Jobs (reference-spec §4.11, §4.12) ------------------------------------------
GLANCE_MANAGE = f"glance-manage --config-dir {CONFIG_DIR}"
# load_metadefs --merge: without it every namespace that exists is skipped, so a new
# release's db-sync would never load the definitions it adds to a shipped namespace (the
# reference's stated intent, §4.13, which its command does not do). --merge only adds:
# what the database holds (an admin's edits included) is never changed or removed.
# --prefer_new would also overwrite each shipped namespace's visibility and owner and
# every shipped definition on each run (every config change re-runs db-sync); not chosen.
DB_SYNC_SCRIPT = (
    f"{GLANCE_MANAGE} db sync && {GLANCE_MANAGE} db load_metadefs --path {METADEFS_PATH} --merge"
)
DB_SYNC_BACKOFF_LIMIT = 4
# Per database Job: its name suffix, which is also its container's name and its component
# label without the leading "-", and the script it runs (reference-spec §4.11, §4.13).
DB_JOB_SPECS = {
    DB_SYNC_JOB: (DB_SYNC_SUFFIX, DB_SYNC_SCRIPT),
    DB_EXPAND_JOB: (DB_EXPAND_SUFFIX, f"{GLANCE_MANAGE} db expand"),
    DB_MIGRATE_JOB: (DB_MIGRATE_SUFFIX, f"{GLANCE_MANAGE} db migrate"),
    DB_CONTRACT_JOB: (DB_CONTRACT_SUFFIX, f"{GLANCE_MANAGE} db contract"),
}
DEFAULT_PURGE_SCHEDULE = "1 0 * * *"
PURGE_MAX_ROWS = 1000
PURGE_ACTIVE_DEADLINE_SECONDS = 3600
PURGE_CONCURRENCY_POLICY = "Forbid"


def _database_pod(
    spec: Mapping[str, Any],
    artifacts: Artifacts,
    name: str,
    container: str,
    script: str,
    restart_policy: str,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """A pod that runs glance-manage against the database: the config, the DSN, DB TLS."""
    volumes = [_config_volume(artifacts)]
    mounts = [_mount(CONFIG_VOLUME, CONFIG_DIR, read_only=True)]
    if db_tls_enabled(spec):
        volumes.append(_db_tls_volume(spec))
        mounts.append(_mount(DB_TLS_VOLUME, DB_TLS_DIR, read_only=True))
    volumes.append(_tmp_volume())
    mounts.append(_mount(TMP_VOLUME, TMP_PATH))
    return _pod(
        labels,
        [
            _container(
                container,
                image_reference(spec),
                ["/bin/sh", "-eu", "-c", script],
                mounts,
                env=[_db_connection_env(name)],
            )
        ],
        volumes,
        restart_policy=restart_policy,
    )


def db_job(glance: Mapping[str, Any], artifacts: Artifacts, key: str) -> dict[str, Any] | None:
    """A Job of ``DB_JOBS``: ``{name}-db-sync`` (db sync, then load_metadefs) or an upgrade
    phase's ``{name}-db-expand`` / ``-db-migrate`` / ``-db-contract``; None while no config
    exists.

    All four are one shape: the spec image, the config mount, the DSN from the
    db-connection Secret, the DB TLS volume when TLS is on, backoffLimit 4, never
    restarted in place. Their pods carry no name/instance labels, so neither the Service
    nor the PDB counts them. The annotation is the pod-spec hash: any change to the pod
    template re-runs a finished Job (the rerun key).
    """
    if not artifacts.config_map:
        return None
    spec = _spec(glance)
    name = _name(glance)
    suffix, script = DB_JOB_SPECS[key]
    component = suffix.lstrip("-")
    pod = _database_pod(spec, artifacts, name, component, script, "Never", {})
    out = _metadata(glance, artifacts, name + suffix, component_labels(name, component))
    out["annotations"] = {POD_SPEC_HASH_ANNOTATION: pod_spec_hash(pod)}
    out["backoff_limit"] = DB_SYNC_BACKOFF_LIMIT
    out["pod"] = pod
    return out


def db_sync_job(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """``{name}-db-sync``: db sync, then load_metadefs; None while no config exists."""
    return db_job(glance, artifacts, DB_SYNC_JOB)


def db_purge_script(spec: Mapping[str, Any]) -> str:
    """``db purge`` of rows soft-deleted ``retentionDays`` ago; ``purge_images_table`` opt-in."""
    purge = spec.get("dbPurge") or {}
    days = purge.get("retentionDays") or DEFAULT_RETENTION_DAYS
    script = f"{GLANCE_MANAGE} db purge --age_in_days {days} --max_rows {PURGE_MAX_ROWS}"
    if purge.get("purgeImagesTable"):
        script += (
            f" && {GLANCE_MANAGE} db purge_images_table --age_in_days {days}"
            f" --max_rows {PURGE_MAX_ROWS}"
        )
    return script


def db_purge_cronjob(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The db-purge CronJob, on every Glance; None while no config exists to mount."""
    if not artifacts.config_map:
        return None
    spec = _spec(glance)
    name = _name(glance)
    purge = spec.get("dbPurge") or {}
    out = _metadata(glance, artifacts, db_purge_cronjob_name(name), common_labels(name))
    out["schedule"] = purge.get("schedule") or DEFAULT_PURGE_SCHEDULE
    out["suspend"] = bool(purge.get("suspend"))
    out["concurrency_policy"] = PURGE_CONCURRENCY_POLICY
    out["job_labels"] = common_labels(name)
    out["active_deadline_seconds"] = PURGE_ACTIVE_DEADLINE_SECONDS
    out["pod"] = _database_pod(
        spec,
        artifacts,
        name,
        DB_PURGE_CONTAINER,
        db_purge_script(spec),
        "OnFailure",
        component_labels(name, COMPONENT_DB_PURGE),
    )
    return out
