"""The client's credentials against a real kube-apiserver: who the server says we are.

Each test asks the server itself (``SelfSubjectReview``, which every authenticated user
may create) which user it authenticated, so a credential that was not sent, a
certificate that was not presented or an impersonation that was ignored shows as the
wrong name:

- a kubeconfig with ``client-certificate-data``/``client-key-data`` (kind's, every
  target-cluster registration's) authenticates, and leaves nothing in ``TMPDIR``;
- an exec plugin's token that the server stops accepting (its ServiceAccount deleted) is
  renewed on the 401, and the request that got it succeeds;
- an exec plugin's client certificate, renewed when it expires, is presented on a new
  connection (the kept-alive one would still present the old one);
- ``as``/``as-groups``/``as-user-extra`` are sent and honoured.
"""

from __future__ import annotations

import base64
import datetime
import time
from pathlib import Path
from typing import Any

import pytest
from kube_harness import ApiError
from support.exec_plugin import ExecPlugin

from ansible_collections.c5c3.glance.plugins.module_utils.kube import kube_client as kc

pytestmark = pytest.mark.integration

REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def whoami(client: kc.KubeClient) -> dict[str, Any]:
    """The user the server authenticated this client's request as."""
    answer = client.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=REVIEW
    )
    return answer["status"]["userInfo"]


def client_of(kube, tmp_path: Path, user: dict[str, Any]) -> kc.KubeClient:
    path = kube.write_kubeconfig(tmp_path / "kubeconfig", user=user)
    return kc.KubeClient.from_environment(str(path))


def test_a_data_client_certificate_authenticates_and_leaves_nothing_behind(
    kube, tmp_path, monkeypatch
):
    cert, key = kube.client_certificate("cert-user", "system:masters")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    client = client_of(
        kube,
        tmp_path,
        {
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        },
    )
    info = whoami(client)
    assert info["username"] == "cert-user"
    assert "system:masters" in info["groups"]
    assert client.list("v1", "Namespace")  # the group's rights, through the certificate
    assert list(scratch.iterdir()) == []


def service_account_token(kube, namespace: str, name: str) -> str:
    """A bound token of a new ServiceAccount ``name`` (TokenRequest): valid while the
    ServiceAccount exists."""
    kube.client.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}}
    )
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    answer = kube.client.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", request
    )
    return answer["status"]["token"]


def refused(kube, token: str) -> bool:
    """The server answers 401 to ``token`` now."""
    probe = type(kube.client)(kube.client.base_url, token)
    try:
        probe.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW)
    except ApiError as exc:
        if exc.code == 401:
            return True
        raise
    return False


def wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def test_an_exec_token_the_server_stops_accepting_is_renewed_on_the_401(kube, tmp_path):
    """A token without an expiry, revoked on the server (its ServiceAccount deleted): the
    next request gets 401, the plugin runs again, the request goes once more with the new
    token and succeeds - what client-go's exec authenticator does on a 401."""
    namespace = "exec-refresh"
    kube.client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    first = service_account_token(kube, namespace, "first")
    second = service_account_token(kube, namespace, "second")
    plugin = ExecPlugin(tmp_path, [{"token": first}])
    client = client_of(kube, tmp_path, plugin.user)
    assert whoami(client)["username"] == f"system:serviceaccount:{namespace}:first"
    assert plugin.runs == 1

    kube.client.delete(f"/api/v1/namespaces/{namespace}/serviceaccounts/first")
    wait_for(lambda: refused(kube, first), "the first token is still accepted")
    plugin.answer({"token": second})
    before = client.requests
    assert whoami(client)["username"] == f"system:serviceaccount:{namespace}:second"
    assert plugin.runs == 2  # once for the 401, not for every request
    assert client.requests - before == 2  # the 401, then the same request again
    assert whoami(client)["username"] == f"system:serviceaccount:{namespace}:second"
    assert plugin.runs == 2


def test_a_renewed_exec_certificate_is_presented_on_a_new_connection(kube, tmp_path):
    """The plugin's certificate expires and the plugin gives another (another user): the
    client makes a new TLS context and closes the old pool's connections, so the server
    sees the new certificate (a kept-alive connection would authenticate the old one)."""
    plugin = ExecPlugin(tmp_path)

    def answer(user: str, expires: datetime.datetime | None) -> None:
        cert, key = kube.client_certificate(user)
        body = {"clientCertificateData": cert.decode(), "clientKeyData": key.decode()}
        if expires is not None:
            body["expirationTimestamp"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
        plugin.answer(body)

    expires = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    expires += datetime.timedelta(seconds=2)
    answer("exec-cert-one", expires)
    client = client_of(kube, tmp_path, plugin.user)
    assert whoami(client)["username"] == "exec-cert-one"
    assert whoami(client)["username"] == "exec-cert-one"  # kept alive, not renewed
    answer("exec-cert-two", None)
    wait_for(
        lambda: datetime.datetime.now(datetime.UTC) > expires, "the certificate has not expired"
    )
    assert whoami(client)["username"] == "exec-cert-two"
    assert plugin.runs == 2


def test_impersonation_is_honoured(kube, tmp_path):
    client = client_of(
        kube,
        tmp_path,
        {
            "token": kube.token,
            "as": "alice",
            "as-groups": ["team-a", "team-b"],
            "as-user-extra": {"reason": ["testing", "review"]},
        },
    )
    info = whoami(client)
    assert info["username"] == "alice"
    assert {"team-a", "team-b"} <= set(info["groups"])
    assert info.get("extra", {}).get("reason") == ["testing", "review"]
