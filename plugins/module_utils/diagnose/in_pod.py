# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The checks ``diagnose`` makes from inside one API pod, with Glance's own configuration
and credentials, where Glance stands on the network.

``SCRIPT`` runs in the ``glance-api`` container with the image's Python (``python -B
-c``: nothing is written in the pod, not even bytecode). It reads the configuration the
way oslo.config gives it to Glance - the files of the two config directories the API is
started with, an ``OS_<SECTION>__<OPTION>`` variable before a file (how the pod gets the
database URL and the service user's password) - and prints one JSON line per check:

* ``healthcheck``: the API's ``/healthcheck`` on the pod's port;
* ``database``: a connection with ``[database] connection`` and ``SELECT 1``;
* ``keystone``: a token for the service user of ``[keystone_authtoken]``;
* ``images``: ``GET /v2/images?limit=1`` on the pod's port with that token (an API that
  answers requests with server errors, as a policy it cannot read makes it);
* ``s3``: ``ListObjectsV2`` of one key in each S3 store's bucket, with the store's own keys
  (what ``HeadBucket`` asks, with an error that says which refusal it is);
* ``volume``: the staging and image-cache volumes' use against their ``sizeLimit`` (the
  bytes their files take on disk, as the kubelet counts them; ``filling`` at
  ``FILLING`` of the bound: the kubelet evicts the pod past it).

Each check is bounded (5 s to connect and to read, one attempt; a volume's walk 5 s) and
says ``ok``, or the ``kind`` of failure - ``auth``, ``unreachable``, ``missing`` (the
database), ``bucket``, ``server-error``, ``filling``, ``other`` - with the library's
message. No credential is printed;
``findings.redact`` masks what a library's message might still carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    BACKENDS_DIR,
    CONFIG_DIR,
    IMAGE_PYTHON,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
    IMAGE_CACHE_VOLUME,
    STAGING_VOLUME,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import (
    parse_quantity,
)

TIMEOUT = 5
FILLING = 0.9
"""The share of a volume's bound at which the check says it is filling."""
BOUNDED_VOLUMES = (STAGING_VOLUME, IMAGE_CACHE_VOLUME)

SCRIPT = r"""
import configparser, glob, json, os, sys, time, urllib.request

CONFIG_DIRS, PORT, TIMEOUT = sys.argv[1].split(","), int(sys.argv[2]), float(sys.argv[3])
VOLUMES, FILLING = json.loads(sys.argv[4]), float(sys.argv[5])


def read(dirs):
    parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\0")
    for directory in dirs:
        parser.read(sorted(glob.glob(os.path.join(directory, "*.conf"))))
    return parser


CONF = read(CONFIG_DIRS[:1])
BACKENDS = read(CONFIG_DIRS[1:])


def opt(section, option, default=None, parser=CONF):
    value = os.environ.get("OS_%s__%s" % (section.upper(), option.upper()))
    if value is not None:
        return value
    for name in (section, "DEFAULT"):
        if parser.has_section(name) and parser.has_option(name, option):
            return parser.get(name, option)
    return default


def say(check, subject, kind=None, error=None, **extra):
    print(json.dumps({"check": check, "subject": subject, "ok": kind is None, "kind": kind,
                      "error": (str(error) or repr(error))[:600] if error else None, **extra}))
    sys.stdout.flush()


def healthcheck():
    url = "http://127.0.0.1:%d/healthcheck" % PORT
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
            answer.read()
        say("healthcheck", url)
    except Exception as exc:
        say("healthcheck", url, "unreachable" if isinstance(exc, OSError) else "other", exc)


def database():
    subject = "[database] connection"
    url = opt("database", "connection")
    if not url:
        return say("database", subject, "other", "no [database] connection is configured")
    try:
        import sqlalchemy
        engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": int(TIMEOUT)})
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text("SELECT 1"))
        engine.dispose()
        say("database", subject)
    except Exception as exc:
        code = getattr(getattr(exc, "orig", None), "args", [None])[0]
        kind = {1045: "auth", 1044: "auth", 1049: "missing", 2003: "unreachable",
                2005: "unreachable", 2013: "unreachable"}.get(code, "other")
        say("database", subject, kind, getattr(exc, "orig", None) or exc)


def keystone():
    subject = "[keystone_authtoken] service user"
    try:
        from keystoneauth1 import exceptions, session
        from keystoneauth1.identity import v3
    except ImportError as exc:
        say("keystone", subject, "other", exc)
        return None
    section = "keystone_authtoken"
    auth = v3.Password(
        auth_url=opt(section, "auth_url") or opt(section, "www_authenticate_uri"),
        username=opt(section, "username"),
        password=opt(section, "password"),
        project_name=opt(section, "project_name"),
        user_domain_name=opt(section, "user_domain_name"),
        user_domain_id=opt(section, "user_domain_id"),
        project_domain_name=opt(section, "project_domain_name"),
        project_domain_id=opt(section, "project_domain_id"),
    )
    insecure = str(opt(section, "insecure", "false")).lower() == "true"
    verify = False if insecure else (opt(section, "cafile") or True)
    try:
        token = session.Session(auth=auth, verify=verify, timeout=TIMEOUT).get_token()
        say("keystone", subject)
        return token
    except exceptions.Unauthorized as exc:
        say("keystone", subject, "auth", exc)
    except (exceptions.ConnectFailure, exceptions.ConnectTimeout,
            exceptions.DiscoveryFailure) as exc:
        say("keystone", subject, "unreachable", exc)
    except Exception as exc:
        say("keystone", subject, "other", exc)
    return None


def images(token):
    url = "http://127.0.0.1:%d/v2/images?limit=1" % PORT
    request = urllib.request.Request(url, headers={"X-Auth-Token": token})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            answer.read()
        say("images", "GET /v2/images")
    except urllib.error.HTTPError as exc:
        kind = "server-error" if exc.code >= 500 else "other"
        say("images", "GET /v2/images", kind, "HTTP %d: %s" % (exc.code, exc.read()[:300]))
    except Exception as exc:
        say("images", "GET /v2/images", "unreachable", exc)


def s3():
    for store in BACKENDS.sections():
        host = opt(store, "s3_store_host", parser=BACKENDS)
        if not host:
            continue
        bucket = opt(store, "s3_store_bucket", parser=BACKENDS)
        subject = "store %s (%s, bucket %s)" % (store, host, bucket)
        try:
            import boto3
            from botocore import exceptions
            from botocore.config import Config
        except ImportError as exc:
            say("s3", subject, "other", exc)
            continue
        style = opt(store, "s3_store_bucket_url_format", "auto", parser=BACKENDS)
        style = style if style in ("virtual", "path") else "auto"
        client = boto3.client(
            "s3",
            endpoint_url=host if "://" in host else "http://" + host,
            aws_access_key_id=opt(store, "s3_store_access_key", parser=BACKENDS),
            aws_secret_access_key=opt(store, "s3_store_secret_key", parser=BACKENDS),
            region_name=opt(store, "s3_store_region_name", parser=BACKENDS) or "us-east-1",
            config=Config(connect_timeout=TIMEOUT, read_timeout=TIMEOUT,
                          retries={"max_attempts": 1, "mode": "standard"},
                          s3={"addressing_style": style}),
        )
        try:
            # What HeadBucket asks (s3:ListBucket), with an error body that says which
            # refusal it is (a HEAD answer has none: a bare 403 or 404).
            client.list_objects_v2(Bucket=bucket, MaxKeys=1)
            say("s3", subject)
        except exceptions.ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code"))
            kind = ("auth" if code in ("403", "Forbidden", "AccessDenied", "InvalidAccessKeyId",
                                       "SignatureDoesNotMatch")
                    else "bucket" if code in ("404", "NoSuchBucket", "NotFound") else "other")
            say("s3", subject, kind, exc)
        except (exceptions.EndpointConnectionError, exceptions.ConnectTimeoutError,
                exceptions.ReadTimeoutError) as exc:
            say("s3", subject, "unreachable", exc)
        except Exception as exc:
            say("s3", subject, "other", exc)


def volumes():
    for name, (path, bound) in sorted(VOLUMES.items()):
        subject = "%s (%s)" % (name, path)
        used, deadline = 0, time.monotonic() + TIMEOUT
        try:
            for root, _dirs, files in os.walk(path, onerror=lambda exc: None):
                for entry in [root] + [os.path.join(root, f) for f in files]:
                    try:
                        used += os.lstat(entry).st_blocks * 512
                    except OSError:
                        pass  # gone while walked: a staged file imported, a cache pruned
                if time.monotonic() > deadline:
                    raise TimeoutError("the walk took over %gs" % TIMEOUT)
        except Exception as exc:
            say("volume", subject, "other", exc)
            continue
        said = "%.0f MiB of its %.0f MiB bound (%d%%)" % (used / 2**20, bound / 2**20,
                                                          100 * used // bound)
        filling = used >= FILLING * bound
        say("volume", subject, "filling" if filling else None, said if filling else None,
            used=used, bound=bound)


healthcheck()
database()
token = keystone()
if token:
    images(token)
s3()
volumes()
"""


def command(
    timeout: float = TIMEOUT, volumes: Mapping[str, tuple[str, int]] | None = None
) -> list[str]:
    """What runs in the ``glance-api`` container: the image's Python with ``SCRIPT``;
    ``volumes``: each bounded volume's mount path and bound in bytes (``bounds``)."""
    return [
        IMAGE_PYTHON,
        "-B",
        "-c",
        SCRIPT,
        f"{CONFIG_DIR},{BACKENDS_DIR}",
        str(API_PORT),
        str(timeout),
        json.dumps(dict(volumes or {}), sort_keys=True),
        str(FILLING),
    ]


def bounds(pod: Mapping[str, Any], container: str) -> dict[str, tuple[str, int]]:
    """The staging and image-cache volumes of ``pod`` that have a ``sizeLimit``, by name:
    where ``container`` mounts them and the bound in bytes."""
    spec = pod.get("spec") or {}
    paths = {
        m["name"]: m["mountPath"]
        for c in spec.get("containers") or []
        if c["name"] == container
        for m in c.get("volumeMounts") or []
    }
    out = {}
    for volume in spec.get("volumes") or []:
        name, limit = volume["name"], (volume.get("emptyDir") or {}).get("sizeLimit")
        if name in BOUNDED_VOLUMES and limit and name in paths:
            bound = int(parse_quantity(limit))
            if bound > 0:
                out[name] = (paths[name], bound)
    return out


def parse(stdout: bytes) -> list[dict[str, Any]]:
    """The checks' lines (anything else the interpreter printed is left out)."""
    out = []
    for line in stdout.decode(errors="replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, Mapping) and "check" in item:
            out.append(dict(item))
    return out
