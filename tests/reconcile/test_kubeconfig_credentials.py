"""Passes from a workstation's kubeconfig: a ``proxy-url`` in front of the API server and an
``exec`` credential plugin, on the test double and (``KUBE_ASSETS_DIR``) a real
kube-apiserver.

The proxy is a ``CONNECT`` proxy on loopback (``support.connect_proxy``); the kubeconfig
names the API server as ``kube.invalid``, a name that does not resolve, which only the
proxy maps to 127.0.0.1: a pass that succeeds went through it. The exec plugin is a script
written here that prints an ExecCredential with the token the server accepts (the double's
token, the harness's token auth file) and counts its runs.
"""

from __future__ import annotations

import base64
import json
import stat
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.api_env import api_env, sample_documents
from support.connect_proxy import ConnectProxy
from support.playbook_run import run_playbook

GATHER = "c5c3.glance.gather"
APPLY = "c5c3.glance.apply"
REPORT = "c5c3.glance.report"
EXEC_API_VERSION = "client.authentication.k8s.io/v1"


def derived_kubeconfig(
    api, path: Path, cluster: dict[str, Any] | None = None, user: dict | None = None
) -> Path:
    """The env's kubeconfig with its cluster entry updated by ``cluster`` and its user
    replaced by ``user``."""
    doc = yaml.safe_load(api.kubeconfig.read_text())
    doc["clusters"][0]["cluster"].update(cluster or {})
    if user is not None:
        doc["users"][0]["user"] = user
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def server_of(api) -> tuple[urllib.parse.SplitResult, dict[str, Any], str]:
    """The API server's URL, its cluster entry and the token of the env's kubeconfig."""
    doc = yaml.safe_load(api.kubeconfig.read_text())
    cluster = doc["clusters"][0]["cluster"]
    return urllib.parse.urlsplit(cluster["server"]), cluster, doc["users"][0]["user"]["token"]


def glance_pass(api, kubeconfig: Path):
    return run_playbook(
        "glance.yml",
        {"glance_name": "glance", "glance_namespace": api.namespace},
        kubeconfig=kubeconfig,
    )


def test_passes_go_through_the_proxy_url_of_the_kubeconfig(api, tmp_path):
    api.create_all(sample_documents())
    url, cluster, _ = server_of(api)
    with ConnectProxy(routes={"kube.invalid": "127.0.0.1"}) as proxy:
        via_proxy = {"server": f"https://kube.invalid:{url.port}", "proxy-url": proxy.url}
        if cluster.get("certificate-authority-data"):
            via_proxy["tls-server-name"] = "localhost"  # a name of the double's certificate
        kubeconfig = derived_kubeconfig(api, tmp_path / "proxied", via_proxy)
        first = glance_pass(api, kubeconfig)
        assert first.ok, f"{first.failures}\n{first.stdout[-3000:]}"
        second = glance_pass(api, kubeconfig)
        assert second.ok, f"{second.failures}\n{second.stdout[-3000:]}"
    # the first pass adds the finalizer with its writes and reports (docs/reconcile.md)
    assert first.step_actions == [GATHER, APPLY, REPORT]
    assert second.step_actions[0] == GATHER
    # what the passes asked for, the server did
    assert api.get("Glance", "glance")["metadata"]["finalizers"] == [
        "glance.openstack.c5c3.io/finalizer"
    ]
    assert api.get("Job", "glance-db-sync") is not None
    assert api.condition("Glance", "glance", "SecretsReady")["status"] == "True"
    # ... through the proxy: one tunnel at least per step (gather, apply, report: each loads
    # the kubeconfig in its task's worker), all to the server
    assert not proxy.refused
    assert {t.target for t in proxy.tunnels} == {f"kube.invalid:{url.port}"}
    steps = len(first.step_actions) + len(second.step_actions)
    assert len(proxy.tunnels) >= steps
    assert all(t.bytes_up and t.bytes_down for t in proxy.tunnels)


def proxy_environment(url: str) -> dict[str, str]:
    """A workstation's proxy settings: every spelling set, nothing exempted."""
    return {name: url for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")} | {
        "NO_PROXY": "",
        "no_proxy": "",
    }


def test_a_proxy_from_the_environment_carries_passes_as_kubectl_uses_it(api, tmp_path):
    api.create_all(sample_documents())
    url, cluster, _ = server_of(api)
    with ConnectProxy(routes={"kube.invalid": "127.0.0.1"}) as proxy:
        remote = {"server": f"https://kube.invalid:{url.port}"}
        if cluster.get("certificate-authority-data"):
            remote["tls-server-name"] = "localhost"
        kubeconfig = derived_kubeconfig(api, tmp_path / "remote", remote)
        run = run_playbook(
            "glance.yml",
            {"glance_name": "glance", "glance_namespace": api.namespace},
            kubeconfig=kubeconfig,
            env=proxy_environment(proxy.url),
        )
        assert run.ok, f"{run.failures}\n{run.stdout[-3000:]}"
    assert api.get("Job", "glance-db-sync") is not None
    assert not proxy.refused
    assert {t.target for t in proxy.tunnels} == {f"kube.invalid:{url.port}"}


def test_an_api_server_on_loopback_is_reached_directly_despite_a_proxy_environment(api, tmp_path):
    """kubectl never proxies loopback (a kind cluster on a workstation behind a corporate
    proxy); the environment's proxy here is one that is never reached."""
    api.create_all(sample_documents())
    with ConnectProxy() as proxy:
        run = run_playbook(
            "glance.yml",
            {"glance_name": "glance", "glance_namespace": api.namespace},
            kubeconfig=api.kubeconfig,
            env=proxy_environment(proxy.url),
        )
        assert run.ok, f"{run.failures}\n{run.stdout[-3000:]}"
    assert api.get("Job", "glance-db-sync") is not None
    assert proxy.tunnels == [] and proxy.refused == []


def write_exec_plugin(tmp_path: Path, token: str) -> tuple[Path, Path]:
    """A credential plugin printing ``token``; each run appends its request to a log."""
    runs = tmp_path / "exec-runs.jsonl"
    plugin = tmp_path / "credential-plugin.py"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        f"with open({str(runs)!r}, 'a') as log:\n"
        "    log.write(json.dumps(info) + '\\n')\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',\n"
        f"                  'status': {{'token': {token!r}}}}}))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return plugin, runs


def test_a_pass_authenticates_with_an_exec_credential_plugin(api, tmp_path):
    api.create_all(sample_documents())
    _, _, token = server_of(api)
    plugin, runs = write_exec_plugin(tmp_path, token)
    user = {"exec": {"apiVersion": EXEC_API_VERSION, "command": str(plugin)}}
    run = glance_pass(api, derived_kubeconfig(api, tmp_path / "exec", user=user))
    assert run.ok, f"{run.failures}\n{run.stdout[-3000:]}"
    assert run.step_actions == [GATHER, APPLY, REPORT]
    assert api.get("Glance", "glance")["metadata"]["finalizers"] == [
        "glance.openstack.c5c3.io/finalizer"
    ]
    requests = [json.loads(line) for line in runs.read_text().splitlines()]
    # one run per step (each loads the kubeconfig; the token has no expiry: kept for the
    # step's life)
    assert len(requests) == len(run.step_actions)
    assert all(
        r["kind"] == "ExecCredential" and r["apiVersion"] == EXEC_API_VERSION for r in requests
    )


def test_a_token_from_an_exec_plugin_that_the_server_rejects_fails_the_pass(api, tmp_path):
    api.create_all(sample_documents())
    plugin, runs = write_exec_plugin(tmp_path, "not-a-token-the-server-knows")
    user = {"exec": {"apiVersion": EXEC_API_VERSION, "command": str(plugin)}}
    run = glance_pass(api, derived_kubeconfig(api, tmp_path / "exec", user=user))
    assert not run.ok
    assert run.step_actions == [GATHER]
    assert any("401" in failure and "Unauthorized" in failure for failure in run.failures), (
        run.failures
    )
    # at load, and once more for the 401 (client-go's exec authenticator); the plugin gave
    # the same token, so the request was not sent again
    assert runs.read_text().count("\n") == 2
    assert "finalizers" not in api.get("Glance", "glance")["metadata"]


@pytest.fixture
def real_api(request, tmp_path):
    """The session's kube-apiserver (client certificates: the double verifies none)."""
    yield from api_env("kube-apiserver", request, tmp_path, "reconcile")


@pytest.mark.integration
def test_a_pass_with_a_data_client_certificate_leaves_no_key_in_tmpdir(real_api, request, tmp_path):
    """The issue's finding: a kubeconfig with ``client-key-data`` (kind's; every
    target-cluster registration's) made each step write the key into ``$TMPDIR``, to be
    removed at exit, which Ansible's forked workers never reach. The pass here runs as
    ``ansible-playbook`` does, authenticated by the certificate alone (no token anywhere),
    with a ``TMPDIR`` of its own: afterwards nothing there holds the key."""
    server = request.getfixturevalue("real_apiserver")
    real_api.create_all(sample_documents())
    cert, key = server.client_certificate("cert-admin", "system:masters")
    kubeconfig = server.write_kubeconfig(
        tmp_path / "cert-kubeconfig",
        user={
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        },
    )
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    run = run_playbook(
        "glance.yml",
        {"glance_name": "glance", "glance_namespace": real_api.namespace},
        kubeconfig=kubeconfig,
        env={"TMPDIR": str(scratch)},
    )
    assert run.ok, f"{run.failures}\n{run.stdout[-3000:]}"
    assert run.step_actions == [GATHER, APPLY, REPORT]
    assert real_api.get("Job", "glance-db-sync") is not None  # written as cert-admin
    left = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*"))
    assert not [name for name in left if name.startswith("c5c3-glance-kube-")], left
    body = key.split(b"-----")[2].strip()  # the key's base64, whatever the PEM line ends
    holding = [p for p in scratch.rglob("*") if p.is_file() and body[:64] in p.read_bytes()]
    assert holding == [], holding
