# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""``glance-api.conf``: the operator's options and their merge with ``spec.plugins`` and
``spec.extraConfig`` (reference-spec §3.1 with DECISIONS.md applied).

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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import ceil
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.import_opts import (
    import_methods,
    import_plugins,
    resolve_import_filtering,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    ConfigError,
    Sections,
    _check_section_name,
    _listed,
    _Merged,
    _spec,
    _text,
    oslo_literal,
    render_ini,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    IMAGE_CACHE_DIR,
    IMAGE_PYTHON,
    LOGGING_PATH,
    PASTE_PATH,
    POLICY_PATH,
    STAGING_DIR,
    TASKS_WORK_DIR,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import (
    parse_quantity,
)

# --- rendered values ---------------------------------------------------------------------
DB_CONNECTION_PLACEHOLDER = "mysql+pymysql://placeholder"
MEMCACHED_PORT = 11211
IMAGE_CACHE_DRIVER = "sqlite"
DEFAULT_IMAGE_CACHE_SIZE = "10Gi"
DEFAULT_OUTPUT_FORMAT = "raw"
DEFAULT_IGNORE_USER_ROLES = ("admin",)


# ---------------------------------------------------------------------------------------
# spec resolution


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
