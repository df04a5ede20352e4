"""Every message the reference operator gives a Glance or a GlanceBackend, and ours, word for word.

The reference is the Go operator (github.com/c5c3/cobaltcore, ``operators/glance``; the
sources below are relative to its ``api/v1alpha1``, ``internal/controller`` and to the
shared ``internal/common``). Each row of the table holds one of its messages, literally
(placeholders filled as the row's case fills them), where it is written, the case that
produces it, and the check that ours contains that text. Ours may say more after it, never
instead of it.

* **Refusals** (``Refusal``) are checked as the API server prints a ``field.Error``,
  ``<field>: <type>[: <value>]: <text>``: the reference's field path, its error type and its
  text, through both our admission webhook (``Admission.review``, what the runner serves)
  and offline validation (the ``judge_input`` filter behind render and validate; an update
  through ``admission.judge`` with the stored object). A webhook rule the CRD's schema or CEL
  rules shadow (``SHADOWED``: the API server never sends an object its schema refuses to a
  validating webhook) is checked on the rule itself (``validate_glance``,
  ``validate_glancebackend``), as the reference webhook judges an object that bypassed the
  schema, and both paths must still refuse the object. ``LOOKUP`` rows need a cluster lookup
  (a PriorityClass, the namespace's GlanceBackends) and ``LOOKUP_FAILS`` the failure of one,
  which only the webhook makes.
* **Warnings** (``Warned``) are checked through both paths the same way.
* **Conditions** (``Said``) are produced by a reconcile pass against the unit tests' fake
  cluster (``support.cluster.Reconciler``) or by the function that words them; where only a
  pass on a real cluster reaches the state, by the constant the pass writes.

Reference messages ours cannot produce, and why, are listed in ``NOT_PRODUCED``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import pytest
import yaml
from support.builders import BACKEND, DELETE, GLANCE, patched
from support.cluster import (
    HEALTHY,
    FakeCluster,
    Reconciler,
    b64,
    default_secrets,
    glance_object,
    plan_inputs,
    purge_run,
    stored,
)
from support.crd_rule_cases import RULES

from ansible_collections.c5c3.glance.plugins.filter.judge_input import judge_input
from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import judge
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
    default_glance,
    validate_glance,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glancebackend_admission import (
    default_glancebackend,
    validate_glancebackend,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade
from ansible_collections.c5c3.glance.plugins.module_utils.desired.backend_projection import (
    BackendFault,
    backend_credentials,
    project_backends,
    store_options,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.extra_config import (
    extra_config_condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    ConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paste_ini import (
    render_paste_ini,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.policy_yaml import (
    render_policy_yaml,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    ExternalSecrets,
    gate_secrets,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes import glancebackend_pass as bp
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.api_health import (
    Health,
    health_condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.decide import (
    decide_pass,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    FINALIZER,
    REMOTE_CHILDREN_FINALIZER,
)
from runner.endpoints.admission_review import Admission, Route

CRDS = load_crds()
CATALOGS = load_catalogs()
BASE = {"Glance": GLANCE, "GlanceBackend": BACKEND}

# How a refusal is reached (see the module docstring).
JUDGED = "judged"
SHADOWED = "shadowed"
LOOKUP = "lookup"
LOOKUP_FAILS = "lookup fails"

INVALID, REQUIRED, FORBIDDEN = fe.INVALID, fe.REQUIRED, fe.FORBIDDEN
UNSUPPORTED, TOO_MANY, TOO_LONG, NOT_FOUND = fe.UNSUPPORTED, fe.TOO_MANY, fe.TOO_LONG, fe.NOT_FOUND

LEVELS = '"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"'
TSC = "spec.deployment.topologySpreadConstraints[0]"
INJECT = "spec.importPlugins.injectMetadata"
MATCH_LABELS = {"app.kubernetes.io/name": "glance", "app.kubernetes.io/instance": "glance"}


def spec(**fields: Any) -> dict:
    return {"spec": fields}


def inject(properties: dict | None = None, roles: list | None = None) -> dict:
    block: dict[str, Any] = {"properties": {"k": "v"} if properties is None else properties}
    if roles is not None:
        block["ignoreUserRoles"] = roles
    return spec(importPlugins={"injectMetadata": block})


def sibling(name: str = "s3-other") -> dict:
    return patched(BACKEND, {"metadata": {"name": name}})


@dataclass(frozen=True)
class Refusal:
    """A refusal: the reference's ``text`` on ``field`` as a ``type`` error, for ``patch``."""

    text: str
    source: str
    field: str
    type: str
    patch: dict
    kind: str = "Glance"
    via: str = JUDGED
    rule: bool = True  # a webhook rule (checked on validate_* too), not the CRD's
    old: dict | None = None  # an update: the patch of the stored object
    siblings: tuple = ()  # the namespace's other GlanceBackends

    @property
    def id(self) -> str:
        return f"{self.field}: {self.text}"[:90]


@dataclass(frozen=True)
class Warned:
    """An admission warning: the reference's ``text`` for ``patch``."""

    text: str
    source: str
    patch: dict
    old: dict | None = None


@dataclass(frozen=True)
class Said:
    """A condition message (or a renderer's, that a condition carries): ``produce`` gives ours."""

    text: str
    source: str
    ours: str
    produce: Callable[[], str]


def glance_rows() -> list[Refusal]:
    w = "glance_webhook.go"
    v = "internal/common/validation/validation.go"
    return [
        Refusal(
            'name must be at most 43 characters: the db-purge CronJob appends "-db-purge" and '
            "Kubernetes caps CronJob names at 52 characters",
            f"{w}:402",
            "metadata.name",
            INVALID,
            {"metadata": {"name": "g" * 44}},
        ),
        Refusal(
            "replicas must be at least 1",
            f"{w}:453",
            "spec.deployment.replicas",
            INVALID,
            spec(deployment={"replicas": -1}),
            via=SHADOWED,
        ),
        Refusal(
            "exactly one of image.tag or image.digest must be set",
            f"{w}:464",
            "spec.image",
            INVALID,
            spec(image={"tag": DELETE}),
        ),
        Refusal(
            "exactly one of clusterRef or host must be set",
            f"{v}:44",
            "spec.database",
            INVALID,
            spec(database={"clusterRef": {"name": "mariadb"}}),
        ),
        Refusal(
            "credentialsMode Dynamic requires clusterRef (managed mode)",
            f"{v}:115",
            "spec.database.credentialsMode",
            INVALID,
            spec(database={"credentialsMode": "Dynamic"}),
            via=SHADOWED,
        ),
        Refusal(
            "exactly one of clusterRef or servers must be set",
            f"{v}:57",
            "spec.cache",
            INVALID,
            spec(cache={"clusterRef": {"name": "memcached"}}),
        ),
        Refusal(
            "value must not contain a newline or carriage return: it is rendered verbatim into "
            "the service configuration file, so a newline injects arbitrary config lines",
            f"{v}:74",
            "spec.cache.clusterRef.name",
            INVALID,
            spec(cache={"servers": DELETE, "clusterRef": {"name": "mem\ncached"}}),
            via=SHADOWED,
        ),
        Refusal(
            "value must not contain a newline or carriage return: it is rendered verbatim into "
            "the service configuration file, so a newline injects arbitrary config lines",
            f"{v}:74",
            "spec.cache.servers[0]",
            INVALID,
            spec(cache={"servers": ["mem\ncached:11211"]}),
            via=SHADOWED,
        ),
        Refusal(
            "store name must be set",
            f"{v}:182",
            "spec.secretStoreRef.name",
            REQUIRED,
            spec(secretStoreRef={"name": "", "kind": "SecretStore"}),
            via=SHADOWED,
        ),
        Refusal(
            'supported values: "ClusterSecretStore", "SecretStore"',
            f"{v}:190",
            "spec.secretStoreRef.kind",
            UNSUPPORTED,
            spec(secretStoreRef={"name": "vault", "kind": "VaultStore"}),
        ),
        Refusal(
            "target cluster name must be set",
            f"{v}:208",
            "spec.targetClusterRef.name",
            REQUIRED,
            spec(targetClusterRef={"name": ""}),
            via=SHADOWED,
        ),
        Refusal(
            "keystoneEndpoint must be set (the Keystone auth_url the Glance pods reach)",
            f"{w}:492",
            "spec.keystoneEndpoint",
            REQUIRED,
            spec(keystoneEndpoint=""),
            via=SHADOWED,
        ),
        Refusal(
            'must be a valid URL: parse "https://id example.com/": invalid character " " in '
            "host name",
            f"{w}:885",
            "spec.keystonePublicEndpoint",
            INVALID,
            spec(keystonePublicEndpoint="https://id example.com/"),
        ),
        Refusal(
            "scheme must be http or https",
            f"{w}:887",
            "spec.keystoneEndpoint",
            INVALID,
            spec(keystoneEndpoint="ftp://keystone/v3"),
            via=SHADOWED,
        ),
        Refusal(
            "URL must include a host",
            f"{w}:889",
            "spec.keystoneEndpoint",
            INVALID,
            spec(keystoneEndpoint="http:///v3"),
        ),
        Refusal(
            'supported values: "text", "json"',
            f"{w}:518",
            "spec.logging.format",
            UNSUPPORTED,
            spec(logging={"format": "xml"}),
        ),
        Refusal(
            f"supported values: {LEVELS}",
            f"{w}:526",
            "spec.logging.level",
            UNSUPPORTED,
            spec(logging={"level": "TRACE"}),
        ),
        Refusal(
            "logger name must not be empty",
            f"{w}:538",
            "spec.logging.perLoggerLevels",
            INVALID,
            spec(logging={"perLoggerLevels": {"": "INFO"}}),
        ),
        Refusal(
            "level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
            f"{w}:546",
            "spec.logging.perLoggerLevels[glance]",
            INVALID,
            spec(logging={"perLoggerLevels": {"glance": "LOUD"}}),
            via=SHADOWED,
        ),
        Refusal(
            "terminationGracePeriodSeconds must be at least 10",
            f"{w}:558",
            "spec.deployment.terminationGracePeriodSeconds",
            INVALID,
            spec(deployment={"terminationGracePeriodSeconds": 5, "preStopSleepSeconds": 1}),
            via=SHADOWED,
        ),
        Refusal(
            "preStopSleepSeconds must be non-negative",
            f"{w}:567",
            "spec.deployment.preStopSleepSeconds",
            INVALID,
            spec(deployment={"preStopSleepSeconds": -1}),
            via=SHADOWED,
        ),
        Refusal(
            "preStopSleepSeconds (30) must be strictly less than terminationGracePeriodSeconds "
            "(30)",
            f"{w}:588",
            "spec.deployment.preStopSleepSeconds",
            INVALID,
            spec(deployment={"preStopSleepSeconds": 30}),
            via=SHADOWED,
        ),
        Refusal(
            "harakiri (25) must be strictly less than terminationGracePeriodSeconds - "
            "preStopSleepSeconds (25)",
            f"{w}:604",
            "spec.apiServer.uwsgi.harakiri",
            INVALID,
            spec(apiServer={"uwsgi": {"harakiri": 25}}),
        ),
        Refusal(
            "rollingUpdate must not be set when strategy.type is Recreate",
            f"{w}:617",
            "spec.deployment.strategy.rollingUpdate",
            INVALID,
            spec(deployment={"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}),
        ),
        Refusal(
            "maxReplicas must be at least 1",
            f"{w}:630",
            "spec.autoscaling.maxReplicas",
            INVALID,
            spec(autoscaling={"maxReplicas": 0, "targetCPUUtilization": 80}),
            via=SHADOWED,
        ),
        Refusal(
            "minReplicas must be at least 1",
            f"{w}:637",
            "spec.autoscaling.minReplicas",
            INVALID,
            spec(autoscaling={"minReplicas": 0, "maxReplicas": 5, "targetCPUUtilization": 80}),
            via=SHADOWED,
        ),
        Refusal(
            "minReplicas must not exceed maxReplicas",
            f"{w}:644",
            "spec.autoscaling.minReplicas",
            INVALID,
            spec(autoscaling={"minReplicas": 6, "maxReplicas": 5, "targetCPUUtilization": 80}),
            via=SHADOWED,
        ),
        Refusal(
            "maxReplicas must be >= spec.deployment.replicas (3) when minReplicas is not set, "
            "because minReplicas defaults to spec.deployment.replicas",
            f"{w}:655",
            "spec.autoscaling.maxReplicas",
            INVALID,
            spec(autoscaling={"maxReplicas": 2, "targetCPUUtilization": 80}),
        ),
        Refusal(
            "targetCPUUtilization must be between 1 and 100",
            f"{w}:664",
            "spec.autoscaling.targetCPUUtilization",
            INVALID,
            spec(autoscaling={"maxReplicas": 5, "targetCPUUtilization": 101}),
            via=SHADOWED,
        ),
        Refusal(
            "targetMemoryUtilization must be between 1 and 100",
            f"{w}:671",
            "spec.autoscaling.targetMemoryUtilization",
            INVALID,
            spec(autoscaling={"maxReplicas": 5, "targetMemoryUtilization": 0}),
            via=SHADOWED,
        ),
        Refusal(
            "at least one of targetCPUUtilization or targetMemoryUtilization must be set",
            f"{w}:677",
            "spec.autoscaling",
            REQUIRED,
            spec(autoscaling={"maxReplicas": 5}),
            via=SHADOWED,
        ),
        Refusal(
            "at least one ingress source must be specified",
            f"{w}:687",
            "spec.networkPolicy.ingress",
            REQUIRED,
            spec(networkPolicy={"ingress": []}),
            via=SHADOWED,
        ),
        Refusal(
            "hostname must be set when spec.gateway is configured",
            f"{w}:699",
            "spec.gateway.hostname",
            REQUIRED,
            spec(gateway={"hostname": "", "parentRef": {"name": "gw"}}),
            via=SHADOWED,
        ),
        Refusal(
            "parentRef.name must be set when spec.gateway is configured",
            f"{w}:705",
            "spec.gateway.parentRef.name",
            REQUIRED,
            spec(gateway={"hostname": "glance.example.com", "parentRef": {"name": ""}}),
            via=SHADOWED,
        ),
        *[
            Refusal(
                f"{allow} and {deny} are mutually exclusive: glance ignores the deny-list when "
                "the allow-list is non-empty",
                f"{w}:{line}",
                f"spec.importFiltering.{deny}",
                INVALID,
                spec(importFiltering={allow: [value], deny: [value]}),
                via=SHADOWED,
            )
            for allow, deny, value, line in (
                ("allowedSchemes", "disallowedSchemes", "https", 918),
                ("allowedHosts", "disallowedHosts", "a.example.com", 923),
                ("allowedPorts", "disallowedPorts", 443, 928),
            )
        ],
        Refusal(
            "must have at most 64 items",
            f"{w}:947",
            "spec.importFiltering.allowedSchemes",
            TOO_MANY,
            spec(importFiltering={"allowedSchemes": ["https"] * 65}),
        ),
        Refusal(
            'supported values: "http", "https"',
            f"{w}:951",
            "spec.importFiltering.disallowedSchemes[0]",
            UNSUPPORTED,
            spec(importFiltering={"disallowedSchemes": ["ftp"]}),
        ),
        Refusal(
            "must have at most 64 items",
            f"{w}:975",
            "spec.importFiltering.disallowedHosts",
            TOO_MANY,
            spec(importFiltering={"disallowedHosts": [f"h{i}" for i in range(65)]}),
        ),
        Refusal(
            "host must not be empty",
            f"{w}:980",
            "spec.importFiltering.allowedHosts[0]",
            INVALID,
            spec(importFiltering={"allowedHosts": [""]}),
            via=SHADOWED,
        ),
        Refusal(
            "host must not contain newline or carriage-return characters: the rendered "
            "[import_filtering_opts] value is written verbatim, so a newline injects arbitrary "
            "config lines",
            f"{w}:983",
            "spec.importFiltering.disallowedHosts[1]",
            INVALID,
            spec(importFiltering={"disallowedHosts": ["a.example.com", "b\n[DEFAULT]"]}),
        ),
        Refusal(
            "host must be at most 253 characters",
            f"{w}:987",
            "spec.importFiltering.allowedHosts[0]",
            INVALID,
            spec(importFiltering={"allowedHosts": ["h" * 254]}),
            via=SHADOWED,
        ),
        Refusal(
            "must have at most 64 items",
            f"{w}:998",
            "spec.importFiltering.allowedPorts",
            TOO_MANY,
            spec(importFiltering={"allowedPorts": [443] * 65}),
        ),
        Refusal(
            "port must be between 1 and 65535",
            f"{w}:1002",
            "spec.importFiltering.allowedPorts[0]",
            INVALID,
            spec(importFiltering={"allowedPorts": [0]}),
            via=SHADOWED,
        ),
        Refusal(
            'supported values: "qcow2", "raw", "vmdk"',
            f"{w}:1041",
            "spec.importPlugins.conversion.outputFormat",
            UNSUPPORTED,
            spec(importPlugins={"conversion": {"outputFormat": "vhd"}}),
        ),
        Refusal(
            "at least one property must be set: the inject_image_metadata plugin has nothing "
            "to inject otherwise",
            f"{w}:1068",
            f"{INJECT}.properties",
            REQUIRED,
            inject({}),
            via=SHADOWED,
        ),
        Refusal(
            "must have at most 64 items",
            f"{w}:1070",
            f"{INJECT}.properties",
            TOO_MANY,
            inject({f"k{i}": "v" for i in range(65)}),
        ),
        Refusal(
            "must have at most 64 items",
            f"{w}:1086",
            f"{INJECT}.ignoreUserRoles",
            TOO_MANY,
            inject(roles=[f"r{i}" for i in range(65)]),
        ),
        Refusal(
            "role must not be empty",
            f"{w}:1091",
            f"{INJECT}.ignoreUserRoles[0]",
            INVALID,
            inject(roles=[""]),
            via=SHADOWED,
        ),
        Refusal(
            "role must not contain newline or carriage-return characters: the rendered "
            "[inject_metadata_properties] value is written verbatim, so a newline injects "
            "arbitrary config lines",
            f"{w}:1094",
            f"{INJECT}.ignoreUserRoles[0]",
            INVALID,
            inject(roles=["admin\nmember"]),
        ),
        Refusal(
            "role must not contain a comma: the rendered ignore_user_roles list separates roles "
            "on commas, so the entry would be read as two roles",
            f"{w}:1098",
            f"{INJECT}.ignoreUserRoles[0]",
            INVALID,
            inject(roles=["admin,member"]),
        ),
        Refusal(
            "role must be at most 255 characters",
            f"{w}:1102",
            f"{INJECT}.ignoreUserRoles[0]",
            INVALID,
            inject(roles=["r" * 256]),
            via=SHADOWED,
        ),
        Refusal(
            "property name must not be empty",
            f"{w}:1141",
            f"{INJECT}.properties",
            INVALID,
            inject({"": "v"}),
        ),
        Refusal(
            "property name must not contain newline or carriage-return characters: the rendered "
            "[inject_metadata_properties] inject value is written verbatim, so a newline "
            "injects arbitrary config lines",
            f"{w}:1145",
            f"{INJECT}.properties[a\nb]",
            INVALID,
            inject({"a\nb": "v"}),
        ),
        Refusal(
            "property name must not contain a colon: the oslo Dict syntax splits each pair on "
            "the first colon, so the name would be silently truncated there and its remainder "
            "injected as part of the value",
            f"{w}:1149",
            f"{INJECT}.properties[os:distro]",
            INVALID,
            inject({"os:distro": "v"}),
        ),
        Refusal(
            "property name must not contain a comma: the oslo Dict syntax separates pairs on "
            "commas, so the name would be split into a property of its own",
            f"{w}:1153",
            f"{INJECT}.properties[a,b]",
            INVALID,
            inject({"a,b": "v"}),
        ),
        Refusal(
            "property name must not start or end with whitespace: the oslo parser strips it, so "
            "the injected property name would differ from the one stored here",
            f"{w}:1157",
            f"{INJECT}.properties[ a]",
            INVALID,
            inject({" a": "v"}),
        ),
        Refusal(
            "property name must be at most 255 characters",
            f"{w}:1161",
            f"{INJECT}.properties[{'n' * 255}…]",
            INVALID,
            inject({"n" * 256: "v"}),
            via=SHADOWED,
        ),
        Refusal(
            "property value must not contain newline or carriage-return characters: the "
            "rendered [inject_metadata_properties] inject value is written verbatim, so a "
            "newline injects arbitrary config lines",
            f"{w}:1167",
            f"{INJECT}.properties[k]",
            INVALID,
            inject({"k": "a\r\nb"}),
        ),
        Refusal(
            "property value must not contain a comma: the oslo Dict syntax separates pairs on "
            "commas, so the value would be cut short and its remainder read as another property",
            f"{w}:1171",
            f"{INJECT}.properties[k]",
            INVALID,
            inject({"k": "a,b"}),
        ),
        Refusal(
            "property value must not start or end with whitespace: the oslo parser strips it, "
            "so the injected value would differ from the one stored here",
            f"{w}:1175",
            f"{INJECT}.properties[k]",
            INVALID,
            inject({"k": "v "}),
        ),
        Refusal(
            "property value must be at most 255 characters",
            f"{w}:1179",
            f"{INJECT}.properties[k]",
            INVALID,
            inject({"k": "v" * 256}),
            via=SHADOWED,
        ),
        Refusal(
            "must be set explicitly while importPlugins.decompression is enabled: the plugin "
            "expands the staged image by a ratio the caller picks and nothing caps the result, "
            "and breaching this bound evicts the glance-api pod together with every other "
            "in-flight import on that replica, so the 10Gi default cannot be assumed to fit "
            "the largest UNPACKED image (set staging.unbounded to deliberately keep no bound "
            "instead)",
            f"{w}:1212",
            "spec.staging.sizeLimit",
            REQUIRED,
            spec(importPlugins={"decompression": {}}),
        ),
        Refusal(
            "retentionDays must be at least 1",
            f"{w}:1250",
            "spec.dbPurge.retentionDays",
            INVALID,
            spec(dbPurge={"retentionDays": 0}),
            via=SHADOWED,
        ),
        Refusal(
            "invalid cron expression: expected exactly 5 fields, found 4: [* * * *]",
            f"{v}:129",
            "spec.dbPurge.schedule",
            INVALID,
            spec(dbPurge={"schedule": "* * * *"}),
        ),
        Refusal(
            "unbounded and sizeLimit are mutually exclusive: an unbounded staging area has no "
            "size limit to configure",
            f"{w}:1289",
            "spec.staging.unbounded",
            INVALID,
            spec(staging={"unbounded": True, "sizeLimit": "1Gi"}),
            via=SHADOWED,
        ),
        Refusal(
            "must be at least 1Mi",
            f"{w}:1298",
            "spec.staging.sizeLimit",
            INVALID,
            spec(staging={"sizeLimit": "100m"}),
        ),
        Refusal(
            "must be at least 1Mi",
            f"{w}:1341",
            "spec.imageCache.sizeLimit",
            INVALID,
            spec(imageCache={"sizeLimit": "1023Ki"}),
        ),
        Refusal(
            "must be at least 1m0s",
            f"{w}:1347",
            "spec.imageCache.maintenanceInterval",
            INVALID,
            spec(imageCache={"maintenanceInterval": "59s"}),
        ),
        Refusal(
            'the operator injects the "cache" paste filter and owns that filter name while '
            "spec.imageCache is set: rename this middleware or unset spec.imageCache",
            f"{w}:752",
            "spec.middleware[0].name",
            INVALID,
            spec(
                imageCache={},
                middleware=[{"name": "cache", "filterFactory": "x:y", "position": "after"}],
            ),
        ),
        Refusal(
            "extraConfig section name must not be empty",
            f"{w}:776",
            "spec.extraConfig",
            INVALID,
            spec(extraConfig={"": {"a": "b"}}),
        ),
        Refusal(
            "extraConfig section name must not contain a newline or carriage return",
            f"{w}:784",
            "spec.extraConfig",
            INVALID,
            spec(extraConfig={"DEF\nAULT": {"a": "b"}}),
        ),
        Refusal(
            "extraConfig key must not be empty",
            f"{w}:793",
            "spec.extraConfig[DEFAULT]",
            INVALID,
            spec(extraConfig={"DEFAULT": {"": "x"}}),
        ),
        Refusal(
            "extraConfig key and value must not contain a newline or carriage return: the "
            "rendered INI writes them verbatim, so a newline injects arbitrary config lines",
            f"{w}:801",
            "spec.extraConfig[DEFAULT][image_size_cap]",
            INVALID,
            spec(extraConfig={"DEFAULT": {"image_size_cap": "1\n[x]"}}),
        ),
        Refusal(
            "cpu request must not exceed limit (1)",
            f"{w}:838",
            "spec.deployment.resources.requests.cpu",
            INVALID,
            spec(deployment={"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}),
        ),
        Refusal(
            '"glance-critical"',
            f"{v}:249",
            "spec.deployment.priorityClassName",
            NOT_FOUND,
            spec(deployment={"priorityClassName": "glance-critical"}),
            via=LOOKUP,
        ),
        Refusal(
            "failed to look up PriorityClass: read timed out",
            f"{v}:253",
            "spec.deployment.priorityClassName",
            fe.INTERNAL,
            spec(deployment={"priorityClassName": "glance-critical"}),
            via=LOOKUP_FAILS,
        ),
        Refusal(
            "labelSelector is required on each TopologySpreadConstraint",
            f"{v}:146",
            f"{TSC}.labelSelector",
            REQUIRED,
            spec(
                deployment={
                    "topologySpreadConstraints": [
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                    ]
                }
            ),
        ),
        Refusal(
            "labelSelector.matchLabels must equal the Deployment selector labels "
            "map[app.kubernetes.io/instance:glance app.kubernetes.io/name:glance]",
            f"{v}:154",
            f"{TSC}.labelSelector",
            INVALID,
            spec(
                deployment={
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "zone",
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "glance"}},
                        }
                    ]
                }
            ),
        ),
        Refusal(
            "matchExpressions are not allowed; labelSelector must use matchLabels only",
            f"{v}:163",
            f"{TSC}.labelSelector.matchExpressions",
            INVALID,
            spec(
                deployment={
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "zone",
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {
                                "matchLabels": MATCH_LABELS,
                                "matchExpressions": [{"key": "a", "operator": "Exists"}],
                            },
                        }
                    ]
                }
            ),
        ),
        Refusal(
            "targetClusterRef is immutable (adding or removing it after creation is not permitted)",
            f"{v}:224",
            "spec.targetClusterRef",
            INVALID,
            spec(targetClusterRef={"name": "edge-1"}),
            via=SHADOWED,
            old={},
        ),
        Refusal(
            "targetClusterRef is immutable (the children already exist on the previously named "
            "cluster)",
            f"{v}:233",
            "spec.targetClusterRef.name",
            INVALID,
            spec(targetClusterRef={"name": "edge-2"}),
            via=SHADOWED,
            old=spec(targetClusterRef={"name": "edge-1"}),
        ),
        Refusal(
            "no such section in the glance 2026.2 option catalog (sections registered by a "
            "loaded plugin must be declared via spec.plugins)",
            f"{w}:1570",
            "spec.extraConfig[bogus][a]",
            INVALID,
            spec(extraConfig={"bogus": {"a": "1"}}),
        ),
        Refusal(
            "no such option in the glance 2026.2 option catalog",
            f"{w}:1575",
            "spec.extraConfig[DEFAULT][image_size_kap]",
            INVALID,
            spec(extraConfig={"DEFAULT": {"image_size_kap": "1"}}),
        ),
    ]


FILTERING_IMPACT = (
    "the web-download URI filter is platform security policy; setting it through extraConfig "
    "bypasses the exclusivity rules, the host INI guard, and the admission warning that flags "
    "a loosened filter"
)
PLUGINS_IMPACT = (
    "the image-import plugin pipeline is expressed by spec.importPlugins; setting it through "
    "extraConfig bypasses the fixed decompression-before-conversion order, the output-format "
    "enum, and the property-name rules that keep an injected pair inside the oslo Dict syntax"
)
# The reference's registry (config_ownership.go), written out here rather than imported from
# ours (owned_keys.py), as S3_OWNED below is glancebackend_webhook.go's: ours is what is checked.
REJECTED_KEYS = [
    (
        "DEFAULT",
        "image_cache_dir",
        "spec.imageCache",
        "the operator mounts the bounded cache emptyDir at this path; another path is another "
        "volume's bound, so the cache is filled out of the staging or tasks-work budget and "
        "evicts the pod mid-import",
        59,
    ),
    (
        "DEFAULT",
        "image_cache_driver",
        "spec.imageCache",
        "only sqlite keeps the cache state inside the pod-local volume; centralized_db strands a "
        "dead pod's rows in the shared Glance database on every replacement and no db-purge "
        "pass reclaims them",
        60,
    ),
    (
        "DEFAULT",
        "image_cache_max_size",
        "spec.imageCache",
        "the operator derives it as 80% of the emptyDir bound, which is what leaves the pruner a "
        "target it can reach; a value at or above that bound leaves nothing to prune down to "
        "and the volume grows until the kubelet evicts the pod",
        61,
    ),
    (
        "keystone_authtoken",
        "password",
        "spec.serviceUser.secretRef",
        "the middleware password is env-injected via OS_KEYSTONE_AUTHTOKEN__PASSWORD; a file "
        "override is ignored at runtime and leaks credential material into a namespace-readable "
        "ConfigMap",
        94,
    ),
    *[
        ("import_filtering_opts", key, "spec.importFiltering", FILTERING_IMPACT, 122 + i)
        for i, key in enumerate(
            (
                "allowed_schemes",
                "disallowed_schemes",
                "allowed_hosts",
                "disallowed_hosts",
                "allowed_ports",
                "disallowed_ports",
            )
        )
    ],
    ("image_import_opts", "image_import_plugins", "spec.importPlugins", PLUGINS_IMPACT, 133),
    ("image_conversion", "output_format", "spec.importPlugins", PLUGINS_IMPACT, 134),
    ("inject_metadata_properties", "inject", "spec.importPlugins", PLUGINS_IMPACT, 135),
    ("inject_metadata_properties", "ignore_user_roles", "spec.importPlugins", PLUGINS_IMPACT, 136),
]


def owned_key_rows() -> list[Refusal]:
    return [
        Refusal(
            f"{key} is managed via {owner} and must not be set in extraConfig ({impact})",
            f"glance_webhook.go:820, config_ownership.go:{line}",
            f"spec.extraConfig[{section}][{key}]",
            FORBIDDEN,
            spec(extraConfig={section: {key: "x"}}),
        )
        for section, key, owner, impact, line in REJECTED_KEYS
    ]


S3_OWNED = {
    "s3_store_host": "spec.s3.host",
    "s3_store_bucket": "spec.s3.bucket",
    "s3_store_access_key": "spec.s3.credentialsSecretRef",
    "s3_store_secret_key": "spec.s3.credentialsSecretRef",
    "s3_store_bucket_url_format": "spec.s3.bucketURLFormat",
    "s3_store_region_name": "spec.s3.region",
    "s3_store_create_bucket_on_put": "spec.s3.createBucketOnPut",
    "s3_store_large_object_size": "spec.s3.largeObjectSize",
    "s3_store_large_object_chunk_size": "spec.s3.largeObjectChunkSize",
    "store_description": "the operator (store section wiring)",
}


def backend_rows() -> list[Refusal]:
    b = "glancebackend_webhook.go"
    return [
        Refusal(
            "exactly one backend block matching spec.type must be set (type S3 requires spec.s3)",
            f"{b}:145",
            "spec.s3",
            INVALID,
            {"spec": {"s3": DELETE}},
            kind="GlanceBackend",
            via=SHADOWED,
        ),
        Refusal(
            'name "default" collides with the reserved or operator-managed Glance store section '
            "of the same name",
            f"{b}:178",
            "metadata.name",
            INVALID,
            {"metadata": {"name": "default"}},
            kind="GlanceBackend",
        ),
        Refusal(
            'name must not use the reserved "os_glance_" / "os-glance-" store-section prefix '
            "(Glance owns that namespace for its staging and tasks stores)",
            f"{b}:184",
            "metadata.name",
            INVALID,
            {"metadata": {"name": "os-glance-store"}},
            kind="GlanceBackend",
        ),
        Refusal(
            "option name must not be empty",
            f"{b}:225",
            "spec.extraOptions",
            INVALID,
            {"spec": {"extraOptions": {"": "x"}}},
            kind="GlanceBackend",
        ),
        Refusal(
            "option name must match ^[A-Za-z0-9_]+$ (letters, digits, and underscore)",
            f"{b}:235",
            "spec.extraOptions[s3-store]",
            INVALID,
            {"spec": {"extraOptions": {"s3-store": "x"}}},
            kind="GlanceBackend",
        ),
        *[
            Refusal(
                f'option "{key}" is owned by {owner} and must not be set via extraOptions',
                f"{b}:243",
                f"spec.extraOptions[{key}]",
                INVALID,
                {"spec": {"extraOptions": {key: "x"}}},
                kind="GlanceBackend",
            )
            for key, owner in S3_OWNED.items()
        ],
        Refusal(
            "value must not contain newline or carriage-return characters",
            f"{b}:253",
            "spec.extraOptions[s3_store_thread_pools]",
            INVALID,
            {"spec": {"extraOptions": {"s3_store_thread_pools": "10\n[x]"}}},
            kind="GlanceBackend",
        ),
        Refusal(
            'GlanceBackend "s3-other" attached to the same Glance "glance" is already marked '
            "isDefault; exactly one default store is allowed",
            f"{b}:298",
            "spec.isDefault",
            INVALID,
            {},
            kind="GlanceBackend",
            via=LOOKUP,
            siblings=(sibling(),),
        ),
        Refusal(
            "listing GlanceBackends for the single-default check: apiserver unreachable",
            f"{b}:276",
            "spec.isDefault",
            fe.INTERNAL,
            {},
            kind="GlanceBackend",
            via=LOOKUP_FAILS,
        ),
    ]


# The CEL rules of the reference's CRDs (x-kubernetes-validations, with their message=), each
# judged through the cases of tests/support/crd_rule_cases.py.
CEL = [
    ("Glance", "spec", "targetClusterRef is immutable", "glance_types.go:49"),
    ("Glance", "spec", "targetClusterRef is immutable", "glance_types.go:50"),
    (
        "Glance",
        "spec.apiServer.uwsgi",
        "httpKeepAliveTimeout may only be set when httpKeepAlive is true",
        "internal/common/types/uwsgi.go:15",
    ),
    (
        "Glance",
        "spec.autoscaling",
        "at least one of targetCPUUtilization or targetMemoryUtilization must be set",
        "internal/common/types/workload.go:183",
    ),
    (
        "Glance",
        "spec.autoscaling",
        "minReplicas must not exceed maxReplicas",
        "internal/common/types/workload.go:184",
    ),
    (
        "Glance",
        "spec.cache",
        "exactly one of clusterRef or servers must be set",
        "internal/common/types/types.go:236",
    ),
    (
        "Glance",
        "spec.cache",
        "clusterRef.name must not contain a newline or carriage return",
        "internal/common/types/types.go:237",
    ),
    (
        "Glance",
        "spec.database",
        "exactly one of clusterRef or host must be set",
        "internal/common/types/types.go:100",
    ),
    (
        "Glance",
        "spec.database",
        "credentialsMode Dynamic requires clusterRef (managed mode)",
        "internal/common/types/types.go:101",
    ),
    (
        "Glance",
        "spec.deployment",
        "preStopSleepSeconds must be strictly less than terminationGracePeriodSeconds",
        "internal/common/types/workload.go:81",
    ),
    (
        "Glance",
        "spec.image",
        "exactly one of image.tag or image.digest must be set",
        "internal/common/types/types.go:56",
    ),
    *[
        (
            "Glance",
            "spec.importFiltering",
            f"{allow} and {deny} are mutually exclusive: glance ignores the deny-list when the "
            "allow-list is non-empty",
            f"glance_types.go:{line}",
        )
        for allow, deny, line in (
            ("allowedSchemes", "disallowedSchemes", 387),
            ("allowedHosts", "disallowedHosts", 388),
            ("allowedPorts", "disallowedPorts", 389),
        )
    ],
    (
        "Glance",
        "spec.importPlugins.injectMetadata.properties",
        "each injected property name and value must be at most 255 characters",
        "glance_types.go:591",
    ),
    (
        "Glance",
        "spec.logging.perLoggerLevels",
        "logger name must not be empty",
        "internal/common/types/workload.go:282",
    ),
    (
        "Glance",
        "spec.logging.perLoggerLevels",
        "per-logger level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        "internal/common/types/workload.go:283",
    ),
    (
        "Glance",
        "spec.networkPolicy",
        "at least one ingress source must be specified",
        "internal/common/types/workload.go:213",
    ),
    (
        "Glance",
        "spec.policyOverrides",
        "at least one of rules or configMapRef must be set",
        "glance_types.go:259",
    ),
    (
        "Glance",
        "spec.policyOverrides",
        "policy rule name must not be empty",
        "internal/common/types/types.go:355",
    ),
    (
        "Glance",
        "spec.policyOverrides",
        "policy rule value must not be empty",
        "internal/common/types/types.go:356",
    ),
    (
        "Glance",
        "spec.staging",
        "unbounded and sizeLimit are mutually exclusive: an unbounded staging area has no size "
        "limit to configure",
        "glance_types.go:702",
    ),
    ("GlanceBackend", "spec", "glanceRef is immutable", "glancebackend_types.go:76"),
    ("GlanceBackend", "spec", "type is immutable", "glancebackend_types.go:77"),
    (
        "GlanceBackend",
        "spec",
        "exactly one backend block matching spec.type must be set (type S3 requires spec.s3)",
        "glancebackend_types.go:78",
    ),
    (
        "GlanceBackend",
        "spec.extraOptions",
        "each extraOptions key must be <=256 characters and each value <=1024 characters",
        "glancebackend_types.go:111",
    ),
]


def cel_rows() -> list[Refusal]:
    rows = []
    for kind, path, message, source in CEL:
        cases = [r for r in RULES if (r[0], r[1], r[2]) == (kind, path, message)]
        assert cases, (kind, path, message)
        for _, _, _, _, bad, old in cases:
            rows.append(
                Refusal(
                    message,
                    source,
                    path,
                    INVALID,
                    bad,
                    kind=kind,
                    rule=False,
                    old=None if old is None else old[1],
                )
            )
    return rows


# The CRD markers the reference's types carry, worded by the API server (the same markers
# are in our CRDs): one case of each kind of marker.
def marker_rows() -> list[Refusal]:
    return [
        Refusal(
            "spec.deployment.replicas in body should be greater than or equal to 1",
            "internal/common/types/workload.go (Minimum=1)",
            "spec.deployment.replicas",
            INVALID,
            spec(deployment={"replicas": -1}),
            rule=False,
        ),
        Refusal(
            "spec.autoscaling.targetCPUUtilization in body should be less than or equal to 100",
            "internal/common/types/workload.go (Maximum=100)",
            "spec.autoscaling.targetCPUUtilization",
            INVALID,
            spec(autoscaling={"maxReplicas": 5, "targetCPUUtilization": 101}),
            rule=False,
        ),
        Refusal(
            "spec.database.replicas in body should be greater than or equal to 1",
            "internal/common/types/types.go (Minimum=1 on DatabaseSpec.Replicas)",
            "spec.database.replicas",
            INVALID,
            spec(database={"replicas": 0}),
            rule=False,
        ),
        Refusal(
            "spec.database.storageSize in body should match '^[0-9]+(Mi|Gi|Ti)$'",
            "internal/common/types/types.go (Pattern on DatabaseSpec.StorageSize)",
            "spec.database.storageSize",
            INVALID,
            spec(database={"storageSize": "100G"}),
            rule=False,
        ),
        Refusal(
            "spec.targetClusterRef.name in body should be at least 1 chars long",
            "internal/common/types/types.go (MinLength=1)",
            "spec.targetClusterRef.name",
            INVALID,
            spec(targetClusterRef={"name": ""}),
            rule=False,
        ),
        Refusal(
            "may not be more than 253 bytes",
            "glance_types.go (items:MaxLength=253)",
            "spec.importFiltering.allowedHosts[0]",
            TOO_LONG,
            spec(importFiltering={"allowedHosts": ["h" * 254]}),
            rule=False,
        ),
        Refusal(
            "spec.openStackRelease in body should match '^\\d{4}\\.[12]$'",
            "glance_types.go (Pattern)",
            "spec.openStackRelease",
            INVALID,
            spec(openStackRelease="2026.3"),
            rule=False,
        ),
        Refusal(
            'supported values: "text", "json"',
            "internal/common/types/workload.go (Enum)",
            "spec.logging.format",
            UNSUPPORTED,
            spec(logging={"format": "xml"}),
            rule=False,
        ),
        Refusal(
            "must have at most 64 items",
            "glance_types.go (MaxItems=64)",
            "spec.importFiltering.disallowedHosts",
            TOO_MANY,
            spec(importFiltering={"disallowedHosts": [f"h{i}" for i in range(65)]}),
            rule=False,
        ),
        Refusal(
            f"{INJECT}.properties in body should have at least 1 properties",
            "glance_types.go (MinProperties=1)",
            f"{INJECT}.properties",
            INVALID,
            inject({}),
            rule=False,
        ),
        Refusal(
            "must have at most 64 items",
            "glance_types.go (MaxProperties=64)",
            f"{INJECT}.properties",
            TOO_MANY,
            inject({f"k{i}": "v" for i in range(65)}),
            rule=False,
        ),
    ]


REFUSALS = glance_rows() + owned_key_rows() + backend_rows() + cel_rows() + marker_rows()


# --- the two paths -----------------------------------------------------------------------


class Lookups:
    """What the webhook asks the cluster, failing on demand."""

    def __init__(self, siblings=(), fail: bool = False):
        self.siblings, self.fail = list(siblings), fail

    def backends(self, namespace: str) -> list[dict]:
        if self.fail:
            raise ConnectionRefusedError("apiserver unreachable")
        return self.siblings

    def priority_class(self, name: str) -> bool:
        if self.fail:
            raise TimeoutError("read timed out")
        return False


def objects(row) -> tuple[dict, dict | None]:
    kind = getattr(row, "kind", "Glance")
    obj = patched(BASE[kind], row.patch)
    old = None if row.old is None else patched(BASE[kind], row.old)
    return obj, old


def webhook_response(row, lookups: Lookups) -> dict[str, Any]:
    kind = getattr(row, "kind", "Glance")
    obj, old = objects(row)
    admission = Admission(CRDS, CATALOGS, lookups.backends, lookups.priority_class)
    request = {
        "uid": "reference-messages",
        "kind": {"group": "glance.openstack.c5c3.io", "version": "v1alpha1", "kind": kind},
        "operation": "UPDATE" if old is not None else "CREATE",
        "namespace": "openstack",
        "name": obj["metadata"]["name"],
        "object": obj,
    }
    if old is not None:
        request["oldObject"] = old
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    outcome = admission.review(Route(kind, mutating=False), json.dumps(body).encode())
    return outcome.response


def webhook_lines(response: dict[str, Any]) -> list[str]:
    """The refusal as the API server prints its causes: ``<field>: <body>`` each."""
    if response["allowed"]:
        return []
    status = response["status"]
    causes = (status.get("details") or {}).get("causes") or []
    lines = [f"{c['field']}: {c['message']}" if "field" in c else c["message"] for c in causes]
    for line in lines:
        assert line in status["message"]  # the aggregated message carries every cause
    return lines


def offline(row, lookups: Lookups) -> tuple[list[str], list[str]]:
    """Errors and warnings of offline validation: a create through ``judge_input`` (the input
    file of render and validate), an update through ``admission.judge``."""
    kind = getattr(row, "kind", "Glance")
    obj, old = objects(row)
    if old is not None or (getattr(row, "via", JUDGED) == LOOKUP and kind == "Glance"):
        # An update, or a rule that asks the cluster: the function behind offline render and
        # the reconcile, with the stored object or the lookup.
        ctx = AdmissionContext(
            operation="UPDATE" if old is not None else "CREATE",
            old=old,
            priority_class_exists=lookups.priority_class,
            catalogs=CATALOGS,
        )
        verdict = judge(CRDS[kind], obj, ctx)
        return verdict.messages(), verdict.warnings
    documents = [obj] if kind == "Glance" else [GLANCE, obj, *lookups.siblings]
    report = judge_input(yaml.safe_dump_all(documents, allow_unicode=True))
    prefix = f"{kind} {obj['metadata']['name']}: "
    errors = [e.removeprefix(prefix) for e in report["errors"] if e.startswith(prefix)]
    warned = f"{prefix}warning: "
    warnings = [w.removeprefix(warned) for w in report["warnings"] if w.startswith(warned)]
    return errors, warnings


def rule_lines(row: Refusal) -> list[str]:
    """The webhook rule's own verdict on the (defaulted) object, schema or no schema."""
    obj, old = objects(row)
    ctx = AdmissionContext(
        operation="UPDATE" if old is not None else "CREATE",
        old=old,
        siblings=list(row.siblings) or None,
        priority_class_exists=Lookups().priority_class,
        catalogs=CATALOGS,
    )
    if row.kind == "Glance":
        errors, _ = validate_glance(default_glance(obj), ctx)
    else:
        errors, _ = validate_glancebackend(default_glancebackend(obj), ctx)
    return [str(e) for e in errors]


def says(lines: list[str], row: Refusal) -> bool:
    """A line names the reference's field and error type, and carries its text."""
    head = f"{row.field}: {row.type}"
    return any(line.startswith(head) and row.text in line[len(head) :] for line in lines)


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize("row", REFUSALS, ids=[r.id for r in REFUSALS])
def test_each_reference_refusal_is_ours_word_for_word(row: Refusal):
    lookups = Lookups(row.siblings, fail=row.via == LOOKUP_FAILS)
    response = webhook_response(row, lookups)
    if row.via == LOOKUP_FAILS:
        # Ours answers a failed lookup with an InternalError status (HTTP 500) that words it
        # as the reference's field.InternalError does.
        assert response["allowed"] is False
        assert row.text in response["status"]["message"]
        return
    errors, _ = offline(row, lookups)
    if row.via == SHADOWED:
        # The CRD refuses first, on both paths; the rule still says it for a bypassing object.
        assert not response["allowed"] and errors, (response, errors)
        assert says(rule_lines(row), row), rule_lines(row)
        return
    assert says(webhook_lines(response), row), webhook_lines(response)
    assert says(errors, row), errors
    if row.rule:
        assert says(rule_lines(row), row), rule_lines(row)


def cel_messages(kind: str, node: Any, path: str = "") -> set[tuple[str, str, str]]:
    """(kind, path, message) of every CEL rule under ``node``, a CRD's schema."""
    if not isinstance(node, dict):
        return set()
    found = {(kind, path, r["message"]) for r in node.get("x-kubernetes-validations") or []}
    for name, child in (node.get("properties") or {}).items():
        found |= cel_messages(kind, child, f"{path}.{name}" if path else name)
    return found


def test_every_cel_rule_of_our_crds_is_in_the_table():
    ours = set()
    for kind, crd in CRDS.items():
        ours |= cel_messages(kind, crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert ours == {(kind, path, message) for kind, path, message, _ in CEL}


# --- warnings ----------------------------------------------------------------------------

FILTERING = "spec.importFiltering"
WIDENED = (
    "The scheme and port pin is the primary web-download control — the link-local metadata "
    "endpoint answers on http/80 — and once widened only the host denylist remains, which "
    "matches literally: alternate spellings of the same address (an integer or IPv4-mapped "
    "form, a raw ClusterIP, a trailing-dot FQDN) are not covered. Confine the reachable "
    "endpoints with spec.networkPolicy.additionalEgress, or pin allowedHosts to the mirrors "
    "imports are supposed to use."
)


def inert(deny: str, allow: str, default: str) -> str:
    return (
        f"{FILTERING}.{deny} is set while {FILTERING}.{allow} is unset and therefore resolves to "
        f"the operator default {default}. Glance evaluates a deny-list only while the matching "
        f"allow-list is empty, so this list is inert; set {FILTERING}.{allow} to an explicitly "
        "empty list ([]) to make the deny-list authoritative."
    )


WARNINGS = [
    Warned(
        inert("disallowedSchemes", "allowedSchemes", "[https]"),
        "glance_webhook.go:1405, 1460",
        spec(importFiltering={"disallowedSchemes": ["http"]}),
    ),
    Warned(
        inert("disallowedPorts", "allowedPorts", "[443]"),
        "glance_webhook.go:1410, 1460",
        spec(importFiltering={"disallowedPorts": [80]}),
    ),
    Warned(
        f"{FILTERING}.allowedSchemes is set to [http https], widening the operator default "
        f"[https]. {WIDENED}",
        "glance_webhook.go:1421, 1464",
        spec(importFiltering={"allowedSchemes": ["http", "https"]}),
    ),
    Warned(
        f"{FILTERING}.allowedPorts is set to [443 8443], widening the operator default [443]. "
        f"{WIDENED}",
        "glance_webhook.go:1425, 1464",
        spec(importFiltering={"allowedPorts": [443, 8443]}),
    ),
    Warned(
        "spec.dbPurge.retentionDays reduced 30 → 7: the next purge run hard-deletes the rows "
        "soft-deleted between 7 and 30 days ago, which cannot be undone",
        "glance_webhook.go:1366",
        spec(dbPurge={"retentionDays": 7}),
        old=spec(dbPurge={"retentionDays": 30}),
    ),
    Warned(
        "spec.extraConfig was not validated against an option catalog: spec.openStackRelease "
        "does not name an OpenStack release",
        "glance_webhook.go:1534",
        spec(openStackRelease="2009.1", extraConfig={"DEFAULT": {"x": "1"}}),
    ),
    Warned(
        "spec.extraConfig was not validated against an option catalog: no catalog for release "
        '"2027.1" is embedded in this operator build',
        "glance_webhook.go:1538",
        spec(openStackRelease="2027.1", extraConfig={"DEFAULT": {"x": "1"}}),
    ),
    Warned(
        "spec.extraConfig [DEFAULT] logdir: deprecated option in glance 2026.2, replaced by "
        "[DEFAULT] log_dir",
        "glance_webhook.go:1598",
        spec(extraConfig={"DEFAULT": {"logdir": "/var/log/glance"}}),
    ),
    Warned(
        "spec.extraConfig [DEFAULT] show_multiple_locations: deprecated option in glance "
        "2026.2 with no replacement",
        "glance_webhook.go:1592",
        spec(extraConfig={"DEFAULT": {"show_multiple_locations": "false"}}),
    ),
]


@pytest.mark.parametrize("row", WARNINGS, ids=[w.text[:80] for w in WARNINGS])
def test_each_reference_warning_is_ours_word_for_word(row: Warned):
    response = webhook_response(row, Lookups())
    assert response["allowed"], response
    assert any(row.text in w for w in response.get("warnings") or []), response
    errors, warnings = offline(row, Lookups())
    assert errors == []
    assert any(row.text in w for w in warnings), warnings


# --- conditions --------------------------------------------------------------------------

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ROUTE = {"hostname": "images.example.com", "parentRef": {"name": "public"}}
MARIADB = {
    "apiVersion": "k8s.mariadb.com/v1alpha1",
    "kind": "MariaDB",
    "metadata": {"name": "mariadb", "namespace": "openstack", "uid": "mariadb-uid"},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}
MANAGED = {"database": {"host": DELETE, "clusterRef": {"name": "mariadb"}}}
TARGET = {"name": "edge", "registration": "c5c3-clusters/edge", "server": "https://x"}


def glance_pass(spec_patch: dict | None = None, backends=None, cluster=None, **inputs):
    """A Glance against the fake cluster, before its first pass."""
    glance = glance_object(patched(GLANCE, {"spec": spec_patch or {}}), finalizer=True)
    backends = [stored(BACKEND, "b-uid")] if backends is None else backends
    return Reconciler(glance, plan_inputs(backends, None, **inputs), cluster or FakeCluster())


@cache
def converged(key: str = "") -> Reconciler:
    spec_patch, kw = {
        "": ({}, {}),
        "exposed": (
            {
                "autoscaling": {"maxReplicas": 5, "targetCPUUtilization": 80},
                "networkPolicy": {"ingress": [{"namespaceSelector": {}}]},
                "gateway": ROUTE,
            },
            {},
        ),
        "suspended": ({"dbPurge": {"suspend": True}}, {}),
        "no gateway api": ({"gateway": ROUTE}, {"cluster": FakeCluster(gateway_api=False)}),
    }[key]
    r = glance_pass(spec_patch, **kw)
    r.converge()
    return r


def said(r: Reconciler, type_: str) -> str:
    return r.condition(type_)["message"]


def first_pass(**kw) -> Reconciler:
    r = glance_pass(**kw)
    r.run_pass(settle=False)
    return r


def route_not_accepted() -> str:
    r = glance_pass({"gateway": ROUTE})
    r.converge(routes=False)
    return said(r, c.HTTPROUTE_READY)


def deployment_not_ready() -> Reconciler:
    r = glance_pass()
    r.run_pass()
    r.run_pass(settle=False)
    return r


def db_sync_failed() -> str:
    r = glance_pass()
    r.run_pass(jobs="Failed")
    r.run_pass(HEALTHY, jobs="Failed")
    return said(r, c.DATABASE_READY)


def managed(cluster_ready: bool = True, database_ready: bool = False) -> str:
    mariadb = copy.deepcopy(MARIADB)
    if not cluster_ready:
        mariadb["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    r = glance_pass(MANAGED, database_cluster=mariadb)
    r.run_pass()
    if database_ready:
        r.cluster.get("Database", "glance")["status"] = copy.deepcopy(MARIADB["status"])
        r.run_pass()
    return said(r, c.DATABASE_READY)


def purge_failed() -> str:
    r = glance_pass()
    r.converge()
    uid = r.cluster.get("CronJob", "glance-db-purge")["metadata"]["uid"]
    name = "glance-db-purge-29000000"
    r.cluster.objects[("Job", name)] = purge_run(name, "Failed", "2026-03-02T00:01:00Z", uid)
    r.run_pass(HEALTHY)
    return said(r, c.DB_PURGE_READY)


def targeted(spec_patch: dict, target: dict, cluster=None, passes: int = 8) -> Reconciler:
    """A Glance on a target cluster, run ``passes`` passes with the target as found."""
    r = glance_pass({"targetClusterRef": {"name": "edge"}, **spec_patch}, cluster=cluster)
    for _ in range(passes):
        r.now += timedelta(seconds=30)
        result = decide_pass(
            r.glance, r.inputs, r.cluster.live(), r.now, HEALTHY, target_cluster=target
        )
        r.cluster.perform(result.actions)
        if result.status_patch is not None:
            r.glance["status"] = copy.deepcopy(result.status)
        r.cluster.settle()
    return r


def waiting_to_abandon() -> str:
    r = glance_pass({"targetClusterRef": {"name": "edge"}})
    glance = patched(r.glance, {"metadata": {"finalizers": [FINALIZER, REMOTE_CHILDREN_FINALIZER]}})
    glance["metadata"]["deletionTimestamp"] = "2026-03-01T12:00:00Z"
    unavailable = {**TARGET, "error": 'cluster "edge" is not registered'}
    result = decide_pass(
        glance, r.inputs, r.cluster.live(), NOW + timedelta(seconds=10), target_cluster=unavailable
    )
    return c.by_type(result.status["conditions"])[c.SECRETS_READY]["message"]


def raised(render: Callable[[], Any]) -> str:
    with pytest.raises((ConfigError, BackendFault)) as caught:
        render()
    return str(caught.value)


def policy(data: dict | None) -> str:
    glance = patched(
        GLANCE, {"spec": {"policyOverrides": {"configMapRef": {"name": "glance-policy"}}}}
    )
    return raised(lambda: render_policy_yaml(glance, data))


def middleware(*entries: dict) -> str:
    return raised(
        lambda: render_paste_ini(patched(GLANCE, {"spec": {"middleware": list(entries)}}))
    )


def secrets_gate(glance_patch: dict, secrets: dict, external: ExternalSecrets) -> str:
    return gate_secrets(patched(GLANCE, glance_patch), secrets, external).condition["message"]


ES_READY = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
ES_SYNCING = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
STORE = spec(secretStoreRef={"name": "vault", "kind": "SecretStore"})
DB_SECRET = {"glance-db": {"username": "glance", "password": "pw"}}


def es(store=True, **external) -> ExternalSecrets:
    return ExternalSecrets(
        store=ES_READY if store else None,
        external={name.replace("_", "-"): obj for name, obj in external.items()},
    )


def backend(**patch) -> dict:
    return patched(stored(BACKEND, "b-uid"), patch)


def projection(backends: list[dict], secrets: dict) -> str:
    glance = glance_object(GLANCE)
    return project_backends(glance, backends, secrets).condition["message"]


S3 = {"glance-s3": {"access-key-id": "a", "secret-access-key": "s"}}
S3_BACKEND_READY = {
    "status": {"conditions": [{"type": "CredentialsReady", "status": "True"}]},
}


def backend_pass(**kw) -> dict[str, str]:
    args = {
        "backend": backend(),
        "parent": glance_object(GLANCE),
        "secrets": default_secrets(),
        "parent_deployment": None,
        "mounted_secret": None,
        "now": NOW,
    }
    args.update(kw)
    result = bp.decide_backend_pass(**args)
    return {cond["type"]: cond["message"] for cond in result.status["conditions"]}


def projected_deployment() -> tuple[dict, dict]:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "glance", "namespace": "openstack"},
        "spec": {
            "template": {
                "spec": {
                    "volumes": [
                        {"name": "config", "configMap": {"name": "glance-config-1"}},
                        {"name": "backends", "secret": {"secretName": "glance-backends-1"}},
                    ]
                }
            }
        },
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "glance-backends-1", "namespace": "openstack"},
        "data": {"backends.conf": b64("[s3-default]\ns3_store_bucket = b\n")},
    }
    return deployment, secret


STEP = upgrade.Step(upgrade.PHASE, "", "2026.1", "2026.2")
CTRL = "internal/controller"
COMMON = "internal/common"

CONDITIONS = [
    # --- Ready (both kinds) ---
    Said(
        "All sub-conditions are ready",
        f"{COMMON}/reconcile/status.go:34",
        "pass: conditions.aggregate_ready",
        lambda: said(converged(), c.READY),
    ),
    Said(
        "One or more sub-conditions are not ready",
        f"{COMMON}/reconcile/status.go:42",
        "pass: conditions.aggregate_ready",
        lambda: said(first_pass(), c.READY),
    ),
    Said(
        "One or more sub-conditions are not ready",
        f"{COMMON}/reconcile/status.go:42 (GlanceBackend)",
        "glancebackend_pass.backend_status",
        lambda: backend_pass()[c.READY],
    ),
    # --- SecretsReady ---
    Said(
        'SecretStore "vault" is not ready; upstream secret backend unreachable',
        f"{COMMON}/secrets/gate.go:105",
        "glance_secrets.store_gate_message",
        lambda: secrets_gate(STORE, {}, es(store=False)),
    ),
    Said(
        "Database credentials ExternalSecret openstack/glance-db not found yet",
        f"{COMMON}/secrets/gate.go:165, {CTRL}/reconcile_secrets.go:70",
        "glance_secrets.external_secret_message",
        lambda: secrets_gate(STORE, {}, es()),
    ),
    Said(
        "Waiting for ESO to sync database credentials from OpenBao",
        f"{CTRL}/reconcile_secrets.go:72",
        "glance_secrets.ESO_WAITING",
        lambda: secrets_gate(STORE, {}, es(glance_db=ES_SYNCING)),
    ),
    Said(
        "Database credentials Secret exists but is missing expected keys",
        f"{COMMON}/secrets/gate.go:167",
        "glance_secrets.credential_gate_message",
        lambda: secrets_gate(STORE, {"glance-db": {"username": "glance"}}, es(glance_db=ES_READY)),
    ),
    Said(
        "Service-user credentials ExternalSecret openstack/glance-service-user not found yet",
        f"{COMMON}/secrets/gate.go:165, {CTRL}/reconcile_secrets.go:77",
        "glance_secrets.external_secret_message",
        lambda: secrets_gate(STORE, DB_SECRET, es()),
    ),
    Said(
        "Waiting for ESO to sync the Glance service-user password from OpenBao",
        f"{CTRL}/reconcile_secrets.go:79",
        "glance_secrets.ESO_WAITING",
        lambda: secrets_gate(STORE, DB_SECRET, es(glance_service_user=ES_SYNCING)),
    ),
    Said(
        "Service-user credentials Secret exists but is missing expected keys",
        f"{COMMON}/secrets/gate.go:167",
        "glance_secrets.credential_gate_message",
        lambda: secrets_gate(
            STORE,
            {**DB_SECRET, "glance-service-user": {}},
            es(glance_service_user=ES_READY),
        ),
    ),
    Said(
        "",  # the reference's SecretsAvailable carries no message; ours says what is there
        f"{CTRL}/reconcile_secrets.go:104",
        "glance_secrets.SECRETS_AVAILABLE_MESSAGE",
        lambda: said(converged(), c.SECRETS_READY),
    ),
    Said(
        "target cluster edge does not resolve; waiting at least 5m0s before abandoning its "
        "children",
        f"{CTRL}/glance_controller.go:361",
        "passes/glance/deletion.py",
        waiting_to_abandon,
    ),
    Said(
        'loading policy from ConfigMap: getting ConfigMap openstack/glance-policy: configmaps "'
        'glance-policy" not found',
        f"{CTRL}/reconcile_config.go:516, {COMMON}/policy/policy.go:31",
        "config_files/policy_yaml.py (SecretsReady ConfigError)",
        lambda: policy(None),
    ),
    Said(
        "loading policy from ConfigMap: ConfigMap openstack/glance-policy does not contain key "
        '"policy.yaml"',
        f"{CTRL}/reconcile_config.go:516, {COMMON}/policy/policy.go:36",
        "config_files/policy_yaml.py (SecretsReady ConfigError)",
        lambda: policy({"other.yaml": "a: b"}),
    ),
    Said(
        "loading policy from ConfigMap: parsing policy.yaml from ConfigMap "
        "openstack/glance-policy: ",
        f"{CTRL}/reconcile_config.go:516, {COMMON}/policy/policy.go:41",
        "config_files/policy_yaml.py (SecretsReady ConfigError)",
        lambda: policy({"policy.yaml": "a: [b"}),
    ),
    Said(
        'loading policy from ConfigMap: ConfigMap openstack/glance-policy key "policy.yaml" is '
        "empty or parsed to nil",
        f"{CTRL}/reconcile_config.go:516, {COMMON}/policy/policy.go:45",
        "config_files/policy_yaml.py (SecretsReady ConfigError)",
        lambda: policy({"policy.yaml": ""}),
    ),
    Said(
        'pipeline "api" contains a MiddlewareSpec with an empty Name',
        f"{COMMON}/plugins/plugins.go:66",
        "config_files/paste_ini.py (SecretsReady ConfigError)",
        lambda: middleware({"name": "", "filterFactory": "x:y", "position": "after"}),
    ),
    Said(
        'middleware "a" in pipeline "api" has an empty FilterFactory',
        f"{COMMON}/plugins/plugins.go:69",
        "config_files/paste_ini.py (SecretsReady ConfigError)",
        lambda: middleware({"name": "a", "filterFactory": "", "position": "after"}),
    ),
    Said(
        'duplicate middleware Name "a" in pipeline "api"',
        f"{COMMON}/plugins/plugins.go:72",
        "config_files/paste_ini.py (SecretsReady ConfigError)",
        lambda: middleware(
            {"name": "a", "filterFactory": "x:y", "position": "before"},
            {"name": "a", "filterFactory": "x:z", "position": "after"},
        ),
    ),
    Said(
        'middleware "a" in pipeline "api" has unrecognised Position "middle"',
        f"{COMMON}/plugins/plugins.go:81",
        "config_files/paste_ini.py (SecretsReady ConfigError)",
        lambda: middleware({"name": "a", "filterFactory": "x:y", "position": "middle"}),
    ),
    # --- BackendsReady ---
    Said(
        "No attached, credential-ready backend is marked isDefault; exactly one is required",
        f"{CTRL}/reconcile_backends.go:339",
        "backend_projection.NO_DEFAULT_MESSAGE",
        lambda: said(first_pass(backends=[]), c.BACKENDS_READY),
    ),
    Said(
        "More than one attached, credential-ready backend is marked isDefault (s3-a, s3-b); "
        "exactly one is required",
        f"{CTRL}/reconcile_backends.go:341",
        "backend_projection.MANY_DEFAULTS_MESSAGE",
        lambda: projection(
            [backend(metadata={"name": "s3-a"}), backend(metadata={"name": "s3-b"})], S3
        ),
    ),
    Said(
        "Waiting for backends: s3-b (credentials not ready)",
        f"{CTRL}/reconcile_backends.go:160, 220",
        "backend_projection.backends_condition",
        lambda: projection(
            [
                backend(),
                backend(
                    metadata={"name": "s3-b"},
                    spec={"isDefault": False, "s3": {"credentialsSecretRef": {"name": "none"}}},
                ),
            ],
            S3,
        ),
    ),
    Said(
        "Waiting for backends: s3-b ([glance_store] option name or value contains a newline or "
        "carriage-return character",
        f"{CTRL}/reconcile_backends.go:175, 253",
        "backend_projection.CONTROL_CHAR_IN_OPTION",
        lambda: projection(
            [
                backend(),
                backend(
                    metadata={"name": "s3-b"},
                    spec={"isDefault": False, "s3": {"credentialsSecretRef": {"name": "bad"}}},
                ),
            ],
            {**S3, "bad": {"access-key-id": "a\nb", "secret-access-key": "s"}},
        ),
    ),
    Said(
        'getting Secret openstack/glance-s3: secrets "glance-s3" not found',
        f"{CTRL}/reconcile_backends.go:175, {COMMON}/secrets/secrets.go:160",
        "backend_projection.store_options",
        lambda: raised(lambda: store_options(backend(), {})),
    ),
    Said(
        'key not found in Secret: key "secret-access-key" in Secret openstack/glance-s3',
        f"{CTRL}/reconcile_backends.go:175, {COMMON}/secrets/secrets.go:165",
        "backend_projection.store_options",
        lambda: raised(lambda: store_options(backend(), {"glance-s3": {"access-key-id": "a"}})),
    ),
    Said(
        "All attached backends are projected",
        f"{CTRL}/reconcile_backends.go:230",
        "backend_projection.ALL_PROJECTED_MESSAGE",
        lambda: said(converged(), c.BACKENDS_READY),
    ),
    # --- DatabaseReady ---
    Said(
        'MariaDB cluster "mariadb" is not ready',
        f"{COMMON}/database/flow.go:123",
        "passes/glance/gates.py _managed_database",
        lambda: managed(cluster_ready=False),
    ),
    Said(
        "MariaDB Database CR is not ready",
        f"{COMMON}/database/flow.go:149",
        "gates.MARIADB_DATABASE_NOT_READY",
        managed,
    ),
    Said(
        "MariaDB User or Grant CR is not ready",
        f"{COMMON}/database/flow.go:176",
        "gates.MARIADB_USER_NOT_READY",
        lambda: managed(database_ready=True),
    ),
    Said(
        "Waiting for a ready default backend before provisioning the database schema",
        f"{CTRL}/reconcile_database.go:84",
        "database_step.DB_WAITING_FOR_BACKENDS",
        lambda: said(first_pass(backends=[]), c.DATABASE_READY),
    ),
    Said(
        'spec.image.tag "2026.1" names OpenStack release 2026.1 but spec.openStackRelease is '
        '"2026.2"; bump spec.image in lockstep with spec.openStackRelease',
        f"{CTRL}/reconcile_database.go:180",
        "gates.image_release_mismatch_message",
        lambda: said(first_pass(spec_patch={"image": {"tag": "2026.1"}}), c.DATABASE_READY),
    ),
    Said(
        "db_sync job is running",
        f"{COMMON}/database/flow.go:259",
        "database_step.DB_SYNC_RUNNING",
        lambda: said(first_pass(), c.DATABASE_READY),
    ),
    Said(
        "db_sync job failed: ",
        f"{COMMON}/database/flow.go:245",
        "database_step.DB_SYNC_FAILED",
        db_sync_failed,
    ),
    Said(
        "Database schema is up to date (revision verified)",
        f"{COMMON}/database/flow.go:308",
        "database_step.DB_SYNCED",
        lambda: said(converged(), c.DATABASE_READY),
    ),
    Said(
        'failed to parse installed release "grizzly": invalid release format "grizzly": '
        "expected YYYY.N",
        f"{COMMON}/database/upgrade.go:153",
        "upgrade.path_problem",
        lambda: upgrade.path_problem("grizzly", "2026.2")[1],
    ),
    Said(
        'failed to parse target release "2026.9": invalid release minor version 9 in "2026.9": '
        "must be 1 or 2",
        f"{COMMON}/database/upgrade.go:166",
        "upgrade.path_problem",
        lambda: upgrade.path_problem("2026.1", "2026.9")[1],
    ),
    Said(
        "downgrade from 2026.2 to 2026.1 is not supported",
        f"{COMMON}/database/upgrade.go:178",
        "upgrade.path_problem",
        lambda: upgrade.path_problem("2026.2", "2026.1")[1],
    ),
    Said(
        "upgrade from 2025.2 to 2026.2 is not sequential; only sequential upgrades are supported",
        f"{COMMON}/database/upgrade.go:190",
        "upgrade.path_problem",
        lambda: upgrade.path_problem("2025.2", "2026.2")[1],
    ),
    Said(
        "Upgrade detected: 2026.1 → 2026.2 (phase: Expanding)",
        f"{COMMON}/database/upgrade.go:203",
        "upgrade.initiated",
        lambda: upgrade.initiated(STEP)[0]["message"],
    ),
    Said(
        "Spec release changed to 2027.1 during active upgrade 2026.1 → 2026.2; complete or roll "
        "back the current upgrade first",
        f"{COMMON}/database/upgrade.go:240",
        "upgrade.database_step",
        lambda: (
            upgrade.database_step(
                "2027.1",
                {
                    "installedRelease": "2026.1",
                    "targetRelease": "2026.2",
                    "upgradePhase": "Migrating",
                },
            ).message
        ),
    ),
    Said(
        "Waiting for Deployment rollout: 2026.1 → 2026.2",
        f"{COMMON}/database/upgrade.go:271",
        "upgrade.rolling_update",
        lambda: upgrade.rolling_update(STEP)["message"],
    ),
    *[
        Said(
            f"{name} phase running: 2026.1 → 2026.2",
            f"{COMMON}/database/upgrade.go:345",
            "upgrade.phase_outcome",
            lambda phase=phase: upgrade.phase_outcome(phase, upgrade.RUNNING, STEP, "j").condition[
                "message"
            ],
        )
        for name, phase in (("Expand", "Expanding"), ("Migrate", "Migrating"))
    ],
    Said(
        "Contract job glance-db-contract failed: ",
        f"{COMMON}/database/upgrade.go:357",
        "upgrade.phase_outcome",
        lambda: upgrade.phase_outcome(
            upgrade.CONTRACTING, upgrade.FAILED, STEP, "glance-db-contract", "BackoffLimitExceeded"
        ).condition["message"],
    ),
    Said(
        "Expand complete, starting migrate: 2026.1 → 2026.2",
        f"{COMMON}/database/upgrade.go:370",
        "upgrade.phase_outcome",
        lambda: upgrade.phase_outcome(upgrade.EXPANDING, upgrade.COMPLETE, STEP, "j").condition[
            "message"
        ],
    ),
    Said(
        "Migrate complete, waiting for Deployment rollout: 2026.1 → 2026.2",
        f"{COMMON}/database/upgrade.go:385",
        "upgrade.rolling_update",
        lambda: upgrade.phase_outcome(upgrade.MIGRATING, upgrade.COMPLETE, STEP, "j").condition[
            "message"
        ],
    ),
    Said(
        "Database schema is up to date (upgraded 2026.1 → 2026.2)",
        f"{COMMON}/database/upgrade.go:405",
        "upgrade.phase_outcome",
        lambda: upgrade.phase_outcome(upgrade.CONTRACTING, upgrade.COMPLETE, STEP, "j").condition[
            "message"
        ],
    ),
    # --- DeploymentReady ---
    Said(
        "Glance API deployment is not yet available",
        f"{CTRL}/reconcile_deployment.go:227",
        "deployment_step.DEPLOYMENT_NOT_AVAILABLE",
        lambda: said(deployment_not_ready(), c.DEPLOYMENT_READY),
    ),
    Said(
        "Waiting for the upgraded image to finish rolling out before contracting the database "
        "schema",
        f"{CTRL}/reconcile_deployment.go:248",
        "upgrade.ROLLOUT_WAITING (only an upgrade's RollingUpdate on a real rollout reaches it)",
        lambda: upgrade.ROLLOUT_WAITING,
    ),
    Said(
        "Glance API deployment is available",
        f"{CTRL}/reconcile_deployment.go:264",
        "deployment_step.DEPLOYMENT_AVAILABLE",
        lambda: said(converged(), c.DEPLOYMENT_READY),
    ),
    # --- GlanceAPIReady ---
    Said(
        "endpoint not yet configured",
        f"{COMMON}/healthcheck/flow.go:95",
        "deployment_step.ENDPOINT_NOT_CONFIGURED",
        lambda: said(deployment_not_ready(), c.GLANCE_API_READY),
    ),
    Said(
        "Glance API is responding at http://glance.openstack.svc.cluster.local:9292/healthcheck",
        f"{COMMON}/healthcheck/flow.go:165",
        "api_health.health_condition",
        lambda: said(converged(), c.GLANCE_API_READY),
    ),
    Said(
        "Glance API returned HTTP 503: no endpoints available for service",
        f"{COMMON}/healthcheck/flow.go:174",
        "api_health.health_condition",
        lambda: health_condition(
            Health(HEALTHY["url"], 503, body="no endpoints available for service\n")
        )[0]["message"],
    ),
    Said(
        "health check timed out",
        f"{COMMON}/healthcheck/healthcheck.go:75",
        "api_health.health_condition",
        lambda: health_condition(Health(HEALTHY["url"], error_kind="timeout"))[0]["message"],
    ),
    Said(
        "endpoint not resolvable",
        f"{COMMON}/healthcheck/healthcheck.go:80",
        "api_health.health_condition",
        lambda: health_condition(Health(HEALTHY["url"], error_kind="dns"))[0]["message"],
    ),
    Said(
        "connection failed: ",
        f"{COMMON}/healthcheck/healthcheck.go:84",
        "api_health.health_condition",
        lambda: health_condition(
            Health(HEALTHY["url"], error_kind="refused", error="connection refused")
        )[0]["message"],
    ),
    Said(
        "health check failed: ",
        f"{COMMON}/healthcheck/healthcheck.go:87",
        "api_health.health_condition",
        lambda: health_condition(Health(HEALTHY["url"], error_kind="other", error="EOF"))[0][
            "message"
        ],
    ),
    # --- HPAReady, NetworkPolicyReady, HTTPRouteReady ---
    Said(
        "Autoscaling is not configured",
        f"{COMMON}/deployment/hpa_flow.go:64",
        "config_step.HPA_NOT_CONFIGURED",
        lambda: said(converged(), c.HPA_READY),
    ),
    Said(
        "HorizontalPodAutoscaler is configured",
        f"{COMMON}/deployment/hpa_flow.go:77",
        "config_step.HPA_CONFIGURED",
        lambda: said(converged("exposed"), c.HPA_READY),
    ),
    Said(
        "Network isolation is not configured",
        f"{COMMON}/networkpolicy/networkpolicy.go:324",
        "config_step.NP_NOT_CONFIGURED",
        lambda: said(converged(), c.NETWORK_POLICY_READY),
    ),
    Said(
        "NetworkPolicy is configured",
        f"{COMMON}/networkpolicy/networkpolicy.go:347",
        "config_step.NP_CONFIGURED",
        lambda: said(converged("exposed"), c.NETWORK_POLICY_READY),
    ),
    Said(
        "External Glance API exposure via Gateway API is not configured",
        f"{COMMON}/gateway/flow.go:78",
        "config_step.ROUTE_NOT_CONFIGURED",
        lambda: said(converged(), c.HTTPROUTE_READY),
    ),
    Said(
        "spec.gateway is set but the gateway.networking.k8s.io/v1 HTTPRoute CRD is not "
        "installed in this cluster; install Gateway API and restart the operator to enable "
        "external Glance API exposure",
        f"{COMMON}/gateway/flow.go:111",
        "config_step.ROUTE_NO_GATEWAY_API",
        lambda: said(converged("no gateway api"), c.HTTPROUTE_READY),
    ),
    Said(
        # The reference's text up to its drift-watch advice, which ours has no watch to follow.
        "spec.gateway is set but the target cluster does not serve the "
        "gateway.networking.k8s.io/v1 HTTPRoute CRD; install Gateway API on the target cluster "
        "(the operator re-checks on every reconcile)",
        f"{COMMON}/gateway/flow.go:116",
        "config_step.ROUTE_NO_GATEWAY_API_TARGET",
        lambda: said(
            targeted({"gateway": ROUTE}, TARGET, FakeCluster(gateway_api=False)), c.HTTPROUTE_READY
        ),
    ),
    Said(
        "HTTPRoute accepted by Gateway",
        f"{COMMON}/gateway/flow.go:159",
        "config_step.ROUTE_ACCEPTED",
        lambda: said(converged("exposed"), c.HTTPROUTE_READY),
    ),
    Said(
        "HTTPRoute not yet accepted by Gateway",
        f"{COMMON}/gateway/flow.go:169",
        "config_step.ROUTE_NOT_ACCEPTED",
        route_not_accepted,
    ),
    # --- DBPurgeReady ---
    Said(
        "Database purge CronJob suspended via spec.dbPurge.suspend; no rows are being "
        'hard-deleted and the soft-deleted backlog keeps growing (schedule "1 0 * * *", '
        "retention 30 days when resumed)",
        f"{CTRL}/reconcile_dbpurge.go:176",
        "config_step._db_purge_step",
        lambda: said(converged("suspended"), c.DB_PURGE_READY),
    ),
    Said(
        "Database purge Job glance-db-purge-29000000 failed; the soft-deleted backlog is no "
        "longer shrinking",
        f"{CTRL}/reconcile_dbpurge.go:195",
        "config_step._db_purge_step",
        purge_failed,
    ),
    Said(
        'Database purge scheduled "1 0 * * *", hard-deleting rows soft-deleted more than 30 '
        "days ago",
        f"{CTRL}/reconcile_dbpurge.go:206",
        "config_step._db_purge_step",
        lambda: said(converged(), c.DB_PURGE_READY),
    ),
    # --- ExtraConfigHealthy ---
    Said(
        "spec.extraConfig overrides no operator-owned keys",
        f"{COMMON}/config/ownership.go:145",
        "extra_config.NO_OVERRIDES_MESSAGE",
        lambda: said(converged(), c.EXTRA_CONFIG_HEALTHY),
    ),
    Said(
        "spec.extraConfig overrides operator-owned keys: [DEFAULT] enabled_backends (must agree "
        "with the projected backends Secret)",
        f"{COMMON}/config/ownership.go:150, config_ownership.go:45",
        "extra_config.extra_config_condition",
        lambda: extra_config_condition(
            patched(GLANCE, spec(extraConfig={"DEFAULT": {"enabled_backends": "x:s3"}}))
        )["message"],
    ),
    Said(
        "[database] connection (the runtime value comes from the OS_DATABASE__CONNECTION env "
        "override, so the file override is ignored)",
        f"{COMMON}/config/ownership.go:180, config_ownership.go:74",
        "owned_keys.OWNED_KEYS",
        lambda: extra_config_condition(
            patched(GLANCE, spec(extraConfig={"database": {"connection": "mysql://x"}}))
        )["message"],
    ),
    # --- GlanceBackend: CredentialsReady, ConfigProjected ---
    Said(
        "parent Glance openstack/glance does not exist; the cluster this backend's credentials "
        "belong on is unknown",
        f"{CTRL}/glancebackend_controller.go:194",
        "backend_projection.backend_credentials",
        lambda: backend_pass(parent=None)[c.CREDENTIALS_READY],
    ),
    Said(
        "parent Glance openstack/glance does not exist; nothing mounts this backend's rendered "
        "store section",
        f"{CTRL}/glancebackend_controller.go:197",
        "glancebackend_pass.decide_backend_pass",
        lambda: backend_pass(
            backend=backend(status={"conditions": [{"type": "ConfigProjected", "status": "True"}]}),
            parent=None,
        )[c.CONFIG_PROJECTED],
    ),
    Said(
        "spec.s3 is not set; no S3 credentials to resolve",
        f"{CTRL}/glancebackend_controller.go:226",
        "backend_projection.backend_credentials",
        lambda: backend_credentials(backend(spec={"s3": DELETE}), glance_object(GLANCE), {})[
            "message"
        ],
    ),
    Said(
        "S3 credentials Secret exists but is missing expected keys",
        f"{COMMON}/secrets/gate.go:167, {CTRL}/glancebackend_controller.go:233",
        "glance_secrets.credential_gate_message",
        lambda: backend_credentials(
            backend(), glance_object(GLANCE), {"glance-s3": {"access-key-id": "a"}}
        )["message"],
    ),
    Said(
        'S3 credentials Secret "glance-s3" carries the required keys',
        f"{CTRL}/glancebackend_controller.go:248",
        "backend_projection.backend_credentials",
        lambda: backend_pass()[c.CREDENTIALS_READY],
    ),
    Said(
        "waiting for the Glance Deployment to mount this backend's rendered store section",
        f"{CTRL}/glancebackend_controller.go:270",
        "glancebackend_pass.PROJECTION_WAITING",
        lambda: backend_pass()[c.CONFIG_PROJECTED],
    ),
    Said(
        "store section is rendered into the Glance Deployment's backends config",
        f"{CTRL}/glancebackend_controller.go:273",
        "glancebackend_pass.PROJECTED",
        lambda: backend_pass(
            parent_deployment=projected_deployment()[0], mounted_secret=projected_deployment()[1]
        )[c.CONFIG_PROJECTED],
    ),
]


@pytest.mark.parametrize("row", CONDITIONS, ids=[f"{r.source}: {r.text}"[:90] for r in CONDITIONS])
def test_each_reference_condition_message_is_ours_word_for_word(row: Said):
    ours = row.produce()
    assert row.text in ours, ours


# The reference's messages ours does not produce: (text, where, why). Each is counted in the
# table's size and named in the changelog fragment.
NOT_PRODUCED = [
    (
        'spec.apiServer.uwsgi is set but release "2025.2" runs the eventlet glance-api server '
        "(below 2026.1), so the uWSGI knobs are inert; configure spec.apiServer.workers instead.",
        "glance_webhook.go:1491",
        "ours runs uWSGI on every release and has no spec.apiServer.workers",
    ),
    (
        'spec.apiServer.workers is set but release "2026.1" runs under uWSGI (2026.1 or later), '
        "so the eventlet worker count is inert; configure spec.apiServer.uwsgi instead.",
        "glance_webhook.go:1498",
        "ours has no spec.apiServer.workers",
    ),
    (
        "S3 credentials ExternalSecret <ns>/<name> not found yet",
        f"{COMMON}/secrets/gate.go:165 (GlanceBackend)",
        "ours reads a GlanceBackend's credentials Secret only, not its ExternalSecret",
    ),
    (
        "waiting for the S3 credentials Secret to carry the required keys",
        f"{CTRL}/glancebackend_controller.go:236",
        "the same: no ExternalSecret read for a GlanceBackend",
    ),
    (
        "Waiting for a ready default backend before creating the Glance API Deployment",
        f"{CTRL}/reconcile_deployment.go:161",
        "unreachable in the reference too: the database step stops the pass first",
    ),
    (
        "Upstream database credentials Secret <ns>/<name> not found / missing key",
        f"{COMMON}/database/connection.go:175, 189, 195",
        "unreachable after the Secrets gate, which checks the same Secret and keys first",
    ),
    (
        "duplicate ConfigSection <s>: plugin <p> would overwrite existing config",
        f"{COMMON}/plugins/plugins.go:180",
        "unreachable: the CRD keys spec.plugins by configSection (a duplicate is refused)",
    ),
    (
        "spec.gateway is set but the target cluster ... and rotate the cluster's kubeconfig "
        "Secret to restore the HTTPRoute drift watch",
        f"{COMMON}/gateway/flow.go:116",
        "the drift-watch advice: ours has no watch on a target cluster (the rest is ours)",
    ),
    (
        "Probing the target cluster for the HTTPRoute kind failed: <err>",
        f"{COMMON}/gateway/flow.go:90",
        "ours reads the kind's discovery document; a failure is a failed pass, not a condition",
    ),
]
