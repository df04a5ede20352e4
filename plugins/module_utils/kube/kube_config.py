# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Where the API server is and how to authenticate to it: kubeconfig files, the in-cluster
service account, credentials. ``kube_client`` sends the requests; this module only reads
settings and produces a ``Connection``.

It is our own code over ``yaml``, ``base64``, ``subprocess`` and the standard library, in
place of ``kubernetes.config`` (whose import, through the ``kubernetes`` package, cost a
quarter of a CPU-second in every module's cold process). The rules are client-go's, the
ones kubectl follows; where the ``kubernetes`` Python client (37) differed, the difference
is noted where it is handled.

Where the connection comes from (``load_connection``):

1. an explicit kubeconfig path (a module's ``kubeconfig`` option, the runner's
   ``--kubeconfig``), which must exist, else
2. ``K8S_AUTH_KUBECONFIG`` (what ansible-operator sets), else ``KUBECONFIG`` (a
   colon-separated list, merged as kubectl merges it: for clusters, users and contexts the
   first file to define a name wins; the ``current-context`` is the first file's that sets
   one; files of the list that do not exist are skipped, as kubectl skips them, and a
   list of which none exists is an error naming the variable and its files, where kubectl
   warns "Config not found" and goes on with no cluster), else ``~/.kube/config`` when it
   exists, else
3. the in-cluster service account (``KUBERNETES_SERVICE_HOST``/``_PORT``, the mounted
   token, CA and namespace; the token is read again when it changes, and at least every
   minute, as it rotates).

A relative file path of an entry (``certificate-authority``, ``client-certificate``,
``client-key``, ``tokenFile``, an ``exec`` command with a ``/``) is relative to the
directory of the file that defined the entry (client-go's rule; the ``kubernetes`` client
took the cluster's file for the client certificate too). ``-data`` fields are base64, and
win over their file field when both are set.

Credentials, in the order the ``kubernetes`` client tried them: an ``auth-provider`` (only
``oidc``, through ``kubernetes.config``, imported for such a user alone; any other is
refused with a message, where the library silently sent no credentials), a bearer
``token`` or ``tokenFile`` (read again whenever the file changes: projected tokens
rotate), an ``exec`` credential plugin (``client.authentication.k8s.io``
``ExecCredential``: run at load, so a failing plugin is an error naming the user, the
command and what the plugin wrote on stderr; run again once its ``expirationTimestamp``
has passed), basic auth (ansible-operator's proxy encodes the owner in the user name).
Client certificates: a file entry is a path, loaded from where it is; ``-data`` and an exec
plugin's certificate are kept in memory (``cert_data``/``key_data``, never in a ``repr``)
and never written to a disk: ``kube_client`` loads them into its ``ssl.SSLContext`` once,
when the client is made (see ``load_client_certificate`` there).

Impersonation (``as``, ``as-uid``, ``as-groups``, ``as-user-extra``) is sent as client-go
sends it: the ``Impersonate-User``, ``-Uid``, ``-Group`` (one header a group) and
``Impersonate-Extra-<key>`` headers of every request.

TLS and proxies: ``certificate-authority(-data)``, ``insecure-skip-tls-verify``,
``tls-server-name``; a ``proxy-url`` is always used (HTTP(S) through a CONNECT tunnel;
SOCKS needs PySocks, which is not installed, and is refused with a message). Without one,
``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` and ``NO_PROXY`` of the environment apply as
the ``kubernetes`` client resolved them (``urllib.request.getproxies``, the proxy of the
server's scheme, ``NO_PROXY`` by host, domain suffix, ``host:port`` or CIDR), except that
an API server on loopback is never proxied, as in kubectl.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import importlib.util
import ipaddress
import json
import logging
import os
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
AUTH_PROVIDERS = ("oidc",)
"""The ``auth-provider`` names supported (through ``kubernetes.config``, with what is
installed); any other is refused (``gcp`` needs ``google-auth``, which is not installed;
kubectl dropped it for the ``gke-gcloud-auth-plugin`` exec plugin)."""
IN_CLUSTER_TOKEN_MAX_AGE = 60.0
"""Seconds after which the service account token is read again even if its file looks
unchanged (the ``kubernetes`` client's period; kubelet rotates it long before expiry)."""

log = logging.getLogger(__name__)


class KubeConfigError(Exception):
    """The connection settings cannot be used; the message says which and why."""


# ---------------------------------------------------------------------------------------
# credentials: each gives the value of the Authorization header, now


class Credential:
    """What authenticates the requests: ``authorization()`` is called before each request
    (a credential that expires or rotates renews itself there)."""

    serial = 0
    """Changes whenever the credential changes (an exec plugin run again): a caller that
    saw a 401 passes the serial it sent with to ``refresh``."""

    def authorization(self) -> str | None:
        raise NotImplementedError

    def refresh(self, serial: int) -> bool:
        """The server answered 401 to a request sent with credential ``serial``: renew it
        if it can be renewed; True when the request should be sent again (renewed now, or
        already since that request). Only an exec plugin's can (client-go's rule)."""
        return False

    def client_certificate(self) -> tuple[bytes, bytes] | None:
        """The client certificate and key (PEM) this credential gives, if it gives one."""
        return None

    def __repr__(self) -> str:  # never the secret
        return f"<{type(self).__name__}>"


class StaticCredential(Credential):
    """A kubeconfig ``token`` (``Bearer``) or ``username``/``password`` (``Basic``)."""

    def __init__(self, value: str):
        self._value = value

    @classmethod
    def basic(cls, username: str, password: str) -> StaticCredential:
        # latin-1, as urllib3's make_headers (what the kubernetes client used) encodes it
        token = base64.b64encode(f"{username}:{password}".encode("latin-1")).decode()
        return cls("Basic " + token)

    def authorization(self) -> str | None:
        return self._value


class TokenFileCredential(Credential):
    """A bearer token read from a file, read again whenever the file's mtime changes (and,
    with ``max_age``, at least that often): a kubeconfig ``tokenFile``, the service
    account's token. client-go re-reads both; the ``kubernetes`` client read a kubeconfig
    ``tokenFile`` once. Surrounding whitespace is dropped, as client-go drops it."""

    def __init__(self, path: Path, max_age: float | None = None):
        self.path = path
        self._max_age = max_age
        self._token = self._read()  # at load: a missing or empty file is an error then
        self._mtime = self._stat()
        self._read_at = time.monotonic()

    def _stat(self) -> float | None:
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def _read(self) -> str:
        token = self.path.read_text().strip()
        if not token:
            raise KubeConfigError(f"token file {self.path} is empty")
        return token

    def authorization(self) -> str | None:
        mtime = self._stat()
        stale = self._max_age is not None and time.monotonic() - self._read_at >= self._max_age
        if mtime is not None and (mtime != self._mtime or stale):
            try:
                self._token = self._read()
                self._mtime, self._read_at = mtime, time.monotonic()
            except (OSError, KubeConfigError):
                pass  # mid-rotation: keep the token we have
        return "Bearer " + self._token


EXEC_API_VERSIONS = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
    "client.authentication.k8s.io/v1alpha1",
)


class ExecCredential(Credential):
    """A ``client.authentication.k8s.io`` credential plugin (client-go's exec plugins).

    The plugin runs with ``KUBERNETES_EXEC_INFO`` (the ``ExecCredential`` request:
    ``spec.interactive`` false, and ``spec.cluster`` when ``provideClusterInfo``), the
    process environment plus the entry's ``env``, no stdin; its stdout is the answer, its
    stderr the reason when it fails. The answer's ``status`` is kept until its
    ``expirationTimestamp`` (for ever without one), or until the server answers 401 to it
    (``refresh``, as client-go's exec authenticator does), then the plugin runs again. A
    ``status.token`` is the bearer token; ``clientCertificateData``/``clientKeyData`` (PEM)
    stay in memory (``client_certificate``); each run that changes the credential moves
    ``serial`` on, and the client then makes its TLS context and connections again."""

    def __init__(
        self,
        user_name: str,
        spec: Mapping[str, Any],
        base: Path | None,
        cluster_info: Mapping[str, Any] | None,
    ):
        self.user_name = user_name
        self.command = str(spec.get("command") or "")
        for key in ("command", "apiVersion"):
            if not spec.get(key):
                raise self._error(f"exec: malformed request. missing key {key!r}")
        self.api_version = str(spec["apiVersion"])
        command = self.command
        # client-go resolves a command with a path separator against the kubeconfig's
        # directory; a bare name is looked up on PATH
        if "/" in command and base is not None and not os.path.isabs(command):
            self.command = os.path.normpath(os.path.join(base, command))
        self.args = [str(a) for a in spec.get("args") or []]
        self.env = {str(e["name"]): str(e["value"]) for e in spec.get("env") or []}
        self.install_hint = str(spec.get("installHint") or "")
        self.cluster_info = dict(cluster_info) if spec.get("provideClusterInfo") else None
        self._certificate: tuple[bytes, bytes] | None = None
        self._token: str | None = None
        self._expiry: datetime.datetime | None = None
        self._lock = threading.Lock()
        self._renew()

    def _error(self, reason: str) -> KubeConfigError:
        return KubeConfigError(f"user {self.user_name!r}: exec plugin {self.command}: {reason}")

    def _run(self) -> dict[str, Any]:
        """One run of the plugin; its ``status``, or ``KubeConfigError``."""
        import subprocess  # only where a plugin is configured

        request: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
        if self.cluster_info is not None:
            request["spec"]["cluster"] = self.cluster_info
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(request)}
        try:
            done = subprocess.run(
                [self.command, *self.args],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
            )
        except OSError as exc:
            reason = str(exc) + (f" ({self.install_hint.strip()})" if self.install_hint else "")
            raise self._error(reason) from exc
        if done.returncode != 0:
            # the kubernetes client's wording, which callers have matched on
            reason = f"exec: process returned {done.returncode}"
            if done.stderr.strip():
                reason += f". {done.stderr.strip()}"
            raise self._error(reason)
        try:
            answer = json.loads(done.stdout)
        except ValueError as exc:
            raise self._error(f"exec: failed to decode process output: {exc}") from exc
        if not isinstance(answer, dict):
            raise self._error("exec: the process output is not an ExecCredential")
        for key in ("apiVersion", "kind", "status"):
            if key not in answer:
                raise self._error(f"exec: malformed response. missing key {key!r}")
        if answer["apiVersion"] != self.api_version:
            raise self._error(
                f"exec: plugin api version {answer['apiVersion']} does not match "
                f"{self.api_version}",
            )
        return answer["status"] if isinstance(answer["status"], dict) else {}

    def _renew(self) -> None:
        status = self._run()
        expiry = status.get("expirationTimestamp")
        token, certificate = None, None
        if status.get("token"):
            token = "Bearer " + str(status["token"])
        elif status.get("clientCertificateData"):
            if not status.get("clientKeyData"):
                raise self._error("exec: missing clientKeyData field in plugin output")
            certificate = (
                str(status["clientCertificateData"]).encode(),
                str(status["clientKeyData"]).encode(),
            )
        else:
            raise self._error("exec: missing token or clientCertificateData field in plugin output")
        if (token, certificate) != (self._token, self._certificate):
            self._token, self._certificate = token, certificate
            self.serial += 1
        self._expiry = parse_rfc3339(str(expiry)) if expiry else None

    def _expired(self) -> bool:
        return self._expiry is not None and datetime.datetime.now(datetime.UTC) >= self._expiry

    def _renew_logged(self) -> None:
        try:
            self._renew()
        except KubeConfigError as exc:
            # as client-go and the kubernetes client do: log it, go on with what we have
            # (the API server's 401 then says the rest)
            log.error("%s", exc)

    def authorization(self) -> str | None:
        if self._expired():
            with self._lock:
                if self._expired():
                    self._renew_logged()
        return self._token

    def client_certificate(self) -> tuple[bytes, bytes] | None:
        """The certificate of the last run (``authorization``, called before each request,
        runs the plugin again first when it has expired)."""
        return self._certificate

    def refresh(self, serial: int) -> bool:
        with self._lock:
            if self.serial != serial:
                return True  # another request renewed it already
            self._renew_logged()
            return self.serial != serial


def parse_rfc3339(value: str) -> datetime.datetime:
    """An RFC 3339 timestamp (``2026-01-02T03:04:05Z``, fractions and offsets too), aware."""
    text = value.strip().replace("z", "Z")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        stamp = datetime.datetime.fromisoformat(text)
    except ValueError as exc:
        raise KubeConfigError(f"expirationTimestamp {value!r} is not an RFC 3339 time") from exc
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=datetime.UTC)


class OidcCredential(Credential):
    """The ``oidc`` auth-provider, through ``kubernetes.config`` (the one place the
    ``kubernetes`` package is still imported, and only for such a user): its loader reads
    the ``id-token``, refreshes it with the ``refresh-token`` when the JWT has expired, and
    its refresh hook runs before each request, as before."""

    def __init__(self, user: Mapping[str, Any]):
        try:
            from kubernetes.client import Configuration
            from kubernetes.config.config_exception import ConfigException
            from kubernetes.config.kube_config import KubeConfigLoader
        except ImportError as exc:
            raise KubeConfigError(
                "auth-provider oidc needs the kubernetes Python package, which is not "
                "installed here (the operator image leaves it out: in a pod the runner uses "
                "its service account); install it, or use an exec plugin such as kubelogin"
            ) from exc

        # A kubeconfig of this user alone, on a plain-HTTP placeholder server: the loader
        # then reads no cluster files; the cluster's settings are ours.
        config = {
            "current-context": "oidc",
            "contexts": [{"name": "oidc", "context": {"cluster": "oidc", "user": "oidc"}}],
            "clusters": [{"name": "oidc", "cluster": {"server": "http://oidc.invalid"}}],
            "users": [{"name": "oidc", "user": dict(user)}],
        }
        self._configuration = type.__call__(Configuration)  # never the library's default
        try:
            KubeConfigLoader(config_dict=config, config_base_path=None).load_and_set(
                self._configuration
            )
        except ConfigException as exc:
            raise KubeConfigError(f"auth-provider oidc: {exc}") from exc

    def authorization(self) -> str | None:
        setting = self._configuration.auth_settings().get("BearerToken") or {}
        return setting.get("value")


# ---------------------------------------------------------------------------------------
# the connection


@dataclass
class Connection:
    """Where the API server is, which namespace the context names, and how to reach it:
    TLS (``ca_file`` or ``ca_data``, PEM; none: the system's CAs), the client certificate
    (``cert_file``/``key_file``, a kubeconfig's paths, or ``cert_data``/``key_data`` in
    memory; an exec credential's through ``client_certificate``), the credential giving
    the ``Authorization`` header, the impersonation headers, and the proxy.

    ``proxy_url`` is a kubeconfig's ``proxy-url``, used whatever the host (as in
    client-go). Without it, ``proxy`` and ``no_proxy`` are the environment's, read when the
    connection is made (the proxy of the server's scheme, else ``ALL_PROXY``; none for a
    server on loopback); the client then goes direct to a server ``no_proxy`` names."""

    server: str
    namespace: str = "default"
    source: str = ""
    ca_file: str | None = None
    ca_data: bytes | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = field(default=None, repr=False)
    key_data: bytes | None = field(default=None, repr=False)
    verify: bool = True
    tls_server_name: str | None = None
    proxy_url: str | None = None
    credential: Credential | None = None
    impersonate: tuple[tuple[str, str], ...] = ()
    proxy: str | None = field(init=False, default=None)
    no_proxy: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        proxies = urllib.request.getproxies()
        self.no_proxy = proxies.get("no")
        if self.proxy_url:
            self.proxy = self.proxy_url
        else:
            scheme = urllib.parse.urlsplit(self.server).scheme
            self.proxy = proxies.get(scheme) or proxies.get("all")
            if _on_loopback(self.server):
                self.proxy = None

    def describe(self) -> str:
        return f"{self.server} ({self.source})" if self.source else self.server

    def proxy_for_requests(self) -> str | None:
        """The proxy requests go through: ``proxy_url``, else the environment's unless
        ``NO_PROXY`` names the server."""
        if self.proxy_url:
            return self.proxy_url
        if self.proxy and not should_bypass_proxies(self.server, self.no_proxy or ""):
            return self.proxy
        return None

    def authorization(self) -> str | None:
        """The ``Authorization`` header's value for the next request (the credential
        renews itself first: an expired exec token, a rotated token file)."""
        return self.credential.authorization() if self.credential else None

    def client_certificate(self) -> tuple[str, str | None] | tuple[bytes, bytes] | None:
        """The client certificate now: an exec credential's (PEM, in memory), else the
        kubeconfig's data (PEM, in memory) or its files (paths), else None."""
        given = self.credential.client_certificate() if self.credential else None
        if given is not None:
            return given
        if self.cert_data is not None and self.key_data is not None:
            return self.cert_data, self.key_data
        if self.cert_file:
            return self.cert_file, self.key_file
        return None


def _on_loopback(server: str) -> bool:
    """The server is ``localhost`` or a loopback address.

    For parity with kubectl: Go's ``http.ProxyFromEnvironment`` never proxies ``localhost``
    or a loopback address, whatever ``NO_PROXY`` says, while the ``kubernetes`` client
    applied the environment's proxy to every host ``NO_PROXY`` did not name. A workstation
    with a corporate proxy set and a kind cluster on 127.0.0.1 would otherwise send its
    passes to the proxy. Only for a proxy from the environment (a kubeconfig
    ``proxy-url`` applies to loopback too, as in client-go)."""
    host = (urllib.parse.urlsplit(server).hostname or "").lower()
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def should_bypass_proxies(url: str, no_proxy: str) -> bool:
    """``url`` matches the comma-separated ``no_proxy`` rules (``*``, a host or domain
    suffix, ``host:port``, an IP network): the ``kubernetes`` client's rule, kept."""
    parsed = urllib.parse.urlsplit(url)
    if not parsed.hostname:
        return True
    host = parsed.hostname.lower()
    host_and_port = parsed.netloc.lower()
    try:
        host_ip = ipaddress.ip_address(host)
    except ValueError:
        host_ip = None
    for entry in (entry.strip().lower() for entry in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if host_ip is not None:
            try:
                if host_ip in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
        entry = entry.lstrip(".")
        if (
            host == entry
            or host.endswith("." + entry)
            or host_and_port == entry
            or host_and_port.endswith("." + entry)
        ):
            return True
    return False


# ---------------------------------------------------------------------------------------
# kubeconfig files


def _kubeconfig_files(explicit: str | None, origin: str) -> list[Path]:
    """The kubeconfig files to merge, by client-go's rules (module docstring); ``origin``
    names where ``explicit`` came from. Empty: none is configured (the service account)."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.exists():
            raise KubeConfigError(f"kubeconfig {path} (from {origin}) does not exist")
        return [path]
    for variable in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG"):
        value = os.environ.get(variable)
        if not value:
            continue
        listed = [Path(p).expanduser() for p in value.split(os.pathsep) if p]
        existing = [path for path in listed if path.exists()]
        if existing:
            return existing
        if len(listed) == 1:
            raise KubeConfigError(f"kubeconfig {listed[0]} (from {variable}) does not exist")
        if listed:
            names = ", ".join(str(path) for path in listed)
            raise KubeConfigError(f"none of the kubeconfig files of {variable} exists: {names}")
    home = Path("~/.kube/config").expanduser()
    return [home] if home.is_file() else []


@dataclass
class _Entry:
    """A named cluster, user or context, and the directory of the file that defined it
    (None: a kubeconfig held in memory)."""

    value: dict[str, Any]
    base: Path | None


@dataclass
class _Merged:
    """A kubeconfig merged from its files: entries by kind and name, the current-context."""

    entries: dict[str, dict[str, _Entry]] = field(
        default_factory=lambda: {"clusters": {}, "users": {}, "contexts": {}}
    )
    current_context: str | None = None

    def add(self, document: Mapping[str, Any], base: Path | None) -> None:
        """Merge one file: a name already defined stays as the earlier file defined it."""
        for kind, named in self.entries.items():
            for entry in document.get(kind) or []:
                if isinstance(entry, Mapping) and entry.get("name") is not None:
                    named.setdefault(str(entry["name"]), _Entry(dict(entry), base))
        if not self.current_context and document.get("current-context"):
            self.current_context = str(document["current-context"])

    def get(self, kind: str, name: Any) -> _Entry | None:
        return self.entries[kind].get(str(name)) if name is not None else None


def load_kubeconfig(files: Sequence[Path], context: str | None = None) -> Connection:
    """The connection a kubeconfig (merged from ``files``) describes for ``context``."""
    where = ", ".join(str(f) for f in files)
    merged = _Merged()
    for path in files:
        if not path.is_file():
            raise KubeConfigError(f"kubeconfig {path} is not a file")
        try:
            document = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise KubeConfigError(f"kubeconfig {path} is not YAML: {exc}") from exc
        except OSError as exc:
            raise KubeConfigError(f"kubeconfig {path}: {exc}") from exc
        if document is None:
            continue  # an empty file adds nothing (client-go)
        if not isinstance(document, Mapping):
            raise KubeConfigError(f"kubeconfig {path} is not a kubeconfig (a YAML mapping)")
        merged.add(document, path.resolve().parent)
    return _context_connection(merged, context or merged.current_context, where)


def connection_from_document(document: Mapping[str, Any], where: str) -> Connection:
    """The connection of the current-context of a kubeconfig held in memory (a
    registration Secret's); ``where`` names it in errors. Relative paths have no base: the
    caller refuses file-backed fields first (``target_cluster``)."""
    merged = _Merged()
    merged.add(document, None)
    return _context_connection(merged, merged.current_context, where)


def _path(base: Path | None, value: Any) -> Path:
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() or base is None else base / path


def _file_or_data(
    settings: Mapping[str, Any], base: Path | None, key: str, where: str, owner: str
) -> tuple[str | None, bytes | None]:
    """``key`` of a cluster's or user's ``settings`` as (file, data): the base64
    ``key-data`` when set, else the file ``key`` (relative to ``base``, the directory of the
    file that defined the entry), which must exist."""
    data = settings.get(f"{key}-data")
    if data:
        try:
            return None, base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KubeConfigError(f"kubeconfig {where}: {owner} {key}-data is not base64") from exc
    if settings.get(key):
        path = _path(base, settings[key])
        if not path.is_file():
            raise KubeConfigError(f"kubeconfig {where}: {owner} {key}: file {path} does not exist")
        return str(path), None
    return None, None


def _cluster_info(cluster: Mapping[str, Any], ca_file: str | None, ca_data: bytes | None):
    """``spec.cluster`` of an ExecCredential request (``provideClusterInfo``): client-go's
    ``Cluster``, with the CA as data and the ``client.authentication.k8s.io/exec``
    extension as ``config``."""
    info: dict[str, Any] = {"server": str(cluster.get("server") or "")}
    for name in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url"):
        if cluster.get(name):
            info[name] = cluster[name]
    ca = ca_data if ca_data is not None else (Path(ca_file).read_bytes() if ca_file else None)
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode()
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, Mapping) and extension.get("name") == (
            "client.authentication.k8s.io/exec"
        ):
            info["config"] = extension.get("extension")
    return info


def _context_connection(merged: _Merged, name: str | None, where: str) -> Connection:
    """The connection of context ``name`` of a loaded kubeconfig; ``where`` names it in
    errors."""
    if not name:
        raise KubeConfigError(f"kubeconfig {where} names no current-context")
    ctx_entry = merged.get("contexts", name)
    if ctx_entry is None:
        raise KubeConfigError(f"kubeconfig {where} has no context {name!r}")
    ctx = ctx_entry.value.get("context") or {}
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    cluster_entry = merged.get("clusters", cluster_name)
    if cluster_entry is None:
        raise KubeConfigError(f"context {name!r} names cluster {cluster_name!r}, which is absent")
    cluster = cluster_entry.value.get("cluster") or {}
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise KubeConfigError(f"cluster {cluster_name!r} has no server")
    user_entry = merged.get("users", user_name) or _Entry({}, None)
    user = user_entry.value.get("user") or {}
    provider = (user.get("auth-provider") or {}).get("name")
    if user.get("auth-provider") and provider not in AUTH_PROVIDERS:
        raise KubeConfigError(
            f"user {user_name!r}: auth-provider {provider!r} is not supported by the kubernetes "
            f"client (it knows {', '.join(AUTH_PROVIDERS)}); use an exec plugin"
        )
    proxy = str(cluster.get("proxy-url") or "")
    if proxy.lower().startswith("socks") and importlib.util.find_spec("socks") is None:
        raise KubeConfigError(
            f"cluster {cluster_name!r}: proxy-url {proxy} is a SOCKS proxy, which needs the "
            "PySocks package; it is not installed"
        )

    # TLS: only for an https server, as the kubernetes client read them
    ca_file = ca_data = cert_file = key_file = cert_data = key_data = None
    if server.startswith("https"):
        ca_file, ca_data = _file_or_data(
            cluster, cluster_entry.base, "certificate-authority", where, f"cluster {cluster_name!r}"
        )
        owner, base = f"user {user_name!r}", user_entry.base
        cert_file, cert_data = _file_or_data(user, base, "client-certificate", where, owner)
        key_file, key_data = _file_or_data(user, base, "client-key", where, owner)

    credential = _credential(
        user_name, user_entry, where, lambda: _cluster_info(cluster, ca_file, ca_data)
    )
    return Connection(
        server=server,
        namespace=ctx.get("namespace") or "default",
        source=f"kubeconfig {where}, context {name}",
        ca_file=ca_file,
        ca_data=ca_data,
        cert_file=cert_file,
        key_file=key_file,
        cert_data=cert_data,
        key_data=key_data,
        verify=not cluster.get("insecure-skip-tls-verify"),
        tls_server_name=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
        proxy_url=proxy or None,
        credential=credential,
        impersonate=impersonation_headers(user, where, owner=f"user {user_name!r}"),
    )


def impersonation_headers(
    user: Mapping[str, Any], where: str, owner: str
) -> tuple[tuple[str, str], ...]:
    """The impersonation headers of a kubeconfig user, as client-go's transport sends them:
    ``Impersonate-User`` (``as``), ``Impersonate-Uid`` (``as-uid``), an
    ``Impersonate-Group`` per group (``as-groups``) and ``Impersonate-Extra-<key>`` per
    value (``as-user-extra``, the key percent-encoded). Groups, a uid or extras without a
    user are refused, as the API server would refuse them."""
    headers: list[tuple[str, str]] = []
    name = user.get("as")
    groups = user.get("as-groups") or []
    extra = user.get("as-user-extra") or {}
    if not isinstance(groups, list) or not isinstance(extra, Mapping):
        raise KubeConfigError(
            f"kubeconfig {where}: {owner}: as-groups must be a list and as-user-extra a map "
            "of lists"
        )
    if not name:
        if groups or extra or user.get("as-uid"):
            raise KubeConfigError(
                f"kubeconfig {where}: {owner} sets as-groups, as-uid or as-user-extra without "
                "as: impersonating needs a user name"
            )
        return ()
    headers.append(("Impersonate-User", str(name)))
    if user.get("as-uid"):
        headers.append(("Impersonate-Uid", str(user["as-uid"])))
    headers += [("Impersonate-Group", str(group)) for group in groups]
    for key, values in extra.items():
        header = "Impersonate-Extra-" + urllib.parse.quote(str(key), safe="")
        for value in values if isinstance(values, list) else [values]:
            headers.append((header, str(value)))
    return tuple(headers)


def _credential(user_name: Any, entry: _Entry, where: str, cluster_info: Any) -> Credential | None:
    """The user's credential, in the order the kubernetes client tried them (module
    docstring); None: the client certificate (if any) alone."""
    user = entry.value.get("user") or {}
    if (user.get("auth-provider") or {}).get("name") == "oidc":
        oidc = OidcCredential(user)
        if oidc.authorization():
            return oidc
    if user.get("token"):
        return StaticCredential("Bearer " + str(user["token"]).strip())
    if user.get("tokenFile"):
        path = _path(entry.base, user["tokenFile"])
        try:
            return TokenFileCredential(path)
        except OSError as exc:
            raise KubeConfigError(
                f"kubeconfig {where}: user {user_name!r} tokenFile: {exc}"
            ) from exc
    if user.get("exec"):
        return ExecCredential(str(user_name), user["exec"], entry.base, cluster_info())
    if user.get("username") and user.get("password") is not None:
        return StaticCredential.basic(str(user["username"]), str(user["password"]))
    return None


# ---------------------------------------------------------------------------------------
# the service account


def in_cluster_connection(directory: Path = SERVICE_ACCOUNT_DIR) -> Connection:
    """The service account's connection, as a pod sees it: ``KUBERNETES_SERVICE_HOST`` and
    ``_PORT`` (an IPv6 address in brackets), the token (read again when it changes and at
    least every minute), the CA and the namespace files."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT") or "443"
    token_file, ca_file = directory / "token", directory / "ca.crt"
    if not host or not token_file.is_file():
        raise KubeConfigError(
            "no kubeconfig (set KUBECONFIG or pass kubeconfig) and not running in a pod "
            "(no KUBERNETES_SERVICE_HOST and service account token)"
        )
    where = f"in-cluster service account ({directory})"
    if not ca_file.is_file():
        raise KubeConfigError(f"{where}: Service certification file does not exist.")
    if not ca_file.read_bytes().strip():
        raise KubeConfigError(f"{where}: Cert file exists but empty.")
    try:
        credential = TokenFileCredential(token_file, max_age=IN_CLUSTER_TOKEN_MAX_AGE)
    except (OSError, KubeConfigError) as exc:
        raise KubeConfigError(f"{where}: {exc}") from exc
    netloc = f"[{host}]:{port}" if ":" in host or "%" in host else f"{host}:{port}"
    namespace_file = directory / "namespace"
    return Connection(
        server=f"https://{netloc}",
        namespace=namespace_file.read_text().strip() if namespace_file.is_file() else "default",
        source="in-cluster service account",
        ca_file=str(ca_file),
        credential=credential,
    )


def load_connection(
    kubeconfig: str | None = None,
    context: str | None = None,
    origin: str = "the kubeconfig argument",
) -> Connection:
    """The connection by client-go's rules (see the module docstring); ``origin`` names
    where an explicit ``kubeconfig`` came from, for the error when it does not exist."""
    files = _kubeconfig_files(kubeconfig, origin)
    if files:
        return load_kubeconfig(files, context)
    return in_cluster_connection()


__all__ = [
    "AUTH_PROVIDERS",
    "SERVICE_ACCOUNT_DIR",
    "Connection",
    "Credential",
    "ExecCredential",
    "KubeConfigError",
    "OidcCredential",
    "StaticCredential",
    "TokenFileCredential",
    "connection_from_document",
    "in_cluster_connection",
    "load_connection",
    "load_kubeconfig",
    "should_bypass_proxies",
]
