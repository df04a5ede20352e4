# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Glance configuration files, rendered from a stored Glance: pure and deterministic.

Input is always the *stored* Glance (``admission.judge(...).object``: schema and webhook
defaults applied). Nothing here reads a clock, a file or the cluster; the same input gives
the same bytes, whatever the order of the mappings it came in. Sections and keys are
sorted, ``DEFAULT`` first, one ``key = value`` line per option, a blank line between
sections and a trailing newline (reference-spec §3).

The ConfigMap (:func:`config_files`) holds ``glance-api.conf``, ``glance-api-paste.ini``,
``logging.conf`` and, when ``spec.policyOverrides`` yields rules, ``policy.yaml``. It is
mounted at :data:`CONFIG_DIR`; the paste, policy and logging files are referenced by
their path under it.

``glance-api.conf`` merge order, lowest first: ``spec.plugins`` sections, the operator's
keys, ``spec.extraConfig``, and (when ``policy.yaml`` is rendered) the forced
``[oslo_policy] policy_file``. oslo.config matches group names case-insensitively (except
``DEFAULT``) and accepts ``-`` for ``_`` in option names, so the merge is done on those
normalized names and the normalized names are rendered: an extraConfig
``[Keystone_Authtoken] auth-url`` really overrides ``[keystone_authtoken] auth_url``
instead of landing in a second section whose fate depends on the parser. Colliding
spellings are applied in sorted order (the last one wins), so the result does not depend
on the order of the input.

There is no ``[DEFAULT] workers``: the API runs under uWSGI on every release
(DECISIONS.md) and glance 33 no longer has the option.

Logging (DECISIONS.md: ``logging.level`` takes effect in text format too)
--------------------------------------------------------------------------
oslo.log configures Python logging in one of two ways. Without ``log_config_append`` it
builds the handlers itself: the root level is DEBUG when ``debug`` is true and INFO
otherwise (there is no option for any other root level), then each
``default_log_levels`` entry sets one logger. With ``log_config_append`` it calls
``logging.config.fileConfig(path, disable_existing_loggers=False)`` instead and ignores
``debug``, ``default_log_levels``, ``use_stderr`` and ``log_date_format``. The only way
to give the root logger a level such as WARNING is therefore a logging configuration
file. So, in both formats:

* ``[DEFAULT] log_config_append`` always points at ``logging.conf`` (the reference set
  it for json only);
* ``logging.conf`` is always rendered: root logger at ``spec.logging.level``, or DEBUG when
  ``spec.logging.debug`` is true (what ``debug`` means in oslo.log); one stderr
  ``StreamHandler``; formatter ``oslo_log.formatters.JSONFormatter`` for json and
  ``oslo_log.formatters.ContextFormatter`` for text (the formatter oslo.log itself uses
  for text: it reads ``logging_context_format_string`` and friends from glance's own
  configuration, so text lines look exactly as without a logging file), both with
  ``datefmt`` = oslo.log's ``log_date_format`` default ``%Y-%m-%d %H:%M:%S``;
* one ``[logger_<key>]`` per logger level: oslo.log's stock ``default_log_levels``
  (:data:`OSLO_DEFAULT_LOG_LEVELS`, WARN spelled WARNING; without it switching to a
  logging file would un-mute keystonemiddleware, stevedore, urllib3 and friends),
  overlaid by ``spec.logging.perLoggerLevels`` (a user entry wins; a logger named
  ``root`` sets the root level, as ``logging.getLogger("root")`` does). ``<key>`` is the
  logger name with every character outside ``[A-Za-z0-9_]`` replaced by ``_`` (a numeric
  suffix keeps keys unique); ``qualname`` holds the real name.
* ``[DEFAULT] debug`` and ``default_log_levels`` are still rendered as §3.1 says (inert
  under ``log_config_append``, but what a reader of glance-api.conf expects).
* An extraConfig override of ``[DEFAULT] debug``, ``default_log_levels`` or
  ``log_date_format`` is applied to ``logging.conf`` the way oslo.log would have applied
  it (``default_log_levels`` replaces the whole list, as the option does), so the
  override reported in ExtraConfigHealthy really takes effect.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import ceil
from typing import Any

import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    IMPORT_METHODS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.option_catalog import (
    normalize_option,
    normalize_section,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.owned_keys import (
    OwnedKey,
    owned_key,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as cond
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import parse_quantity

# --- paths and file names ------------------------------------------------------------------
CONFIG_DIR = "/etc/glance/glance-api.conf.d/"
BACKENDS_DIR = "/etc/glance/backends.conf.d/"
GLANCE_API_CONF = "glance-api.conf"
PASTE_INI = "glance-api-paste.ini"
LOGGING_CONF = "logging.conf"
POLICY_YAML = "policy.yaml"
PASTE_PATH = CONFIG_DIR + PASTE_INI
LOGGING_PATH = CONFIG_DIR + LOGGING_CONF
POLICY_PATH = CONFIG_DIR + POLICY_YAML
STAGING_DIR = "/var/lib/glance/staging"
TASKS_WORK_DIR = "/var/lib/glance/tasks-work"
IMAGE_CACHE_DIR = "/var/lib/glance/image-cache"
#: The Python of the image's environment (images/glance). Under uWSGI ``sys.executable`` is
#: not that interpreter, so the image_conversion plugin, which runs ``qemu-img`` through
#: ``python -m oslo_concurrency.prlimit``, must be told (glance's ``[wsgi]
#: python_interpreter``); without it every conversion fails (tests/e2e).
IMAGE_PYTHON = "/var/lib/openstack/bin/python"
# On the pod's writable tmp volume (the root filesystem is read-only), so that
# `kubectl exec <pod> -- touch /tmp/glance-healthcheck-disable` takes a pod out of rotation.
HEALTHCHECK_DISABLE_FILE = "/tmp/glance-healthcheck-disable"
#: The ConfigMap key a ``policyOverrides.configMapRef`` ConfigMap must carry.
POLICY_CONFIGMAP_KEY = "policy.yaml"

# --- rendered values ---------------------------------------------------------------------
DB_CONNECTION_PLACEHOLDER = "mysql+pymysql://placeholder"
#: ``spec.importMethods`` when unset (the design notes' default).
DEFAULT_IMPORT_METHODS = ("web-download", "copy-image")
MEMCACHED_PORT = 11211
IMAGE_CACHE_DRIVER = "sqlite"
DEFAULT_IMAGE_CACHE_SIZE = "10Gi"
DEFAULT_OUTPUT_FORMAT = "raw"
DEFAULT_IGNORE_USER_ROLES = ("admin",)
DEFAULT_LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"

DEFAULT_ALLOWED_SCHEMES = ("https",)
DEFAULT_ALLOWED_PORTS = ("443",)
BASELINE_DISALLOWED_HOSTS = (
    "localhost",
    "127.0.0.1",
    "0.0.0.0",
    "::1",
    "169.254.169.254",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)

#: importPlugins block -> glance plugin name, in glance's fixed order.
IMPORT_PLUGIN_ORDER = (
    ("decompression", "image_decompression"),
    ("conversion", "image_conversion"),
    ("injectMetadata", "inject_image_metadata"),
)

#: oslo.log's stock ``default_log_levels`` (oslo.log 8.x, glance 32.x/33.x; glance 31.x
#: additionally lists amqplib and qpid, which glance never loads), WARN spelled WARNING.
OSLO_DEFAULT_LOG_LEVELS = (
    ("amqp", "WARNING"),
    ("boto", "WARNING"),
    ("sqlalchemy", "WARNING"),
    ("suds", "INFO"),
    ("oslo.messaging", "INFO"),
    ("oslo_messaging", "INFO"),
    ("iso8601", "WARNING"),
    ("requests.packages.urllib3.connectionpool", "WARNING"),
    ("urllib3.connectionpool", "WARNING"),
    ("websocket", "WARNING"),
    ("requests.packages.urllib3.util.retry", "WARNING"),
    ("urllib3.util.retry", "WARNING"),
    ("keystonemiddleware", "WARNING"),
    ("routes.middleware", "WARNING"),
    ("stevedore", "WARNING"),
    ("taskflow", "WARNING"),
    ("keystoneauth", "WARNING"),
    ("oslo.cache", "INFO"),
    ("oslo_policy", "INFO"),
    ("dogpile.core.dogpile", "INFO"),
)
JSON_FORMATTER = "oslo_log.formatters.JSONFormatter"
CONTEXT_FORMATTER = "oslo_log.formatters.ContextFormatter"
# The level names Python's logging accepts in a fileConfig document.
_LEVEL_NAMES = ("CRITICAL", "FATAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "NOTSET")
_LEVEL_BY_NUMBER = {"50": "CRITICAL", "40": "ERROR", "30": "WARNING", "20": "INFO", "10": "DEBUG"}
_OSLO_TRUE = ("1", "yes", "true", "on")
_OSLO_FALSE = ("0", "no", "false", "off")

# --- paste pipeline ------------------------------------------------------------------------
PIPELINE_CORE = ("cors", "http_proxy_to_wsgi", "versionnegotiation", "authtoken", "context")
MIDDLEWARE_POSITIONS = ("before", "after")
CACHE_FILTER = "cache"
_FILTER_FACTORY = "paste.filter_factory"
_STATIC_PASTE_SECTIONS: dict[str, dict[str, str]] = {
    "composite:glance-api-keystone": {
        "paste.composite_factory": "glance.api:root_app_factory",
        "/": "api",
        "/healthcheck": "healthcheck",
    },
    "composite:rootapp": {
        "paste.composite_factory": "glance.api:root_app_factory",
        "/": "apiversions",
        "/v2": "apiv2app",
    },
    "app:healthcheck": {
        "paste.app_factory": "oslo_middleware:Healthcheck.app_factory",
        "backends": "disable_by_file",
        "disable_by_file_path": HEALTHCHECK_DISABLE_FILE,
    },
    "app:apiversions": {"paste.app_factory": "glance.api.versions:create_resource"},
    "app:apiv2app": {"paste.app_factory": "glance.api.v2.router:API.factory"},
    "filter:cors": {
        _FILTER_FACTORY: "oslo_middleware.cors:filter_factory",
        "oslo_config_project": "glance",
        "oslo_config_program": "glance-api",
    },
    "filter:http_proxy_to_wsgi": {_FILTER_FACTORY: "oslo_middleware:HTTPProxyToWSGI.factory"},
    "filter:versionnegotiation": {
        _FILTER_FACTORY: (
            "glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory"
        )
    },
    "filter:authtoken": {
        _FILTER_FACTORY: "keystonemiddleware.auth_token:filter_factory",
        "delay_auth_decision": "true",
    },
    "filter:context": {_FILTER_FACTORY: "glance.api.middleware.context:ContextMiddleware.factory"},
}
_CACHE_FILTER_SECTION = {_FILTER_FACTORY: "glance.api.middleware.cache:CacheFilter.factory"}


class ConfigError(ValueError):
    """The stored Glance cannot be rendered; the message becomes SecretsReady=False/ConfigError."""


# ---------------------------------------------------------------------------------------
# INI rendering

Sections = dict[str, dict[str, str]]


def oslo_literal(value: str) -> str:
    """``value`` as oslo.config must read it literally: ``$`` starts a substitution, ``$$`` not.

    The operator's own options come from typed fields (a role name, an injected property, a
    URL), which a user means literally; ``spec.plugins`` and ``spec.extraConfig`` values are
    oslo.config values and pass through as written.
    """
    return value.replace("$", "$$")


def _text(value: Any) -> str:
    """A spec value as INI text: booleans lowercase, numbers as written, None empty."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _has_line_break(text: str) -> bool:
    return "\n" in text or "\r" in text


def _check_section_name(section: str) -> None:
    if not section or _has_line_break(section) or "[" in section or "]" in section:
        raise ConfigError(
            f"section name {section!r} cannot be rendered: it must be non-empty and contain "
            "no bracket, newline or carriage return"
        )


def _check_option(section: str, key: str, value: str) -> None:
    if (
        not key
        or _has_line_break(key)
        or "=" in key
        or ":" in key
        or key != key.strip()
        or key[0] in "#;["
    ):
        raise ConfigError(
            f"[{section}] option name {key!r} cannot be rendered: it must be non-empty, must "
            "not start with '#', ';' or '[', and must contain no '=', ':', surrounding "
            "whitespace, newline or carriage return"
        )
    if _has_line_break(value):
        raise ConfigError(
            f"[{section}] {key}: the value must not contain a newline or carriage return"
        )


def section_order(sections: Iterable[str]) -> list[str]:
    """``DEFAULT`` first, then the other sections in byte order."""
    names = set(sections)
    rest = sorted(names - {"DEFAULT"})
    return ["DEFAULT", *rest] if "DEFAULT" in names else rest


def render_ini(
    sections: Mapping[str, Mapping[str, str]], order: Sequence[str] | None = None
) -> str:
    """Sections (``order``, else :func:`section_order`), keys sorted, ``key = value`` lines.

    Sections without keys are left out. An empty value renders as ``key =``. Raises
    :class:`ConfigError` for a name or value that would break the file's structure.
    """
    blocks = []
    for name in section_order(sections) if order is None else order:
        options = sections[name]
        if not options:
            continue
        _check_section_name(name)
        lines = [f"[{name}]"]
        for key in sorted(options):
            value = options[key]
            _check_option(name, key, value)
            lines.append(f"{key} = {value}" if value else f"{key} =")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


class _Merged:
    """Options merged on oslo.config's normalized names; a later ``set`` wins."""

    def __init__(self) -> None:
        self.sections: Sections = {}

    def set(self, section: str, key: str, value: Any) -> None:
        options = self.sections.setdefault(normalize_section(section), {})
        options[normalize_option(key)] = _text(value)

    def update(self, section: str, options: Mapping[str, Any]) -> None:
        for key in sorted(options):
            self.set(section, key, options[key])


# ---------------------------------------------------------------------------------------
# spec resolution


def _spec(glance: Mapping[str, Any]) -> Mapping[str, Any]:
    return glance.get("spec") or {}


def _listed(values: Iterable[Any]) -> str:
    """A bounded oslo ListOpt value: ``[a,b]``, ``[]`` when empty."""
    return "[" + ",".join(values) + "]"


def resolve_import_filtering(spec: Mapping[str, Any]) -> dict[str, list[str]]:
    """The six ``[import_filtering_opts]`` values (reference-spec §1.2.1), ports as text.

    A list that is unset (None) resolves to its default; an explicit ``[]`` stays empty.
    ``disallowed_hosts`` is the baseline followed by the user's hosts (deduplicated, first
    occurrence kept), empty when ``allowedHosts`` is non-empty or ``disallowedHosts: []``.
    """
    filtering = spec.get("importFiltering") or {}

    def given(field: str) -> list[str] | None:
        values = filtering.get(field)
        return None if values is None else [_text(v) for v in values]

    allowed_schemes = given("allowedSchemes")
    allowed_ports = given("allowedPorts")
    allowed_hosts = given("allowedHosts") or []
    user_denied_hosts = given("disallowedHosts")
    if allowed_hosts:
        disallowed_hosts: list[str] = []
    elif user_denied_hosts is None:
        disallowed_hosts = list(BASELINE_DISALLOWED_HOSTS)
    elif not user_denied_hosts:
        disallowed_hosts = []
    else:
        disallowed_hosts = list(dict.fromkeys([*BASELINE_DISALLOWED_HOSTS, *user_denied_hosts]))
    return {
        "allowed_schemes": (
            list(DEFAULT_ALLOWED_SCHEMES) if allowed_schemes is None else allowed_schemes
        ),
        "disallowed_schemes": given("disallowedSchemes") or [],
        "allowed_hosts": allowed_hosts,
        "disallowed_hosts": disallowed_hosts,
        "allowed_ports": list(DEFAULT_ALLOWED_PORTS) if allowed_ports is None else allowed_ports,
        "disallowed_ports": given("disallowedPorts") or [],
    }


def import_methods(spec: Mapping[str, Any]) -> list[str]:
    """``enabled_import_methods``: ``spec.importMethods`` (else web-download and copy-image).

    Rendered in the order of ``glance_admission.IMPORT_METHODS``, each once, whatever the
    order of the list (a reordered list does not roll the pods).
    glance-direct and glance-download stage on the pod that takes the request; every pod
    carries its own ``worker_self_reference_url`` (``desired_objects``), so glance proxies a
    later import or delete of a staged image to the pod that holds the data.
    """
    chosen = spec.get("importMethods")
    if chosen is None:
        chosen = DEFAULT_IMPORT_METHODS
    return [method for method in IMPORT_METHODS if method in chosen]


def import_plugins(spec: Mapping[str, Any]) -> list[str]:
    """The enabled import plugins in glance's fixed order (a present block enables one)."""
    blocks = spec.get("importPlugins") or {}
    return [plugin for field, plugin in IMPORT_PLUGIN_ORDER if blocks.get(field) is not None]


def image_cache_size_limit(spec: Mapping[str, Any]) -> int | None:
    """The cache volume's size in bytes (default 10Gi, rounded up), None without a cache."""
    cache = spec.get("imageCache")
    if cache is None:
        return None
    size = cache.get("sizeLimit")
    if size is None:
        size = DEFAULT_IMAGE_CACHE_SIZE
    try:
        return ceil(parse_quantity(size))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"spec.imageCache.sizeLimit: {size!r}: {exc}") from exc


def image_cache_max_size(spec: Mapping[str, Any]) -> int | None:
    """``image_cache_max_size``: 80% of the cache volume, dividing by 10 first (§3.1)."""
    size = image_cache_size_limit(spec)
    return None if size is None else size // 10 * 8


def memcached_servers(spec: Mapping[str, Any]) -> str | None:
    """``servers`` joined with ``,``, else ``<clusterRef.name>:11211``, else None."""
    cache = spec.get("cache") or {}
    servers = cache.get("servers") or []
    if servers:
        return ",".join(servers)
    name = (cache.get("clusterRef") or {}).get("name")
    return f"{name}:{MEMCACHED_PORT}" if name else None


# ---------------------------------------------------------------------------------------
# glance-api.conf


def _operator_options(
    spec: Mapping[str, Any], enabled_backends: Sequence[str], default_backend: str
) -> Sections:
    logging = spec.get("logging") or {}
    endpoint = spec.get("keystoneEndpoint")
    if not endpoint:
        raise ConfigError("spec.keystoneEndpoint must be set: it is [keystone_authtoken] auth_url")
    user = spec.get("serviceUser") or {}

    default = {
        "enabled_backends": ",".join(f"{name}:s3" for name in enabled_backends),
        "enabled_import_methods": _listed(import_methods(spec)),
        "use_stderr": "true",
        "debug": _text(bool(logging.get("debug"))),
        "log_config_append": LOGGING_PATH,
    }
    per_logger = logging.get("perLoggerLevels") or {}
    if per_logger:
        default["default_log_levels"] = ",".join(
            f"{name}={per_logger[name]}" for name in sorted(per_logger)
        )
    max_size = image_cache_max_size(spec)
    if max_size is not None:
        default["image_cache_dir"] = IMAGE_CACHE_DIR
        default["image_cache_driver"] = IMAGE_CACHE_DRIVER
        default["image_cache_max_size"] = str(max_size)

    keystone = {
        "auth_type": "password",
        "auth_url": endpoint,
        "www_authenticate_uri": spec.get("keystonePublicEndpoint") or endpoint,
        "username": user.get("username") or "glance",
        "project_name": user.get("projectName") or "service",
        "user_domain_name": user.get("userDomainName") or "Default",
        "project_domain_name": user.get("projectDomainName") or "Default",
    }
    if spec.get("region"):
        keystone["region_name"] = spec["region"]
    servers = memcached_servers(spec)
    if servers:
        keystone["memcached_servers"] = servers

    plugins = import_plugins(spec)
    sections: Sections = {
        "DEFAULT": default,
        "database": {
            "connection": DB_CONNECTION_PLACEHOLDER,
            "connection_recycle_time": "600",
            "max_retries": "-1",
        },
        "keystone_authtoken": keystone,
        "glance_store": {"default_backend": default_backend},
        "os_glance_staging_store": {"filesystem_store_datadir": STAGING_DIR},
        "os_glance_tasks_store": {"filesystem_store_datadir": TASKS_WORK_DIR},
        "paste_deploy": {"flavor": "keystone", "config_file": PASTE_PATH},
        "import_filtering_opts": {
            key: _listed(values) for key, values in resolve_import_filtering(spec).items()
        },
        "image_import_opts": {"image_import_plugins": _listed(plugins)},
    }
    blocks = spec.get("importPlugins") or {}
    if "image_conversion" in plugins:
        output_format = blocks["conversion"].get("outputFormat") or DEFAULT_OUTPUT_FORMAT
        sections["image_conversion"] = {"output_format": output_format}
        sections["wsgi"] = {"python_interpreter": IMAGE_PYTHON}
    if "inject_image_metadata" in plugins:
        inject = blocks["injectMetadata"]
        properties = inject.get("properties") or {}
        roles = inject.get("ignoreUserRoles")
        sections["inject_metadata_properties"] = {
            "inject": ",".join(f"{k}:{_text(properties[k])}" for k in sorted(properties)),
            "ignore_user_roles": ",".join(DEFAULT_IGNORE_USER_ROLES if roles is None else roles),
        }
    return sections


def glance_api_sections(
    glance: Mapping[str, Any],
    *,
    enabled_backends: Sequence[str],
    default_backend: str,
    policy_rendered: bool,
) -> Sections:
    """The merged ``glance-api.conf`` options, section -> key -> value (normalized names)."""
    spec = _spec(glance)
    merged = _Merged()
    plugins = sorted(spec.get("plugins") or [], key=lambda p: p.get("configSection") or "")
    for plugin in plugins:
        section = plugin.get("configSection") or ""
        _check_section_name(section)
        merged.update(section, plugin.get("config") or {})
    for section, options in _operator_options(spec, enabled_backends, default_backend).items():
        merged.update(section, {key: oslo_literal(value) for key, value in options.items()})
    extra = spec.get("extraConfig") or {}
    for section in sorted(extra):
        merged.update(section, extra[section] or {})
    if policy_rendered:
        merged.set("oslo_policy", "policy_file", POLICY_PATH)
    return merged.sections


def render_glance_api_conf(
    glance: Mapping[str, Any],
    *,
    enabled_backends: Sequence[str],
    default_backend: str,
    policy_rendered: bool,
) -> str:
    """``glance-api.conf`` (reference-spec §3.1 with DECISIONS.md applied).

    ``enabled_backends`` are the store names of the rendered backends, in the order given
    (the caller sorts them); ``default_backend`` names the isDefault one.
    """
    return render_ini(
        glance_api_sections(
            glance,
            enabled_backends=enabled_backends,
            default_backend=default_backend,
            policy_rendered=policy_rendered,
        )
    )


# ---------------------------------------------------------------------------------------
# glance-api-paste.ini


def _middleware_name_problem(name: str) -> str | None:
    if not name:
        return "middleware name must not be empty"
    if any(c.isspace() for c in name) or "[" in name or "]" in name:
        return (
            f"middleware name {name!r} must not contain whitespace or brackets: it is a "
            "pipeline entry and a section name"
        )
    return None


def render_paste_ini(glance: Mapping[str, Any]) -> str:
    """``glance-api-paste.ini`` (reference-spec §3.2).

    Raises :class:`ConfigError` for an empty middleware name or factory, a duplicate
    name, an unknown position, the name ``cache`` while the image cache is set, or a name
    that cannot be a pipeline entry.
    """
    spec = _spec(glance)
    cache = spec.get("imageCache") is not None
    before: list[str] = []
    after: list[str] = []
    sections: Sections = {}
    seen: dict[str, int] = {}
    for i, middleware in enumerate(spec.get("middleware") or []):
        path = f"spec.middleware[{i}]"
        name = middleware.get("name") or ""
        problem = _middleware_name_problem(name)
        if problem:
            raise ConfigError(f"{path}.name: {problem}")
        if name in seen:
            raise ConfigError(
                f'{path}.name: duplicate middleware name "{name}" '
                f"(spec.middleware[{seen[name]}] has it too)"
            )
        if cache and name == CACHE_FILTER:
            raise ConfigError(
                f'{path}.name: "cache" is the operator\'s image cache filter while '
                "spec.imageCache is set: rename this middleware"
            )
        seen[name] = i
        factory = middleware.get("filterFactory") or ""
        if not factory:
            raise ConfigError(f"{path}.filterFactory: middleware filterFactory must not be empty")
        position = middleware.get("position")
        if position not in MIDDLEWARE_POSITIONS:
            raise ConfigError(
                f'{path}.position: unknown position "{_text(position)}": must be before or after'
            )
        options: dict[str, str] = {}
        config = middleware.get("config") or {}
        for key in sorted(config):
            if key.lower() == _FILTER_FACTORY:
                continue  # the filterFactory field decides the factory
            if key.lower() in {k.lower() for k in options}:
                raise ConfigError(
                    f"{path}.config: option {key!r} is given twice (paste option names are "
                    "case-insensitive)"
                )
            options[key] = _text(config[key])
        options[_FILTER_FACTORY] = factory
        sections[f"filter:{name}"] = options
        (before if position == "before" else after).append(name)
    if cache:
        after.append(CACHE_FILTER)
        sections[f"filter:{CACHE_FILTER}"] = dict(_CACHE_FILTER_SECTION)
    sections["pipeline:api"] = {"pipeline": " ".join([*before, *PIPELINE_CORE, *after, "rootapp"])}
    # The static sections are merged last: they win on a name clash (§3.2).
    for name, options in _STATIC_PASTE_SECTIONS.items():
        sections[name] = dict(options)
    return render_ini(sections, order=sorted(sections))


# ---------------------------------------------------------------------------------------
# policy.yaml


def _configmap_rules(glance: Mapping[str, Any], data: Mapping[str, str] | None) -> dict[str, str]:
    ref = _spec(glance)["policyOverrides"]["configMapRef"]
    namespace = (glance.get("metadata") or {}).get("namespace") or ""
    where = f"spec.policyOverrides.configMapRef: ConfigMap {namespace}/{ref.get('name') or ''}"
    if data is None:
        raise ConfigError(f"{where} not found")
    if POLICY_CONFIGMAP_KEY not in data:
        raise ConfigError(f"{where} has no key {POLICY_CONFIGMAP_KEY}")
    try:
        parsed = yaml.safe_load(data[POLICY_CONFIGMAP_KEY] or "")
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"{where}: {POLICY_CONFIGMAP_KEY} is not valid YAML: {detail}") from exc
    if parsed is None:
        parsed = {}
    if not isinstance(parsed, Mapping):
        raise ConfigError(
            f"{where}: {POLICY_CONFIGMAP_KEY} must be a map of rule name to rule expression"
        )
    if not parsed:
        raise ConfigError(f"{where}: {POLICY_CONFIGMAP_KEY} holds no rules")
    rules = {}
    for name, value in parsed.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigError(
                f"{where}: {POLICY_CONFIGMAP_KEY}: rule {name!r} must map a rule name to a rule "
                f"expression string, not {type(value).__name__}"
            )
        rules[name] = value
    return rules


def policy_rules(
    glance: Mapping[str, Any], policy_configmap_data: Mapping[str, str] | None
) -> dict[str, str] | None:
    """The merged policy rules (ConfigMap, then inline rules over them), None when unset."""
    overrides = _spec(glance).get("policyOverrides")
    if overrides is None:
        return None
    rules: dict[str, str] = {}
    if overrides.get("configMapRef") is not None:
        rules.update(_configmap_rules(glance, policy_configmap_data))
    inline = overrides.get("rules") or {}
    for name in sorted(inline):
        rules[name] = _text(inline[name])
    for name in sorted(rules):
        if not name or not rules[name]:
            raise ConfigError(
                f"spec.policyOverrides: rule {name!r}: rule names and expressions must not "
                "be empty (an empty expression allows everyone)"
            )
    return rules or None


def render_policy_yaml(
    glance: Mapping[str, Any], policy_configmap_data: Mapping[str, str] | None
) -> str | None:
    """``policy.yaml`` (reference-spec §3.4), None when ``spec.policyOverrides`` is unset.

    ``policy_configmap_data`` is the ``data`` of the ConfigMap named by
    ``policyOverrides.configMapRef`` (None when it does not exist). One YAML line per rule,
    names sorted, each rule emitted on its own; the whole is one YAML map.
    """
    rules = policy_rules(glance, policy_configmap_data)
    if rules is None:
        return None
    return "".join(
        yaml.safe_dump(
            {name: rules[name]}, default_flow_style=False, allow_unicode=True, width=sys.maxsize
        )
        for name in sorted(rules)
    )


# ---------------------------------------------------------------------------------------
# logging.conf


def _extra_default_option(spec: Mapping[str, Any], option: str) -> str | None:
    """The value extraConfig gives ``[DEFAULT] option`` (last spelling in sorted order)."""
    found = None
    extra = spec.get("extraConfig") or {}
    for section in sorted(extra):
        if normalize_section(section) != "DEFAULT":
            continue
        options = extra[section] or {}
        for key in sorted(options):
            if normalize_option(key) == option:
                found = _text(options[key])
    return found


def _oslo_bool(value: str, where: str) -> bool:
    text = value.strip().lower()
    if text in _OSLO_TRUE:
        return True
    if text in _OSLO_FALSE:
        return False
    raise ConfigError(f"{where}: {value!r} is not a boolean (true or false)")


def _fileconfig_level(level: str, where: str) -> str:
    """A level as Python's fileConfig accepts it (a name; oslo.log also takes a number)."""
    text = level.strip()
    if text in _LEVEL_NAMES:
        return text
    if text in _LEVEL_BY_NUMBER:
        return _LEVEL_BY_NUMBER[text]
    raise ConfigError(
        f"{where}: logger level {level!r} is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL"
    )


def logger_levels(glance: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The root level and the level of each named logger, as ``logging.conf`` sets them."""
    spec = _spec(glance)
    logging = spec.get("logging") or {}
    debug_text = _extra_default_option(spec, "debug")
    if debug_text is None:
        debug = bool(logging.get("debug"))
    else:
        debug = _oslo_bool(debug_text, "spec.extraConfig[DEFAULT][debug]")
    root = "DEBUG" if debug else (logging.get("level") or "INFO")

    levels_text = _extra_default_option(spec, "default_log_levels")
    if levels_text is None:
        where = "spec.logging.perLoggerLevels"
        pairs = list(OSLO_DEFAULT_LOG_LEVELS)
        per_logger = logging.get("perLoggerLevels") or {}
        pairs += [(name, per_logger[name]) for name in sorted(per_logger)]
    else:
        where = "spec.extraConfig[DEFAULT][default_log_levels]"
        pairs = []
        for item in levels_text.split(","):
            if item.strip():
                name, _, level = item.strip().partition("=")
                pairs.append((name, level))
    loggers: dict[str, str] = {}
    for name, level in pairs:
        if _has_line_break(name):
            raise ConfigError(f"{where}: logger name {name!r} must not contain a line break")
        level = _fileconfig_level(level, f"{where}[{name}]")
        if name in ("", "root"):
            root = level  # logging.getLogger("root") is the root logger
        else:
            loggers[name] = level
    return root, loggers


def _logger_keys(names: Iterable[str]) -> dict[str, str]:
    """A fileConfig key per logger name: ``[A-Za-z0-9_]`` only, unique, never ``root``."""
    used = {"root"}
    keys = {}
    for name in sorted(names):
        base = re.sub(r"[^A-Za-z0-9_]", "_", name)
        key, n = base, 2
        while key in used:
            key, n = f"{base}_{n}", n + 1
        used.add(key)
        keys[name] = key
    return keys


def render_logging_conf(glance: Mapping[str, Any]) -> str:
    """``logging.conf``: a ``logging.config.fileConfig`` document (see the module docstring)."""
    spec = _spec(glance)
    json_format = (spec.get("logging") or {}).get("format") == "json"
    formatter = "json" if json_format else "context"
    datefmt = _extra_default_option(spec, "log_date_format") or DEFAULT_LOG_DATE_FORMAT
    root, loggers = logger_levels(glance)
    by_key = {key: name for name, key in _logger_keys(loggers).items()}
    logger_sections = {
        f"logger_{key}": {
            "handlers": "",
            "level": loggers[by_key[key]],
            # fileConfig reads qualname with %-interpolation
            "qualname": by_key[key].replace("%", "%%"),
        }
        for key in sorted(by_key)
    }
    sections: Sections = {
        "loggers": {"keys": ",".join(["root", *sorted(by_key)])},
        "handlers": {"keys": "stderr"},
        "formatters": {"keys": formatter},
        "logger_root": {"level": root, "handlers": "stderr"},
        **logger_sections,
        "handler_stderr": {
            "class": "StreamHandler",
            "args": "(sys.stderr,)",
            "level": "NOTSET",
            "formatter": formatter,
        },
        f"formatter_{formatter}": {
            "class": JSON_FORMATTER if json_format else CONTEXT_FORMATTER,
            "datefmt": datefmt,
        },
    }
    return render_ini(sections, order=list(sections))


# ---------------------------------------------------------------------------------------
# the ConfigMap


def config_files(
    glance: Mapping[str, Any],
    *,
    enabled_backends: Sequence[str],
    default_backend: str,
    policy_configmap_data: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The config ConfigMap's data: every file, keys in sorted order."""
    policy = render_policy_yaml(glance, policy_configmap_data)
    # logging.conf first: its errors name the spec field, the INI check's only the option
    logging_conf = render_logging_conf(glance)
    files = {
        GLANCE_API_CONF: render_glance_api_conf(
            glance,
            enabled_backends=enabled_backends,
            default_backend=default_backend,
            policy_rendered=policy is not None,
        ),
        PASTE_INI: render_paste_ini(glance),
        LOGGING_CONF: logging_conf,
    }
    if policy is not None:
        files[POLICY_YAML] = policy
    return dict(sorted(files.items()))


# ---------------------------------------------------------------------------------------
# ExtraConfigHealthy


@dataclass(frozen=True)
class OwnedOverride:
    """An extraConfig option that overrides a key the operator owns (as the user spelled it)."""

    section: str
    key: str
    value: str
    owned: OwnedKey

    @property
    def rejected(self) -> bool:
        return self.owned.rejected

    @property
    def impact(self) -> str:
        return self.owned.impact

    def describe(self) -> str:
        return f"[{self.section}] {self.key} ({self.owned.impact})"


def owned_key_overrides(glance: Mapping[str, Any]) -> list[OwnedOverride]:
    """extraConfig options that set an owned key (reported and rejected kinds), sorted.

    Names are matched as oslo.config matches them (group case-insensitively except
    ``DEFAULT``, ``-`` for ``_``), so ``[Keystone_Authtoken] auth-url`` counts.
    """
    extra = _spec(glance).get("extraConfig") or {}
    found = []
    for section in sorted(extra):
        options = extra[section] or {}
        for key in sorted(options):
            entry = owned_key(normalize_section(section), normalize_option(key))
            if entry is not None:
                found.append(OwnedOverride(section, key, _text(options[key]), entry))
    return found


def extra_config_condition(glance: Mapping[str, Any]) -> dict[str, str]:
    """The informational ``ExtraConfigHealthy`` condition."""
    overrides = owned_key_overrides(glance)
    if not overrides:
        return cond.condition(
            cond.EXTRA_CONFIG_HEALTHY,
            True,
            cond.NO_OWNED_KEYS_OVERRIDDEN,
            "spec.extraConfig overrides no key the operator manages",
        )
    return cond.condition(
        cond.EXTRA_CONFIG_HEALTHY,
        False,
        cond.OWNED_KEYS_OVERRIDDEN,
        "; ".join(o.describe() for o in overrides),
    )
