# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Kubernetes API client of the collection: the gather, apply and report modules, the
runner and the admission webhook talk to the API server through it.

It is our own thin layer over urllib3: one ``PoolManager`` (or ``ProxyManager``) per
client, a keep-alive pool shared by the threads, and every call one request with JSON in
and out. Objects stay plain dicts (no model classes, no discovery beyond what a kind not
in ``KNOWN_RESOURCES`` needs). ``requests`` and ``writes`` count the calls, so a benchmark
can say how many API calls a pass made. The ``kubernetes`` Python package is not imported
(its import cost a quarter of a CPU-second in each module's cold process); only a user
with the ``oidc`` auth-provider loads it, in ``kube_config``.

Where the connection comes from and how it authenticates (kubeconfig files and their
merge, the in-cluster service account, tokens, token files, exec plugins, client
certificates, TLS settings, proxies) is ``kube_config``'s; its names are importable from
here as before (``load_connection``, ``Connection``, ``KubeConfigError``...).

What a request does: the ``Authorization`` header the connection's credential gives now
(an expired exec token or a changed token file is renewed first), the kubeconfig's
impersonation headers, ``User-Agent`` ``c5c3-glance``, ``Accept`` as asked; a dict or list
body is sent as JSON, a str or bytes body as it is, each with the content type given
(server-side apply sends JSON as ``application/apply-patch+yaml``: JSON is YAML). Timeouts
are urllib3's: one number for the whole request, or (connect, read) for a watch. Transport
failures (refused, reset, TLS) become ``ConnectionError``, an ``OSError`` as the callers
expect of an API server that is away; a non-2xx answer is ``ApiError`` for ``request`` and
returned as it is by ``raw``. A watch is a streamed response split into lines here.

Sent again, as client-go's ``rest.Request`` sends them again (``_exchange``):

- an answer 429 or 5xx **with** ``Retry-After`` (whole seconds): after that wait, for every
  verb (our bodies are bytes, which client-go sends again too: a server-side apply, a
  create, a delete alike), at most ``MAX_RETRIES`` times and never past the request's
  timeout (a wait that would end past it gives the answer as it is);
- a 401 when the credential is an exec plugin's: the plugin runs again and, if that gave
  a new credential, the request goes once more (then its answer, whatever it is);
- a connection that fails: refused before anything was sent, any verb; reset or broken
  after the request was sent, the idempotent verbs only (GET, PUT, DELETE...), 3 times
  in all (urllib3's ``Retry``; client-go retries a reset GET).

TLS is one ``ssl.SSLContext`` per client, made when the client is made: the CA from the
kubeconfig's data or file (else the system's), the client certificate loaded into it from
memory (``load_client_certificate``: no key is ever written to a disk). An exec plugin
that gives a new certificate makes the client build a new context and pool; the old
pool's connections are closed, as client-go closes them.
"""

from __future__ import annotations

import json
import os
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import urllib3
from urllib3.util.ssl_ import create_urllib3_context

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_config import (
    AUTH_PROVIDERS,
    SERVICE_ACCOUNT_DIR,
    Connection,
    KubeConfigError,
    connection_from_document,
    in_cluster_connection,
    load_connection,
    load_kubeconfig,
)

DEFAULT_TIMEOUT = 30.0
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
USER_AGENT = "c5c3-glance"
MAX_RETRIES = 10
"""Answers with Retry-After a request is sent again after, at most (client-go's
``rest.Request`` default)."""
TRANSPORT_RETRIES = urllib3.Retry(total=3, respect_retry_after_header=False)
"""urllib3's part: connections refused (any verb) or broken after sending (idempotent verbs
only), 3 times. Answers are never retried there (``_exchange`` does it client-go's way)."""
POOL_SIZE = 64
"""Connections kept per host: the runner holds a watch connection per informer besides its
workers' requests (a smaller pool would discard connections, and urllib3 warn)."""

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
    """Kubernetes REST calls through one urllib3 pool of keep-alive connections (a
    ``ProxyManager`` when the connection has a proxy), safe to share between threads."""

    def __init__(self, connection: Connection, timeout: float = DEFAULT_TIMEOUT):
        self.connection = connection
        self.timeout = timeout
        url = urllib.parse.urlsplit(connection.server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise KubeConfigError(f"server {connection.server!r} is not an http(s) URL")
        self._origin = f"{url.scheme}://{url.netloc}"
        self._prefix = url.path.rstrip("/")
        self._pool_lock = threading.Lock()
        self._certificate = connection.client_certificate()
        self._pool = _pool_manager(connection, self._certificate)
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

    def _auth_headers(self) -> urllib3.HTTPHeaderDict:
        """The ``Authorization`` header the connection's credential gives now (renewed
        first when it must be: an expired exec token, a changed token file) and the
        impersonation headers (a name may repeat: one ``Impersonate-Group`` a group)."""
        headers = urllib3.HTTPHeaderDict()
        value = self.connection.authorization()
        if value:
            headers["Authorization"] = value
        for name, header in self.connection.impersonate:
            headers.add(name, header)
        return headers

    def credential_headers(self) -> urllib3.HTTPHeaderDict:
        """What every request of this client carries to authenticate (``_auth_headers``),
        for a request made on a connection of its own (``pod_exec``)."""
        return self._auth_headers()

    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS context of this client's connections now (None for plain http), for a
        connection of its own (``pod_exec``)."""
        certificate = self._certificate
        if self.connection.credential is not None:
            certificate = self.connection.credential.client_certificate() or certificate
        return ssl_context(self.connection, certificate)

    def _current_pool(self) -> urllib3.PoolManager:
        """The pool for the client certificate of now: when an exec plugin gave a new
        one, a new TLS context and pool, the old pool's connections closed."""
        if self.connection.credential is None:
            return self._pool
        certificate = self.connection.credential.client_certificate()
        if certificate is None or certificate == self._certificate:
            return self._pool
        with self._pool_lock:
            if certificate != self._certificate:
                old, self._pool = self._pool, _pool_manager(self.connection, certificate)
                self._certificate = certificate
                old.clear()
        return self._pool

    def close(self) -> None:
        self._pool.clear()

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
        self, method: str, url: str, data: str | bytes | None, fixed: dict, limits: Any
    ) -> urllib3.BaseHTTPResponse:
        """One request with the ``fixed`` headers and the credential's of now; urllib3's
        response with the body still unread (the caller reads it and releases the
        connection). Transport failures (refused, reset, TLS: urllib3 gives up after
        ``TRANSPORT_RETRIES``) become ``ConnectionError``."""
        headers = self._auth_headers()
        headers.update(fixed)
        self.requests += 1
        if method in WRITE_METHODS:
            self.writes += 1
        try:
            return self._current_pool().request(
                method,
                self._origin + url,
                body=data,
                headers=headers,
                timeout=limits,
                retries=TRANSPORT_RETRIES,
                preload_content=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectionError(f"{method} {url}: {exc}") from exc

    def _exchange(
        self,
        method: str,
        url: str,
        body: Any,
        content_type: str,
        timeout: float | tuple[float, float],
        accept: str = "application/json",
    ) -> urllib3.BaseHTTPResponse:
        """A request (a dict or list ``body`` sent as JSON, a str or bytes one as it is;
        ``timeout`` one number for the whole request, or (connect, read)), sent again
        where client-go sends again (the module docstring): after a 429 or 5xx with
        Retry-After, and once after a 401 an exec plugin renews for. The last answer,
        unread."""
        fixed = {"Accept": accept, "User-Agent": USER_AGENT}
        data: str | bytes | None = None
        if body is not None:
            fixed["Content-Type"] = content_type
            data = body if isinstance(body, bytes | str) else json.dumps(body)
        if isinstance(timeout, tuple):
            limits = urllib3.Timeout(connect=timeout[0], read=timeout[1])
            deadline = time.monotonic() + self.timeout
        else:
            limits = urllib3.Timeout(total=timeout)
            deadline = time.monotonic() + timeout
        credential = self.connection.credential
        retries, refreshed = 0, False
        while True:
            serial = credential.serial if credential is not None else 0
            answer = self._send(method, url, data, fixed, limits)
            if answer.status == 401 and credential is not None and not refreshed:
                refreshed = True
                if credential.refresh(serial):
                    _discard(answer)
                    continue
                return answer
            wait = retry_after(answer)
            if wait is None or retries >= MAX_RETRIES or time.monotonic() + wait > deadline:
                return answer
            retries += 1
            _discard(answer)
            time.sleep(wait)

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
        answer = self._exchange(method, url, body, content_type, timeout or self.timeout, accept)
        try:
            data = answer.read()
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectionError(f"{method} {url}: {exc}") from exc
        finally:
            answer.release_conn()
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

        A connection of its own for as long as the stream is open, read line by line as
        the events arrive (``_lines``). An ``ERROR`` event is yielded as it comes (410
        Gone: relist and start again); the stream is not restarted here, the informer
        decides. A read timeout or a broken stream ends the iteration quietly.
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
        accept = METADATA_ACCEPT if metadata_only else "application/json"
        stream = self._exchange("GET", url, None, "", (self.timeout, timeout_seconds + 30), accept)
        try:
            if stream.status != 200:
                raise ApiError(stream.status, _status_of(stream.read()), "GET", url)
            for line in _lines(stream):
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


def retry_after(answer: urllib3.BaseHTTPResponse) -> int | None:
    """The seconds to wait before sending again, when the answer asks for it as client-go
    reads it: 429 or any 5xx, with a ``Retry-After`` of whole seconds; else None."""
    if answer.status != 429 and answer.status < 500:
        return None
    value = (answer.headers.get("Retry-After") or "").strip()
    try:
        seconds = int(value)
    except ValueError:
        return None
    return max(seconds, 0)


def _discard(answer: urllib3.BaseHTTPResponse) -> None:
    """Read an answer that is not kept, so its connection goes back to the pool."""
    try:
        answer.drain_conn()
    finally:
        answer.release_conn()


def load_client_certificate(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Load a client certificate and key held in memory (PEM) into ``context``.

    OpenSSL reads them from a path only. On Linux the path is an anonymous memory file
    (``memfd_create``, opened through ``/proc/self/fd``): it is in no directory and on no
    disk, and it is gone when its descriptor is closed, before this returns. Where there
    is no such file (another system, no ``/proc``), a private temporary directory (0700,
    files 0600) holds them for the one call and is removed before this returns."""
    if hasattr(os, "memfd_create"):
        descriptors: list[int] = []
        try:
            for name, content in (("cert", cert), ("key", key)):
                descriptors.append(os.memfd_create(f"c5c3-glance-client-{name}", os.MFD_CLOEXEC))
                _write_all(descriptors[-1], content)
            paths = [f"/proc/self/fd/{descriptor}" for descriptor in descriptors]
            if all(os.path.exists(path) for path in paths):
                context.load_cert_chain(paths[0], paths[1])
                return
        finally:
            for descriptor in descriptors:
                os.close(descriptor)
    with tempfile.TemporaryDirectory(prefix="c5c3-glance-kube-") as directory:
        paths = []
        for name, content in (("cert.pem", cert), ("key.pem", key)):
            paths.append(os.path.join(directory, name))
            descriptor = os.open(paths[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            _write_all(descriptor, content)
            os.close(descriptor)
        context.load_cert_chain(paths[0], paths[1])


def _write_all(descriptor: int, content: bytes) -> None:
    view = memoryview(content)
    while view:
        view = view[os.write(descriptor, view) :]


def ssl_context(
    connection: Connection, certificate: tuple[Any, Any] | None
) -> ssl.SSLContext | None:
    """The TLS context of an https connection, built here once (urllib3 would load the CA
    and the client certificate again for every new connection, from files): verification
    as the kubeconfig says, the CA from its data or file (else the system's), the client
    ``certificate`` (paths, or PEM bytes loaded from memory). ``KubeConfigError`` names
    what cannot be loaded."""
    if not connection.server.startswith("https"):
        return None
    context = create_urllib3_context(
        cert_reqs=ssl.CERT_REQUIRED if connection.verify else ssl.CERT_NONE
    )
    try:
        if not connection.verify:
            pass  # insecure-skip-tls-verify: no CA is read
        elif connection.ca_data is not None:
            try:  # PEM as text; anything else is DER
                context.load_verify_locations(cadata=connection.ca_data.decode("ascii"))
            except UnicodeDecodeError:
                context.load_verify_locations(cadata=connection.ca_data)
        elif connection.ca_file:
            context.load_verify_locations(cafile=connection.ca_file)
        else:
            context.load_default_certs()
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise KubeConfigError(
            f"{connection.describe()}: the certificate authority cannot be loaded: {exc}"
        ) from exc
    if certificate is not None:
        cert, key = certificate
        try:
            if isinstance(cert, bytes):
                load_client_certificate(context, cert, key)
            else:
                context.load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as exc:
            raise KubeConfigError(
                f"{connection.describe()}: the client certificate and key cannot be loaded: {exc}"
            ) from exc
    return context


def _pool_manager(
    connection: Connection, certificate: tuple[Any, Any] | None
) -> urllib3.PoolManager:
    """The urllib3 pool of a connection: its TLS context (``ssl_context``) for every
    connection of the pool, through its proxy when it has one."""
    if not connection.verify:
        # insecure-skip-tls-verify is the kubeconfig's explicit choice: urllib3 would
        # warn on every request, into every module's output.
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    options: dict[str, Any] = {
        "maxsize": POOL_SIZE,
        "cert_reqs": "CERT_REQUIRED" if connection.verify else "CERT_NONE",
    }
    context = ssl_context(connection, certificate)
    if context is not None:
        options["ssl_context"] = context
    if connection.tls_server_name:
        # the name sent (SNI) and checked against the certificate, whatever the URL says
        options["server_hostname"] = connection.tls_server_name
    proxy = connection.proxy_for_requests()
    if not proxy:
        return urllib3.PoolManager(**options)
    if proxy.lower().startswith("socks"):
        try:
            from urllib3.contrib.socks import SOCKSProxyManager
        except ImportError as exc:
            raise KubeConfigError(
                f"proxy {proxy} is a SOCKS proxy, which needs the PySocks package; "
                "it is not installed"
            ) from exc
        return SOCKSProxyManager(proxy, **options)
    return urllib3.ProxyManager(proxy, **options)


def _lines(response: urllib3.BaseHTTPResponse) -> Iterator[str]:
    """The lines of a streamed response as they arrive (a watch: one JSON event a line),
    decoded as UTF-8 (an invalid byte becomes U+FFFD). A chunk may end mid-line, or hold
    several lines; a newline byte never occurs inside a multi-byte UTF-8 sequence, so
    splitting the bytes is safe."""
    buffer = bytearray()
    for chunk in response.stream(amt=None, decode_content=False):
        buffer.extend(chunk)
        start = 0
        end = buffer.find(b"\n")
        while end != -1:
            yield buffer[start:end].decode("utf-8", errors="replace")
            start = end + 1
            end = buffer.find(b"\n", start)
        del buffer[:start]


def _status_of(body: bytes | None) -> dict[str, Any] | None:
    """The ``Status`` object of an error answer (or its text as the message)."""
    try:
        status = json.loads(body) if body else None
    except ValueError:
        return {"message": (body or b"").decode("utf-8", "replace")[:500]}
    return status if isinstance(status, dict) else None


__all__ = [
    "APPLY_PATCH",
    "AUTH_PROVIDERS",
    "DEFAULT_TIMEOUT",
    "JSON_PATCH",
    "KNOWN_RESOURCES",
    "MAX_RETRIES",
    "MERGE_PATCH",
    "METADATA_ACCEPT",
    "METADATA_LIST_ACCEPT",
    "POOL_SIZE",
    "SERVICE_ACCOUNT_DIR",
    "USER_AGENT",
    "WRITE_METHODS",
    "ApiError",
    "Connection",
    "KubeClient",
    "KubeConfigError",
    "Response",
    "connection_from_document",
    "in_cluster_connection",
    "load_connection",
    "load_kubeconfig",
]
