# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""A small Kubernetes REST client: the gather, apply and report modules, the runner and the
admission webhook talk to the API server through it.

Standard library only (``http.client``, ``ssl``, ``json``), so a module process starts in
milliseconds and the collection needs no Kubernetes SDK. One keep-alive connection per
thread; every call is one HTTP request; ``requests`` and ``writes`` count them, so a
benchmark can say how many API calls a pass made.

Where the connection comes from (``load_connection``), in client-go's order:

1. an explicit kubeconfig path (a module's ``kubeconfig`` option, the runner's
   ``--kubeconfig``), which must exist, else
2. ``K8S_AUTH_KUBECONFIG`` (what ansible-operator sets), else ``KUBECONFIG`` (a
   colon-separated list, merged as kubectl merges it: the first file to define a name
   wins; files of the list that do not exist are skipped, as kubectl skips them, and a
   list of which none exists is an error naming the variable and its files, where kubectl
   warns "Config not found" and goes on with no cluster), else ``~/.kube/config`` when it
   exists, else
3. the in-cluster service account (``KUBERNETES_SERVICE_HOST`` and the mounted token, CA
   and namespace).

Credentials a kubeconfig may carry: a bearer ``token`` or ``tokenFile`` (re-read when it
changes: projected tokens rotate), a client certificate (files or ``-data``), basic auth
(ansible-operator's proxy encodes the owner in the user name), and an ``exec`` plugin
(``client.authentication.k8s.io`` ExecCredential; its token is reused until it expires).
``insecure-skip-tls-verify`` and ``tls-server-name`` are honoured; ``proxy-url`` and
``auth-provider`` are refused with a message rather than silently ignored.
"""

from __future__ import annotations

import base64
import datetime
import http.client
import json
import os
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TIMEOUT = 30.0
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# The resources this collection reads and writes: (apiVersion, kind) -> (plural, namespaced).
# Any other kind is looked up once through discovery.
KNOWN_RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "Service"): ("services", True),
    ("v1", "Event"): ("events", True),
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Pod"): ("pods", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("autoscaling/v2", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("networking.k8s.io/v1", "NetworkPolicy"): ("networkpolicies", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("batch/v1", "CronJob"): ("cronjobs", True),
    ("events.k8s.io/v1", "Event"): ("events", True),
    ("coordination.k8s.io/v1", "Lease"): ("leases", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): ("httproutes", True),
    ("glance.openstack.c5c3.io/v1alpha1", "Glance"): ("glances", True),
    ("glance.openstack.c5c3.io/v1alpha1", "GlanceBackend"): ("glancebackends", True),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): ("customresourcedefinitions", False),
}


class KubeConfigError(Exception):
    """The connection settings cannot be used; the message says which and why."""


class ApiError(Exception):
    """A non-2xx answer of the API server, with its ``Status`` object when it sent one."""

    def __init__(self, code: int, status: Mapping[str, Any] | None, method: str, path: str):
        self.code = code
        self.status = dict(status or {})
        self.method = method
        self.path = path
        message = self.status.get("message") or f"HTTP {code}"
        super().__init__(f"{method} {path}: {code} {self.reason}: {message}")

    @property
    def reason(self) -> str:
        """The Status reason (``NotFound``, ``AlreadyExists``, ``Conflict``, ``Invalid``...)."""
        return str(self.status.get("reason") or "")

    @property
    def message(self) -> str:
        return str(self.status.get("message") or "")

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def already_exists(self) -> bool:
        return self.code == 409 and self.reason == "AlreadyExists"

    @property
    def conflict(self) -> bool:
        return self.code == 409 and self.reason != "AlreadyExists"


@dataclass
class Connection:
    """Where the API server is and how to prove who we are."""

    server: str
    namespace: str = "default"
    ca_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    username: str | None = None
    password: str | None = None
    exec_config: Mapping[str, Any] | None = None
    source: str = ""

    def describe(self) -> str:
        return f"{self.server} ({self.source})" if self.source else self.server


# ---------------------------------------------------------------------------------------
# loading the connection


def _read_bytes(value: str | None, data: str | None, base: Path) -> bytes | None:
    """``<field>-data`` (base64) or the file ``<field>`` (relative to the kubeconfig)."""
    if data:
        return base64.b64decode(data)
    if value:
        path = Path(value).expanduser()
        if not path.is_absolute():
            path = base / path
        return path.read_bytes()
    return None


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


def _merged_kubeconfig(files: Sequence[Path]) -> tuple[dict[str, Any], dict[str, Path]]:
    """The merged kubeconfig, and for each named entry the directory of its file."""
    merged: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}}
    bases: dict[str, Path] = {}
    current = None
    for path in files:
        if not path.is_file():
            raise KubeConfigError(f"kubeconfig {path} is not a file")
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise KubeConfigError(f"kubeconfig {path} is not YAML: {exc}") from exc
        current = current or doc.get("current-context")
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in doc.get(section) or []:
                name = entry.get("name")
                if name and name not in merged[section]:
                    merged[section][name] = entry.get(inner) or {}
                    bases[f"{section}/{name}"] = path.parent
    merged["current-context"] = current
    return merged, bases


def load_kubeconfig(files: Sequence[Path], context: str | None = None) -> Connection:
    """The connection a kubeconfig (merged from ``files``) describes for ``context``."""
    merged, bases = _merged_kubeconfig(files)
    name = context or merged.get("current-context")
    where = ", ".join(str(f) for f in files)
    if not name:
        raise KubeConfigError(f"kubeconfig {where} names no current-context")
    ctx = merged["contexts"].get(name)
    if ctx is None:
        raise KubeConfigError(f"kubeconfig {where} has no context {name!r}")
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    cluster = merged["clusters"].get(cluster_name)
    if cluster is None:
        raise KubeConfigError(f"context {name!r} names cluster {cluster_name!r}, which is absent")
    user = merged["users"].get(user_name) or {}
    if cluster.get("proxy-url"):
        raise KubeConfigError(f"cluster {cluster_name!r}: proxy-url is not supported")
    if user.get("auth-provider"):
        raise KubeConfigError(
            f"user {user_name!r}: auth-provider plugins are not supported; use an exec plugin"
        )
    cbase = bases.get(f"clusters/{cluster_name}", Path.cwd())
    ubase = bases.get(f"users/{user_name}", Path.cwd())
    try:
        conn = Connection(
            server=str(cluster.get("server") or "").rstrip("/"),
            namespace=ctx.get("namespace") or "default",
            ca_data=_read_bytes(
                cluster.get("certificate-authority"),
                cluster.get("certificate-authority-data"),
                cbase,
            ),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
            tls_server_name=cluster.get("tls-server-name"),
            client_cert_data=_read_bytes(
                user.get("client-certificate"), user.get("client-certificate-data"), ubase
            ),
            client_key_data=_read_bytes(user.get("client-key"), user.get("client-key-data"), ubase),
            token=user.get("token"),
            token_file=user.get("tokenFile"),
            username=user.get("username"),
            password=user.get("password"),
            exec_config=user.get("exec"),
            source=f"kubeconfig {where}, context {name}",
        )
    except OSError as exc:
        raise KubeConfigError(f"kubeconfig {where}: {exc}") from exc
    if not conn.server:
        raise KubeConfigError(f"cluster {cluster_name!r} has no server")
    return conn


def in_cluster_connection(directory: Path = SERVICE_ACCOUNT_DIR) -> Connection:
    """The service account's connection, as a pod sees it."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host or not (directory / "token").is_file():
        raise KubeConfigError(
            "no kubeconfig (set KUBECONFIG or pass kubeconfig) and not running in a pod "
            "(no KUBERNETES_SERVICE_HOST and service account token)"
        )
    if ":" in host:
        host = f"[{host}]"
    namespace_file = directory / "namespace"
    return Connection(
        server=f"https://{host}:{port}",
        namespace=namespace_file.read_text().strip() if namespace_file.is_file() else "default",
        ca_data=(directory / "ca.crt").read_bytes(),
        token_file=str(directory / "token"),
        source="in-cluster service account",
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


# ---------------------------------------------------------------------------------------
# credentials


@dataclass
class _ExecToken:
    token: str | None = None
    cert: bytes | None = None
    key: bytes | None = None
    expires: float | None = None


def _exec_credential(config: Mapping[str, Any]) -> _ExecToken:
    """Run a client-go credential plugin and read its ExecCredential."""
    command = config.get("command")
    if not command:
        raise KubeConfigError("exec plugin without a command")
    env = dict(os.environ)
    for item in config.get("env") or []:
        env[str(item.get("name"))] = str(item.get("value"))
    request = {
        "apiVersion": config.get("apiVersion", "client.authentication.k8s.io/v1"),
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    env["KUBERNETES_EXEC_INFO"] = json.dumps(request)
    try:
        done = subprocess.run(
            [command, *(config.get("args") or [])],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KubeConfigError(f"exec plugin {command}: {exc}") from exc
    if done.returncode != 0:
        raise KubeConfigError(
            f"exec plugin {command} exited {done.returncode}: {done.stderr.strip()[:500]}"
        )
    try:
        status = json.loads(done.stdout).get("status") or {}
    except ValueError as exc:
        raise KubeConfigError(f"exec plugin {command} printed no ExecCredential") from exc
    expires = None
    if status.get("expirationTimestamp"):
        stamp = str(status["expirationTimestamp"]).replace("Z", "+00:00")
        expires = datetime.datetime.fromisoformat(stamp).timestamp()
    return _ExecToken(
        token=status.get("token"),
        cert=(status.get("clientCertificateData") or "").encode() or None,
        key=(status.get("clientKeyData") or "").encode() or None,
        expires=expires,
    )


# ---------------------------------------------------------------------------------------
# the client


@dataclass
class Response:
    """One answer: status code, headers (lower-case names), body bytes."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class KubeClient:
    """Kubernetes REST calls over one keep-alive connection per thread."""

    def __init__(self, connection: Connection, timeout: float = DEFAULT_TIMEOUT):
        self.connection = connection
        self.timeout = timeout
        url = urllib.parse.urlsplit(connection.server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise KubeConfigError(f"server {connection.server!r} is not an http(s) URL")
        self._scheme = url.scheme
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._exec: _ExecToken | None = None
        self._token_cache: tuple[float, str] | None = None
        self._ssl = self._ssl_context() if url.scheme == "https" else None
        self._resources: dict[tuple[str, str], tuple[str, bool]] = dict(KNOWN_RESOURCES)
        self._served: dict[str, dict[str, Any] | None] = {}
        self.requests = 0
        self.writes = 0

    @classmethod
    def from_environment(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        origin: str = "the kubeconfig argument",
        **kwargs: Any,
    ) -> KubeClient:
        return cls(load_connection(kubeconfig, context, origin), **kwargs)

    @property
    def namespace(self) -> str:
        """The namespace of the kubeconfig context (or of the pod)."""
        return self.connection.namespace

    # -- TLS and credentials ----------------------------------------------------------
    def _ssl_context(self) -> ssl.SSLContext:
        conn = self.connection
        if conn.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif conn.ca_data:
            ctx = ssl.create_default_context(cadata=conn.ca_data.decode("ascii", "replace"))
        else:
            ctx = ssl.create_default_context()
        cert, key = conn.client_cert_data, conn.client_key_data
        if conn.exec_config and not (cert and key):
            exec_token = self._exec_token()
            cert, key = exec_token.cert, exec_token.key
        if cert and key:
            _load_client_cert(ctx, cert, key)
        return ctx

    def _exec_token(self) -> _ExecToken:
        with self._lock:
            current = self._exec
            if current is None or (current.expires and current.expires - 30 < time.time()):
                current = _exec_credential(self.connection.exec_config or {})
                self._exec = current
            return current

    def _bearer(self) -> str | None:
        conn = self.connection
        if conn.token:
            return conn.token
        if conn.token_file:
            path = Path(conn.token_file)
            mtime = path.stat().st_mtime
            with self._lock:
                if self._token_cache is None or self._token_cache[0] != mtime:
                    self._token_cache = (mtime, path.read_text().strip())
                return self._token_cache[1]
        if conn.exec_config:
            return self._exec_token().token
        return None

    def _auth_headers(self) -> dict[str, str]:
        token = self._bearer()
        if token:
            return {"Authorization": f"Bearer {token}"}
        conn = self.connection
        if conn.username is not None:
            pair = f"{conn.username}:{conn.password or ''}".encode()
            return {"Authorization": "Basic " + base64.b64encode(pair).decode()}
        return {}

    # -- transport --------------------------------------------------------------------
    def _new_connection(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return _TLSConnection(
                self._host,
                self._port,
                timeout=timeout,
                context=self._ssl,
                server_name=self.connection.tls_server_name,
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._new_connection(self.timeout)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def url_path(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        full = self._prefix + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            full += "?" + urllib.parse.urlencode(
                {
                    k: ("true" if v is True else "false" if v is False else v)
                    for k, v in params.items()
                }
            )
        return full

    def raw(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Response:
        """One request; the answer whatever its status. Retries once on a stale connection."""
        url = self.url_path(path, query)
        headers = {"Accept": "application/json", **self._auth_headers()}
        payload = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        self.requests += 1
        if method in WRITE_METHODS:
            self.writes += 1
        for attempt in (1, 2):
            conn = self._connection()
            if timeout is not None and conn.sock is not None:
                conn.sock.settimeout(timeout)
            elif timeout is not None:
                conn.timeout = timeout
            try:
                conn.request(method, url, body=payload, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2:
                    raise
                continue
            except Exception:
                self.close()
                raise
            finally:
                if timeout is not None and conn.sock is not None:
                    conn.sock.settimeout(self.timeout)
            if answer.getheader("Connection", "").lower() == "close":
                self.close()
            return Response(
                status=answer.status,
                headers={k.lower(): v for k, v in answer.getheaders()},
                body=data,
            )
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, **options: Any) -> Any:
        """One request (``raw``'s options); the decoded JSON answer, or ``ApiError`` for a
        non-2xx status."""
        answer = self.raw(method, path, **options)
        if 200 <= answer.status < 300:
            return answer.json()
        try:
            status = answer.json()
        except ValueError:
            status = {"message": answer.body.decode("utf-8", "replace")[:500]}
        raise ApiError(answer.status, status if isinstance(status, dict) else None, method, path)

    # -- resource paths ---------------------------------------------------------------
    @staticmethod
    def _group_path(api_version: str) -> str:
        return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) of a kind: from the table, else from discovery."""
        key = (api_version, kind)
        if key not in self._resources:
            served = self.served_resources(api_version)
            for item in (served or {}).get("resources") or []:
                if item.get("kind") == kind and "/" not in item.get("name", ""):
                    self._resources[key] = (item["name"], bool(item.get("namespaced")))
                    break
            else:
                raise ApiError(
                    404,
                    {"reason": "NotFound", "message": f"{api_version} {kind} is not served"},
                    "GET",
                    self._group_path(api_version),
                )
        return self._resources[key]

    def path(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        plural, namespaced = self.resource(api_version, kind)
        out = self._group_path(api_version)
        if namespaced and namespace:
            out += f"/namespaces/{urllib.parse.quote(namespace, safe='')}"
        out += f"/{plural}"
        if name:
            out += f"/{urllib.parse.quote(name, safe='')}"
        if subresource:
            out += f"/{subresource}"
        return out

    def served_resources(self, api_version: str) -> dict[str, Any] | None:
        """The APIResourceList of a group version, or None when the cluster does not serve it."""
        if api_version not in self._served:
            try:
                self._served[api_version] = self.request("GET", self._group_path(api_version))
            except ApiError as exc:
                if exc.code not in (404, 503):
                    raise
                self._served[api_version] = None
        return self._served[api_version]

    def serves(self, api_version: str, kind: str) -> bool:
        """The cluster serves ``kind`` in ``api_version`` (discovery)."""
        served = self.served_resources(api_version)
        return any(
            item.get("kind") == kind and "/" not in item.get("name", "")
            for item in (served or {}).get("resources") or []
        )

    # -- verbs ------------------------------------------------------------------------
    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return self.request("GET", self.path(api_version, kind, namespace, name))
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | Mapping[str, str] | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """The items (each with its ``apiVersion`` and ``kind`` filled in, as kubectl does)."""
        return self.list_object(api_version, kind, namespace, label_selector, field_selector).get(
            "items", []
        )

    def list_object(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | Mapping[str, str] | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        """The List object (``metadata.resourceVersion`` is where a watch starts)."""
        if isinstance(label_selector, Mapping):
            label_selector = ",".join(f"{k}={v}" for k, v in sorted(label_selector.items()))
        answer = self.request(
            "GET",
            self.path(api_version, kind, namespace),
            query={"labelSelector": label_selector or None, "fieldSelector": field_selector},
        )
        items = answer.get("items") or []
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        answer["items"] = items
        return answer

    def create(self, obj: Mapping[str, Any], field_manager: str | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        return self.request(
            "POST",
            self.path(obj["apiVersion"], obj["kind"], meta.get("namespace")),
            query={"fieldManager": field_manager},
            body=obj,
        )

    def apply(
        self, obj: Mapping[str, Any], field_manager: str, force: bool = True
    ) -> dict[str, Any]:
        """Server-side apply of ``obj`` (create or update) as ``field_manager``."""
        meta = obj.get("metadata") or {}
        return self.request(
            "PATCH",
            self.path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"]),
            query={"fieldManager": field_manager, "force": force},
            body=obj,
            content_type=APPLY_PATCH,
        )

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        patch: Any,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        return self.request(
            "PATCH",
            self.path(api_version, kind, namespace, name, subresource),
            query={"fieldManager": field_manager},
            body=patch,
            content_type=content_type,
        )

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        """Delete; None when it was already gone."""
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = dict(preconditions)
        try:
            return self.request("DELETE", self.path(api_version, kind, namespace, name), body=body)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def service_proxy_get(
        self, namespace: str, service: str, port: int, path: str, timeout: float
    ) -> Response:
        """``GET`` through the API server's service proxy (works in and outside the cluster)."""
        target = (
            f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/services/"
            f"{urllib.parse.quote(service, safe='')}:{port}/proxy/{path.lstrip('/')}"
        )
        return self.raw("GET", target, timeout=timeout)

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> Iterator[dict[str, Any]]:
        """Watch events (``{"type", "object"}``) until the server ends the stream.

        A fresh connection of its own (a watch holds it open). An ``ERROR`` event is
        yielded as it comes (410 Gone: relist and start again).
        """
        url = self.url_path(
            self.path(api_version, kind, namespace),
            {
                "watch": "true",
                "resourceVersion": resource_version,
                "labelSelector": label_selector,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": timeout_seconds,
            },
        )
        conn = self._new_connection(timeout_seconds + 30)
        self.requests += 1
        try:
            conn.request("GET", url, headers={"Accept": "application/json", **self._auth_headers()})
            answer = conn.getresponse()
            if answer.status != 200:
                body = answer.read()
                try:
                    status = json.loads(body)
                except ValueError:
                    status = {"message": body.decode("utf-8", "replace")[:500]}
                raise ApiError(answer.status, status, "GET", url)
            while True:
                line = answer.readline()
                if not line:
                    return
                line = line.strip()
                if line:
                    yield json.loads(line)
        except (TimeoutError, http.client.IncompleteRead):
            return
        finally:
            conn.close()


class _TLSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that may verify the certificate against another name than the
    host it connects to (kubeconfig's ``tls-server-name``)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float | None,
        context: ssl.SSLContext | None,
        server_name: str | None,
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(
            self.sock, server_hostname=self._server_name or self.host
        )


def _load_client_cert(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``load_cert_chain`` needs files: write them privately, load, remove."""
    with tempfile.TemporaryDirectory(prefix="c5c3-kube-") as tmp:
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        ctx.load_cert_chain(str(cert_path), str(key_path))
