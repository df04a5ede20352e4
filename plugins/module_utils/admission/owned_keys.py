# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The glance-api.conf keys the operator owns, who owns them and what overriding them does.

``spec.extraConfig`` wins over everything the operator renders, so a user can set any key.
Most owned keys are *reported*: the override is honoured and surfaced in the
``ExtraConfigHealthy`` condition. A few are *rejected* by admission, because an override
would silently defeat a typed field (a password in a ConfigMap, an import filter that the
typed ``spec.importFiltering`` claims to enforce, a cache the sidecar does not manage).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OwnedKey:
    section: str
    key: str
    owner: str
    impact: str
    rejected: bool = False


def _keys(section: str, keys: tuple[str, ...], owner: str, impact: str, rejected: bool = False):
    return [OwnedKey(section, k, owner, impact, rejected) for k in keys]


# The impacts of the rejected keys are the reference's (config_ownership.go), word for word:
# they are the tail of the admission message.
IMPORT_FILTERING_IMPACT = (
    "the web-download URI filter is platform security policy; setting it through extraConfig "
    "bypasses the exclusivity rules, the host INI guard, and the admission warning that flags "
    "a loosened filter"
)
IMPORT_PLUGINS_IMPACT = (
    "the image-import plugin pipeline is expressed by spec.importPlugins; setting it through "
    "extraConfig bypasses the fixed decompression-before-conversion order, the output-format "
    "enum, and the property-name rules that keep an injected pair inside the oslo Dict syntax"
)


_FILTER_KEYS = (
    "allowed_schemes",
    "disallowed_schemes",
    "allowed_hosts",
    "disallowed_hosts",
    "allowed_ports",
    "disallowed_ports",
)

OWNED_KEYS: tuple[OwnedKey, ...] = tuple(
    [
        OwnedKey(
            "DEFAULT",
            "enabled_backends",
            "GlanceBackend resources",
            "must agree with the projected backends Secret",
        ),
        OwnedKey(
            "DEFAULT",
            "enabled_import_methods",
            "spec.importMethods",
            "overrides spec.importMethods; set spec.importMethods instead, which opts in to "
            "glance-direct and glance-download across replicas: each pod has its own "
            "worker_self_reference_url, so glance forwards an import or delete of a staged "
            "image to the pod that holds the data",
        ),
        OwnedKey(
            "DEFAULT",
            "worker_self_reference_url",
            "the operator",
            "the env override OS_DEFAULT__WORKER_SELF_REFERENCE_URL, each pod's own address, wins",
        ),
        OwnedKey("DEFAULT", "use_stderr", "the operator", "pod logs are read from stderr"),
        OwnedKey("DEFAULT", "debug", "spec.logging.debug", "overrides spec.logging.debug"),
        OwnedKey(
            "DEFAULT", "workers", "the operator", "uWSGI processes are set by spec.apiServer.uwsgi"
        ),
        OwnedKey(
            "DEFAULT",
            "default_log_levels",
            "spec.logging.perLoggerLevels",
            "overrides spec.logging.perLoggerLevels",
        ),
        OwnedKey(
            "DEFAULT",
            "log_config_append",
            "spec.logging.format",
            "overrides the json logging configuration",
        ),
        OwnedKey(
            "DEFAULT",
            "image_cache_dir",
            "spec.imageCache",
            "the operator mounts the bounded cache emptyDir at this path; another path is "
            "another volume's bound, so the cache is filled out of the staging or tasks-work "
            "budget and evicts the pod mid-import",
            rejected=True,
        ),
        OwnedKey(
            "DEFAULT",
            "image_cache_driver",
            "spec.imageCache",
            "only sqlite keeps the cache state inside the pod-local volume; centralized_db "
            "strands a dead pod's rows in the shared Glance database on every replacement and "
            "no db-purge pass reclaims them",
            rejected=True,
        ),
        OwnedKey(
            "DEFAULT",
            "image_cache_max_size",
            "spec.imageCache",
            "the operator derives it as 80% of the emptyDir bound, which is what leaves the "
            "pruner a target it can reach; a value at or above that bound leaves nothing to "
            "prune down to and the volume grows until the kubelet evicts the pod",
            rejected=True,
        ),
        *_keys(
            "database",
            ("max_retries", "connection_recycle_time"),
            "the operator",
            "tuned for a database that restarts under the API",
        ),
        OwnedKey(
            "database",
            "connection",
            "spec.database",
            "the runtime value comes from the OS_DATABASE__CONNECTION env override, so the file "
            "override is ignored",
        ),
        *_keys(
            "keystone_authtoken",
            ("auth_type", "auth_url", "www_authenticate_uri"),
            "spec.keystoneEndpoint",
            "token validation and the 401 challenge follow spec.keystoneEndpoint",
        ),
        *_keys(
            "keystone_authtoken",
            ("username", "project_name", "project_domain_name", "user_domain_name"),
            "spec.serviceUser",
            "the service user must match the credentials in spec.serviceUser.secretRef",
        ),
        OwnedKey("keystone_authtoken", "region_name", "spec.region", "overrides spec.region"),
        OwnedKey("keystone_authtoken", "memcached_servers", "spec.cache", "overrides spec.cache"),
        OwnedKey(
            "keystone_authtoken",
            "password",
            "spec.serviceUser.secretRef",
            "the middleware password is env-injected via OS_KEYSTONE_AUTHTOKEN__PASSWORD; a file "
            "override is ignored at runtime and leaks credential material into a "
            "namespace-readable ConfigMap",
            rejected=True,
        ),
        OwnedKey(
            "glance_store",
            "default_backend",
            "the isDefault GlanceBackend",
            "must name the backend marked isDefault",
        ),
        *[
            OwnedKey(
                store,
                "filesystem_store_datadir",
                "the operator",
                "must be the mounted staging volume",
            )
            for store in ("os_glance_staging_store", "os_glance_tasks_store")
        ],
        *_keys(
            "paste_deploy",
            ("flavor", "config_file"),
            "the operator",
            "the paste pipeline carries the healthcheck the probes use",
        ),
        OwnedKey(
            "oslo_policy", "policy_file", "spec.policyOverrides", "overrides spec.policyOverrides"
        ),
        OwnedKey(
            "wsgi",
            "python_interpreter",
            "the operator",
            "under uWSGI the conversion plugin runs qemu-img through the image's Python",
        ),
        *_keys(
            "import_filtering_opts",
            _FILTER_KEYS,
            "spec.importFiltering",
            IMPORT_FILTERING_IMPACT,
            rejected=True,
        ),
        OwnedKey(
            "image_import_opts",
            "image_import_plugins",
            "spec.importPlugins",
            IMPORT_PLUGINS_IMPACT,
            rejected=True,
        ),
        OwnedKey(
            "image_conversion",
            "output_format",
            "spec.importPlugins",
            IMPORT_PLUGINS_IMPACT,
            rejected=True,
        ),
        *_keys(
            "inject_metadata_properties",
            ("inject", "ignore_user_roles"),
            "spec.importPlugins",
            IMPORT_PLUGINS_IMPACT,
            rejected=True,
        ),
    ]
)

_BY_NAME = {(k.section, k.key): k for k in OWNED_KEYS}


def normalize_section(section: str) -> str:
    """oslo.config matches group names case-insensitively, except ``DEFAULT``."""
    return section if section == "DEFAULT" else section.lower()


def normalize_option(option: str) -> str:
    """oslo.config accepts ``-`` for ``_`` in option names."""
    return option.replace("-", "_")


def owned_key(section: str, key: str) -> OwnedKey | None:
    """The registry entry of ``[section] key`` as oslo.config reads those names, or None."""
    return _BY_NAME.get((normalize_section(section), normalize_option(key)))


def rejected_override_message(entry: OwnedKey) -> str:
    """The admission message for a rejected owned key."""
    return (
        f"{entry.key} is managed via {entry.owner} and must not be set in extraConfig "
        f"({entry.impact})"
    )
