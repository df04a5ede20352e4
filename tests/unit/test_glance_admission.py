"""The Glance webhook's defaults and every rule of reference-spec §5.1/§5.2, table-driven.

Each rule has at least one accepted and one rejected case, and the rejected case pins the
message: the field path, the value and the rule's wording.
"""

from __future__ import annotations

import pytest
from support.builders import DELETE, GLANCE, patched

from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import (
    judge as full_judge,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
    default_glance,
    validate_glance,
)

LONG = "x" * 300
LONG_ECHO = "x" * 255 + "…"


def judge(spec_patch: dict, ctx: AdmissionContext | None = None, meta: dict | None = None):
    obj = patched(GLANCE, {"spec": spec_patch, "metadata": meta or {}})
    return validate_glance(default_glance(obj), ctx)


def errors_of(spec_patch: dict, **kw) -> list[str]:
    return [str(e) for e in judge(spec_patch, **kw)[0]]


def test_the_base_object_is_valid():
    assert judge({}) == ([], [])


# --- defaulting -------------------------------------------------------------------------


def test_defaults_fill_resources_replicas_cache_logging_and_service_user():
    out = default_glance(GLANCE)
    spec = out["spec"]
    assert spec["deployment"]["resources"] == {
        "requests": {"memory": "512Mi", "cpu": "100m"},
        "limits": {"memory": "1Gi", "cpu": "500m"},
    }
    assert spec["deployment"]["replicas"] == 3
    assert spec["cache"]["backend"] == "dogpile.cache.pymemcache"
    assert spec["logging"] == {"format": "text", "level": "INFO", "debug": False}
    assert spec["serviceUser"] == {
        "username": "glance",
        "projectName": "service",
        "userDomainName": "Default",
        "projectDomainName": "Default",
        "secretRef": {"name": "glance-service-user", "key": "password"},
    }
    assert "apiServer" not in spec


def test_defaults_never_overwrite_explicit_values():
    given = patched(
        GLANCE,
        {
            "spec": {
                "deployment": {"replicas": 5, "resources": {"limits": {"cpu": "2"}}},
                "logging": {"format": "json", "level": "DEBUG", "debug": True},
                "serviceUser": {"username": "img", "secretRef": {"name": "s", "key": "pw"}},
                "apiServer": {"uwsgi": {"processes": 4, "httpKeepAlive": False}},
            }
        },
    )
    spec = default_glance(given)["spec"]
    assert spec["deployment"]["replicas"] == 5
    assert spec["deployment"]["resources"] == {"limits": {"cpu": "2"}}
    assert spec["logging"] == {"format": "json", "level": "DEBUG", "debug": True}
    assert spec["serviceUser"]["username"] == "img"
    assert spec["serviceUser"]["secretRef"]["key"] == "pw"
    assert spec["apiServer"]["uwsgi"] == {"processes": 4, "threads": 1, "httpKeepAlive": False}


@pytest.mark.parametrize(
    ("uwsgi", "keepalive"),
    [
        ({}, False),
        ({"httpKeepAliveTimeout": 30}, True),
        ({"httpKeepAlive": True}, True),
        ({"httpKeepAlive": False}, False),
    ],
    ids=["off-unless-asked", "a-timeout-asks-for-it", "explicit-true-kept", "explicit-false-kept"],
)
def test_http_keepalive_defaults_to_off_unless_a_timeout_asks_for_it(uwsgi, keepalive):
    # docs/upload.md: without keep-alive the workers serve HTTP with one copy of each byte.
    spec = default_glance(patched(GLANCE, {"spec": {"apiServer": {"uwsgi": uwsgi}}}))["spec"]
    assert spec["apiServer"]["uwsgi"]["httpKeepAlive"] is keepalive


def test_zero_replicas_and_empty_resources_take_the_defaults():
    spec = default_glance(
        patched(GLANCE, {"spec": {"deployment": {"replicas": 0, "resources": {"requests": {}}}}})
    )["spec"]
    assert spec["deployment"]["replicas"] == 3
    assert spec["deployment"]["resources"]["limits"] == {"memory": "1Gi", "cpu": "500m"}


def test_defaults_leave_render_time_blocks_unset():
    spec = default_glance(GLANCE)["spec"]
    for block in (
        "importFiltering",
        "importMethods",
        "importPlugins",
        "dbPurge",
        "staging",
        "imageCache",
        "keystonePublicEndpoint",
    ):
        assert block not in spec


# --- rules on create and update -----------------------------------------------------------

CASES = [
    # (rule, spec patch, expected errors)
    ("replicas", {"deployment": {"replicas": 2}}, []),
    (
        "replicas",
        {"deployment": {"replicas": -1}},
        ["spec.deployment.replicas: Invalid value: -1: replicas must be at least 1"],
    ),
    ("image", {"image": {"tag": DELETE, "digest": "sha256:" + "a" * 64}}, []),
    (
        "image",
        {"image": {"digest": "sha256:" + "a" * 64}},
        [
            'spec.image: Invalid value: "object": exactly one of image.tag or image.digest must be set'
        ],
    ),
    (
        "image",
        {"image": {"tag": DELETE}},
        [
            'spec.image: Invalid value: "object": exactly one of image.tag or image.digest must be set'
        ],
    ),
    ("database", {"database": {"host": DELETE, "clusterRef": {"name": "mariadb"}}}, []),
    (
        "database",
        {
            "database": {
                "host": DELETE,
                "clusterRef": {"name": "mariadb"},
                "credentialsMode": "Dynamic",
            }
        },
        [],
    ),
    ("database", {"database": {"credentialsMode": "Static"}}, []),
    (
        "database",
        {"database": {"clusterRef": {"name": "mariadb"}}},
        ['spec.database: Invalid value: "object": exactly one of clusterRef or host must be set'],
    ),
    (
        "database",
        {"database": {"host": DELETE}},
        ['spec.database: Invalid value: "object": exactly one of clusterRef or host must be set'],
    ),
    (
        "database",
        {"database": {"credentialsMode": "Dynamic"}},
        [
            'spec.database.credentialsMode: Invalid value: "Dynamic": credentialsMode Dynamic '
            "requires clusterRef (managed mode)"
        ],
    ),
    ("cache", {"cache": {"servers": DELETE, "clusterRef": {"name": "memcached"}}}, []),
    (
        "cache",
        {"cache": {"clusterRef": {"name": "memcached"}}},
        ['spec.cache: Invalid value: "object": exactly one of clusterRef or servers must be set'],
    ),
    (
        "cache",
        {"cache": {"servers": []}},
        ['spec.cache: Invalid value: "object": exactly one of clusterRef or servers must be set'],
    ),
    (
        "cache",
        {"cache": {"servers": ["a:11211", "b\n:1"]}},
        [
            'spec.cache.servers[1]: Invalid value: "b\\n:1": value must not contain a newline or carriage return: it is rendered verbatim into the service configuration file, so a newline injects arbitrary config lines'
        ],
    ),
    (
        "cache",
        {"cache": {"servers": DELETE, "clusterRef": {"name": "mc\r"}}},
        [
            'spec.cache.clusterRef.name: Invalid value: "mc\\r": value must not contain a newline or carriage return: it is rendered verbatim into the service configuration file, so a newline injects arbitrary config lines'
        ],
    ),
    (
        "keystone",
        {
            "keystoneEndpoint": "https://keystone.example.com/v3",
            "keystonePublicEndpoint": "https://id.example.com:443/v3",
        },
        [],
    ),
    (
        "keystone",
        {"keystoneEndpoint": ""},
        [
            "spec.keystoneEndpoint: Required value: keystoneEndpoint must be set (the Keystone auth_url the Glance pods reach)"
        ],
    ),
    (
        "keystone",
        {"keystoneEndpoint": "ftp://keystone/v3"},
        ['spec.keystoneEndpoint: Invalid value: "ftp://keystone/v3": scheme must be http or https'],
    ),
    (
        "keystone",
        {"keystoneEndpoint": "http:///v3"},
        ['spec.keystoneEndpoint: Invalid value: "http:///v3": URL must include a host'],
    ),
    (
        "keystone",
        {"keystonePublicEndpoint": "https://id example.com/"},
        [
            'spec.keystonePublicEndpoint: Invalid value: "https://id example.com/": must be a valid URL: parse "https://id example.com/": invalid character " " in host name'
        ],
    ),
    (
        "logging",
        {
            "logging": {
                "format": "json",
                "level": "WARNING",
                "perLoggerLevels": {"keystonemiddleware": "ERROR"},
            }
        },
        [],
    ),
    (
        "secretStoreRef",
        {"secretStoreRef": {"kind": "SecretStore", "name": "vault"}},
        [],
    ),
    (
        "secretStoreRef",
        {"secretStoreRef": {"kind": "VaultStore", "name": "vault"}},
        [
            'spec.secretStoreRef.kind: Unsupported value: "VaultStore": supported values: "ClusterSecretStore", "SecretStore"'
        ],
    ),
    (
        "secretStoreRef",
        {"secretStoreRef": {"kind": "SecretStore"}},
        ["spec.secretStoreRef.name: Required value: store name must be set"],
    ),
    ("targetClusterRef", {"targetClusterRef": {"name": "edge-1"}}, []),
    (
        "targetClusterRef",
        {"targetClusterRef": {"name": ""}},
        ["spec.targetClusterRef.name: Required value: target cluster name must be set"],
    ),
    (
        "targetClusterRef",
        {"targetClusterRef": {}},
        ["spec.targetClusterRef.name: Required value: target cluster name must be set"],
    ),
    (
        "logging",
        {"logging": {"format": "xml"}},
        ['spec.logging.format: Unsupported value: "xml": supported values: "text", "json"'],
    ),
    (
        "logging",
        {"logging": {"level": "TRACE"}},
        [
            'spec.logging.level: Unsupported value: "TRACE": supported values: "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"'
        ],
    ),
    (
        "logging",
        {"logging": {"perLoggerLevels": {"": "INFO", "glance": "LOUD"}}},
        [
            'spec.logging.perLoggerLevels: Invalid value: "": logger name must not be empty',
            'spec.logging.perLoggerLevels[glance]: Invalid value: "LOUD": level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL',
        ],
    ),
    (
        "termination",
        {
            "deployment": {"terminationGracePeriodSeconds": 60, "preStopSleepSeconds": 10},
            "apiServer": {"uwsgi": {"harakiri": 49}},
        },
        [],
    ),
    (
        "termination",
        {"deployment": {"terminationGracePeriodSeconds": 5}},
        [
            "spec.deployment.terminationGracePeriodSeconds: Invalid value: 5: terminationGracePeriodSeconds must be at least 10",
            "spec.deployment.preStopSleepSeconds: Invalid value: 5: preStopSleepSeconds (5) must be strictly less than terminationGracePeriodSeconds (5)",
        ],
    ),
    (
        "termination",
        {"deployment": {"preStopSleepSeconds": -1}},
        [
            "spec.deployment.preStopSleepSeconds: Invalid value: -1: preStopSleepSeconds must be non-negative"
        ],
    ),
    (
        "termination",
        {"deployment": {"preStopSleepSeconds": 30}},
        [
            "spec.deployment.preStopSleepSeconds: Invalid value: 30: preStopSleepSeconds (30) must be strictly less than terminationGracePeriodSeconds (30)"
        ],
    ),
    (
        "termination",
        {"apiServer": {"uwsgi": {"harakiri": 25}}},
        [
            "spec.apiServer.uwsgi.harakiri: Invalid value: 25: harakiri (25) must be strictly less than terminationGracePeriodSeconds - preStopSleepSeconds (25), so a request uWSGI kills still ends before the pod is killed"
        ],
    ),
    ("strategy", {"deployment": {"strategy": {"type": "Recreate"}}}, []),
    (
        "strategy",
        {"deployment": {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}},
        [
            'spec.deployment.strategy.rollingUpdate: Invalid value: {"maxSurge":1}: rollingUpdate must not be set when strategy.type is Recreate'
        ],
    ),
    (
        "autoscaling",
        {"autoscaling": {"minReplicas": 2, "maxReplicas": 5, "targetCPUUtilization": 80}},
        [],
    ),
    (
        "autoscaling",
        {"autoscaling": {"minReplicas": 6, "maxReplicas": 5, "targetCPUUtilization": 80}},
        ["spec.autoscaling.minReplicas: Invalid value: 6: minReplicas must not exceed maxReplicas"],
    ),
    (
        "autoscaling",
        {"autoscaling": {"maxReplicas": 2, "targetMemoryUtilization": 80}},
        [
            "spec.autoscaling.maxReplicas: Invalid value: 2: maxReplicas must be >= spec.deployment.replicas (3) when minReplicas is not set, because minReplicas defaults to spec.deployment.replicas"
        ],
    ),
    (
        "autoscaling",
        {"autoscaling": {"maxReplicas": 0, "minReplicas": 0, "targetCPUUtilization": 101}},
        [
            "spec.autoscaling.maxReplicas: Invalid value: 0: maxReplicas must be at least 1",
            "spec.autoscaling.minReplicas: Invalid value: 0: minReplicas must be at least 1",
            "spec.autoscaling.targetCPUUtilization: Invalid value: 101: targetCPUUtilization must be between 1 and 100",
        ],
    ),
    (
        "autoscaling",
        {"autoscaling": {"maxReplicas": 5}},
        [
            "spec.autoscaling: Required value: at least one of targetCPUUtilization or targetMemoryUtilization must be set"
        ],
    ),
    ("networkPolicy", {"networkPolicy": {"ingress": [{"namespaceSelector": {}}]}}, []),
    (
        "networkPolicy",
        {"networkPolicy": {"ingress": []}},
        [
            "spec.networkPolicy.ingress: Required value: at least one ingress source must be specified"
        ],
    ),
    ("gateway", {"gateway": {"hostname": "glance.example.com", "parentRef": {"name": "gw"}}}, []),
    (
        "gateway",
        {"gateway": {"hostname": "", "parentRef": {"name": ""}}},
        [
            "spec.gateway.hostname: Required value: hostname must be set when spec.gateway is configured",
            "spec.gateway.parentRef.name: Required value: parentRef.name must be set when spec.gateway is configured",
        ],
    ),
    (
        "importFiltering",
        {"importFiltering": {"allowedHosts": ["mirror.example.com"], "disallowedHosts": []}},
        [],
    ),
    (
        "importFiltering",
        {"importFiltering": {"allowedHosts": ["a"], "disallowedHosts": ["b"]}},
        [
            'spec.importFiltering.disallowedHosts: Invalid value: ["b"]: allowedHosts and disallowedHosts are mutually exclusive: glance ignores the deny-list when the allow-list is non-empty'
        ],
    ),
    (
        "importFiltering",
        {
            "importFiltering": {
                "allowedSchemes": ["https"],
                "disallowedSchemes": ["http"],
                "allowedPorts": [443],
                "disallowedPorts": [80],
            }
        },
        [
            'spec.importFiltering.disallowedSchemes: Invalid value: ["http"]: allowedSchemes and disallowedSchemes are mutually exclusive: glance ignores the deny-list when the allow-list is non-empty',
            "spec.importFiltering.disallowedPorts: Invalid value: [80]: allowedPorts and disallowedPorts are mutually exclusive: glance ignores the deny-list when the allow-list is non-empty",
        ],
    ),
    (
        "importFiltering",
        {"importFiltering": {"allowedSchemes": ["ftp"], "allowedPorts": [0, 65536]}},
        [
            'spec.importFiltering.allowedSchemes[0]: Unsupported value: "ftp": supported values: "http", "https"',
            "spec.importFiltering.allowedPorts[0]: Invalid value: 0: port must be between 1 and 65535",
            "spec.importFiltering.allowedPorts[1]: Invalid value: 65536: port must be between 1 and 65535",
        ],
    ),
    (
        "importFiltering",
        {"importFiltering": {"disallowedHosts": ["", "a\nb", "h" * 254]}},
        [
            'spec.importFiltering.disallowedHosts[0]: Invalid value: "": host must not be empty',
            'spec.importFiltering.disallowedHosts[1]: Invalid value: "a\\nb": host must not contain newline or carriage-return characters: the rendered [import_filtering_opts] value is written verbatim, so a newline injects arbitrary config lines',
            f'spec.importFiltering.disallowedHosts[2]: Invalid value: "{"h" * 254}": host must be at most 253 characters',
        ],
    ),
    (
        "importFiltering",
        {"importFiltering": {"disallowedHosts": [f"h{i}" for i in range(65)]}},
        ["spec.importFiltering.disallowedHosts: Too many: 65: must have at most 64 items"],
    ),
    (
        "importMethods",
        {"importMethods": ["copy-image", "glance-download", "web-download", "glance-direct"]},
        [],
    ),
    ("importMethods", {"importMethods": ["glance-direct"]}, []),
    (
        "importMethods",
        {"importMethods": []},
        [
            "spec.importMethods: Invalid value: []: must name at least one import method; "
            "leave spec.importMethods unset for the default [web-download, copy-image]"
        ],
    ),
    (
        "importMethods",
        {"importMethods": ["glance-direct", "glance_direct", "glance-direct"]},
        [
            'spec.importMethods[1]: Unsupported value: "glance_direct": supported values: '
            '"glance-direct", "web-download", "copy-image", "glance-download"',
            'spec.importMethods[2]: Duplicate value: "glance-direct"',
        ],
    ),
    (
        "importPlugins",
        {
            "importPlugins": {
                "conversion": {"outputFormat": "qcow2"},
                "injectMetadata": {
                    "properties": {"hw_vif_model": "virtio", "note": "a:b"},
                    "ignoreUserRoles": [],
                },
            }
        },
        [],
    ),
    (
        "importPlugins",
        {"importPlugins": {"conversion": {"outputFormat": "vhd"}}},
        [
            'spec.importPlugins.conversion.outputFormat: Unsupported value: "vhd": supported values: "qcow2", "raw", "vmdk"'
        ],
    ),
    (
        "importPlugins",
        {"importPlugins": {"injectMetadata": {"properties": {}}}},
        [
            "spec.importPlugins.injectMetadata.properties: Required value: at least one property must be set: the inject_image_metadata plugin has nothing to inject otherwise"
        ],
    ),
    (
        "importPlugins",
        {"importPlugins": {"injectMetadata": {"properties": {f"k{i}": "v" for i in range(65)}}}},
        ["spec.importPlugins.injectMetadata.properties: Too many: 65: must have at most 64 items"],
    ),
    (
        "importPlugins",
        {
            "importPlugins": {
                "injectMetadata": {
                    "properties": {
                        "a:b": "v",
                        "c,d": "v",
                        " e": "v",
                        "f": "x,y",
                        "g": " v",
                        "h": "\n",
                    }
                }
            }
        },
        [
            'spec.importPlugins.injectMetadata.properties[ e]: Invalid value: " e": property name must not start or end with whitespace: the oslo parser strips it, so the injected property name would differ from the one stored here',
            'spec.importPlugins.injectMetadata.properties[a:b]: Invalid value: "a:b": property name must not contain a colon: the oslo Dict syntax splits each pair on the first colon, so the name would be silently truncated there and its remainder injected as part of the value',
            'spec.importPlugins.injectMetadata.properties[c,d]: Invalid value: "c,d": property name must not contain a comma: the oslo Dict syntax separates pairs on commas, so the name would be split into a property of its own',
            'spec.importPlugins.injectMetadata.properties[f]: Invalid value: "x,y": property value must not contain a comma: the oslo Dict syntax separates pairs on commas, so the value would be cut short and its remainder read as another property',
            'spec.importPlugins.injectMetadata.properties[g]: Invalid value: " v": property value must not start or end with whitespace: the oslo parser strips it, so the injected value would differ from the one stored here',
            'spec.importPlugins.injectMetadata.properties[h]: Invalid value: "\\n": property value must not contain newline or carriage-return characters: the rendered [inject_metadata_properties] inject value is written verbatim, so a newline injects arbitrary config lines',
        ],
    ),
    (
        "importPlugins",
        {"importPlugins": {"injectMetadata": {"properties": {LONG: "v"}}}},
        [
            f'spec.importPlugins.injectMetadata.properties[{LONG_ECHO}]: Invalid value: "{LONG_ECHO}": property name must be at most 255 characters'
        ],
    ),
    (
        "importPlugins",
        {
            "importPlugins": {
                "injectMetadata": {"properties": {"a": "v"}, "ignoreUserRoles": ["", "a,b"]}
            }
        },
        [
            'spec.importPlugins.injectMetadata.ignoreUserRoles[0]: Invalid value: "": role must not be empty',
            'spec.importPlugins.injectMetadata.ignoreUserRoles[1]: Invalid value: "a,b": role must not contain a comma: the rendered ignore_user_roles list separates roles on commas, so the entry would be read as two roles',
        ],
    ),
    (
        "decompression",
        {"importPlugins": {"decompression": {}}, "staging": {"sizeLimit": "20Gi"}},
        [],
    ),
    ("decompression", {"importPlugins": {"decompression": {}}, "staging": {"unbounded": True}}, []),
    (
        "decompression",
        {"importPlugins": {"decompression": {}}},
        [
            "spec.staging.sizeLimit: Required value: must be set explicitly while importPlugins.decompression is enabled: the plugin expands the staged image by a ratio the caller picks and nothing caps the result, and breaching this bound evicts the glance-api pod together with every other in-flight import on that replica, so the 10Gi default cannot be assumed to fit the largest UNPACKED image (set staging.unbounded to deliberately keep no bound instead)"
        ],
    ),
    ("dbPurge", {"dbPurge": {"retentionDays": 7, "schedule": "@daily"}}, []),
    (
        "dbPurge",
        {"dbPurge": {"retentionDays": 0}},
        ["spec.dbPurge.retentionDays: Invalid value: 0: retentionDays must be at least 1"],
    ),
    (
        "dbPurge",
        {"dbPurge": {"schedule": "* * * *"}},
        [
            'spec.dbPurge.schedule: Invalid value: "* * * *": invalid cron expression: expected exactly 5 fields, found 4: [* * * *]'
        ],
    ),
    ("staging", {"staging": {"sizeLimit": "1Mi"}}, []),
    ("imageCache", {"imageCache": {"sizeLimit": "1Mi", "maintenanceInterval": "1m"}}, []),
    (
        "staging",
        {"staging": {"unbounded": True, "sizeLimit": "1Gi"}},
        [
            "spec.staging.unbounded: Invalid value: true: unbounded and sizeLimit are mutually exclusive: an unbounded staging area has no size limit to configure"
        ],
    ),
    (
        "staging",
        {"staging": {"sizeLimit": "0"}},
        ['spec.staging.sizeLimit: Invalid value: "0": must be at least 1Mi'],
    ),
    (
        "imageCache",
        {"imageCache": {"sizeLimit": "1023Ki"}},
        ['spec.imageCache.sizeLimit: Invalid value: "1023Ki": must be at least 1Mi'],
    ),
    (
        "imageCache",
        {"imageCache": {"maintenanceInterval": "59s"}},
        ['spec.imageCache.maintenanceInterval: Invalid value: "59s": must be at least 1m0s'],
    ),
    (
        "imageCache",
        {"imageCache": {"maintenanceInterval": "5 minutes"}},
        [
            'spec.imageCache.maintenanceInterval: Invalid value: "5 minutes": time: unknown unit " minutes" in duration "5 minutes"'
        ],
    ),
    (
        "middleware",
        {"middleware": [{"name": "cache", "filterFactory": "x:y", "position": "after"}]},
        [],
    ),
    (
        "middleware",
        {
            "imageCache": {},
            "middleware": [
                {"name": "audit", "filterFactory": "x:y"},
                {"name": "cache", "filterFactory": "x:y"},
            ],
        },
        [
            'spec.middleware[1].name: Invalid value: "cache": the operator injects the "cache" paste filter and owns that filter name while spec.imageCache is set: rename this middleware or unset spec.imageCache'
        ],
    ),
    ("extraConfig shape", {"extraConfig": {"DEFAULT": {"image_size_cap": "1099511627776"}}}, []),
    (
        "extraConfig shape",
        {"extraConfig": {"": {"a": "b"}}},
        ['spec.extraConfig: Invalid value: "": extraConfig section name must not be empty'],
    ),
    (
        "extraConfig shape",
        {"extraConfig": {"DEF\nAULT": {}}},
        [
            'spec.extraConfig: Invalid value: "DEF\\nAULT": extraConfig section name must not contain a newline or carriage return'
        ],
    ),
    (
        "extraConfig shape",
        {"extraConfig": {"DEFAULT": {"": "x"}}},
        ['spec.extraConfig[DEFAULT]: Invalid value: "": extraConfig key must not be empty'],
    ),
    (
        "extraConfig shape",
        {"extraConfig": {"DEFAULT": {"image_size_cap": "1\n2"}}},
        [
            'spec.extraConfig[DEFAULT][image_size_cap]: Invalid value: "image_size_cap": extraConfig key and value must not contain a newline or carriage return: the rendered INI writes them verbatim, so a newline injects arbitrary config lines'
        ],
    ),
    ("extraConfig owned", {"extraConfig": {"DEFAULT": {"debug": "true"}}}, []),
    (
        "extraConfig owned",
        {"extraConfig": {"keystone_authtoken": {"password": "hunter2"}}},
        [
            "spec.extraConfig[keystone_authtoken][password]: Forbidden: password is managed via spec.serviceUser.secretRef and must not be set in extraConfig (the middleware password is env-injected via OS_KEYSTONE_AUTHTOKEN__PASSWORD; a file override is ignored at runtime and leaks credential material into a namespace-readable ConfigMap)"
        ],
    ),
    (
        "extraConfig owned",
        {"extraConfig": {"Keystone_Authtoken": {"password": "hunter2"}}},
        [
            "spec.extraConfig[Keystone_Authtoken][password]: Forbidden: password is managed via spec.serviceUser.secretRef and must not be set in extraConfig (the middleware password is env-injected via OS_KEYSTONE_AUTHTOKEN__PASSWORD; a file override is ignored at runtime and leaks credential material into a namespace-readable ConfigMap)"
        ],
    ),
    (
        "extraConfig owned",
        {"extraConfig": {"import_filtering_opts": {"disallowed-hosts": "[]"}}},
        [
            "spec.extraConfig[import_filtering_opts][disallowed-hosts]: Forbidden: disallowed_hosts is managed via spec.importFiltering and must not be set in extraConfig (the web-download URI filter is platform security policy; setting it through extraConfig bypasses the exclusivity rules, the host INI guard, and the admission warning that flags a loosened filter)"
        ],
    ),
    (
        "logging",
        {"logging": {"perLoggerLevels": {"glance\napi": "INFO"}}},
        [
            'spec.logging.perLoggerLevels[glance\napi]: Invalid value: "glance\\napi": logger name must not contain newline or carriage-return characters: the rendered [DEFAULT] default_log_levels value is written verbatim, so a newline injects arbitrary config lines'
        ],
    ),
    (
        "extraConfig owned",
        {"extraConfig": {"import_filtering_opts": {"disallowed_hosts": "[]"}}},
        [
            "spec.extraConfig[import_filtering_opts][disallowed_hosts]: Forbidden: disallowed_hosts is managed via spec.importFiltering and must not be set in extraConfig (the web-download URI filter is platform security policy; setting it through extraConfig bypasses the exclusivity rules, the host INI guard, and the admission warning that flags a loosened filter)"
        ],
    ),
    (
        "extraConfig owned",
        {"extraConfig": {"image_import_opts": {"image_import_plugins": "[]"}}},
        [
            "spec.extraConfig[image_import_opts][image_import_plugins]: Forbidden: image_import_plugins is managed via spec.importPlugins and must not be set in extraConfig (the image-import plugin pipeline is expressed by spec.importPlugins; setting it through extraConfig bypasses the fixed decompression-before-conversion order, the output-format enum, and the property-name rules that keep an injected pair inside the oslo Dict syntax)"
        ],
    ),
    (
        "extraConfig owned",
        {"extraConfig": {"DEFAULT": {"image_cache_max_size": "1"}}},
        [
            "spec.extraConfig[DEFAULT][image_cache_max_size]: Forbidden: image_cache_max_size is managed via spec.imageCache and must not be set in extraConfig (the operator derives it as 80% of the emptyDir bound, which is what leaves the pruner a target it can reach; a value at or above that bound leaves nothing to prune down to and the volume grows until the kubelet evicts the pod)"
        ],
    ),
    (
        "resources",
        {
            "deployment": {
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                    "limits": {"cpu": "0.5", "memory": "1024Mi"},
                }
            }
        },
        [],
    ),
    (
        "resources",
        {
            "deployment": {
                "resources": {
                    "requests": {"cpu": "2", "memory": "2Gi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                }
            }
        },
        [
            'spec.deployment.resources.requests.cpu: Invalid value: "2": cpu request must not exceed limit (1)',
            'spec.deployment.resources.requests.memory: Invalid value: "2Gi": memory request must not exceed limit (1Gi)',
        ],
    ),
    ("topologySpread", {"deployment": {"topologySpreadConstraints": []}}, []),
    (
        "topologySpread",
        {
            "deployment": {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {
                            "matchLabels": {
                                "app.kubernetes.io/name": "glance",
                                "app.kubernetes.io/instance": "glance",
                            }
                        },
                    }
                ]
            }
        },
        [],
    ),
    (
        "topologySpread",
        {
            "deployment": {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {
                            "matchLabels": {"app.kubernetes.io/name": "glance"},
                            "matchExpressions": [{"key": "a", "operator": "Exists"}],
                        },
                    },
                ]
            }
        },
        [
            "spec.deployment.topologySpreadConstraints[0].labelSelector: Required value: labelSelector is required on each TopologySpreadConstraint",
            'spec.deployment.topologySpreadConstraints[1].labelSelector: Invalid value: {"app.kubernetes.io/name":"glance"}: labelSelector.matchLabels must equal the Deployment selector labels map[app.kubernetes.io/instance:glance app.kubernetes.io/name:glance]',
            'spec.deployment.topologySpreadConstraints[1].labelSelector.matchExpressions: Invalid value: [{"key":"a","operator":"Exists"}]: matchExpressions are not allowed; labelSelector must use matchLabels only',
        ],
    ),
]


@pytest.mark.parametrize(
    ("rule", "spec_patch", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_rule(rule, spec_patch, expected):
    assert errors_of(spec_patch) == expected


def test_every_rule_has_an_accepted_and_a_rejected_case():
    accepted = {rule for rule, _, expected in CASES if not expected}
    rejected = {rule for rule, _, expected in CASES if expected}
    assert accepted == rejected


def test_errors_are_collected_across_rules():
    errors = errors_of(
        {"deployment": {"replicas": -1}, "image": {"tag": DELETE}, "dbPurge": {"retentionDays": 0}}
    )
    assert len(errors) == 3


# --- lookups the webhook makes ----------------------------------------------------------


def test_priority_class_must_exist_when_the_cluster_can_be_asked():
    spec = {"deployment": {"priorityClassName": "glance-critical"}}
    assert errors_of(spec) == []  # offline: no client, the rule is skipped
    known = AdmissionContext(priority_class_exists=lambda name: name == "glance-critical")
    assert errors_of(spec, ctx=known) == []
    unknown = AdmissionContext(priority_class_exists=lambda name: False)
    assert errors_of(spec, ctx=unknown) == [
        'spec.deployment.priorityClassName: Not found: "glance-critical"'
    ]


# --- create-only and update-conditional rules --------------------------------------------


def test_name_longer_than_43_is_refused_on_create_only():
    name = "g" * 44
    assert errors_of({}, meta={"name": "g" * 43}) == []
    assert errors_of({}, meta={"name": name}) == [
        f'metadata.name: Invalid value: "{name}": name must be at most 43 characters: the '
        'db-purge CronJob appends "-db-purge" and Kubernetes caps CronJob names at 52 characters'
    ]
    old = patched(GLANCE, {"metadata": {"name": name}})
    update = AdmissionContext(operation="UPDATE", old=old)
    assert errors_of({}, meta={"name": name}, ctx=update) == []


TARGET = {"targetClusterRef": {"name": "edge-1"}}
ADDED_OR_REMOVED = (
    "targetClusterRef is immutable (adding or removing it after creation is not permitted)"
)
RENAMED = (
    "targetClusterRef is immutable (the children already exist on the previously named cluster)"
)


@pytest.mark.parametrize(
    ("stored", "spec_patch", "expected"),
    [
        pytest.param({}, {"deployment": {"replicas": 5}}, [], id="none-kept"),
        pytest.param(TARGET, dict(TARGET, deployment={"replicas": 5}), [], id="kept"),
        pytest.param(
            {},
            TARGET,
            [f'spec.targetClusterRef: Invalid value: "object": {ADDED_OR_REMOVED}'],
            id="added",
        ),
        pytest.param(
            TARGET,
            {},
            [f'spec.targetClusterRef: Invalid value: "null": {ADDED_OR_REMOVED}'],
            id="removed",
        ),
        pytest.param(
            TARGET,
            {"targetClusterRef": {"name": "edge-2"}},
            [f'spec.targetClusterRef.name: Invalid value: "edge-2": {RENAMED}'],
            id="renamed",
        ),
    ],
)
def test_target_cluster_ref_is_immutable_on_update_only(stored, spec_patch, expected):
    update = AdmissionContext(operation="UPDATE", old=patched(GLANCE, {"spec": stored}))
    assert errors_of(spec_patch, ctx=update) == expected
    assert errors_of(spec_patch) == []  # a create has nothing to keep


def test_an_update_that_keeps_the_target_cluster_ref_is_admitted_by_the_whole_judge():
    stored = patched(GLANCE, {"spec": TARGET})
    changed = patched(stored, {"spec": {"deployment": {"replicas": 5}, "region": "RegionTwo"}})
    verdict = full_judge(
        load_crds()["Glance"], changed, AdmissionContext(operation="UPDATE", old=stored)
    )
    assert verdict.allowed and verdict.stage == "webhook", verdict.messages()
    assert verdict.object["spec"]["targetClusterRef"] == {"name": "edge-1"}


def test_on_a_cluster_the_crd_refuses_a_moved_target_before_the_webhook_sees_it():
    stored = patched(GLANCE, {"spec": TARGET})
    moved = patched(GLANCE, {"spec": {"targetClusterRef": {"name": "edge-2"}}})
    verdict = full_judge(
        load_crds()["Glance"], moved, AdmissionContext(operation="UPDATE", old=stored)
    )
    assert verdict.stage == "schema"
    assert verdict.messages() == ['spec: Invalid value: "object": targetClusterRef is immutable']


CATALOG = {
    "release": "2026.2",
    "sections": {
        "DEFAULT": {
            "image_size_cap": {"type": "integer"},
            "show_multiple_locations": {
                "type": "boolean",
                "deprecated_for_removal": True,
                "deprecated_reason": "Use the locations API.",
            },
        },
        "taskflow_executor": {"conversion_format": {"type": "string"}},
        "task": {
            "work_dir": {
                "deprecated_alias_of": {
                    "section": "os_glance_tasks_store",
                    "option": "filesystem_store_datadir",
                }
            }
        },
    },
}
CATALOGS = AdmissionContext(catalogs={"2026.2": CATALOG})


def test_catalog_accepts_known_options_and_exempts_plugins_reserved_stores_and_owned_keys():
    spec = {
        "extraConfig": {
            "DEFAULT": {"image_size_cap": "10", "debug": "true"},
            "my_plugin": {"anything": "1"},
            "os_glance_staging_store": {"x": "1"},
        },
        "plugins": [{"name": "p", "configSection": "my_plugin", "config": {}}],
    }
    assert judge(spec, ctx=CATALOGS) == ([], [])


def test_catalog_refuses_an_unknown_section_and_an_unknown_option():
    errors, _ = judge(
        {"extraConfig": {"bogus": {"a": "1"}, "DEFAULT": {"image_size_kap": "1"}}}, ctx=CATALOGS
    )
    assert [str(e) for e in errors] == [
        'spec.extraConfig[DEFAULT][image_size_kap]: Invalid value: "image_size_kap": no such option in the glance 2026.2 option catalog',
        'spec.extraConfig[bogus][a]: Invalid value: "a": no such section in the glance 2026.2 option catalog (sections registered by a loaded plugin must be declared via spec.plugins)',
    ]


def test_catalog_warns_on_deprecated_options_naming_the_replacement():
    errors, warnings = judge(
        {
            "extraConfig": {
                "DEFAULT": {"show_multiple_locations": "true"},
                "task": {"work_dir": "/x"},
            }
        },
        ctx=CATALOGS,
    )
    assert errors == []
    assert warnings == [
        "spec.extraConfig [DEFAULT] show_multiple_locations: deprecated option in glance 2026.2 with no replacement: Use the locations API.",
        "spec.extraConfig [task] work_dir: deprecated option in glance 2026.2, replaced by [os_glance_tasks_store] filesystem_store_datadir",
    ]


def test_catalog_fails_open_with_one_warning_when_no_catalog_matches():
    spec = {"openStackRelease": "2027.1", "extraConfig": {"bogus": {"a": "1"}}}
    assert judge(spec, ctx=CATALOGS) == (
        [],
        [
            "spec.extraConfig was not validated against an option catalog: no catalog for "
            'release "2027.1" is embedded in this operator build'
        ],
    )


def test_catalog_check_runs_on_update_only_when_its_inputs_change():
    spec = {"extraConfig": {"bogus": {"a": "1"}}}
    old = patched(GLANCE, {"spec": spec})
    unchanged = AdmissionContext(operation="UPDATE", old=old, catalogs=CATALOGS.catalogs)
    assert judge(spec, ctx=unchanged) == ([], [])
    changed = patched(spec, {"openStackRelease": "2026.2", "extraConfig": {"bogus": {"b": "2"}}})
    # One error per option of the unknown section, as the reference reports them.
    assert len(judge(changed, ctx=unchanged)[0]) == 2


# --- warnings -------------------------------------------------------------------------------


def test_inert_deny_list_and_widened_allow_list_earn_warnings():
    _, warnings = judge(
        {"importFiltering": {"disallowedSchemes": ["http"], "allowedPorts": [443, 8443]}}
    )
    assert warnings == [
        "spec.importFiltering.disallowedSchemes is set while spec.importFiltering.allowedSchemes "
        "is unset and therefore resolves to the operator default [https]. Glance evaluates a "
        "deny-list only while the matching allow-list is empty, so this list is inert; set "
        "spec.importFiltering.allowedSchemes to an explicitly empty list ([]) to make the "
        "deny-list authoritative.",
        "spec.importFiltering.allowedPorts is set to [443 8443], widening the operator default "
        "[443]. The scheme and port pin is the primary web-download control — the link-local "
        "metadata endpoint answers on http/80 — and once widened only the host denylist "
        "remains, which matches literally: alternate spellings of the same address (an integer "
        "or IPv4-mapped form, a raw ClusterIP, a trailing-dot FQDN) are not covered. Confine "
        "the reachable endpoints with spec.networkPolicy.additionalEgress, or pin allowedHosts "
        "to the mirrors imports are supposed to use.",
    ]
    assert judge({"importFiltering": {"allowedSchemes": ["https"], "allowedPorts": [443]}})[1] == []


def test_a_widened_allow_list_with_pinned_hosts_earns_no_warning():
    pinned = {
        "allowedSchemes": ["http", "https"],
        "allowedPorts": [80, 443],
        "allowedHosts": ["mirror.example.com"],
    }
    assert judge({"importFiltering": pinned})[1] == []
    assert len(judge({"importFiltering": dict(pinned, allowedHosts=[])})[1]) == 2


def test_an_import_ca_bundle_without_a_download_method_earns_a_warning():
    ca = {"importCABundleSecretRef": {"name": "mirror-ca"}}
    assert judge(ca)[1] == []  # importMethods unset: web-download is on
    assert judge(dict(ca, importMethods=["glance-download"]))[1] == []
    assert judge(dict(ca, importMethods=["glance-direct", "copy-image"]))[1] == [
        "spec.importCABundleSecretRef has no effect: spec.importMethods enables neither "
        "web-download nor glance-download, the import methods that fetch over HTTPS"
    ]
    assert judge({"importMethods": ["copy-image"]})[1] == []


def test_lowering_retention_warns_on_update_only():
    old = patched(GLANCE, {"spec": {"dbPurge": {"retentionDays": 30}}})
    ctx = AdmissionContext(operation="UPDATE", old=old)
    assert judge({"dbPurge": {"retentionDays": 7}}, ctx=ctx)[1] == [
        "spec.dbPurge.retentionDays reduced 30 → 7: the next purge run hard-deletes the rows "
        "soft-deleted between 7 and 30 days ago, which cannot be undone"
    ]
    assert judge({"dbPurge": {"retentionDays": 7}})[1] == []
    assert judge({"dbPurge": {"retentionDays": 60}}, ctx=ctx)[1] == []
    nil_block = AdmissionContext(operation="UPDATE", old=GLANCE)
    assert len(judge({"dbPurge": {"retentionDays": 29}}, ctx=nil_block)[1]) == 1


# --- spec.importMethods through the whole judge: the CRD decides first ---------------------


@pytest.mark.parametrize(
    ("methods", "expected"),
    [
        pytest.param(["glance-direct", "web-download", "copy-image"], [], id="opt-in"),
        pytest.param(
            [],
            [
                "spec.importMethods: Invalid value: 0: spec.importMethods in body should have at least 1 items"
            ],
            id="empty",
        ),
        pytest.param(
            ["glance-direct", "glance-direct"],
            ['spec.importMethods[1]: Duplicate value: "glance-direct"'],
            id="duplicate",
        ),
        pytest.param(
            ["file-upload"],
            [
                'spec.importMethods[0]: Unsupported value: "file-upload": supported values: '
                '"glance-direct", "web-download", "copy-image", "glance-download"'
            ],
            id="unknown",
        ),
    ],
)
def test_the_crd_judges_import_methods_with_the_field_named(methods, expected):
    verdict = full_judge(
        load_crds()["Glance"], patched(GLANCE, {"spec": {"importMethods": methods}})
    )
    # An enum error also skips the CEL rules, with the API server's "<nil>: ..." line.
    assert [m for m in verdict.messages() if not m.startswith("<nil>")] == expected
    assert verdict.allowed == (not expected)
    if not expected:
        assert verdict.object["spec"]["importMethods"] == methods


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        pytest.param({"name": "mirror-ca"}, [], id="named"),
        pytest.param(
            {"name": "Mirror_CA"},
            [
                'spec.importCABundleSecretRef.name: Invalid value: "Mirror_CA": '
                "spec.importCABundleSecretRef.name in body should match "
                "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'"
            ],
            id="not-a-dns-subdomain",
        ),
        pytest.param({}, ["spec.importCABundleSecretRef.name: Required value"], id="unnamed"),
    ],
)
def test_the_crd_judges_the_import_ca_bundle_reference_with_the_field_named(ref, expected):
    verdict = full_judge(
        load_crds()["Glance"], patched(GLANCE, {"spec": {"importCABundleSecretRef": ref}})
    )
    assert [m for m in verdict.messages() if not m.startswith("<nil>")] == expected
    assert verdict.allowed == (not expected)
