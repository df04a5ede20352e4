"""The rendered Glance configuration files (reference-spec §3 with DECISIONS.md applied).

Every fixture is the builders' GLANCE patched and judged as the API server would store it,
so the renderer sees exactly what the reconcile will see. Objects that admission refuses
(a webhook that was bypassed) are marked as such where a renderer error is pinned.
"""

from __future__ import annotations

import configparser
import copy
import json
import re
import subprocess
import sys

import pytest
import yaml
from support.builders import DELETE, GLANCE, patched

from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import judge
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as cond
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.all_files import (
    config_files,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.api_conf import (
    image_cache_max_size,
    render_glance_api_conf,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.extra_config import (
    extra_config_condition,
    owned_key_overrides,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.import_opts import (
    BASELINE_DISALLOWED_HOSTS,
    import_methods,
    import_plugins,
    resolve_import_filtering,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    ConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.logging_conf import (
    OSLO_DEFAULT_LOG_LEVELS,
    render_logging_conf,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paste_ini import (
    render_paste_ini,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    POLICY_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.policy_yaml import (
    render_policy_yaml,
)

CRD = load_crds()["Glance"]
CTX = AdmissionContext(catalogs=load_catalogs())
ABSENT = object()


def stored(spec_patch: dict | None = None, *, admitted: bool = True) -> dict:
    """GLANCE with ``spec_patch``, as stored; ``admitted=False`` allows a webhook refusal."""
    verdict = judge(CRD, patched(GLANCE, {"spec": spec_patch or {}}), CTX)
    if admitted:
        assert verdict.allowed, verdict.messages()
    assert verdict.object is not None, verdict.messages()
    return verdict.object


def bypassed(spec_patch: dict) -> dict:
    """A stored object edited afterwards, as if the webhook and schema had been bypassed."""
    return patched(stored(), {"spec": spec_patch})


def api_conf(glance: dict, *, backends=("s3-default",), default="s3-default", policy=False) -> str:
    return render_glance_api_conf(
        glance, enabled_backends=list(backends), default_backend=default, policy_rendered=policy
    )


def parse_ini(text: str) -> dict[str, dict[str, str]]:
    """The file as a strict parser reads it: case kept, DEFAULT a section like the others."""
    parser = configparser.ConfigParser(
        interpolation=None, default_section="\0", delimiters=("=",), strict=True
    )
    parser.optionxform = str
    parser.read_string(text)
    return {name: dict(parser[name]) for name in parser.sections()}


def option(text: str, section: str, key: str):
    return parse_ini(text).get(section, {}).get(key, ABSENT)


# --- glance-api.conf: the reference example ----------------------------------------------

REFERENCE_EXAMPLE = """\
[DEFAULT]
debug = false
enabled_backends = store:s3
enabled_import_methods = [web-download,copy-image]
log_config_append = /etc/glance/glance-api.conf.d/logging.conf
use_stderr = true

[database]
connection = mysql+pymysql://placeholder
connection_recycle_time = 600
max_retries = -1

[glance_store]
default_backend = store

[image_import_opts]
image_import_plugins = []

[import_filtering_opts]
allowed_hosts = []
allowed_ports = [443]
allowed_schemes = [https]
disallowed_hosts = [localhost,127.0.0.1,0.0.0.0,::1,169.254.169.254,kubernetes,kubernetes.default,kubernetes.default.svc,kubernetes.default.svc.cluster.local]
disallowed_ports = []
disallowed_schemes = []

[keystone_authtoken]
auth_type = password
auth_url = http://keystone.openstack.svc.cluster.local:5000/v3
memcached_servers = mc:11211
project_domain_name = Default
project_name = service
user_domain_name = Default
username = glance
www_authenticate_uri = http://keystone.openstack.svc.cluster.local:5000/v3

[os_glance_staging_store]
filesystem_store_datadir = /var/lib/glance/staging

[os_glance_tasks_store]
filesystem_store_datadir = /var/lib/glance/tasks-work

[paste_deploy]
config_file = /etc/glance/glance-api.conf.d/glance-api-paste.ini
flavor = keystone
"""


def test_the_reference_example_renders_byte_for_byte_without_workers_and_with_the_logging_file():
    glance = stored(
        {
            "keystoneEndpoint": "http://keystone.openstack.svc.cluster.local:5000/v3",
            "cache": {"servers": DELETE, "clusterRef": {"name": "mc"}},
        }
    )
    assert api_conf(glance, backends=["store"], default="store") == REFERENCE_EXAMPLE


FULL_SAMPLE_CONF = """\
[DEFAULT]
debug = false
default_log_levels = boto3=WARNING,botocore=WARNING,keystonemiddleware.auth_token=INFO
enabled_backends = s3-archive:s3,s3-default:s3
enabled_import_methods = [glance-direct,web-download,copy-image]
image_cache_dir = /var/lib/glance/image-cache
image_cache_driver = sqlite
image_cache_max_size = 17179869184
image_size_cap = 107374182400
log_config_append = /etc/glance/glance-api.conf.d/logging.conf
use_stderr = true
user_storage_quota = 0

[cors]
allowed_origin = https://dashboard.example.com
max_age = 3600

[database]
connection = mysql+pymysql://placeholder
connection_recycle_time = 600
max_retries = -1

[glance_store]
default_backend = s3-default

[image_conversion]
output_format = raw

[image_import_opts]
image_import_plugins = [image_decompression,image_conversion,inject_image_metadata]

[import_filtering_opts]
allowed_hosts = []
allowed_ports = [443]
allowed_schemes = [https]
disallowed_hosts = [localhost,127.0.0.1,0.0.0.0,::1,169.254.169.254,kubernetes,kubernetes.default,kubernetes.default.svc,kubernetes.default.svc.cluster.local,keystone.openstack.svc,rgw.storage.svc]
disallowed_ports = []
disallowed_schemes = []

[inject_metadata_properties]
ignore_user_roles = admin,service
inject = import_source:web-download,support_url:https://support.example.com/images

[keystone_authtoken]
auth_type = password
auth_url = http://keystone.openstack.svc:5000/v3
memcached_servers = memcached:11211
project_domain_name = Default
project_name = service
region_name = RegionOne
user_domain_name = Default
username = glance
www_authenticate_uri = https://identity.example.com/v3

[os_glance_staging_store]
filesystem_store_datadir = /var/lib/glance/staging

[os_glance_tasks_store]
filesystem_store_datadir = /var/lib/glance/tasks-work

[oslo_policy]
policy_file = /etc/glance/glance-api.conf.d/policy.yaml

[paste_deploy]
config_file = /etc/glance/glance-api.conf.d/glance-api-paste.ini
flavor = keystone

[wsgi]
python_interpreter = /var/lib/openstack/bin/python
"""


def full_sample() -> dict:
    docs = yaml.safe_load_all((COLLECTION_ROOT / "config/samples/glance_full.yaml").read_text())
    glance = next(d for d in docs if d["kind"] == "Glance")
    verdict = judge(CRD, glance, CTX)
    assert verdict.allowed, verdict.messages()
    return verdict.object


def full_sample_files(glance: dict | None = None) -> dict[str, str]:
    return config_files(
        glance or full_sample(),
        enabled_backends=["s3-archive", "s3-default"],
        default_backend="s3-default",
    )


def test_the_full_sample_renders_its_pinned_glance_api_conf():
    assert full_sample_files()["glance-api.conf"] == FULL_SAMPLE_CONF


# --- glance-api.conf: conditional keys ---------------------------------------------------

CONDITIONAL_KEYS = [
    ("region unset: no region_name", {}, "keystone_authtoken", "region_name", ABSENT),
    ("region set", {"region": "RegionOne"}, "keystone_authtoken", "region_name", "RegionOne"),
    (
        "memcached servers joined with commas",
        {"cache": {"servers": ["mc-0:11211", "mc-1:11211"]}},
        "keystone_authtoken",
        "memcached_servers",
        "mc-0:11211,mc-1:11211",
    ),
    (
        "memcached clusterRef on port 11211",
        {"cache": {"servers": DELETE, "clusterRef": {"name": "memcached"}}},
        "keystone_authtoken",
        "memcached_servers",
        "memcached:11211",
    ),
    (
        "www_authenticate_uri falls back to keystoneEndpoint",
        {},
        "keystone_authtoken",
        "www_authenticate_uri",
        "http://keystone.openstack.svc:5000/v3",
    ),
    (
        "www_authenticate_uri is the public endpoint when set",
        {"keystonePublicEndpoint": "https://identity.example.com/v3"},
        "keystone_authtoken",
        "www_authenticate_uri",
        "https://identity.example.com/v3",
    ),
    (
        "auth_url stays the internal endpoint",
        {"keystonePublicEndpoint": "https://identity.example.com/v3"},
        "keystone_authtoken",
        "auth_url",
        "http://keystone.openstack.svc:5000/v3",
    ),
    ("password is never rendered", {}, "keystone_authtoken", "password", ABSENT),
    ("debug false by default", {}, "DEFAULT", "debug", "false"),
    ("debug true", {"logging": {"debug": True}}, "DEFAULT", "debug", "true"),
    ("no perLoggerLevels: no default_log_levels", {}, "DEFAULT", "default_log_levels", ABSENT),
    (
        "perLoggerLevels sorted by logger name",
        {"logging": {"perLoggerLevels": {"sqlalchemy": "ERROR", "boto3": "WARNING"}}},
        "DEFAULT",
        "default_log_levels",
        "boto3=WARNING,sqlalchemy=ERROR",
    ),
    (
        "log_config_append in text format",
        {},
        "DEFAULT",
        "log_config_append",
        "/etc/glance/glance-api.conf.d/logging.conf",
    ),
    (
        "log_config_append in json format",
        {"logging": {"format": "json"}},
        "DEFAULT",
        "log_config_append",
        "/etc/glance/glance-api.conf.d/logging.conf",
    ),
    ("use_stderr always", {}, "DEFAULT", "use_stderr", "true"),
    (
        "no workers, even with uWSGI settings",
        {"apiServer": {"uwsgi": {"processes": 4}}},
        "DEFAULT",
        "workers",
        ABSENT,
    ),
    ("no image cache: no cache dir", {}, "DEFAULT", "image_cache_dir", ABSENT),
    ("no image cache: no cache driver", {}, "DEFAULT", "image_cache_driver", ABSENT),
    ("no image cache: no cache size", {}, "DEFAULT", "image_cache_max_size", ABSENT),
    (
        "image cache dir",
        {"imageCache": {}},
        "DEFAULT",
        "image_cache_dir",
        "/var/lib/glance/image-cache",
    ),
    ("image cache driver", {"imageCache": {}}, "DEFAULT", "image_cache_driver", "sqlite"),
    (
        "image cache size of the 10Gi default",
        {"imageCache": {}},
        "DEFAULT",
        "image_cache_max_size",
        "8589934592",
    ),
    (
        "image cache size of 256Mi",
        {"imageCache": {"sizeLimit": "256Mi"}},
        "DEFAULT",
        "image_cache_max_size",
        "214748360",
    ),
    ("no plugins: empty plugin list", {}, "image_import_opts", "image_import_plugins", "[]"),
    ("no conversion: no output_format", {}, "image_conversion", "output_format", ABSENT),
    (
        "conversion defaults to raw",
        {"importPlugins": {"conversion": {}}},
        "image_conversion",
        "output_format",
        "raw",
    ),
    (
        "conversion to qcow2",
        {"importPlugins": {"conversion": {"outputFormat": "qcow2"}}},
        "image_conversion",
        "output_format",
        "qcow2",
    ),
    ("no conversion: no python_interpreter", {}, "wsgi", "python_interpreter", ABSENT),
    (
        "conversion: qemu-img runs under the image's python, not uWSGI's sys.executable",
        {"importPlugins": {"conversion": {}}},
        "wsgi",
        "python_interpreter",
        "/var/lib/openstack/bin/python",
    ),
    ("no injectMetadata: no inject", {}, "inject_metadata_properties", "inject", ABSENT),
    (
        "no injectMetadata: no ignore_user_roles",
        {},
        "inject_metadata_properties",
        "ignore_user_roles",
        ABSENT,
    ),
    (
        "inject properties sorted, no brackets",
        {"importPlugins": {"injectMetadata": {"properties": {"zone": "b", "owner": "ops"}}}},
        "inject_metadata_properties",
        "inject",
        "owner:ops,zone:b",
    ),
    (
        "ignore_user_roles defaults to admin",
        {"importPlugins": {"injectMetadata": {"properties": {"a": "1"}}}},
        "inject_metadata_properties",
        "ignore_user_roles",
        "admin",
    ),
    (
        "ignore_user_roles joined without brackets",
        {
            "importPlugins": {
                "injectMetadata": {"properties": {"a": "1"}, "ignoreUserRoles": ["reader", "admin"]}
            }
        },
        "inject_metadata_properties",
        "ignore_user_roles",
        "reader,admin",
    ),
    (
        "ignore_user_roles empty for an explicit empty list",
        {"importPlugins": {"injectMetadata": {"properties": {"a": "1"}, "ignoreUserRoles": []}}},
        "inject_metadata_properties",
        "ignore_user_roles",
        "",
    ),
    ("no policy: no policy_file", {}, "oslo_policy", "policy_file", ABSENT),
]


@pytest.mark.parametrize(
    ("spec_patch", "section", "key", "expected"),
    [case[1:] for case in CONDITIONAL_KEYS],
    ids=[case[0] for case in CONDITIONAL_KEYS],
)
def test_conditional_key(spec_patch, section, key, expected):
    assert option(api_conf(stored(spec_patch)), section, key) == expected


def test_an_empty_value_renders_without_trailing_whitespace():
    glance = stored(
        {"importPlugins": {"injectMetadata": {"properties": {"a": "1"}, "ignoreUserRoles": []}}}
    )
    assert "\nignore_user_roles =\n" in api_conf(glance)


def test_the_policy_file_is_forced_only_when_a_policy_is_rendered():
    text = api_conf(stored(), policy=True)
    assert option(text, "oslo_policy", "policy_file") == "/etc/glance/glance-api.conf.d/policy.yaml"


def test_enabled_backends_keep_the_given_order_and_default_backend_is_rendered_as_given():
    text = api_conf(stored(), backends=["b-store", "a-store"], default="a-store")
    assert option(text, "DEFAULT", "enabled_backends") == "b-store:s3,a-store:s3"
    assert option(text, "glance_store", "default_backend") == "a-store"


def test_the_database_keys_never_carry_the_real_dsn():
    ini = parse_ini(api_conf(stored()))
    assert ini["database"] == {
        "connection": "mysql+pymysql://placeholder",
        "connection_recycle_time": "600",
        "max_retries": "-1",
    }


def test_sections_are_in_byte_order_with_default_first_and_keys_sorted():
    glance = stored(
        {
            "plugins": [{"name": "a", "configSection": "Zeta", "config": {"b": "1", "a": "2"}}],
            "extraConfig": {"DEFAULT": {"image_size_cap": "1"}},
        }
    )
    text = api_conf(glance)
    headers = [line for line in text.splitlines() if line.startswith("[")]
    assert headers[0] == "[DEFAULT]"
    assert headers[1:] == sorted(headers[1:])
    for body in text.split("\n\n"):
        keys = [line.split(" = ")[0].rstrip(" =") for line in body.splitlines()[1:]]
        assert keys == sorted(keys)
    assert text.endswith("\n") and not text.endswith("\n\n")


# --- import filtering (§1.2.1) -----------------------------------------------------------

BASELINE = list(BASELINE_DISALLOWED_HOSTS)
DEFAULT_FILTERS = {
    "allowed_schemes": ["https"],
    "disallowed_schemes": [],
    "allowed_hosts": [],
    "disallowed_hosts": BASELINE,
    "allowed_ports": ["443"],
    "disallowed_ports": [],
}

FILTERING = [
    ("unset resolves to the defaults", None, {}),
    ("an empty block resolves to the defaults", {}, {}),
    ("explicit empty allowedSchemes is honoured", {"allowedSchemes": []}, {"allowed_schemes": []}),
    (
        "allowedSchemes values",
        {"allowedSchemes": ["http", "https"]},
        {"allowed_schemes": ["http", "https"]},
    ),
    ("explicit empty allowedPorts is honoured", {"allowedPorts": []}, {"allowed_ports": []}),
    (
        "ports are rendered as text",
        {"allowedPorts": [443, 8443]},
        {"allowed_ports": ["443", "8443"]},
    ),
    (
        "disallowedSchemes with the allow-list emptied",
        {"allowedSchemes": [], "disallowedSchemes": ["http"]},
        {"allowed_schemes": [], "disallowed_schemes": ["http"]},
    ),
    (
        "disallowedPorts with the allow-list emptied",
        {"allowedPorts": [], "disallowedPorts": [22, 25]},
        {"allowed_ports": [], "disallowed_ports": ["22", "25"]},
    ),
    (
        "explicit empty disallowedHosts turns the baseline off",
        {"disallowedHosts": []},
        {"disallowed_hosts": []},
    ),
    (
        "user hosts follow the baseline, deduplicated",
        {"disallowedHosts": ["evil.example", "localhost", "evil.example", "rgw.storage.svc"]},
        {"disallowed_hosts": [*BASELINE, "evil.example", "rgw.storage.svc"]},
    ),
    (
        "allowedHosts empties disallowedHosts",
        {"allowedHosts": ["mirror.example.com"]},
        {"allowed_hosts": ["mirror.example.com"], "disallowed_hosts": []},
    ),
    (
        "explicit empty allowedHosts keeps the baseline",
        {"allowedHosts": []},
        {},
    ),
    (
        "setting one list never widens another",
        {"allowedSchemes": ["http"]},
        {"allowed_schemes": ["http"]},
    ),
]


@pytest.mark.parametrize(
    ("filtering", "changes"),
    [case[1:] for case in FILTERING],
    ids=[case[0] for case in FILTERING],
)
def test_import_filtering_resolution(filtering, changes):
    glance = stored({} if filtering is None else {"importFiltering": filtering})
    resolved = resolve_import_filtering(glance["spec"])
    assert resolved == {**DEFAULT_FILTERS, **changes}
    ini = parse_ini(api_conf(glance))["import_filtering_opts"]
    assert ini == {key: "[" + ",".join(values) + "]" for key, values in resolved.items()}


# --- import plugins (§1.2.2) -------------------------------------------------------------

STAGED = {"staging": {"sizeLimit": "20Gi"}}
PLUGINS = [
    ("none", {}, []),
    ("empty block", {"importPlugins": {}}, []),
    ("conversion only", {"importPlugins": {"conversion": {}}}, ["image_conversion"]),
    (
        "fixed order whatever the block order",
        {
            **STAGED,
            "importPlugins": {
                "injectMetadata": {"properties": {"a": "1"}},
                "decompression": {},
            },
        },
        ["image_decompression", "inject_image_metadata"],
    ),
    (
        "all three",
        {
            **STAGED,
            "importPlugins": {
                "injectMetadata": {"properties": {"a": "1"}},
                "conversion": {"outputFormat": "raw"},
                "decompression": {},
            },
        },
        ["image_decompression", "image_conversion", "inject_image_metadata"],
    ),
]


@pytest.mark.parametrize(
    ("spec_patch", "expected"), [c[1:] for c in PLUGINS], ids=[c[0] for c in PLUGINS]
)
def test_import_plugins_render_in_glance_order(spec_patch, expected):
    glance = stored(spec_patch)
    assert import_plugins(glance["spec"]) == expected
    rendered = option(api_conf(glance), "image_import_opts", "image_import_plugins")
    assert rendered == "[" + ",".join(expected) + "]"


# --- import methods ----------------------------------------------------------------------

METHODS = [
    ("unset-is-the-design-default", {}, ["web-download", "copy-image"]),
    ("glance-direct-opt-in", {"importMethods": ["glance-direct"]}, ["glance-direct"]),
    (
        "any-order-renders-in-glance-order",
        {"importMethods": ["glance-download", "copy-image", "glance-direct", "web-download"]},
        ["glance-direct", "web-download", "copy-image", "glance-download"],
    ),
    (
        "widened-default",
        {"importMethods": ["copy-image", "web-download", "glance-direct"]},
        ["glance-direct", "web-download", "copy-image"],
    ),
    ("web-download-dropped", {"importMethods": ["copy-image"]}, ["copy-image"]),
]


@pytest.mark.parametrize(
    ("spec_patch", "expected"), [c[1:] for c in METHODS], ids=[c[0] for c in METHODS]
)
def test_enabled_import_methods_follow_spec_import_methods(spec_patch, expected):
    glance = stored(spec_patch)
    assert import_methods(glance["spec"]) == expected
    rendered = option(api_conf(glance), "DEFAULT", "enabled_import_methods")
    assert rendered == "[" + ",".join(expected) + "]"


def test_reordering_import_methods_renders_the_same_bytes():
    one = stored({"importMethods": ["glance-direct", "web-download", "copy-image"]})
    other = stored({"importMethods": ["copy-image", "glance-direct", "web-download"]})
    assert api_conf(one) == api_conf(other)


def test_the_pod_url_is_not_in_the_config_files_but_an_override_is_reported():
    assert option(api_conf(stored()), "DEFAULT", "worker_self_reference_url") is ABSENT
    glance = stored(
        {
            "extraConfig": {
                "DEFAULT": {
                    "enabled_import_methods": "[glance-direct]",
                    "worker_self_reference_url": "http://glance:9292",
                }
            }
        }
    )
    assert [(o.key, o.rejected) for o in owned_key_overrides(glance)] == [
        ("enabled_import_methods", False),
        ("worker_self_reference_url", False),
    ]
    message = extra_config_condition(glance)["message"]
    assert "[DEFAULT] enabled_import_methods (overrides spec.importMethods" in message
    assert "OS_DEFAULT__WORKER_SELF_REFERENCE_URL" in message
    assert "needs a staging area shared" not in message


# --- image cache size --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image_cache", "expected"),
    [
        (None, None),
        ({}, 8589934592),
        ({"sizeLimit": "10Gi"}, 8589934592),
        ({"sizeLimit": "256Mi"}, 214748360),
        ({"sizeLimit": "20Gi"}, 17179869184),
        ({"sizeLimit": "1Mi"}, 838856),
        ({"sizeLimit": "1G"}, 800000000),
        ({"sizeLimit": 1073741825}, 858993456),
    ],
    ids=["unset", "default 10Gi", "10Gi", "256Mi", "20Gi", "1Mi", "1G", "integer bytes"],
)
def test_image_cache_max_size_divides_by_ten_first(image_cache, expected):
    glance = stored({} if image_cache is None else {"imageCache": image_cache})
    assert image_cache_max_size(glance["spec"]) == expected


def test_an_unparseable_cache_size_is_a_config_error():
    with pytest.raises(ConfigError, match=r"spec\.imageCache\.sizeLimit"):
        image_cache_max_size({"imageCache": {"sizeLimit": "lots"}})


# --- glance-api-paste.ini (§3.2) ---------------------------------------------------------

DEFAULT_PASTE = """\
[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:healthcheck]
backends = disable_by_file
disable_by_file_path = /tmp/glance-healthcheck-disable
paste.app_factory = oslo_middleware:Healthcheck.app_factory

[composite:glance-api-keystone]
/ = api
/healthcheck = healthcheck
paste.composite_factory = glance.api:root_app_factory

[composite:rootapp]
/ = apiversions
/v2 = apiv2app
paste.composite_factory = glance.api:root_app_factory

[filter:authtoken]
delay_auth_decision = true
paste.filter_factory = keystonemiddleware.auth_token:filter_factory

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory

[filter:cors]
oslo_config_program = glance-api
oslo_config_project = glance
paste.filter_factory = oslo_middleware.cors:filter_factory

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware:HTTPProxyToWSGI.factory

[filter:versionnegotiation]
paste.filter_factory = glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory

[pipeline:api]
pipeline = cors http_proxy_to_wsgi versionnegotiation authtoken context rootapp
"""


def test_the_default_paste_file_mounts_healthcheck_as_an_app_above_the_auth_pipeline():
    assert render_paste_ini(stored()) == DEFAULT_PASTE


MIDDLEWARE = [
    {
        "name": "request_id",
        "filterFactory": "oslo_middleware:RequestId.factory",
        "position": "before",
    },
    {
        "name": "audit",
        "filterFactory": "audit.middleware:filter_factory",
        "position": "after",
        "config": {"audit_map_file": "/etc/glance/audit.yaml", "paste.filter_factory": "evil:x"},
    },
    {
        "name": "sizelimit",
        "filterFactory": "oslo_middleware:RequestBodySizeLimiter.factory",
        "position": "before",
    },
    {
        "name": "tracer",
        "filterFactory": "osprofiler.web:WsgiMiddleware.factory",
        "position": "after",
    },
]


def test_user_middleware_keeps_spec_order_within_before_and_after_and_cache_comes_last():
    ini = parse_ini(render_paste_ini(stored({"middleware": MIDDLEWARE, "imageCache": {}})))
    assert ini["pipeline:api"]["pipeline"] == (
        "request_id sizelimit cors http_proxy_to_wsgi versionnegotiation authtoken context "
        "audit tracer cache rootapp"
    )
    assert ini["filter:cache"] == {
        "paste.filter_factory": "glance.api.middleware.cache:CacheFilter.factory"
    }
    assert ini["filter:audit"] == {
        "audit_map_file": "/etc/glance/audit.yaml",
        "paste.filter_factory": "audit.middleware:filter_factory",
    }
    assert ini["filter:request_id"] == {"paste.filter_factory": "oslo_middleware:RequestId.factory"}


def test_without_image_cache_there_is_no_cache_filter():
    ini = parse_ini(render_paste_ini(stored({"middleware": MIDDLEWARE})))
    assert "filter:cache" not in ini
    assert ini["pipeline:api"]["pipeline"].endswith("context audit tracer rootapp")


def test_a_middleware_named_like_a_static_section_loses_to_the_static_section():
    glance = stored(
        {"middleware": [{"name": "cors", "filterFactory": "mine:f", "position": "after"}]}
    )
    ini = parse_ini(render_paste_ini(glance))
    assert ini["filter:cors"]["paste.filter_factory"] == "oslo_middleware.cors:filter_factory"


PASTE_ERRORS = [
    (
        "duplicate name",
        [
            {"name": "a", "filterFactory": "x:y", "position": "before"},
            {"name": "a", "filterFactory": "x:z", "position": "after"},
        ],
        {},
        'spec.middleware[1].name: duplicate middleware Name "a" in pipeline "api" '
        "(spec.middleware[0] has it too)",
    ),
    (
        "empty name",
        [{"name": "", "filterFactory": "x:y", "position": "before"}],
        {},
        'spec.middleware[0].name: pipeline "api" contains a MiddlewareSpec with an empty Name',
    ),
    (
        "empty factory",
        [{"name": "a", "filterFactory": "", "position": "before"}],
        {},
        'spec.middleware[0].filterFactory: middleware "a" in pipeline "api" has an empty '
        "FilterFactory",
    ),
    (
        "unknown position",
        [{"name": "a", "filterFactory": "x:y", "position": "middle"}],
        {},
        'spec.middleware[0].position: middleware "a" in pipeline "api" has unrecognised '
        'Position "middle" (must be before or after)',
    ),
    (
        "cache while the image cache is set",
        [{"name": "cache", "filterFactory": "x:y", "position": "after"}],
        {"imageCache": {}},
        'spec.middleware[0].name: duplicate middleware Name "cache" in pipeline "api" (the '
        "operator's image cache filter while spec.imageCache is set: rename this middleware)",
    ),
    (
        "a name that cannot be a pipeline entry",
        [{"name": "two words", "filterFactory": "x:y", "position": "after"}],
        {},
        "spec.middleware[0].name: middleware name 'two words' must not contain whitespace or "
        "brackets: it is a pipeline entry and a section name",
    ),
]


@pytest.mark.parametrize(
    ("middleware", "extra", "message"),
    [c[1:] for c in PASTE_ERRORS],
    ids=[c[0] for c in PASTE_ERRORS],
)
def test_paste_renderer_errors(middleware, extra, message):
    glance = bypassed({"middleware": middleware, **extra})
    with pytest.raises(ConfigError) as caught:
        render_paste_ini(glance)
    assert str(caught.value) == message


def test_duplicate_middleware_passes_admission_and_is_refused_by_the_renderer():
    middleware = [
        {"name": "a", "filterFactory": "x:y", "position": "before"},
        {"name": "a", "filterFactory": "x:y", "position": "after"},
    ]
    with pytest.raises(ConfigError, match="duplicate middleware Name"):
        render_paste_ini(stored({"middleware": middleware}))


# --- policy.yaml (§3.4) ------------------------------------------------------------------

CONFIGMAP_POLICY = {
    "policy.yaml": "publicize_image: role:admin\nget_images: ''\ndelete_image: role:admin\n"
}


def with_policy(rules=None, configmap=None) -> dict:
    overrides = {}
    if rules is not None:
        overrides["rules"] = rules
    if configmap is not None:
        overrides["configMapRef"] = {"name": configmap}
    return stored({"policyOverrides": overrides})


def test_no_policy_overrides_renders_no_policy_file():
    glance = stored()
    assert render_policy_yaml(glance, None) is None
    files = config_files(glance, enabled_backends=["s"], default_backend="s")
    assert list(files) == ["glance-api-paste.ini", "glance-api.conf", "logging.conf"]


def test_inline_rules_render_sorted_one_line_each():
    glance = with_policy(rules={"publicize_image": "role:admin", "add_image": "role:member"})
    assert render_policy_yaml(glance, None) == (
        "add_image: role:member\npublicize_image: role:admin\n"
    )


def test_inline_rules_win_over_the_configmap_rules():
    glance = with_policy(
        rules={"get_images": "role:reader", "delete_image": "role:admin or role:owner"},
        configmap="glance-policy",
    )
    data = {"policy.yaml": "publicize_image: role:admin\nget_images: role:member\n"}
    text = render_policy_yaml(glance, data)
    assert yaml.safe_load(text) == {
        "delete_image": "role:admin or role:owner",
        "get_images": "role:reader",
        "publicize_image": "role:admin",
    }
    assert text == (
        "delete_image: role:admin or role:owner\nget_images: role:reader\n"
        "publicize_image: role:admin\n"
    )


def test_rules_that_need_quoting_survive_a_yaml_round_trip():
    rules = {
        "a": "%(project_id)s:project_id",
        "b": "role:admin or (role:member and project_id:%(project_id)s)",
        "c": "@",
        "d": "!",
        "e": "x" * 200,
        "f": "'quoted'",
    }
    text = render_policy_yaml(with_policy(rules=rules), None)
    assert yaml.safe_load(text) == rules
    assert len(text.splitlines()) == len(rules)


POLICY_ERRORS = [
    (
        "ConfigMap missing",
        None,
        "loading policy from ConfigMap: getting ConfigMap openstack/glance-policy: configmaps "
        '"glance-policy" not found (spec.policyOverrides.configMapRef)',
    ),
    (
        "key missing",
        {"other.yaml": "a: b"},
        "loading policy from ConfigMap: ConfigMap openstack/glance-policy does not contain key "
        '"policy.yaml" (spec.policyOverrides.configMapRef)',
    ),
    ("empty map", {"policy.yaml": "{}"}, "policy.yaml holds no rules"),
    (
        "empty text",
        {"policy.yaml": ""},
        'ConfigMap openstack/glance-policy key "policy.yaml" is empty or parsed to nil',
    ),
    (
        "not YAML",
        {"policy.yaml": "a: [b"},
        "from ConfigMap openstack/glance-policy: not valid YAML",
    ),
    ("not a map", {"policy.yaml": "- a\n- b\n"}, ": must be a map of rule name"),
    ("non-string rule", {"policy.yaml": "a: true\n"}, "rule 'a' must map a rule name"),
    ("empty rule", {"policy.yaml": "a: ''\n"}, "rule names and expressions must not be empty"),
]


@pytest.mark.parametrize(
    ("data", "message"), [c[1:] for c in POLICY_ERRORS], ids=[c[0] for c in POLICY_ERRORS]
)
def test_policy_configmap_errors(data, message):
    glance = with_policy(rules={"publicize_image": "role:admin"}, configmap="glance-policy")
    with pytest.raises(ConfigError) as caught:
        render_policy_yaml(glance, data)
    assert message in str(caught.value)
    assert str(caught.value).startswith(
        "spec.policyOverrides" if "must not be empty" in message else "loading policy from"
    )


def test_an_empty_configmap_rule_overridden_inline_is_fine():
    glance = with_policy(rules={"get_images": "role:reader"}, configmap="glance-policy")
    text = render_policy_yaml(glance, CONFIGMAP_POLICY)
    assert yaml.safe_load(text)["get_images"] == "role:reader"


def test_a_rendered_policy_adds_policy_yaml_and_forces_policy_file_over_extra_config():
    glance = stored(
        {
            "policyOverrides": {"rules": {"publicize_image": "role:admin"}},
            "extraConfig": {"oslo_policy": {"policy_file": "/elsewhere.yaml"}},
        }
    )
    files = config_files(glance, enabled_backends=["s"], default_backend="s")
    assert list(files) == ["glance-api-paste.ini", "glance-api.conf", "logging.conf", "policy.yaml"]
    assert files["policy.yaml"] == "publicize_image: role:admin\n"
    assert option(files["glance-api.conf"], "oslo_policy", "policy_file") == POLICY_PATH


# --- logging.conf ------------------------------------------------------------------------

FILECONFIG_PROBE = r"""
import io, json, logging, logging.config, sys, types

formatters = types.ModuleType("oslo_log.formatters")
for name in ("JSONFormatter", "ContextFormatter"):
    setattr(formatters, name, type(name, (logging.Formatter,), {}))
package = types.ModuleType("oslo_log")
package.__path__ = []
package.formatters = formatters
sys.modules["oslo_log"] = package
sys.modules["oslo_log.formatters"] = formatters

logging.config.fileConfig(io.StringIO(sys.stdin.read()), disable_existing_loggers=False)
root = logging.getLogger()
handler = root.handlers[0]
print(json.dumps({
    "root": logging.getLevelName(root.level),
    "levels": {n: logging.getLevelName(logging.getLogger(n).level) for n in json.loads(sys.argv[1])},
    "handlers": [type(h).__name__ for h in root.handlers],
    "stderr": handler.stream is sys.stderr,
    "formatter": type(handler.formatter).__name__,
    "datefmt": handler.formatter.datefmt,
}))
"""


def load_with_fileconfig(text: str, loggers: list[str]) -> dict:
    """``logging.config.fileConfig`` on the rendered text, in a fresh interpreter.

    The oslo_log formatter classes are stand-ins (plain ``logging.Formatter`` subclasses
    of the same dotted names), so the document is loaded exactly as rendered.
    """
    done = subprocess.run(
        [sys.executable, "-c", FILECONFIG_PROBE, json.dumps(loggers)],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


LOGGING = [
    ("text INFO", {}, "INFO", "ContextFormatter"),
    ("text WARNING takes effect", {"level": "WARNING"}, "WARNING", "ContextFormatter"),
    ("json ERROR", {"format": "json", "level": "ERROR"}, "ERROR", "JSONFormatter"),
    ("debug wins over level", {"level": "WARNING", "debug": True}, "DEBUG", "ContextFormatter"),
    ("json debug", {"format": "json", "debug": True}, "DEBUG", "JSONFormatter"),
]


@pytest.mark.parametrize(
    ("logging_spec", "root", "formatter"), [c[1:] for c in LOGGING], ids=[c[0] for c in LOGGING]
)
def test_logging_conf_is_a_fileconfig_document_that_sets_the_level_in_both_formats(
    logging_spec, root, formatter
):
    text = render_logging_conf(stored({"logging": logging_spec}))
    loaded = load_with_fileconfig(text, ["sqlalchemy", "keystonemiddleware"])
    assert loaded == {
        "root": root,
        "levels": {"sqlalchemy": "WARNING", "keystonemiddleware": "WARNING"},
        "handlers": ["StreamHandler"],
        "stderr": True,
        "formatter": formatter,
        "datefmt": "%Y-%m-%d %H:%M:%S",
    }


def test_logging_conf_names_the_oslo_formatter_of_each_format():
    text_ini = parse_ini(render_logging_conf(stored()))
    json_ini = parse_ini(render_logging_conf(stored({"logging": {"format": "json"}})))
    assert text_ini["formatters"] == {"keys": "context"}
    assert text_ini["formatter_context"] == {
        "class": "oslo_log.formatters.ContextFormatter",
        "datefmt": "%Y-%m-%d %H:%M:%S",
    }
    assert json_ini["formatters"] == {"keys": "json"}
    assert json_ini["formatter_json"]["class"] == "oslo_log.formatters.JSONFormatter"
    for ini, formatter in ((text_ini, "context"), (json_ini, "json")):
        assert ini["handlers"] == {"keys": "stderr"}
        assert ini["logger_root"] == {"handlers": "stderr", "level": "INFO"}
        assert ini["handler_stderr"] == {
            "args": "(sys.stderr,)",
            "class": "StreamHandler",
            "formatter": formatter,
            "level": "NOTSET",
        }


def test_logging_conf_starts_with_the_three_lists_of_a_fileconfig_document():
    text = render_logging_conf(stored())
    assert text.startswith("[loggers]\nkeys = root,")
    assert (
        "\n\n[handlers]\nkeys = stderr\n\n[formatters]\nkeys = context\n\n[logger_root]\n" in text
    )


def test_per_logger_levels_get_one_logger_section_each_over_oslo_log_stock_levels():
    per_logger = {
        "keystonemiddleware": "DEBUG",
        "keystonemiddleware.auth_token": "ERROR",
        "glance.api.middleware.cache": "CRITICAL",
    }
    text = render_logging_conf(stored({"logging": {"perLoggerLevels": per_logger}}))
    ini = parse_ini(text)
    assert ini["logger_keystonemiddleware_auth_token"] == {
        "handlers": "",
        "level": "ERROR",
        "qualname": "keystonemiddleware.auth_token",
    }
    names = [*per_logger, "sqlalchemy", "stevedore", "oslo_policy"]
    loaded = load_with_fileconfig(text, names)
    assert loaded["levels"] == {
        **per_logger,
        "sqlalchemy": "WARNING",
        "stevedore": "WARNING",
        "oslo_policy": "INFO",
    }
    keys = ini["loggers"]["keys"].split(",")
    assert keys[0] == "root" and len(keys) == len(set(keys))
    assert {f"logger_{k}" for k in keys} == {s for s in ini if s.startswith("logger_")}


def test_a_per_logger_level_for_root_sets_the_root_level():
    text = render_logging_conf(stored({"logging": {"perLoggerLevels": {"root": "ERROR"}}}))
    assert load_with_fileconfig(text, [])["root"] == "ERROR"


def test_logger_names_that_are_not_identifiers_get_unique_keys_and_their_real_qualname():
    per_logger = {"a.b": "DEBUG", "a_b": "ERROR", "odd name%": "CRITICAL"}
    text = render_logging_conf(stored({"logging": {"perLoggerLevels": per_logger}}))
    assert load_with_fileconfig(text, list(per_logger))["levels"] == per_logger


def test_a_logger_name_with_a_line_break_is_a_config_error():
    glance = stored({"logging": {"perLoggerLevels": {"bad\nname": "DEBUG"}}}, admitted=False)
    with pytest.raises(ConfigError, match=r"spec\.logging\.perLoggerLevels"):
        render_logging_conf(glance)


def test_extra_config_overrides_of_oslo_log_options_take_effect_in_logging_conf():
    glance = stored(
        {
            "logging": {"level": "ERROR", "perLoggerLevels": {"boto3": "INFO"}},
            "extraConfig": {
                "DEFAULT": {
                    "debug": "True",
                    "default_log_levels": "sqlalchemy=INFO, boto=ERROR,urllib3=30",
                    "log_date_format": "%H:%M:%S",
                }
            },
        }
    )
    text = render_logging_conf(glance)
    loaded = load_with_fileconfig(text, ["sqlalchemy", "boto", "urllib3", "boto3", "stevedore"])
    assert loaded["root"] == "DEBUG"
    assert loaded["datefmt"] == "%H:%M:%S"
    # default_log_levels replaces the whole list, as the oslo.log option does
    assert loaded["levels"] == {
        "sqlalchemy": "INFO",
        "boto": "ERROR",
        "urllib3": "WARNING",
        "boto3": "NOTSET",
        "stevedore": "NOTSET",
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"debug": "maybe"}, "spec.extraConfig[DEFAULT][debug]: 'maybe' is not a boolean"),
        ({"default_log_levels": "a=LOUD"}, "logger level 'LOUD' is not one of"),
    ],
    ids=["debug not a boolean", "unknown level"],
)
def test_unusable_oslo_log_overrides_are_config_errors(extra, message):
    glance = stored({"extraConfig": {"DEFAULT": extra}})
    with pytest.raises(ConfigError, match=re.escape(message)):
        render_logging_conf(glance)


def test_the_stock_levels_are_oslo_log_defaults_of_every_supported_release():
    stock = [
        f"{name}={level.replace('WARNING', 'WARN')}" for name, level in OSLO_DEFAULT_LOG_LEVELS
    ]
    for release, catalog in load_catalogs().items():
        default = catalog["sections"]["DEFAULT"]["default_log_levels"]["default"]
        if release == "2025.2":
            assert [e for e in default if e not in stock] == ["amqplib=WARN", "qpid=WARN"]
        else:
            assert default == stock, release


def test_the_full_sample_logging_conf_loads():
    text = full_sample_files()["logging.conf"]
    loaded = load_with_fileconfig(text, ["boto3", "keystonemiddleware.auth_token"])
    assert loaded["formatter"] == "JSONFormatter"
    assert loaded["levels"] == {"boto3": "WARNING", "keystonemiddleware.auth_token": "INFO"}


# --- ExtraConfigHealthy ------------------------------------------------------------------


def test_extra_config_healthy_when_no_owned_key_is_set():
    for glance in (stored(), stored({"extraConfig": {"DEFAULT": {"image_size_cap": "1"}}})):
        assert owned_key_overrides(glance) == []
        assert extra_config_condition(glance) == {
            "type": cond.EXTRA_CONFIG_HEALTHY,
            "status": cond.TRUE,
            "reason": cond.NO_OWNED_KEYS_OVERRIDDEN,
            "message": "spec.extraConfig overrides no operator-owned keys",
        }


def test_owned_key_overrides_are_reported_sorted_with_their_impact():
    glance = stored(
        {
            "extraConfig": {
                "keystone_authtoken": {"auth_url": "http://other:5000/v3"},
                "DEFAULT": {"image_size_cap": "1", "debug": "true"},
            }
        }
    )
    assert extra_config_condition(glance) == {
        "type": cond.EXTRA_CONFIG_HEALTHY,
        "status": cond.FALSE,
        "reason": cond.OWNED_KEYS_OVERRIDDEN,
        "message": "spec.extraConfig overrides operator-owned keys: [DEFAULT] debug (overrides "
        "spec.logging.debug); [keystone_authtoken] auth_url (token validation and the 401 "
        "challenge follow spec.keystoneEndpoint)",
    }
    assert [(o.section, o.key, o.value, o.rejected) for o in owned_key_overrides(glance)] == [
        ("DEFAULT", "debug", "true", False),
        ("keystone_authtoken", "auth_url", "http://other:5000/v3", False),
    ]


def test_rejected_owned_keys_that_slipped_past_admission_are_reported_as_rejected():
    glance = bypassed({"extraConfig": {"keystone_authtoken": {"password": "secret"}}})
    (override,) = owned_key_overrides(glance)
    assert override.rejected
    assert extra_config_condition(glance)["message"] == (
        "spec.extraConfig overrides operator-owned keys: [keystone_authtoken] password (the "
        "middleware password is env-injected via OS_KEYSTONE_AUTHTOKEN__PASSWORD; a file "
        "override is ignored at runtime and leaks credential material into a "
        "namespace-readable ConfigMap)"
    )


def test_owned_keys_are_matched_as_oslo_config_matches_names():
    glance = bypassed({"extraConfig": {"Keystone_Authtoken": {"auth-url": "http://other/v3"}}})
    (override,) = owned_key_overrides(glance)
    assert (override.section, override.key, override.owned.key) == (
        "Keystone_Authtoken",
        "auth-url",
        "auth_url",
    )
    assert option(api_conf(glance), "keystone_authtoken", "auth_url") == "http://other/v3"
    assert "Keystone_Authtoken" not in parse_ini(api_conf(glance))


# --- merge precedence --------------------------------------------------------------------


def test_operator_keys_win_over_plugin_sections():
    glance = stored(
        {
            "plugins": [
                {
                    "name": "p",
                    "configSection": "DEFAULT",
                    "config": {"debug": "true", "p_only": "1"},
                },
                {
                    "name": "q",
                    "configSection": "keystone_authtoken",
                    "config": {"auth_url": "http://plugin/v3"},
                },
            ]
        }
    )
    ini = parse_ini(api_conf(glance))
    assert ini["DEFAULT"]["debug"] == "false"
    assert ini["DEFAULT"]["p_only"] == "1"
    assert ini["keystone_authtoken"]["auth_url"] == "http://keystone.openstack.svc:5000/v3"


def test_extra_config_wins_over_operator_keys_and_plugin_sections():
    glance = stored(
        {
            "plugins": [
                {"name": "cors", "configSection": "cors", "config": {"allowed_origin": "https://a"}}
            ],
            "extraConfig": {
                "cors": {"allowed_origin": "https://b"},
                "keystone_authtoken": {"auth_url": "http://extra/v3"},
                "database": {"max_retries": "10"},
            },
        }
    )
    ini = parse_ini(api_conf(glance))
    assert ini["cors"]["allowed_origin"] == "https://b"
    assert ini["keystone_authtoken"]["auth_url"] == "http://extra/v3"
    assert ini["database"]["max_retries"] == "10"


def test_the_forced_policy_file_wins_over_extra_config():
    glance = stored({"extraConfig": {"oslo_policy": {"policy_file": "/x.yaml"}}})
    assert option(api_conf(glance), "oslo_policy", "policy_file") == "/x.yaml"
    assert option(api_conf(glance, policy=True), "oslo_policy", "policy_file") == POLICY_PATH


@pytest.mark.parametrize(
    ("spec_patch", "message"),
    [
        (
            {"plugins": [{"name": "p", "configSection": "p", "config": {"k": "a\nb"}}]},
            "[p] k: the value must not contain a newline",
        ),
        (
            {"plugins": [{"name": "p", "configSection": "p]x", "config": {"k": "v"}}]},
            "section name 'p]x' cannot be rendered",
        ),
        (
            {"plugins": [{"name": "p", "configSection": "p", "config": {" k": "v"}}]},
            "[p] option name ' k' cannot be rendered",
        ),
    ],
    ids=["line break in a value", "bracket in a section", "leading space in a key"],
)
def test_names_and_values_that_would_break_the_file_are_config_errors(spec_patch, message):
    with pytest.raises(ConfigError) as caught:
        api_conf(bypassed(spec_patch))
    assert message in str(caught.value)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# --- determinism -------------------------------------------------------------------------


def reversed_dicts(value):
    """``value`` with the insertion order of every mapping reversed (lists keep order)."""
    if isinstance(value, dict):
        return {k: reversed_dicts(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_dicts(v) for v in value]
    return value


def test_rendering_is_deterministic_and_ignores_mapping_order():
    glance = full_sample()
    glance["spec"]["policyOverrides"]["configMapRef"] = {"name": "glance-policy"}
    data = {"policy.yaml": "b_rule: role:b\na_rule: role:a\n"}
    first = config_files(
        glance,
        enabled_backends=["s3-archive", "s3-default"],
        default_backend="s3-default",
        policy_configmap_data=data,
    )
    again = config_files(
        copy.deepcopy(glance),
        enabled_backends=["s3-archive", "s3-default"],
        default_backend="s3-default",
        policy_configmap_data=dict(data),
    )
    shuffled = config_files(
        reversed_dicts(glance),
        enabled_backends=["s3-archive", "s3-default"],
        default_backend="s3-default",
        policy_configmap_data=reversed_dicts(data),
    )
    assert first == again == shuffled
    assert extra_config_condition(glance) == extra_config_condition(reversed_dicts(glance))


def test_the_renderer_does_not_modify_its_input():
    glance = full_sample()
    before = copy.deepcopy(glance)
    full_sample_files(glance)
    extra_config_condition(glance)
    assert glance == before


def test_a_dollar_in_a_typed_value_is_escaped_but_extra_config_passes_through():
    glance = stored(
        {
            "importPlugins": {
                "injectMetadata": {"properties": {"price": "5$"}, "ignoreUserRoles": ["$admin"]}
            },
            "extraConfig": {"DEFAULT": {"image_size_cap": "${other}"}},
        }
    )
    conf = api_conf(glance)
    assert "inject = price:5$$\n" in conf
    assert "ignore_user_roles = $$admin\n" in conf
    assert "image_size_cap = ${other}\n" in conf


def test_the_wsgi_python_interpreter_is_an_owned_key_the_conversion_plugin_needs():
    glance = stored({"extraConfig": {"wsgi": {"python_interpreter": "/usr/bin/python3"}}})
    (override,) = owned_key_overrides(glance)
    assert (override.section, override.key, override.rejected) == (
        "wsgi",
        "python_interpreter",
        False,
    )
    assert "qemu-img through the image's Python" in extra_config_condition(glance)["message"]
