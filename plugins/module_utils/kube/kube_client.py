# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Kubernetes API client of the collection: the gather, apply and report modules, the
runner and the admission webhook talk to the API server through it.

It is a thin layer over the ``kubernetes`` Python client: ``kubernetes.config`` reads the
kubeconfig or the in-cluster service account into a private ``Configuration`` (never the
library's global default), and every call is one ``ApiClient.call_api`` request (urllib3,
a keep-alive pool shared by the threads). Objects stay plain dicts (no model classes, no
``kubernetes.dynamic`` discovery: a pass reads only what it needs, and the kinds this
collection uses are in ``KNOWN_RESOURCES``). ``requests`` and ``writes`` count the calls,
so a benchmark can say how many API calls a pass made.

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
   and namespace; the library re-reads the rotating token every minute).

Credentials: whatever ``kubernetes.config`` supports — client certificates (files or
``-data``), a bearer ``token`` or ``tokenFile``, basic auth (ansible-operator's proxy
encodes the owner in the user name), ``exec`` credential plugins
(``client.authentication.k8s.io`` ExecCredential, run again when the token expires), the
``oidc`` auth provider; ``insecure-skip-tls-verify``, ``tls-server-name`` and ``proxy-url``
(an HTTP proxy, through a CONNECT tunnel; SOCKS needs PySocks, which is not installed, and
is refused with a message) are honoured; without ``proxy-url``, ``HTTPS_PROXY``/``HTTP_PROXY``
and ``NO_PROXY`` apply as in kubectl, which never proxies an API server on loopback. What
stays here: choosing the files and the error messages that name the file, the variable
and the field; the ``current-context`` of the first file (the library takes the last
one's); re-reading a kubeconfig ``tokenFile`` when it changes (the library reads it once);
refusing an auth-provider the library would silently ignore; not proxying loopback.
"""

from __future__ import annotations

import copy
import importlib.util
import ipaddress
import json
import logging
import os
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader
from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger
from kubernetes.watch.watch import iter_resp_lines

DEFAULT_TIMEOUT = 30.0
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
USER_AGENT = "c5c3-glance"
POOL_SIZE = 64
AUTH_PROVIDERS = ("oidc",)
"""The ``auth-provider`` names ``kubernetes.config`` implements with what is installed; any
other it would ignore and send requests without credentials (``gcp`` needs ``google-auth``,
which is not installed; kubectl dropped it for the ``gke-gcloud-auth-plugin`` exec plugin)."""

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

METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
"""What to ask for to get objects' ``metadata`` alone (client-go's metadata informers):
the API server answers a watch and a list with ``PartialObjectMetadata`` items."""


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
    """Where the API server is, which namespace the context names, and the library's
    ``Configuration`` (credentials, TLS, proxy) for it."""

    server: str
    namespace: str = "default"
    source: str = ""
    configuration: Configuration | None = None

    def __post_init__(self) -> None:
        if self.configuration is None:
            self.configuration = _new_configuration()
            self.configuration.host = self.server
            _loopback_goes_direct(self.configuration)

    def describe(self) -> str:
        return f"{self.server} ({self.source})" if self.source else self.server


def _new_configuration() -> Configuration:
    """A private ``Configuration``: ``type.__call__`` as ``kubernetes.config`` does, so the
    library's global default is neither read nor set."""
    return type.__call__(Configuration)


def _loopback_goes_direct(configuration: Configuration) -> None:
    """Drop a proxy taken from ``HTTPS_PROXY``/``HTTP_PROXY`` for an API server on loopback.

    Hand-written for parity with kubectl: Go's ``http.ProxyFromEnvironment`` never proxies
    ``localhost`` or a loopback address, whatever ``NO_PROXY`` says, while the ``kubernetes``
    client applies the environment's proxy to every host ``NO_PROXY`` does not name. A
    workstation with a corporate proxy set and a kind cluster on 127.0.0.1 would otherwise
    send its passes to the proxy. Call it only where the proxy came from the environment
    (a kubeconfig ``proxy-url`` applies to loopback too, as in client-go)."""
    if not configuration.proxy:
        return
    host = (urllib.parse.urlsplit(configuration.host).hostname or "").lower()
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        configuration.proxy = None


# ---------------------------------------------------------------------------------------
# loading the connection


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


def _named(entries: Any, name: str | None) -> dict[str, Any] | None:
    """The entry called ``name`` of a merged ``clusters``/``users``/``contexts`` list."""
    for entry in entries or []:
        value = getattr(entry, "value", entry)
        if isinstance(value, Mapping) and value.get("name") == name:
            return dict(value)
    return None


@contextmanager
def _library_errors() -> Iterator[list[str]]:
    """What ``kubernetes.config`` logs instead of raising (a failing exec plugin is logged
    and the client goes on without credentials): collected, for a clear error here."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(logging.ERROR)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield messages
    finally:
        root.removeHandler(handler)


def load_kubeconfig(files: Sequence[Path], context: str | None = None) -> Connection:
    """The connection a kubeconfig (merged from ``files``) describes for ``context``."""
    where = ", ".join(str(f) for f in files)
    for path in files:
        if not path.is_file():
            raise KubeConfigError(f"kubeconfig {path} is not a file")
    try:
        merger = KubeConfigMerger(os.pathsep.join(str(f) for f in files))
    except yaml.YAMLError as exc:
        raise KubeConfigError(f"kubeconfig {where} is not YAML: {exc}") from exc
    except ConfigException as exc:
        raise KubeConfigError(f"kubeconfig {where}: {exc}") from exc
    merged = merger.config
    # kubectl (client-go's ClientConfigLoadingRules.Load) takes the current-context of the
    # first file that sets one; the library's merger takes the last file's.
    current = next(
        (
            doc.get("current-context")
            for doc in merger.config_files.values()
            if doc.get("current-context")
        ),
        None,
    )
    merged.value["current-context"] = current
    return _context_connection(merged, context or current, where, files[0])


def _context_connection(merged: Any, name: str | None, where: str, first_file: Path) -> Connection:
    """The connection of context ``name`` of a loaded kubeconfig (``merged``: the
    library's merged ``ConfigNode`` or a plain dict); ``where`` names it in errors."""
    config = getattr(merged, "value", merged)
    if not name:
        raise KubeConfigError(f"kubeconfig {where} names no current-context")
    ctx = _named(config.get("contexts"), name)
    if ctx is None:
        raise KubeConfigError(f"kubeconfig {where} has no context {name!r}")
    ctx = ctx.get("context") or {}
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    cluster = _named(config.get("clusters"), cluster_name)
    if cluster is None:
        raise KubeConfigError(f"context {name!r} names cluster {cluster_name!r}, which is absent")
    server = str((cluster.get("cluster") or {}).get("server") or "").rstrip("/")
    if not server:
        raise KubeConfigError(f"cluster {cluster_name!r} has no server")
    user = (_named(config.get("users"), user_name) or {}).get("user") or {}
    provider = (user.get("auth-provider") or {}).get("name")
    if user.get("auth-provider") and provider not in AUTH_PROVIDERS:
        raise KubeConfigError(
            f"user {user_name!r}: auth-provider {provider!r} is not supported by the kubernetes "
            f"client (it knows {', '.join(AUTH_PROVIDERS)}); use an exec plugin"
        )
    configuration = _new_configuration()
    try:
        loader = KubeConfigLoader(config_dict=merged, active_context=name, config_base_path=None)
        with _library_errors() as errors:
            loader.load_and_set(configuration)
    except ConfigException as exc:
        raise KubeConfigError(f"kubeconfig {where}: {exc}") from exc
    except OSError as exc:
        raise KubeConfigError(f"kubeconfig {where}: {exc}") from exc
    if user.get("exec") and not (configuration.api_key or configuration.cert_file):
        reason = errors[-1] if errors else "it gave neither a token nor a client certificate"
        command = (user.get("exec") or {}).get("command")
        raise KubeConfigError(f"user {user_name!r}: exec plugin {command}: {reason}")
    proxy = str((cluster.get("cluster") or {}).get("proxy-url") or "")
    if not proxy:
        _loopback_goes_direct(configuration)
    if proxy.lower().startswith("socks") and importlib.util.find_spec("socks") is None:
        raise KubeConfigError(
            f"cluster {cluster_name!r}: proxy-url {proxy} is a SOCKS proxy, which needs the "
            "PySocks package; it is not installed"
        )
    if user.get("tokenFile") and not user.get("token"):
        defined_in = next(
            (
                Path(entry.path)
                for entry in config.get("users") or []
                if getattr(entry, "path", None) and entry.value.get("name") == user_name
            ),
            first_file,
        )
        _reread_token_file(configuration, Path(str(user["tokenFile"])), defined_in.parent)
    return Connection(
        server=server,
        namespace=ctx.get("namespace") or "default",
        source=f"kubeconfig {where}, context {name}",
        configuration=configuration,
    )


def connection_from_document(document: Mapping[str, Any], where: str) -> Connection:
    """The connection of the current-context of a kubeconfig held in memory (a
    registration Secret's); ``where`` names it in errors. Relative paths have no base: the
    caller refuses file-backed fields first (``target_cluster``)."""
    config = copy.deepcopy(dict(document))
    return _context_connection(config, config.get("current-context"), where, Path("/"))


def _reread_token_file(configuration: Configuration, token_file: Path, base: Path) -> None:
    """client-go re-reads a kubeconfig ``tokenFile`` (projected tokens rotate); the library
    reads it once. Read again whenever the file changed (its mtime), before each request."""
    if not token_file.is_absolute():
        token_file = base / token_file
    seen: list[float] = []

    def refresh(config: Configuration) -> None:
        try:
            mtime = token_file.stat().st_mtime
        except OSError:
            return  # mid-rotation: keep the token we have
        if seen and seen[0] == mtime:
            return
        seen[:] = [mtime]
        config.api_key["BearerToken"] = "Bearer " + token_file.read_text().strip()

    configuration.refresh_api_key_hook = refresh


def in_cluster_connection(directory: Path = SERVICE_ACCOUNT_DIR) -> Connection:
    """The service account's connection, as a pod sees it (``kubernetes.config``'s
    in-cluster loader, which re-reads the rotating token every minute)."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT") or "443"
    if not host or not (directory / "token").is_file():
        raise KubeConfigError(
            "no kubeconfig (set KUBECONFIG or pass kubeconfig) and not running in a pod "
            "(no KUBERNETES_SERVICE_HOST and service account token)"
        )
    configuration = _new_configuration()
    try:
        InClusterConfigLoader(
            token_filename=str(directory / "token"),
            cert_filename=str(directory / "ca.crt"),
            environ={"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port},
        ).load_and_set(configuration)
    except ConfigException as exc:
        raise KubeConfigError(f"in-cluster service account ({directory}): {exc}") from exc
    _loopback_goes_direct(configuration)
    namespace_file = directory / "namespace"
    return Connection(
        server=configuration.host,
        namespace=namespace_file.read_text().strip() if namespace_file.is_file() else "default",
        source="in-cluster service account",
        configuration=configuration,
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
    """Kubernetes REST calls through one ``kubernetes.client.ApiClient`` (a urllib3 pool of
    keep-alive connections, safe to share between threads)."""

    def __init__(self, connection: Connection, timeout: float = DEFAULT_TIMEOUT):
        self.connection = connection
        self.timeout = timeout
        url = urllib.parse.urlsplit(connection.server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise KubeConfigError(f"server {connection.server!r} is not an http(s) URL")
        self._origin = f"{url.scheme}://{url.netloc}"
        self._prefix = url.path.rstrip("/")
        configuration = connection.configuration
        if not configuration.verify_ssl:
            # insecure-skip-tls-verify is the kubeconfig's explicit choice: urllib3 would
            # warn on every request, into every module's output.
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        # The runner holds a watch connection per informer besides its workers' requests;
        # the library's default pool (5 per CPU) would discard connections and warn.
        configuration.connection_pool_maxsize = max(
            configuration.connection_pool_maxsize or 0, POOL_SIZE
        )
        self._api = ApiClient(configuration=configuration)
        self._api.user_agent = USER_AGENT
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

    def _auth_headers(self) -> dict[str, str]:
        """The ``Authorization`` header the configuration gives now (the library's refresh
        hook runs first: an expired exec token, a rotated token file)."""
        setting = self.connection.configuration.auth_settings().get("BearerToken") or {}
        value = setting.get("value")
        return {"Authorization": value} if value else {}

    def close(self) -> None:
        self._api.rest_client.close()

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

    def _send(
        self,
        method: str,
        url: str,
        body: Any,
        content_type: str,
        timeout: float | tuple[float, float],
        accept: str = "application/json",
    ) -> Any:
        """One ``call_api``; the library's response with the body still unread. Transport
        failures (refused, reset, TLS) become ``ConnectionError``, an ``OSError`` as the
        callers expect of an API server that is away."""
        headers = {"Accept": accept, **self._auth_headers()}
        if body is not None:
            headers["Content-Type"] = content_type
            if isinstance(body, bytes | str):
                # the library serialises JSON and structured-YAML bodies itself
                body = json.loads(body)
        try:
            return self._api.call_api(
                method,
                self._origin + url,
                header_params=headers,
                body=body,
                _request_timeout=timeout,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectionError(f"{method} {url}: {exc}") from exc
        except ApiException as exc:  # status 0: the library's wrapping of a TLS error
            raise ConnectionError(f"{method} {url}: {exc.reason}") from exc

    def raw(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        accept: str = "application/json",
    ) -> Response:
        """One request; the answer whatever its status."""
        url = self.url_path(path, query)
        self.requests += 1
        if method in WRITE_METHODS:
            self.writes += 1
        answer = self._send(method, url, body, content_type, timeout or self.timeout, accept)
        try:
            data = answer.read()
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectionError(f"{method} {url}: {exc}") from exc
        finally:
            answer.response.release_conn()
        return Response(
            status=answer.status,
            headers={k.lower(): v for k, v in answer.headers.items()},
            body=data or b"",
        )

    def request(self, method: str, path: str, **options: Any) -> Any:
        """One request (``raw``'s options); the decoded JSON answer, or ``ApiError`` for a
        non-2xx status."""
        answer = self.raw(method, path, **options)
        if 200 <= answer.status < 300:
            return answer.json()
        raise ApiError(answer.status, _status_of(answer.body), method, path)

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

    def forget_served(self, api_version: str) -> None:
        """Ask discovery about ``api_version`` again next time (a CRD installed since)."""
        self._served.pop(api_version, None)

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
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """The List object (``metadata.resourceVersion`` is where a watch starts). With
        ``metadata_only`` the server sends each item's ``metadata`` alone
        (``PartialObjectMetadata``: a Secret's data never crosses the wire); the items are
        still labelled with ``api_version`` and ``kind``."""
        if isinstance(label_selector, Mapping):
            label_selector = ",".join(f"{k}={v}" for k, v in sorted(label_selector.items()))
        answer = self.request(
            "GET",
            self.path(api_version, kind, namespace),
            query={"labelSelector": label_selector or None, "fieldSelector": field_selector},
            accept=METADATA_LIST_ACCEPT if metadata_only else "application/json",
        )
        items = answer.get("items") or []
        for item in items:
            if metadata_only:
                item.update(apiVersion=api_version, kind=kind)
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
        metadata_only: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Watch events (``{"type", "object"}``, plain dicts) until the server ends the
        stream; with ``metadata_only``, of the objects' ``metadata`` alone (as
        ``list_object``'s, labelled with ``api_version`` and ``kind``).

        A connection of its own for as long as the stream is open; lines are split by the
        library's ``iter_resp_lines``. An ``ERROR`` event is yielded as it comes (410 Gone:
        relist and start again). ``kubernetes.watch.Watch`` is not used: it turns objects
        into model classes and restarts the stream by itself, where the informer decides.
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
        self.requests += 1
        accept = METADATA_ACCEPT if metadata_only else "application/json"
        answer = self._send("GET", url, None, "", (self.timeout, timeout_seconds + 30), accept)
        stream = answer.response
        try:
            if answer.status != 200:
                raise ApiError(answer.status, _status_of(answer.read()), "GET", url)
            for line in iter_resp_lines(stream):
                if line.strip():
                    event = json.loads(line)
                    obj = event.get("object")
                    if metadata_only and event.get("type") != "ERROR" and isinstance(obj, dict):
                        obj.update(apiVersion=api_version, kind=kind)
                    yield event
        except (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ProtocolError):
            return
        finally:
            stream.close()
            stream.release_conn()


def _status_of(body: bytes | None) -> dict[str, Any] | None:
    """The ``Status`` object of an error answer (or its text as the message)."""
    try:
        status = json.loads(body) if body else None
    except ValueError:
        return {"message": (body or b"").decode("utf-8", "replace")[:500]}
    return status if isinstance(status, dict) else None
