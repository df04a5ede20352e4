"""One passing and one failing case for every CEL rule of both CRDs, and the schema's cases
of the reference's invalid-CR corpus that no CEL rule decides.

Shared by the offline tests (``tests/unit/test_crd_cel_rules.py``), the webhook's
(``tests/runner/test_webhook.py``) and the tests against a real kube-apiserver
(``tests/integration/``), so all judge the same inputs.
"""

from __future__ import annotations

from support.builders import DELETE

# (kind, path of the rule, message, passing patch, failing patch, old objects or None).
# For a transition rule, "old objects" is the pair of patches of the stored object that the
# passing and the failing case update.
RULES = [
    (
        "Glance",
        "spec.apiServer.uwsgi",
        "httpKeepAliveTimeout may only be set when httpKeepAlive is true",
        {"spec": {"apiServer": {"uwsgi": {"httpKeepAliveTimeout": 30}}}},
        {"spec": {"apiServer": {"uwsgi": {"httpKeepAlive": False, "httpKeepAliveTimeout": 30}}}},
        None,
    ),
    (
        "Glance",
        "spec.autoscaling",
        "at least one of targetCPUUtilization or targetMemoryUtilization must be set",
        {"spec": {"autoscaling": {"maxReplicas": 5, "targetMemoryUtilization": 70}}},
        {"spec": {"autoscaling": {"maxReplicas": 5}}},
        None,
    ),
    (
        "Glance",
        "spec.autoscaling",
        "minReplicas must not exceed maxReplicas",
        {"spec": {"autoscaling": {"minReplicas": 5, "maxReplicas": 5, "targetCPUUtilization": 70}}},
        {"spec": {"autoscaling": {"minReplicas": 6, "maxReplicas": 5, "targetCPUUtilization": 70}}},
        None,
    ),
    (
        "Glance",
        "spec.database",
        "exactly one of clusterRef or host must be set",
        {"spec": {"database": {"host": DELETE, "clusterRef": {"name": "mariadb"}}}},
        {"spec": {"database": {"clusterRef": {"name": "mariadb"}}}},
        None,
    ),
    (
        "Glance",
        "spec.database",
        "credentialsMode Dynamic requires clusterRef (managed mode)",
        {
            "spec": {
                "database": {
                    "host": DELETE,
                    "clusterRef": {"name": "mariadb"},
                    "credentialsMode": "Dynamic",
                }
            }
        },
        {"spec": {"database": {"credentialsMode": "Dynamic"}}},
        None,
    ),
    (
        "Glance",
        "spec.cache",
        "exactly one of clusterRef or servers must be set",
        {"spec": {"cache": {"servers": DELETE, "clusterRef": {"name": "memcached"}}}},
        {"spec": {"cache": {"servers": [], "clusterRef": DELETE}}},
        None,
    ),
    (
        "Glance",
        "spec.cache",
        "clusterRef.name must not contain a newline or carriage return",
        {"spec": {"cache": {"servers": DELETE, "clusterRef": {"name": "memcached"}}}},
        {"spec": {"cache": {"servers": DELETE, "clusterRef": {"name": "mem\ncached"}}}},
        None,
    ),
    (
        "Glance",
        "spec.deployment",
        "preStopSleepSeconds must be strictly less than terminationGracePeriodSeconds",
        {"spec": {"deployment": {"preStopSleepSeconds": 29}}},
        {"spec": {"deployment": {"terminationGracePeriodSeconds": 10, "preStopSleepSeconds": 10}}},
        None,
    ),
    (
        "Glance",
        "spec.image",
        "exactly one of image.tag or image.digest must be set",
        {"spec": {"image": {"tag": DELETE, "digest": "sha256:" + "0" * 64}}},
        {"spec": {"image": {"digest": "sha256:" + "0" * 64}}},
        None,
    ),
    *[
        (
            "Glance",
            "spec.importFiltering",
            f"{a} and {d} are mutually exclusive: glance ignores the deny-list when the allow-list is non-empty",
            {"spec": {"importFiltering": {a: good, d: []}}},
            {"spec": {"importFiltering": {a: good, d: bad}}},
            None,
        )
        for a, d, good, bad in (
            ("allowedSchemes", "disallowedSchemes", ["https"], ["http"]),
            ("allowedHosts", "disallowedHosts", ["mirror.example.com"], ["evil.example.com"]),
            ("allowedPorts", "disallowedPorts", [443], [80]),
        )
    ],
    (
        "Glance",
        "spec.importPlugins.injectMetadata.properties",
        "each injected property name and value must be at most 255 characters",
        {"spec": {"importPlugins": {"injectMetadata": {"properties": {"k" * 255: "v" * 255}}}}},
        {"spec": {"importPlugins": {"injectMetadata": {"properties": {"k": "v" * 256}}}}},
        None,
    ),
    (
        "Glance",
        "spec.logging.perLoggerLevels",
        "logger name must not be empty",
        {"spec": {"logging": {"perLoggerLevels": {"glance": "DEBUG"}}}},
        {"spec": {"logging": {"perLoggerLevels": {"": "DEBUG"}}}},
        None,
    ),
    (
        "Glance",
        "spec.logging.perLoggerLevels",
        "per-logger level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        {"spec": {"logging": {"perLoggerLevels": {"glance": "CRITICAL"}}}},
        {"spec": {"logging": {"perLoggerLevels": {"glance": "debug"}}}},
        None,
    ),
    (
        "Glance",
        "spec.networkPolicy",
        "at least one ingress source must be specified",
        {
            "spec": {
                "networkPolicy": {"ingress": [{"namespaceSelector": {"matchLabels": {"a": "b"}}}]}
            }
        },
        {"spec": {"networkPolicy": {"ingress": []}}},
        None,
    ),
    (
        "Glance",
        "spec.policyOverrides",
        "at least one of rules or configMapRef must be set",
        {"spec": {"policyOverrides": {"configMapRef": {"name": "policy"}}}},
        {"spec": {"policyOverrides": {"rules": {}}}},
        None,
    ),
    (
        "Glance",
        "spec.policyOverrides",
        "policy rule name must not be empty",
        {"spec": {"policyOverrides": {"rules": {"get_image": "role:reader"}}}},
        {"spec": {"policyOverrides": {"rules": {"": "role:reader"}}}},
        None,
    ),
    (
        "Glance",
        "spec.policyOverrides",
        "policy rule value must not be empty",
        {"spec": {"policyOverrides": {"rules": {"get_image": "@"}}}},
        {"spec": {"policyOverrides": {"rules": {"get_image": ""}}}},
        None,
    ),
    (
        "Glance",
        "spec.staging",
        "unbounded and sizeLimit are mutually exclusive: an unbounded staging area has no size limit to configure",
        {"spec": {"staging": {"unbounded": False, "sizeLimit": "20Gi"}}},
        {"spec": {"staging": {"unbounded": True, "sizeLimit": "20Gi"}}},
        None,
    ),
    # targetClusterRef: two rules on spec, one message. Each stored Glance is admissible, and
    # each passing update changes another field of the spec.
    (
        "Glance",
        "spec",
        "targetClusterRef is immutable",  # added on update
        {"spec": {"deployment": {"replicas": 5}}},
        {"spec": {"targetClusterRef": {"name": "edge-1"}}},
        ({}, {}),
    ),
    (
        "Glance",
        "spec",
        "targetClusterRef is immutable",  # removed on update
        {"spec": {"targetClusterRef": {"name": "edge-1"}, "deployment": {"replicas": 5}}},
        {},
        ({"spec": {"targetClusterRef": {"name": "edge-1"}}},) * 2,
    ),
    (
        "Glance",
        "spec",
        "targetClusterRef is immutable",  # renamed on update
        {"spec": {"targetClusterRef": {"name": "edge-1"}, "region": "RegionTwo"}},
        {"spec": {"targetClusterRef": {"name": "edge-2"}}},
        ({"spec": {"targetClusterRef": {"name": "edge-1"}}},) * 2,
    ),
    (
        "GlanceBackend",
        "spec",
        "glanceRef is immutable",
        {"spec": {"isDefault": False}},
        {"spec": {"glanceRef": {"name": "other"}}},
        ({}, {}),
    ),
    (
        "GlanceBackend",
        "spec",
        "type is immutable",
        {"spec": {"s3": {"bucket": "other"}}},
        {"spec": {"type": "S3"}},
        ({}, {"spec": {"type": "Swift"}}),
    ),
    (
        "GlanceBackend",
        "spec",
        "exactly one backend block matching spec.type must be set (type S3 requires spec.s3)",
        {},
        {"spec": {"s3": DELETE}},
        None,
    ),
    (
        "GlanceBackend",
        "spec.extraOptions",
        "each extraOptions key must be <=256 characters and each value <=1024 characters",
        {"spec": {"extraOptions": {"k" * 256: "v" * 1024}}},
        {"spec": {"extraOptions": {"k": "v" * 1025}}},
        None,
    ),
]

# The reference's invalid-CR cases the CRD's OpenAPI schema refuses on create, before any CEL
# rule and the webhook: (kind, field, the API server's message without the field, passing
# patch, failing patch). The failing case earns this one error and no other.
SCHEMA_CASES = [
    (
        "Glance",
        "spec.targetClusterRef.name",
        'Invalid value: "": spec.targetClusterRef.name in body should be at least 1 chars long',
        {"spec": {"targetClusterRef": {"name": "edge-1"}}},
        {"spec": {"targetClusterRef": {"name": ""}}},
    ),
]
