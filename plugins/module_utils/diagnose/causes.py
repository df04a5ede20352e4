# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""What ``diagnose`` knows: each cause of a Glance not serving, what shows it, and the fix.

This is data, and the one place it is written: ``docs/operations.md``'s table "What
diagnose says" is generated from it (``hack/diagnose_table.py``; a unit test holds the two
equal). ``findings.py`` matches what it read against the ``SIGNS`` below and takes the
words from ``CAUSES``.

A cause's **rank** orders the summary: the finding of the lowest rank is named first, as
the one that explains the most (a missing Secret explains the failed db-sync Job, which
explains the Deployment that is not ready, which explains the health check). Its
**severity** is ``fault`` (something is wrong), ``progress`` (a step under way, nothing
wrong yet) or ``note`` (worth knowing; the Glance serves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c

FAULT = "fault"
PROGRESS = "progress"
NOTE = "note"


@dataclass(frozen=True)
class Cause:
    id: str
    rank: int
    severity: str
    title: str
    fix: str


CAUSES: tuple[Cause, ...] = (
    Cause(
        "not-reconciled",
        5,
        FAULT,
        "the operator has not reconciled its latest spec",
        "check that the operator's manager is running and Ready (kubectl -n "
        "glance-operator-system get pods) and watches this namespace; read its log",
    ),
    Cause(
        "target-cluster",
        10,
        FAULT,
        "the target cluster of spec.targetClusterRef cannot be reached",
        "check the registration Secret in the clusters namespace and that its kubeconfig "
        "answers (docs/target-clusters.md)",
    ),
    Cause(
        "config-error",
        15,
        FAULT,
        "the spec cannot be turned into a configuration",
        "correct the field the message names; validate offline with "
        "playbooks/validate.yml (docs/validation.md)",
    ),
    Cause(
        "ownership-conflict",
        18,
        FAULT,
        "an object of a name the Glance owns belongs to someone else",
        "delete or rename the other object, or give the Glance another name",
    ),
    Cause(
        "db-secret",
        20,
        FAULT,
        "the database Secret (spec.database.secretRef) is missing or lacks a key",
        "create the Secret with the keys username and password (docs/secrets.md)",
    ),
    Cause(
        "service-user-secret",
        21,
        FAULT,
        "the Keystone service user's Secret (spec.serviceUser.secretRef) is missing or "
        "lacks its key",
        "create the Secret with the password under its key (password unless "
        "spec.serviceUser.secretRef.key says otherwise; docs/secrets.md)",
    ),
    Cause(
        "import-ca-secret",
        22,
        FAULT,
        "the import CA bundle Secret (spec.importCABundleSecretRef) is missing or lacks ca.crt",
        "create the Secret with the PEM bundle under ca.crt",
    ),
    Cause(
        "secret-store",
        23,
        FAULT,
        "the external secret store does not deliver the Secrets",
        "check the ExternalSecret's and the SecretStore's status (docs/secrets.md)",
    ),
    Cause(
        "backend-secret",
        24,
        FAULT,
        "a GlanceBackend's S3 credentials Secret is missing or lacks a key",
        "create the Secret of spec.s3.credentialsSecretRef with access_key and "
        "secret_key (docs/secrets.md)",
    ),
    Cause(
        "backend-parent",
        25,
        FAULT,
        "a GlanceBackend names a Glance that does not exist",
        "correct spec.glanceRef.name of the GlanceBackend",
    ),
    Cause(
        "mariadb-not-ready",
        30,
        FAULT,
        "the MariaDB of spec.database.clusterRef, or its Database, User or Grant, is not Ready",
        "look at the MariaDB resource's status and its pods (docs/database.md)",
    ),
    Cause(
        "db-unreachable",
        31,
        FAULT,
        "the database server does not answer",
        "check that MariaDB runs and that spec.database.host and port reach it from the "
        "namespace (a NetworkPolicy, DNS); Glance recovers by itself once it answers",
    ),
    Cause(
        "db-auth",
        32,
        FAULT,
        "the database refuses Glance's credentials",
        "make the database Secret's username and password match the database user "
        "(docs/database.md); the pods pick up a changed Secret on the next pass",
    ),
    Cause(
        "db-missing",
        33,
        FAULT,
        "the database spec.database.database does not exist on the server",
        "create the database and grant the user on it, or use the managed mode "
        "(spec.database.clusterRef)",
    ),
    Cause(
        "db-sync-failed",
        35,
        FAULT,
        "the db-sync Job failed",
        "read the Job's log (its finding shows the last lines); fix what it names, then "
        "delete the failed Job so the next pass runs it again (docs/database.md)",
    ),
    Cause(
        "release-mismatch",
        36,
        FAULT,
        "spec.image.tag does not carry spec.openStackRelease",
        "set the image tag and the release together (docs/upgrades.md)",
    ),
    Cause(
        "upgrade-refused",
        37,
        FAULT,
        "the release change is not an upgrade the operator can make",
        "go back to the installed release, or upgrade one release at a time (docs/upgrades.md)",
    ),
    Cause(
        "upgrade-failed",
        38,
        FAULT,
        "a phase Job of the release upgrade failed",
        "read the Job's log (its finding shows the last lines); fix what it names, then "
        "delete the failed Job: the upgrade goes on from that phase (docs/upgrades.md)",
    ),
    Cause(
        "no-default-backend",
        40,
        FAULT,
        "no GlanceBackend is the default store",
        "set spec.isDefault: true on exactly one GlanceBackend",
    ),
    Cause(
        "image-pull",
        50,
        FAULT,
        "the Glance image cannot be pulled",
        "check spec.image.repository and spec.image.tag (they must exist in the registry) "
        "and the pull secret",
    ),
    Cause(
        "container-config",
        51,
        FAULT,
        "a container cannot start: a Secret or ConfigMap it mounts is missing",
        "read the message; the operator writes these objects, so a pass that did not "
        "finish is the usual cause: look at the Glance's other findings",
    ),
    Cause(
        "unschedulable",
        52,
        FAULT,
        "an API pod cannot be scheduled",
        "read the scheduler's message: free the resources it lacks, or lower "
        "spec.deployment's requests, or correct the node selector, affinity or "
        "tolerations",
    ),
    Cause(
        "staging-bound",
        53,
        FAULT,
        "a pod was evicted: its staging volume went past spec.staging.sizeLimit",
        "size spec.staging.sizeLimit above the largest image users stage or import; a "
        "staged image whose pod went away must be deleted and staged again "
        "(docs/operations.md, 'The staging and image-cache bounds')",
    ),
    Cause(
        "cache-bound",
        54,
        FAULT,
        "a pod was evicted: its image cache went past spec.imageCache.sizeLimit",
        "set spec.imageCache.sizeLimit to at least five times what one pod serves of "
        "uncached images in 30 s, plus the largest image (docs/operations.md)",
    ),
    Cause(
        "evicted",
        55,
        FAULT,
        "a pod was evicted by its node",
        "read the message (node pressure: memory, disk); free the node or move the pods",
    ),
    Cause(
        "oom-killed",
        56,
        FAULT,
        "a container ran out of memory (OOMKilled)",
        "raise the memory limit in spec.deployment.resources, or lower the uWSGI processes per pod",
    ),
    Cause(
        "keystone-auth",
        60,
        FAULT,
        "Keystone refuses the service user's credentials",
        "make the service user's Secret hold the password Keystone has for that user "
        "(docs/secrets.md)",
    ),
    Cause(
        "keystone-unreachable",
        61,
        FAULT,
        "Keystone (spec.keystoneEndpoint) does not answer",
        "check spec.keystoneEndpoint and that Keystone runs and is reachable from the namespace",
    ),
    Cause(
        "s3-auth",
        62,
        FAULT,
        "an S3 store refuses its credentials",
        "make the GlanceBackend's credentials Secret hold a key pair the S3 server "
        "accepts for its bucket",
    ),
    Cause(
        "s3-bucket",
        63,
        FAULT,
        "an S3 store's bucket does not exist",
        "create the bucket of spec.s3.bucket, or correct the name",
    ),
    Cause(
        "s3-unreachable",
        64,
        FAULT,
        "an S3 store does not answer",
        "check spec.s3.host and that the S3 server runs and is reachable from the "
        "namespace; uploads and downloads of that store fail until it answers "
        "(docs/operations.md, 'The S3 store is unreachable')",
    ),
    Cause(
        "policy-error",
        65,
        FAULT,
        "Glance cannot read its policy: spec.policyOverrides holds a rule it rejects",
        "correct or remove the rule the log names in spec.policyOverrides",
    ),
    Cause(
        "glance-config",
        66,
        FAULT,
        "Glance refuses its configuration",
        "correct the option the log names (spec.extraConfig, most often)",
    ),
    Cause(
        "api-errors",
        67,
        FAULT,
        "the API answers requests with server errors",
        "read the API container's log (in the finding): a policy or an option Glance "
        "cannot use (spec.policyOverrides, spec.extraConfig) is the usual cause",
    ),
    Cause(
        "check-failed",
        69,
        FAULT,
        "a check from inside an API pod failed",
        "read the check's message",
    ),
    Cause(
        "crashing",
        70,
        FAULT,
        "a container keeps failing",
        "read the last lines of its log (in the finding; FORMAT=json has them all)",
    ),
    Cause(
        "probe-failing",
        72,
        FAULT,
        "the kubelet's probes of the API fail",
        "read the probe's message: a slow API (too few uWSGI processes, a CPU limit too "
        "low) or one that does not start",
    ),
    Cause(
        "job-failed",
        74,
        FAULT,
        "a Job of the Glance failed",
        "read the Job's log (its finding shows the last lines)",
    ),
    Cause(
        "api-unhealthy",
        75,
        FAULT,
        "the Glance API's /healthcheck does not answer 200",
        "look at the API pods' findings and their log",
    ),
    Cause(
        "route-parent-missing",
        79,
        FAULT,
        "the Gateway the HTTPRoute names does not exist",
        "correct spec.gateway.parentRef (name, namespace) to a Gateway that exists "
        "(kubectl get gateways -A), or create that Gateway (docs/gateway.md)",
    ),
    Cause(
        "route-not-accepted",
        80,
        FAULT,
        "the Gateway does not accept the HTTPRoute",
        "check spec.gateway.parentRef (the Gateway's name, namespace and listener) and "
        "the Gateway's status (docs/gateway.md)",
    ),
    Cause(
        "gateway-api-missing",
        81,
        FAULT,
        "spec.gateway is set but the cluster does not serve the Gateway API",
        "install the Gateway API CRDs and a Gateway controller, or remove spec.gateway",
    ),
    Cause(
        "purge-failed",
        85,
        FAULT,
        "the database purge CronJob's last Job failed",
        "read the Job's log (its finding shows the last lines); the next schedule runs it again",
    ),
    Cause(
        "not-ready",
        88,
        FAULT,
        "a condition is not True",
        "read the condition's message",
    ),
    Cause(
        "db-sync-running",
        90,
        PROGRESS,
        "the db-sync Job is running",
        "wait: the next pass sees it finish",
    ),
    Cause(
        "upgrade-running",
        91,
        PROGRESS,
        "a release upgrade is under way",
        "wait; kubectl get glance shows the phase (docs/upgrades.md)",
    ),
    Cause(
        "rolling-out",
        92,
        PROGRESS,
        "the API Deployment is rolling out or its pods are starting",
        "wait for the new pods to become Ready",
    ),
    Cause(
        "backends-waiting",
        93,
        PROGRESS,
        "a GlanceBackend's configuration is not yet in the API pods",
        "wait for the next pass of the Glance",
    ),
    Cause(
        "checks-not-made",
        97,
        NOTE,
        "the checks from inside an API pod were not made",
        "see why in the finding: no API pod runs, or create pods/exec is not granted "
        "(docs/operations.md, 'Diagnose a Glance')",
    ),
    Cause(
        "volume-filling",
        96,
        NOTE,
        "a bounded volume is near its sizeLimit: the kubelet evicts the pod past it",
        "size the bound by its rule: spec.staging.sizeLimit above the largest image users "
        "stage, spec.imageCache.sizeLimit five times what a pod serves uncached in 30 s "
        "plus the largest image (docs/operations.md, 'The staging and image-cache "
        "bounds'); a staged image never imported holds its room until it is deleted",
    ),
    Cause(
        "owned-keys-overridden",
        98,
        NOTE,
        "spec.extraConfig overrides options the operator sets",
        "remove the keys the message names unless you mean to override them",
    ),
)

BY_ID = {cause.id: cause for cause in CAUSES}


# --- what shows a cause ---------------------------------------------------------------
# A not-True condition of the Glance, by (type, reason): the cause it names. A reason not
# listed names "not-ready" with the condition's own message.
CONDITION_CAUSES: dict[tuple[str, str], str] = {
    (c.SECRETS_READY, c.WAITING_FOR_DB_CREDENTIALS): "db-secret",
    (c.SECRETS_READY, c.WAITING_FOR_SERVICE_USER_CREDENTIALS): "service-user-secret",
    (c.SECRETS_READY, c.WAITING_FOR_IMPORT_CA_BUNDLE): "import-ca-secret",
    (c.SECRETS_READY, c.SECRET_STORE_NOT_READY): "secret-store",
    (c.SECRETS_READY, c.CONFIG_ERROR): "config-error",
    (c.SECRETS_READY, c.TARGET_CLUSTER_UNAVAILABLE): "target-cluster",
    (c.BACKENDS_READY, c.WAITING_FOR_BACKENDS): "backends-waiting",
    (c.BACKENDS_READY, c.NO_DEFAULT_BACKEND): "no-default-backend",
    (c.DATABASE_READY, c.CLUSTER_NOT_READY): "mariadb-not-ready",
    (c.DATABASE_READY, c.WAITING_FOR_DATABASE): "mariadb-not-ready",
    (c.DATABASE_READY, c.IMAGE_RELEASE_MISMATCH): "release-mismatch",
    (c.DATABASE_READY, c.DB_SYNC_IN_PROGRESS): "db-sync-running",
    (c.DATABASE_READY, c.DB_SYNC_FAILED): "db-sync-failed",
    (c.DATABASE_READY, c.VERSION_PARSE_ERROR): "upgrade-refused",
    (c.DATABASE_READY, c.DOWNGRADE_NOT_SUPPORTED): "upgrade-refused",
    (c.DATABASE_READY, c.UPGRADE_PATH_INVALID): "upgrade-refused",
    (c.DATABASE_READY, c.UPGRADE_TARGET_CHANGED): "upgrade-running",
    (c.DATABASE_READY, c.EXPAND_IN_PROGRESS): "upgrade-running",
    (c.DATABASE_READY, c.MIGRATE_IN_PROGRESS): "upgrade-running",
    (c.DATABASE_READY, c.UPGRADE_ROLLING_UPDATE): "upgrade-running",
    (c.DATABASE_READY, c.CONTRACT_IN_PROGRESS): "upgrade-running",
    (c.DATABASE_READY, c.EXPAND_FAILED): "upgrade-failed",
    (c.DATABASE_READY, c.MIGRATE_FAILED): "upgrade-failed",
    (c.DATABASE_READY, c.CONTRACT_FAILED): "upgrade-failed",
    (c.DEPLOYMENT_READY, c.WAITING_FOR_DEPLOYMENT): "rolling-out",
    (c.GLANCE_API_READY, c.API_UNHEALTHY): "api-unhealthy",
    (c.GLANCE_API_READY, c.HEALTH_CHECK_FAILED): "api-unhealthy",
    (c.GLANCE_API_READY, c.HEALTH_CHECK_TIMEOUT): "api-unhealthy",
    (c.GLANCE_API_READY, c.CONNECTION_FAILED): "api-unhealthy",
    (c.GLANCE_API_READY, c.ENDPOINT_NOT_READY): "rolling-out",
    (c.HTTPROUTE_READY, c.HTTPROUTE_NOT_ACCEPTED): "route-not-accepted",
    (c.HTTPROUTE_READY, c.GATEWAY_API_NOT_INSTALLED): "gateway-api-missing",
    (c.DB_PURGE_READY, c.DB_PURGE_JOB_FAILED): "purge-failed",
    (c.EXTRA_CONFIG_HEALTHY, c.OWNED_KEYS_OVERRIDDEN): "owned-keys-overridden",
}
# Any condition of these reasons, whatever its type.
REASON_CAUSES: dict[str, str] = {
    c.OWNERSHIP_CONFLICT: "ownership-conflict",
    c.CLUSTER_IP_IMMUTABLE: "ownership-conflict",
    c.TARGET_CLUSTER_UNAVAILABLE: "target-cluster",
    c.CONFIG_ERROR: "config-error",
}
# A GlanceBackend's not-True conditions.
BACKEND_CONDITION_CAUSES: dict[tuple[str, str], str] = {
    (c.CREDENTIALS_READY, c.WAITING_FOR_CREDENTIALS): "backend-secret",
    (c.CREDENTIALS_READY, c.WAITING_FOR_PARENT): "backend-parent",
    (c.CONFIG_PROJECTED, c.WAITING_FOR_PARENT): "backend-parent",
    (c.CONFIG_PROJECTED, c.WAITING_FOR_PROJECTION): "backends-waiting",
}
# The aggregate conditions: their parts are judged, not they.
AGGREGATES = frozenset({c.READY})

# A container's waiting reason.
WAITING_CAUSES: dict[str, str] = {
    "ErrImagePull": "image-pull",
    "ImagePullBackOff": "image-pull",
    "InvalidImageName": "image-pull",
    "ErrImageNeverPull": "image-pull",
    "CreateContainerConfigError": "container-config",
    "CreateContainerError": "container-config",
    "CrashLoopBackOff": "crashing",
    "RunContainerError": "crashing",
}
# A container's termination reason (its last state, or its state).
TERMINATED_CAUSES: dict[str, str] = {"OOMKilled": "oom-killed", "Error": "crashing"}

# An eviction's message: which volume bound.
EVICTED_VOLUME = re.compile(
    r'Usage of EmptyDir volume "(?P<volume>[^"]+)" exceeds the limit "(?P<limit>[^"]+)"'
)
VOLUME_CAUSES = {"staging": "staging-bound", "image-cache": "cache-bound"}

# A line of a log (a failed container's, a failed Job's) that names the cause; the first
# pattern to match a line wins, the last matching line of the log decides.
LOG_CAUSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("db-auth", re.compile(r"Access denied for user")),
    ("db-missing", re.compile(r"Unknown database")),
    (
        "db-unreachable",
        re.compile(
            r"Can't connect to (MySQL )?server|Unknown (MySQL )?server host"
            r"|Lost connection to (MySQL )?server"
        ),
    ),
    (
        "keystone-auth",
        re.compile(
            r"The request you have made requires authentication"
            r"|keystoneauth1\.exceptions\.http\.Unauthorized"
        ),
    ),
    (
        "keystone-unreachable",
        re.compile(
            r"keystoneauth1\.exceptions\.connection|Unable to establish connection to \S*:5000"
        ),
    ),
    ("s3-auth", re.compile(r"InvalidAccessKeyId|SignatureDoesNotMatch")),
    ("s3-bucket", re.compile(r"NoSuchBucket")),
    (
        "s3-unreachable",
        re.compile(r"Could not connect to the endpoint URL|EndpointConnectionError"),
    ),
    (
        "policy-error",
        re.compile(
            r"oslo_policy\S*\.(PolicyNotRegistered|InvalidDefinitionError|InvalidRuleDefault)"
            r"|Failed to understand rule"
        ),
    ),
    ("glance-config", re.compile(r"oslo_config\.cfg\.\w*(Error|Invalid)\w*|ConfigFileValueError")),
)

# A check from inside an API pod (in_pod.py), by (check, kind of failure); any other
# failure names "check-failed".
CHECK_CAUSES: dict[tuple[str, str], str] = {
    ("database", "auth"): "db-auth",
    ("database", "missing"): "db-missing",
    ("database", "unreachable"): "db-unreachable",
    ("keystone", "auth"): "keystone-auth",
    ("keystone", "unreachable"): "keystone-unreachable",
    ("s3", "auth"): "s3-auth",
    ("s3", "bucket"): "s3-bucket",
    ("s3", "unreachable"): "s3-unreachable",
    ("volume", "filling"): "volume-filling",
    ("healthcheck", "unreachable"): "api-unhealthy",
    ("healthcheck", "other"): "api-unhealthy",
    ("images", "server-error"): "api-errors",
}

# The Job components: which cause a failed Job of each names.
JOB_CAUSES = {
    "db-sync": "db-sync-failed",
    "db-expand": "upgrade-failed",
    "db-migrate": "upgrade-failed",
    "db-contract": "upgrade-failed",
    "db-purge": "purge-failed",
}


def log_cause(lines: list[str]) -> tuple[str, str] | None:
    """(cause id, the line) of the last line of ``lines`` a ``LOG_CAUSES`` pattern matches."""
    for line in reversed(lines):
        for cause, pattern in LOG_CAUSES:
            if pattern.search(line):
                return cause, line
    return None
