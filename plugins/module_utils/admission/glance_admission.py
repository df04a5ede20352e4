# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Glance admission webhook: defaulting and the rules the CRD schema cannot express.

``default_glance`` fills what the mutating webhook fills (never overwriting a value the user
set). ``validate_glance`` returns every rule the object breaks and the warnings it earns.
Both take the object after the API server's schema defaulting and run only on objects that
passed the schema and its CEL rules (``admission.judge`` enforces that order).

Each rule is a small function named after what it checks; ``GLANCE_RULES`` lists them in the
order they run. The rule texts, field paths and error types are the reference webhook's, word
for word, anything ours adds after them (``tests/unit/test_reference_messages.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.option_catalog import (
    check_extra_config,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.owned_keys import (
    owned_key,
    rejected_override_message,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.cron_schedule import (
    parse_standard,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_duration import (
    format_duration,
    parse_duration,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_url import (
    check_endpoint_url,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import (
    go_quantity_string,
    parse_quantity,
)

DEFAULT_RESOURCES = {
    "requests": {"memory": "512Mi", "cpu": "100m"},
    "limits": {"memory": "1Gi", "cpu": "500m"},
}
DEFAULT_REPLICAS = 3
DEFAULT_CACHE_BACKEND = "dogpile.cache.pymemcache"
DEFAULT_SERVICE_USER = {
    "username": "glance",
    "projectName": "service",
    "userDomainName": "Default",
    "projectDomainName": "Default",
}
DEFAULT_SECRET_KEY = "password"
CREDENTIALS_STATIC = "Static"
CREDENTIALS_DYNAMIC = "Dynamic"
DEFAULT_GRACE_SECONDS = 30
DEFAULT_PRESTOP_SECONDS = 5
DEFAULT_RETENTION_DAYS = 30
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
OUTPUT_FORMATS = ("qcow2", "raw", "vmdk")
# The import methods spec.importMethods accepts, in the order they are rendered: glance's
# own default order, then glance-download.
IMPORT_METHODS = ("glance-direct", "web-download", "copy-image", "glance-download")
# The methods that fetch over HTTPS, the ones spec.importCABundleSecretRef serves.
DOWNLOAD_IMPORT_METHODS = ("web-download", "glance-download")
FILTER_SCHEMES = ("http", "https")
FILTER_LIST_MAX = 64
HOST_MAX = 253
INJECT_MAX = 64
INJECT_TEXT_MAX = 255
MAX_NAME_LENGTH = 43
MIN_VOLUME = parse_quantity("1Mi")
MIN_MAINTENANCE_SECONDS = 60
# The staging bound the reconcile applies when spec.staging.sizeLimit is unset (pods.py).
DEFAULT_STAGING_SIZE = "10Gi"
DEFAULT_ALLOWED_SCHEMES = ("https",)
DEFAULT_ALLOWED_PORTS = (443,)
POD_NAME_LABEL = "app.kubernetes.io/name"
POD_INSTANCE_LABEL = "app.kubernetes.io/instance"

# The deny-list field of each mutually exclusive allow/deny pair.
FILTER_PAIRS = (
    ("allowedSchemes", "disallowedSchemes"),
    ("allowedHosts", "disallowedHosts"),
    ("allowedPorts", "disallowedPorts"),
)


@dataclass(frozen=True)
class AdmissionContext:
    """What a rule may know beyond the object: the operation, the stored object, lookups.

    ``siblings`` are the GlanceBackends of the namespace and ``priority_class_exists`` asks
    the cluster; either is None when not available (offline), and the rules that need them
    are then skipped, as the reference skips them without a client. ``catalogs`` maps a
    release (``2026.2``) to its option catalog.
    """

    operation: str = "CREATE"
    old: Mapping[str, Any] | None = None
    siblings: Sequence[Mapping[str, Any]] | None = None
    priority_class_exists: Callable[[str], bool] | None = None
    catalogs: Mapping[str, Mapping[str, Any]] | None = None

    @property
    def is_update(self) -> bool:
        return self.operation == "UPDATE" and self.old is not None


# ---------------------------------------------------------------------------------------
# defaulting (mutating webhook)


def http_keepalive_wanted(uwsgi: Mapping[str, Any]) -> bool:
    """Whether a uWSGI block asks for HTTP keep-alive: ``httpKeepAlive``, else a timeout.

    Off unless asked for (docs/upload.md: without keep-alive the workers serve HTTP with
    one copy of each byte and no idle connection holds a request slot): ``httpKeepAlive``
    when set, otherwise whether ``httpKeepAliveTimeout`` is given (positive).
    """
    wanted = uwsgi.get("httpKeepAlive")
    if wanted is not None:
        return wanted is True
    timeout = uwsgi.get("httpKeepAliveTimeout")
    return isinstance(timeout, int) and timeout > 0


def default_glance(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` with the webhook's defaults filled in; explicit values are kept."""
    out = copy.deepcopy(dict(obj))
    spec = out.setdefault("spec", {})
    deployment = spec.setdefault("deployment", {})
    resources = deployment.get("resources")
    if not resources or not (resources.get("requests") or resources.get("limits")):
        deployment["resources"] = copy.deepcopy(DEFAULT_RESOURCES)
    if not deployment.get("replicas"):
        deployment["replicas"] = DEFAULT_REPLICAS
    cache = spec.get("cache")
    if isinstance(cache, dict) and not cache.get("backend"):
        cache["backend"] = DEFAULT_CACHE_BACKEND
    logging = spec.get("logging") or {}
    spec["logging"] = logging
    logging["format"] = logging.get("format") or "text"
    logging["level"] = logging.get("level") or "INFO"
    logging.setdefault("debug", False)
    user = spec.get("serviceUser")
    if isinstance(user, dict):
        for name, value in DEFAULT_SERVICE_USER.items():
            user[name] = user.get(name) or value
        secret_ref = user.get("secretRef")
        if isinstance(secret_ref, dict) and not secret_ref.get("key"):
            secret_ref["key"] = DEFAULT_SECRET_KEY
    uwsgi = (spec.get("apiServer") or {}).get("uwsgi")
    if isinstance(uwsgi, dict):
        uwsgi["processes"] = uwsgi.get("processes") or 2
        uwsgi["threads"] = uwsgi.get("threads") or 1
        if uwsgi.get("httpKeepAlive") is None:
            uwsgi["httpKeepAlive"] = http_keepalive_wanted(uwsgi)
    return out


# ---------------------------------------------------------------------------------------
# helpers


def _echo(value: Any) -> Any:
    return fe.truncate(value) if isinstance(value, str) else value


def _has_control(value: str) -> bool:
    return "\n" in value or "\r" in value


# The reference's words for a newline or carriage return in a value the INI renderer writes
# verbatim (internal/common/validation.CacheNoControlChars, and the webhook's own guards).
VERBATIM_VALUE_DETAIL = (
    "value must not contain a newline or carriage return: it is rendered verbatim into the "
    "service configuration file, so a newline injects arbitrary config lines"
)


def _verbatim_detail(what: str, where: str) -> str:
    """``<what> must not contain newline or carriage-return characters: ...``: the wording
    the reference gives a control character in a value rendered into ``where``."""
    return (
        f"{what} must not contain newline or carriage-return characters: the rendered "
        f"{where} value is written verbatim, so a newline injects arbitrary config lines"
    )


def effective_grace(spec: Mapping[str, Any]) -> int:
    grace = (spec.get("deployment") or {}).get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE_SECONDS if grace is None else grace


def effective_prestop(spec: Mapping[str, Any]) -> int:
    prestop = (spec.get("deployment") or {}).get("preStopSleepSeconds")
    return DEFAULT_PRESTOP_SECONDS if prestop is None else prestop


def _quantity(path: str, value: Any) -> tuple[Fraction | None, fe.FieldError | None]:
    try:
        return parse_quantity(value), None
    except ValueError as exc:
        return None, fe.invalid(path, _echo(value), str(exc))


# ---------------------------------------------------------------------------------------
# rules on create and update


def check_replicas(spec, ctx, meta) -> Iterable[fe.FieldError]:
    replicas = (spec.get("deployment") or {}).get("replicas")
    if replicas is not None and replicas < 1:
        yield fe.invalid("spec.deployment.replicas", replicas, "replicas must be at least 1")


def check_image(spec, ctx, meta) -> Iterable[fe.FieldError]:
    image = spec.get("image") or {}
    if bool(image.get("tag")) == bool(image.get("digest")):
        yield fe.invalid(
            "spec.image", "object", "exactly one of image.tag or image.digest must be set"
        )


def managed_database(spec: Mapping[str, Any]) -> bool:
    """``database.clusterRef`` is set: managed mode (a mariadb-operator MariaDB)."""
    return (spec.get("database") or {}).get("clusterRef") is not None


def credentials_mode(spec: Mapping[str, Any]) -> str:
    """``database.credentialsMode``, empty meaning Static."""
    return (spec.get("database") or {}).get("credentialsMode") or CREDENTIALS_STATIC


def check_database(spec, ctx, meta) -> Iterable[fe.FieldError]:
    database = spec.get("database") or {}
    if managed_database(spec) == bool(database.get("host")):
        yield fe.invalid("spec.database", "object", "exactly one of clusterRef or host must be set")
    mode = database.get("credentialsMode")
    if mode == CREDENTIALS_DYNAMIC and not managed_database(spec):
        yield fe.invalid(
            "spec.database.credentialsMode",
            mode,
            "credentialsMode Dynamic requires clusterRef (managed mode)",
        )


def check_cache(spec, ctx, meta) -> Iterable[fe.FieldError]:
    cache = spec.get("cache") or {}
    ref = cache.get("clusterRef")
    servers = cache.get("servers") or []
    if bool(ref) == bool(servers):
        yield fe.invalid("spec.cache", "object", "exactly one of clusterRef or servers must be set")
    if ref and _has_control(ref.get("name", "")):
        yield fe.invalid("spec.cache.clusterRef.name", _echo(ref["name"]), VERBATIM_VALUE_DETAIL)
    for i, server in enumerate(servers):
        if _has_control(server):
            yield fe.invalid(f"spec.cache.servers[{i}]", _echo(server), VERBATIM_VALUE_DETAIL)


SECRET_STORE_KINDS = ("ClusterSecretStore", "SecretStore")


def check_secret_store_ref(spec, ctx, meta) -> Iterable[fe.FieldError]:
    """The reference's rules: a name, and a kind of the two (empty: ClusterSecretStore).
    The name's DNS-1123 form is the schema's."""
    ref = spec.get("secretStoreRef")
    if ref is None:
        return
    if not ref.get("name"):
        yield fe.required("spec.secretStoreRef.name", "store name must be set")
    kind = ref.get("kind") or ""
    if kind and kind not in SECRET_STORE_KINDS:
        yield fe.not_supported("spec.secretStoreRef.kind", kind, list(SECRET_STORE_KINDS))


def check_target_cluster_ref(spec, ctx, meta) -> Iterable[fe.FieldError]:
    """The reference's rule: a name when the ref is set (unset: this cluster). The name's
    DNS-1123 form and its minimum length are the schema's."""
    ref = spec.get("targetClusterRef")
    if ref is not None and not ref.get("name"):
        yield fe.required("spec.targetClusterRef.name", "target cluster name must be set")


def check_keystone_endpoints(spec, ctx, meta) -> Iterable[fe.FieldError]:
    endpoint = spec.get("keystoneEndpoint")
    if not endpoint:
        yield fe.required(
            "spec.keystoneEndpoint",
            "keystoneEndpoint must be set (the Keystone auth_url the Glance pods reach)",
        )
    else:
        problem = check_endpoint_url(endpoint)
        if problem:
            yield fe.invalid("spec.keystoneEndpoint", _echo(endpoint), problem)
    public = spec.get("keystonePublicEndpoint")
    if public:
        problem = check_endpoint_url(public)
        if problem:
            yield fe.invalid("spec.keystonePublicEndpoint", _echo(public), problem)


def check_logging(spec, ctx, meta) -> Iterable[fe.FieldError]:
    logging = spec.get("logging") or {}
    if logging.get("format") and logging["format"] not in LOG_FORMATS:
        yield fe.not_supported("spec.logging.format", logging["format"], list(LOG_FORMATS))
    if logging.get("level") and logging["level"] not in LOG_LEVELS:
        yield fe.not_supported("spec.logging.level", logging["level"], list(LOG_LEVELS))
    levels_path = "spec.logging.perLoggerLevels"
    for name, level in sorted((logging.get("perLoggerLevels") or {}).items()):
        if not name:
            yield fe.invalid(levels_path, name, "logger name must not be empty")
            continue
        path = fe.key(levels_path, fe.truncate(name))
        if _has_control(name):
            # Ours: the reference renders the name into default_log_levels unchecked.
            yield fe.invalid(
                path, _echo(name), _verbatim_detail("logger name", "[DEFAULT] default_log_levels")
            )
        if level not in LOG_LEVELS:
            yield fe.invalid(path, _echo(level), "level must be one of " + ", ".join(LOG_LEVELS))


def check_termination(spec, ctx, meta) -> Iterable[fe.FieldError]:
    deployment = spec.get("deployment") or {}
    grace = deployment.get("terminationGracePeriodSeconds")
    prestop = deployment.get("preStopSleepSeconds")
    if grace is not None and grace < 10:
        yield fe.invalid(
            "spec.deployment.terminationGracePeriodSeconds",
            grace,
            "terminationGracePeriodSeconds must be at least 10",
        )
    if prestop is not None and prestop < 0:
        yield fe.invalid(
            "spec.deployment.preStopSleepSeconds",
            prestop,
            "preStopSleepSeconds must be non-negative",
        )
    eff_grace, eff_prestop = effective_grace(spec), effective_prestop(spec)
    if eff_prestop >= eff_grace:
        yield fe.invalid(
            "spec.deployment.preStopSleepSeconds",
            eff_prestop,
            f"preStopSleepSeconds ({eff_prestop}) must be strictly less than "
            f"terminationGracePeriodSeconds ({eff_grace})",
        )
    harakiri = ((spec.get("apiServer") or {}).get("uwsgi") or {}).get("harakiri")
    if harakiri is not None and harakiri >= eff_grace - eff_prestop:
        yield fe.invalid(
            "spec.apiServer.uwsgi.harakiri",
            harakiri,
            f"harakiri ({harakiri}) must be strictly less than terminationGracePeriodSeconds - "
            f"preStopSleepSeconds ({eff_grace - eff_prestop}), so a request uWSGI kills still "
            "ends before the pod is killed",
        )


def check_strategy(spec, ctx, meta) -> Iterable[fe.FieldError]:
    strategy = (spec.get("deployment") or {}).get("strategy") or {}
    if strategy.get("type") == "Recreate" and strategy.get("rollingUpdate") is not None:
        yield fe.invalid(
            "spec.deployment.strategy.rollingUpdate",
            strategy["rollingUpdate"],
            "rollingUpdate must not be set when strategy.type is Recreate",
        )


def check_autoscaling(spec, ctx, meta) -> Iterable[fe.FieldError]:
    scaling = spec.get("autoscaling")
    if scaling is None:
        return
    path = "spec.autoscaling"
    high = scaling.get("maxReplicas", 0)
    low = scaling.get("minReplicas")
    if high < 1:
        yield fe.invalid(f"{path}.maxReplicas", high, "maxReplicas must be at least 1")
    if low is not None:
        if low < 1:
            yield fe.invalid(f"{path}.minReplicas", low, "minReplicas must be at least 1")
        if low > high:
            yield fe.invalid(f"{path}.minReplicas", low, "minReplicas must not exceed maxReplicas")
    else:
        replicas = (spec.get("deployment") or {}).get("replicas", DEFAULT_REPLICAS)
        if replicas > high:
            yield fe.invalid(
                f"{path}.maxReplicas",
                high,
                f"maxReplicas must be >= spec.deployment.replicas ({replicas}) when minReplicas "
                "is not set, because minReplicas defaults to spec.deployment.replicas",
            )
    targets = ("targetCPUUtilization", "targetMemoryUtilization")
    for target in targets:
        value = scaling.get(target)
        if value is not None and not 1 <= value <= 100:
            yield fe.invalid(f"{path}.{target}", value, f"{target} must be between 1 and 100")
    if all(scaling.get(t) is None for t in targets):
        yield fe.required(
            path, "at least one of targetCPUUtilization or targetMemoryUtilization must be set"
        )


def check_network_and_gateway(spec, ctx, meta) -> Iterable[fe.FieldError]:
    policy = spec.get("networkPolicy")
    if policy is not None and not policy.get("ingress"):
        yield fe.required(
            "spec.networkPolicy.ingress", "at least one ingress source must be specified"
        )
    gateway = spec.get("gateway")
    if gateway is not None:
        if not gateway.get("hostname"):
            yield fe.required(
                "spec.gateway.hostname", "hostname must be set when spec.gateway is configured"
            )
        if not (gateway.get("parentRef") or {}).get("name"):
            yield fe.required(
                "spec.gateway.parentRef.name",
                "parentRef.name must be set when spec.gateway is configured",
            )


def check_import_filtering(spec, ctx, meta) -> Iterable[fe.FieldError]:
    filtering = spec.get("importFiltering") or {}
    path = "spec.importFiltering"
    for allow, deny in FILTER_PAIRS:
        if filtering.get(allow) and filtering.get(deny):
            yield fe.invalid(
                f"{path}.{deny}",
                filtering[deny],
                f"{allow} and {deny} are mutually exclusive: glance ignores the deny-list when "
                "the allow-list is non-empty",
            )
    for name in (
        "allowedSchemes",
        "disallowedSchemes",
        "allowedHosts",
        "disallowedHosts",
        "allowedPorts",
        "disallowedPorts",
    ):
        items = filtering.get(name) or []
        here = f"{path}.{name}"
        if len(items) > FILTER_LIST_MAX:
            yield fe.too_many(here, len(items), FILTER_LIST_MAX)
        for i, item in enumerate(items):
            yield from _check_filter_item(name, fe.index(here, i), item)


def _check_filter_item(name: str, path: str, item: Any) -> Iterable[fe.FieldError]:
    if name.endswith("Schemes") and item not in FILTER_SCHEMES:
        yield fe.not_supported(path, _echo(item), list(FILTER_SCHEMES))
    elif name.endswith("Ports") and not 1 <= item <= 65535:
        yield fe.invalid(path, item, "port must be between 1 and 65535")
    elif name.endswith("Hosts"):
        if not item:
            yield fe.invalid(path, item, "host must not be empty")
        elif _has_control(item):
            yield fe.invalid(path, _echo(item), _verbatim_detail("host", "[import_filtering_opts]"))
        elif len(item) > HOST_MAX:
            yield fe.invalid(path, _echo(item), f"host must be at most {HOST_MAX} characters")


def check_import_methods(spec, ctx, meta) -> Iterable[fe.FieldError]:
    """``importMethods``: known methods, each once, not empty (the CRD says the same)."""
    methods = spec.get("importMethods")
    if methods is None:
        return
    path = "spec.importMethods"
    if not methods:
        yield fe.invalid(
            path,
            methods,
            "must name at least one import method; leave spec.importMethods unset for the "
            "default [web-download, copy-image]",
        )
    seen = set()
    for i, method in enumerate(methods):
        here = fe.index(path, i)
        if method not in IMPORT_METHODS:
            yield fe.not_supported(here, _echo(method), list(IMPORT_METHODS))
        elif method in seen:
            yield fe.duplicate(here, method)
        seen.add(method)


def check_import_plugins(spec, ctx, meta) -> Iterable[fe.FieldError]:
    plugins = spec.get("importPlugins") or {}
    path = "spec.importPlugins"
    conversion = plugins.get("conversion")
    fmt = (conversion or {}).get("outputFormat")
    if fmt and fmt not in OUTPUT_FORMATS:
        yield fe.not_supported(f"{path}.conversion.outputFormat", _echo(fmt), list(OUTPUT_FORMATS))
    inject = plugins.get("injectMetadata")
    if inject is not None:
        yield from _check_inject(inject, f"{path}.injectMetadata")


def _check_inject(inject: Mapping[str, Any], path: str) -> Iterable[fe.FieldError]:
    properties = inject.get("properties") or {}
    props_path = f"{path}.properties"
    if not properties:
        yield fe.required(
            props_path,
            "at least one property must be set: the inject_image_metadata plugin has nothing "
            "to inject otherwise",
        )
    elif len(properties) > INJECT_MAX:
        yield fe.too_many(props_path, len(properties), INJECT_MAX)
    for name in sorted(properties):
        if not name:
            yield fe.invalid(props_path, name, "property name must not be empty")
            continue
        here = fe.key(props_path, fe.truncate(name))
        problem = _property_name_problem(name)
        if problem:
            yield fe.invalid(here, _echo(name), problem)
        value = str(properties[name])
        problem = _property_value_problem(value)
        if problem:
            yield fe.invalid(here, _echo(value), problem)
    roles = inject.get("ignoreUserRoles") or []
    if len(roles) > INJECT_MAX:
        yield fe.too_many(f"{path}.ignoreUserRoles", len(roles), INJECT_MAX)
    for i, role in enumerate(roles):
        problem = _role_problem(role)
        if problem:
            yield fe.invalid(fe.index(f"{path}.ignoreUserRoles", i), _echo(role), problem)


# The oslo Dict syntax of [inject_metadata_properties] inject splits pairs on commas and
# each pair on its first colon; ignore_user_roles is a comma-separated list. The texts are
# the reference webhook's (validateImportInjectProperty, validateImportInjectMetadata).
INJECT_WHERE = "[inject_metadata_properties] inject"


def _property_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an injected property's name, or None."""
    if _has_control(name):
        return _verbatim_detail("property name", INJECT_WHERE)
    if ":" in name:
        return (
            "property name must not contain a colon: the oslo Dict syntax splits each pair on "
            "the first colon, so the name would be silently truncated there and its remainder "
            "injected as part of the value"
        )
    if "," in name:
        return (
            "property name must not contain a comma: the oslo Dict syntax separates pairs on "
            "commas, so the name would be split into a property of its own"
        )
    if name != name.strip():
        return (
            "property name must not start or end with whitespace: the oslo parser strips it, "
            "so the injected property name would differ from the one stored here"
        )
    if len(name) > INJECT_TEXT_MAX:
        return f"property name must be at most {INJECT_TEXT_MAX} characters"
    return None


def _property_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be an injected property's value (a colon is fine), or None."""
    if _has_control(value):
        return _verbatim_detail("property value", INJECT_WHERE)
    if "," in value:
        return (
            "property value must not contain a comma: the oslo Dict syntax separates pairs on "
            "commas, so the value would be cut short and its remainder read as another property"
        )
    if value != value.strip():
        return (
            "property value must not start or end with whitespace: the oslo parser strips it, "
            "so the injected value would differ from the one stored here"
        )
    if len(value) > INJECT_TEXT_MAX:
        return f"property value must be at most {INJECT_TEXT_MAX} characters"
    return None


def _role_problem(role: str) -> str | None:
    """Why ``role`` cannot be an entry of ignore_user_roles, or None."""
    if not role:
        return "role must not be empty"
    if _has_control(role):
        return _verbatim_detail("role", "[inject_metadata_properties]")
    if "," in role:
        return (
            "role must not contain a comma: the rendered ignore_user_roles list separates "
            "roles on commas, so the entry would be read as two roles"
        )
    if len(role) > INJECT_TEXT_MAX:
        return f"role must be at most {INJECT_TEXT_MAX} characters"
    return None


def check_decompression_staging(spec, ctx, meta) -> Iterable[fe.FieldError]:
    if (spec.get("importPlugins") or {}).get("decompression") is None:
        return
    staging = spec.get("staging") or {}
    if staging.get("sizeLimit") is None and not staging.get("unbounded"):
        yield fe.required(
            "spec.staging.sizeLimit",
            "must be set explicitly while importPlugins.decompression is enabled: the plugin "
            "expands the staged image by a ratio the caller picks and nothing caps the result, "
            "and breaching this bound evicts the glance-api pod together with every other "
            f"in-flight import on that replica, so the {DEFAULT_STAGING_SIZE} default cannot be "
            "assumed to fit the largest UNPACKED image (set staging.unbounded to deliberately "
            "keep no bound instead)",
        )


def check_db_purge(spec, ctx, meta) -> Iterable[fe.FieldError]:
    purge = spec.get("dbPurge") or {}
    days = purge.get("retentionDays")
    if days is not None and days < 1:
        yield fe.invalid("spec.dbPurge.retentionDays", days, "retentionDays must be at least 1")
    schedule = purge.get("schedule")
    if schedule:
        try:
            parse_standard(schedule)
        except ValueError as exc:
            yield fe.invalid(
                "spec.dbPurge.schedule", _echo(schedule), f"invalid cron expression: {exc}"
            )


def check_volumes(spec, ctx, meta) -> Iterable[fe.FieldError]:
    staging = spec.get("staging") or {}
    exclusive = staging.get("unbounded") and staging.get("sizeLimit") is not None
    if exclusive:
        yield fe.invalid(
            "spec.staging.unbounded",
            staging["unbounded"],
            "unbounded and sizeLimit are mutually exclusive: an unbounded staging area has no "
            "size limit to configure",
        )
    for path, value in (
        ("spec.staging.sizeLimit", None if exclusive else staging.get("sizeLimit")),
        ("spec.imageCache.sizeLimit", (spec.get("imageCache") or {}).get("sizeLimit")),
    ):
        if value is None:
            continue
        size, error = _quantity(path, value)
        if error:
            yield error
        elif size < MIN_VOLUME:
            yield fe.invalid(path, go_quantity_string(value), "must be at least 1Mi")
    interval = (spec.get("imageCache") or {}).get("maintenanceInterval")
    if interval is not None:
        path = "spec.imageCache.maintenanceInterval"
        try:
            seconds = parse_duration(interval)
        except ValueError as exc:
            yield fe.invalid(path, _echo(interval), str(exc))
        else:
            if seconds < MIN_MAINTENANCE_SECONDS:
                yield fe.invalid(path, format_duration(seconds), "must be at least 1m0s")


def check_middleware(spec, ctx, meta) -> Iterable[fe.FieldError]:
    if spec.get("imageCache") is None:
        return
    for i, middleware in enumerate(spec.get("middleware") or []):
        if middleware.get("name") == "cache":
            yield fe.invalid(
                f"spec.middleware[{i}].name",
                "cache",
                'the operator injects the "cache" paste filter and owns that filter name while '
                "spec.imageCache is set: rename this middleware or unset spec.imageCache",
            )


def check_extra_config_shape(spec, ctx, meta) -> Iterable[fe.FieldError]:
    path = "spec.extraConfig"
    for section in sorted(spec.get("extraConfig") or {}):
        here = fe.key(path, section)
        if not section:
            yield fe.invalid(path, section, "extraConfig section name must not be empty")
            continue
        if _has_control(section):
            yield fe.invalid(
                path,
                _echo(section),
                "extraConfig section name must not contain a newline or carriage return",
            )
            continue
        for key, value in sorted((spec["extraConfig"][section] or {}).items()):
            if not key:
                yield fe.invalid(here, key, "extraConfig key must not be empty")
            elif _has_control(key) or _has_control(str(value)):
                yield fe.invalid(
                    fe.key(here, key),
                    _echo(key),
                    "extraConfig key and value must not contain a newline or carriage return: "
                    "the rendered INI writes them verbatim, so a newline injects arbitrary "
                    "config lines",
                )


def check_extra_config_owned(spec, ctx, meta) -> Iterable[fe.FieldError]:
    for section, options in sorted((spec.get("extraConfig") or {}).items()):
        for key in sorted(options or {}):
            entry = owned_key(section, key)
            if entry is not None and entry.rejected:
                yield fe.forbidden(
                    fe.key(fe.key("spec.extraConfig", section), key),
                    rejected_override_message(entry),
                )


def check_resources(spec, ctx, meta) -> Iterable[fe.FieldError]:
    resources = (spec.get("deployment") or {}).get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    for name in sorted(requests):
        if name not in limits:
            continue
        path = fe.child("spec.deployment.resources.requests", name)
        request, error = _quantity(path, requests[name])
        limit, limit_error = _quantity(
            fe.child("spec.deployment.resources.limits", name), limits[name]
        )
        if error or limit_error:
            yield from (e for e in (error, limit_error) if e)
        elif request > limit:
            yield fe.invalid(
                path,
                go_quantity_string(requests[name]),
                f"{name} request must not exceed limit ({go_quantity_string(limits[name])})",
            )


def check_priority_class(spec, ctx, meta) -> Iterable[fe.FieldError]:
    name = (spec.get("deployment") or {}).get("priorityClassName")
    if name and ctx.priority_class_exists is not None and not ctx.priority_class_exists(name):
        yield fe.not_found("spec.deployment.priorityClassName", name)


def check_topology_spread(spec, ctx, meta) -> Iterable[fe.FieldError]:
    constraints = (spec.get("deployment") or {}).get("topologySpreadConstraints") or []
    want = {POD_NAME_LABEL: "glance", POD_INSTANCE_LABEL: meta.get("name", "")}
    # Go's %v of a map[string]string: map[k1:v1 k2:v2], keys sorted.
    shown = "map[" + " ".join(f"{k}:{v}" for k, v in sorted(want.items())) + "]"
    for i, constraint in enumerate(constraints):
        path = f"spec.deployment.topologySpreadConstraints[{i}].labelSelector"
        selector = constraint.get("labelSelector")
        if selector is None:
            yield fe.required(path, "labelSelector is required on each TopologySpreadConstraint")
            continue
        if (selector.get("matchLabels") or {}) != want:
            yield fe.invalid(
                path,
                selector.get("matchLabels") or {},
                f"labelSelector.matchLabels must equal the Deployment selector labels {shown}",
            )
        if selector.get("matchExpressions"):
            yield fe.invalid(
                f"{path}.matchExpressions",
                selector["matchExpressions"],
                "matchExpressions are not allowed; labelSelector must use matchLabels only",
            )


# ---------------------------------------------------------------------------------------
# rules on create only, or on update under a condition


def check_name_length(spec, ctx, meta) -> Iterable[fe.FieldError]:
    name = meta.get("name", "")
    if ctx.operation == "CREATE" and len(name) > MAX_NAME_LENGTH:
        yield fe.invalid(
            "metadata.name",
            _echo(name),
            f"name must be at most {MAX_NAME_LENGTH} characters: the db-purge CronJob appends "
            '"-db-purge" and Kubernetes caps CronJob names at 52 characters',
        )


# The CRD's transition rules say "targetClusterRef is immutable"; the webhook adds why.
TARGET_ADDED_OR_REMOVED = (
    "targetClusterRef is immutable (adding or removing it after creation is not permitted)"
)
TARGET_RENAMED = (
    "targetClusterRef is immutable (the children already exist on the previously named cluster)"
)


def check_target_cluster_ref_unchanged(spec, ctx, meta) -> Iterable[fe.FieldError]:
    """Update only: the ref stays as created, neither added, removed nor renamed.

    The webhook's copy of the CRD's two transition rules on ``spec``, worded as the
    reference webhook words them, for an object that bypassed them: the children already
    live on the cluster the stored object names.
    """
    if not ctx.is_update:
        return
    ref = spec.get("targetClusterRef")
    old_ref = ((ctx.old or {}).get("spec") or {}).get("targetClusterRef")
    if (ref is None) != (old_ref is None):
        value = None if ref is None else "object"
        yield fe.invalid("spec.targetClusterRef", value, TARGET_ADDED_OR_REMOVED)
    elif ref is not None and ref.get("name") != old_ref.get("name"):
        yield fe.invalid("spec.targetClusterRef.name", _echo(ref.get("name")), TARGET_RENAMED)


def _catalog_inputs(spec: Mapping[str, Any]) -> tuple:
    sections = sorted(p.get("configSection", "") for p in spec.get("plugins") or [])
    return (spec.get("extraConfig") or {}, spec.get("openStackRelease"), sections)


def catalog_check_due(spec: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    """Create, or an update that changes extraConfig, the release or the plugin sections."""
    if not ctx.is_update:
        return True
    return _catalog_inputs(spec) != _catalog_inputs((ctx.old or {}).get("spec") or {})


def check_option_catalog(spec, ctx, meta) -> tuple[list[fe.FieldError], list[str]]:
    if not catalog_check_due(spec, ctx):
        return [], []
    exempt = {p.get("configSection") for p in spec.get("plugins") or []}
    return check_extra_config(
        spec.get("extraConfig") or {},
        spec.get("openStackRelease", ""),
        ctx.catalogs or {},
        exempt_sections=exempt,
    )


GLANCE_RULES: tuple[Callable[..., Iterable[fe.FieldError]], ...] = (
    check_name_length,
    check_target_cluster_ref_unchanged,
    check_replicas,
    check_image,
    check_database,
    check_cache,
    check_secret_store_ref,
    check_target_cluster_ref,
    check_keystone_endpoints,
    check_logging,
    check_termination,
    check_strategy,
    check_autoscaling,
    check_network_and_gateway,
    check_import_filtering,
    check_import_methods,
    check_import_plugins,
    check_decompression_staging,
    check_db_purge,
    check_volumes,
    check_middleware,
    check_extra_config_shape,
    check_extra_config_owned,
    check_resources,
    check_priority_class,
    check_topology_spread,
)


# ---------------------------------------------------------------------------------------
# warnings


def _go_list(values: Iterable[Any]) -> str:
    """Go's ``%v`` of a slice of strings or integers: ``[http https]``."""
    return "[" + " ".join(str(v) for v in values) + "]"


def warn_import_filtering(spec: Mapping[str, Any]) -> list[str]:
    """The reference's two warnings (WarnImportFiltering), in its order: a deny-list glance
    never evaluates, then an allow-list widened past the operator default. Ours leaves the
    second out while allowedHosts is pinned: its advice is then already followed."""
    filtering = spec.get("importFiltering") or {}
    path = "spec.importFiltering"
    pairs = (
        ("allowedSchemes", "disallowedSchemes", DEFAULT_ALLOWED_SCHEMES),
        ("allowedPorts", "disallowedPorts", DEFAULT_ALLOWED_PORTS),
    )
    warnings = []
    for allow, deny, default in pairs:
        if filtering.get(deny) and filtering.get(allow) is None:
            warnings.append(
                f"{path}.{deny} is set while {path}.{allow} is unset and therefore resolves to "
                f"the operator default {_go_list(default)}. Glance evaluates a deny-list only "
                "while the matching allow-list is empty, so this list is inert; set "
                f"{path}.{allow} to an explicitly empty list ([]) to make the deny-list "
                "authoritative."
            )
    for allow, _, default in pairs:
        allowed = filtering.get(allow)
        widened = allowed is not None and (not allowed or any(v not in default for v in allowed))
        if widened and not filtering.get("allowedHosts"):
            warnings.append(
                f"{path}.{allow} is set to {_go_list(allowed)}, widening the operator default "
                f"{_go_list(default)}. The scheme and port pin is the primary web-download "
                "control — the link-local metadata endpoint answers on http/80 — and once "
                "widened only the host denylist remains, which matches literally: alternate "
                "spellings of the same address (an integer or IPv4-mapped form, a raw "
                "ClusterIP, a trailing-dot FQDN) are not covered. Confine the reachable "
                "endpoints with spec.networkPolicy.additionalEgress, or pin allowedHosts to the "
                "mirrors imports are supposed to use."
            )
    return warnings


def warn_import_ca_unused(spec: Mapping[str, Any]) -> list[str]:
    """The import CA bundle serves the download methods only: set without either, it is inert."""
    methods = spec.get("importMethods")
    if not spec.get("importCABundleSecretRef") or methods is None:
        return []
    if set(methods) & set(DOWNLOAD_IMPORT_METHODS):
        return []
    return [
        "spec.importCABundleSecretRef has no effect: spec.importMethods enables neither "
        "web-download nor glance-download, the import methods that fetch over HTTPS"
    ]


def warn_retention_lowered(spec: Mapping[str, Any], ctx: AdmissionContext) -> list[str]:
    if not ctx.is_update:
        return []
    old_spec = (ctx.old or {}).get("spec") or {}
    before = (old_spec.get("dbPurge") or {}).get("retentionDays") or DEFAULT_RETENTION_DAYS
    after = (spec.get("dbPurge") or {}).get("retentionDays") or DEFAULT_RETENTION_DAYS
    if after >= before:
        return []
    return [
        f"spec.dbPurge.retentionDays reduced {before} → {after}: the next purge run hard-deletes "
        f"the rows soft-deleted between {after} and {before} days ago, which cannot be undone"
    ]


def validate_glance(
    obj: Mapping[str, Any], ctx: AdmissionContext | None = None
) -> tuple[list[fe.FieldError], list[str]]:
    """Every webhook rule ``obj`` (schema-defaulted and webhook-defaulted) breaks, and warnings."""
    ctx = ctx or AdmissionContext()
    spec = obj.get("spec") or {}
    meta = obj.get("metadata") or {}
    errors: list[fe.FieldError] = []
    for rule in GLANCE_RULES:
        errors.extend(rule(spec, ctx, meta))
    catalog_errors, warnings = check_option_catalog(spec, ctx, meta)
    errors.extend(catalog_errors)
    return (
        errors,
        warn_import_filtering(spec)
        + warn_import_ca_unused(spec)
        + warn_retention_lowered(spec, ctx)
        + warnings,
    )
