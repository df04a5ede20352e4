# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Condition types, reasons and event reasons: every one a named constant, used in one place.

A condition is a plain mapping ``{type, status, reason, message}`` while it is computed;
the report step adds ``observedGeneration`` and ``lastTransitionTime`` when it writes status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TRUE = "True"
FALSE = "False"

# --- Glance condition types ------------------------------------------------------------
SECRETS_READY = "SecretsReady"
BACKENDS_READY = "BackendsReady"
DATABASE_READY = "DatabaseReady"
DEPLOYMENT_READY = "DeploymentReady"
GLANCE_API_READY = "GlanceAPIReady"
HPA_READY = "HPAReady"
NETWORK_POLICY_READY = "NetworkPolicyReady"
HTTPROUTE_READY = "HTTPRouteReady"
DB_PURGE_READY = "DBPurgeReady"
READY = "Ready"
EXTRA_CONFIG_HEALTHY = "ExtraConfigHealthy"

# The nine conditions whose conjunction is Ready (ExtraConfigHealthy is informational).
READY_PARTS = (
    SECRETS_READY,
    BACKENDS_READY,
    DATABASE_READY,
    DEPLOYMENT_READY,
    GLANCE_API_READY,
    HPA_READY,
    NETWORK_POLICY_READY,
    HTTPROUTE_READY,
    DB_PURGE_READY,
)

# --- Glance reasons ----------------------------------------------------------------------
SECRETS_AVAILABLE = "SecretsAvailable"
WAITING_FOR_DB_CREDENTIALS = "WaitingForDBCredentials"
WAITING_FOR_SERVICE_USER_CREDENTIALS = "WaitingForServiceUserCredentials"
# spec.importCABundleSecretRef names a Secret that is not there or lacks ca.crt.
WAITING_FOR_IMPORT_CA_BUNDLE = "WaitingForImportCABundle"
SECRET_STORE_NOT_READY = "SecretStoreNotReady"
CONFIG_ERROR = "ConfigError"
# The target cluster spec.targetClusterRef names cannot be resolved or does not answer
# (reference-spec §2.2, §2.11); on a GlanceBackend, CredentialsReady's.
TARGET_CLUSTER_UNAVAILABLE = "TargetClusterUnavailable"

ALL_BACKENDS_PROJECTED = "AllBackendsProjected"
WAITING_FOR_BACKENDS = "WaitingForBackends"
NO_DEFAULT_BACKEND = "NoDefaultBackend"

DATABASE_SYNCED = "DatabaseSynced"
WAITING_FOR_DATABASE = "WaitingForDatabase"
CLUSTER_NOT_READY = "ClusterNotReady"  # managed mode: the MariaDB of clusterRef is not Ready
IMAGE_RELEASE_MISMATCH = "ImageReleaseMismatch"
DB_SYNC_IN_PROGRESS = "DBSyncInProgress"
DB_SYNC_FAILED = "DBSyncFailed"
# The release upgrade (reference-spec §4.13).
VERSION_PARSE_ERROR = "VersionParseError"
DOWNGRADE_NOT_SUPPORTED = "DowngradeNotSupported"
UPGRADE_PATH_INVALID = "UpgradePathInvalid"
UPGRADE_TARGET_CHANGED = "UpgradeTargetChanged"
EXPAND_IN_PROGRESS = "ExpandInProgress"
MIGRATE_IN_PROGRESS = "MigrateInProgress"
UPGRADE_ROLLING_UPDATE = "UpgradeRollingUpdate"
CONTRACT_IN_PROGRESS = "ContractInProgress"
EXPAND_FAILED = "ExpandFailed"
MIGRATE_FAILED = "MigrateFailed"
CONTRACT_FAILED = "ContractFailed"

DEPLOYMENT_READY_REASON = "DeploymentReady"
WAITING_FOR_DEPLOYMENT = "WaitingForDeployment"

API_HEALTHY = "APIHealthy"
API_UNHEALTHY = "APIUnhealthy"
ENDPOINT_NOT_READY = "EndpointNotReady"
HEALTH_CHECK_TIMEOUT = "HealthCheckTimeout"
CONNECTION_FAILED = "ConnectionFailed"
HEALTH_CHECK_FAILED = "HealthCheckFailed"

HPA_READY_REASON = "HPAReady"
HPA_NOT_REQUIRED = "HPANotRequired"
NETWORK_POLICY_READY_REASON = "NetworkPolicyReady"
NETWORK_POLICY_NOT_REQUIRED = "NetworkPolicyNotRequired"
HTTPROUTE_ACCEPTED = "HTTPRouteAccepted"
HTTPROUTE_NOT_REQUIRED = "HTTPRouteNotRequired"
HTTPROUTE_NOT_ACCEPTED = "HTTPRouteNotAccepted"
GATEWAY_API_NOT_INSTALLED = "GatewayAPINotInstalled"
DB_PURGE_SCHEDULED = "DBPurgeScheduled"
DB_PURGE_SUSPENDED = "DBPurgeSuspended"
DB_PURGE_JOB_FAILED = "DBPurgeJobFailed"

# Ours: an object of an owned name exists and another controller owns it (the reference
# returns an error and backs off); reported on the condition of the step that owns the name.
OWNERSHIP_CONFLICT = "OwnershipConflict"
# Ours: the Service guard refused to change clusterIP, clusterIPs or ipFamilies.
CLUSTER_IP_IMMUTABLE = "ClusterIPImmutable"

ALL_READY = "AllReady"
NOT_ALL_READY = "NotAllReady"
# The reference's Ready messages (internal/common/reconcile.SetAggregateReady); ours name
# the sub-conditions in parentheses after.
ALL_READY_MESSAGE = "All sub-conditions are ready"
NOT_ALL_READY_MESSAGE = "One or more sub-conditions are not ready"

NO_OWNED_KEYS_OVERRIDDEN = "NoOwnedKeysOverridden"
OWNED_KEYS_OVERRIDDEN = "OwnedKeysOverridden"

# --- GlanceBackend condition types and reasons ------------------------------------------
CREDENTIALS_READY = "CredentialsReady"
CONFIG_PROJECTED = "ConfigProjected"
BACKEND_READY_PARTS = (CREDENTIALS_READY, CONFIG_PROJECTED)

CREDENTIALS_AVAILABLE = "CredentialsAvailable"
WAITING_FOR_CREDENTIALS = "WaitingForCredentials"
WAITING_FOR_PARENT = "WaitingForParent"
CONFIG_PROJECTED_REASON = "ConfigProjected"
WAITING_FOR_PROJECTION = "WaitingForProjection"

# --- Event reasons (all on the Glance) ---------------------------------------------------
EVENT_GLANCE_BACKEND_SKIPPED = "GlanceBackendSkipped"
EVENT_EXTRA_CONFIG_OWNED_KEY_OVERRIDE = "ExtraConfigOwnedKeyOverride"
EVENT_DATABASE_SYNCED = "DatabaseSynced"
EVENT_DB_SYNC_FAILED = "DBSyncFailed"
# Deletion in managed mode (reference-spec §2.10).
EVENT_FINALIZING_DATABASE = "FinalizingDatabase"
EVENT_DATABASE_FINALIZED = "DatabaseFinalized"
# Deleted while its target cluster stayed unresolvable past the abandon window (§2.10).
EVENT_REMOTE_CHILDREN_ABANDONED = "RemoteChildrenAbandoned"
EVENT_REMOTE_CHILDREN_SWEPT = "RemoteChildrenSwept"
EVENT_DB_PURGE_JOB_FAILED = "DBPurgeJobFailed"
EVENT_UPGRADE_INITIATED = "UpgradeInitiated"
EVENT_EXPAND_COMPLETE = "ExpandComplete"
EVENT_MIGRATE_COMPLETE = "MigrateComplete"
EVENT_DEPLOYMENT_ROLLOUT_COMPLETE = "DeploymentRolloutComplete"
EVENT_UPGRADE_COMPLETE = "UpgradeComplete"
EVENT_UPGRADE_ABORTED = "UpgradeAborted"
EVENT_VERSION_PARSE_ERROR = "VersionParseError"
EVENT_DOWNGRADE_NOT_SUPPORTED = "DowngradeNotSupported"
EVENT_UPGRADE_PATH_INVALID = "UpgradePathInvalid"
EVENT_UPGRADE_TARGET_CHANGED = "UpgradeTargetChanged"
EVENT_EXPAND_FAILED = "ExpandFailed"
EVENT_MIGRATE_FAILED = "MigrateFailed"
EVENT_CONTRACT_FAILED = "ContractFailed"


def condition(type_: str, status: bool | str, reason: str, message: str) -> dict[str, str]:
    """A condition as computed (no observedGeneration or lastTransitionTime yet)."""
    if isinstance(status, bool):
        status = TRUE if status else FALSE
    return {"type": type_, "status": status, "reason": reason, "message": message}


def by_type(conditions: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {c["type"]: c for c in conditions}


def aggregate_ready(
    conditions: Iterable[Mapping[str, Any]], parts: tuple[str, ...] = READY_PARTS
) -> dict[str, str]:
    """``Ready``: True exactly when every one of ``parts`` is present and True."""
    present = by_type(conditions)
    missing = [p for p in parts if p not in present]
    not_true = [p for p in parts if p in present and present[p]["status"] != TRUE]
    if not missing and not not_true:
        return condition(READY, True, ALL_READY, ALL_READY_MESSAGE)
    detail = []
    if not_true:
        detail.append("not ready: " + ", ".join(not_true))
    if missing:
        detail.append("not yet reported: " + ", ".join(missing))
    return condition(READY, False, NOT_ALL_READY, f"{NOT_ALL_READY_MESSAGE} ({'; '.join(detail)})")
