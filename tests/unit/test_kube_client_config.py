"""Where the client's connection comes from: kubeconfig files, their merge, credentials,
the in-cluster service account, and the settings it refuses rather than ignores.

The kubeconfig is read by ``kube_config`` (our own, no ``kubernetes`` package) into a
``Connection``; these tests check what lands in it (the CA as ``ca_file`` or ``ca_data``,
client certificates as files, ``-data`` ones written to private files it names in
``cert_file`` and ``key_file``; the credential through ``authorization()``) and the errors."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.kube import kube_client as kc


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def kubeconfig(
    path: Path,
    *,
    server="https://127.0.0.1:6443",
    user=None,
    context="c",
    namespace=None,
    cluster_extra=None,
    name_suffix="",
) -> Path:
    cluster = {"server": server, **(cluster_extra or {})}
    ctx = {"cluster": "k" + name_suffix, "user": "u" + name_suffix}
    if namespace:
        ctx["namespace"] = namespace
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "k" + name_suffix, "cluster": cluster}],
        "users": [{"name": "u" + name_suffix, "user": user or {"token": "t0k"}}],
        "contexts": [{"name": context, "context": ctx}],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for variable in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_an_explicit_kubeconfig_gives_server_namespace_and_token(tmp_path):
    path = kubeconfig(
        tmp_path / "kc",
        namespace="openstack",
        cluster_extra={"certificate-authority-data": b64(b"CA PEM")},
    )
    conn = kc.load_connection(str(path))
    assert conn.server == "https://127.0.0.1:6443"
    assert conn.namespace == "openstack"
    assert conn.ca_data == b"CA PEM" and conn.ca_file is None
    assert conn.authorization() == "Bearer t0k"
    assert conn.verify is True and conn.proxy is None
    assert "context c" in conn.source


def test_the_namespace_defaults_to_default(tmp_path):
    assert kc.load_connection(str(kubeconfig(tmp_path / "kc"))).namespace == "default"


def test_k8s_auth_kubeconfig_wins_over_kubeconfig_as_ansible_operator_sets_both(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(kubeconfig(tmp_path / "a", server="https://a:1")))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "b", server="https://b:1")))
    assert kc.load_connection().server == "https://a:1"


def test_a_kubeconfig_list_merges_with_the_first_definition_winning(tmp_path, monkeypatch):
    first = kubeconfig(tmp_path / "a", server="https://first:1")
    second = kubeconfig(tmp_path / "b", server="https://second:1", context="other", name_suffix="2")
    doc = yaml.safe_load(second.read_text())
    doc["clusters"].append({"name": "k", "cluster": {"server": "https://shadowed:1"}})
    second.write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(second)]))
    assert kc.load_connection().server == "https://first:1"  # current-context of the first file
    assert kc.load_connection(context="other").server == "https://second:1"


def test_home_kubeconfig_is_the_fallback(tmp_path):
    home = tmp_path / "home" / ".kube"
    home.mkdir(parents=True)
    kubeconfig(home / "config", server="https://home:1")
    assert kc.load_connection().server == "https://home:1"


def test_file_references_are_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "certs" / "c.crt").write_bytes(b"CERT")
    (tmp_path / "certs" / "c.key").write_bytes(b"KEY")
    path = kubeconfig(
        tmp_path / "kc",
        cluster_extra={"certificate-authority": "certs/ca.crt"},
        user={"client-certificate": "certs/c.crt", "client-key": "certs/c.key"},
    )
    config = kc.load_connection(str(path))
    assert (read(config.ca_file), read(config.cert_file), read(config.key_file)) == (
        b"CA",
        b"CERT",
        b"KEY",
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"current-context": None}, "names no current-context"),
        ({"current-context": "nope"}, "has no context 'nope'"),
        ({"clusters": []}, "names cluster 'k', which is absent"),
        (
            {"users": [{"name": "u", "user": {"auth-provider": {"name": "azure"}}}]},
            "auth-provider 'azure' is not supported by the kubernetes client",
        ),
        (
            {
                "clusters": [
                    {"name": "k", "cluster": {"server": "https://x", "proxy-url": "socks5://p:1"}}
                ]
            },
            "SOCKS proxy, which needs the PySocks package",
        ),
        ({"clusters": [{"name": "k", "cluster": {}}]}, "has no server"),
    ],
)
def test_unusable_kubeconfigs_are_refused_with_the_reason(tmp_path, change, message):
    path = kubeconfig(tmp_path / "kc")
    doc = yaml.safe_load(path.read_text())
    doc.update(change)
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(kc.KubeConfigError, match=message):
        kc.load_connection(str(path))


def test_proxy_url_and_tls_settings_reach_the_configuration(tmp_path):
    path = kubeconfig(
        tmp_path / "kc",
        cluster_extra={
            "proxy-url": "http://127.0.0.1:3128",
            "tls-server-name": "kubernetes.default",
            "insecure-skip-tls-verify": True,
        },
    )
    config = kc.load_connection(str(path))
    assert config.proxy == "http://127.0.0.1:3128"
    assert config.proxy_for_requests() == "http://127.0.0.1:3128"
    assert config.tls_server_name == "kubernetes.default"
    assert config.verify is False


ENV_PROXY = "http://proxy.example:3128"


@pytest.mark.parametrize(
    ("server", "proxy_url", "expected"),
    [
        # kubectl (Go's ProxyFromEnvironment) never proxies loopback, whatever NO_PROXY says
        ("https://127.0.0.1:6443", None, None),
        ("https://127.0.0.2:6443", None, None),
        ("https://[::1]:6443", None, None),
        ("https://localhost:6443", None, None),
        ("https://LocalHost:6443", None, None),
        # any other server takes HTTPS_PROXY
        ("https://10.0.0.1:6443", None, ENV_PROXY),
        ("https://kube.example:6443", None, ENV_PROXY),
        ("https://localhost.example:6443", None, ENV_PROXY),
        # NO_PROXY still applies (the library reads it; the request path checks it)
        ("https://api.internal:6443", None, ENV_PROXY),
        # a kubeconfig proxy-url applies to loopback too, as in client-go
        ("https://127.0.0.1:6443", "http://127.0.0.1:3128", "http://127.0.0.1:3128"),
    ],
)
def test_an_environment_proxy_is_not_used_for_an_api_server_on_loopback(
    tmp_path, monkeypatch, server, proxy_url, expected
):
    for variable in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", ENV_PROXY)
    monkeypatch.setenv("NO_PROXY", "api.internal")
    extra = {"proxy-url": proxy_url} if proxy_url else None
    path = kubeconfig(tmp_path / "kc", server=server, cluster_extra=extra)
    config = kc.load_connection(str(path))
    assert config.proxy == expected
    assert config.no_proxy == "api.internal"


def test_the_in_cluster_connection_takes_the_environment_proxy_but_not_for_loopback(
    tmp_path, monkeypatch
):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token")
    (sa / "ca.crt").write_bytes(b"CLUSTER CA")
    monkeypatch.setenv("HTTPS_PROXY", ENV_PROXY)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    assert kc.in_cluster_connection(sa).proxy == ENV_PROXY
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    assert kc.in_cluster_connection(sa).proxy is None


def test_the_library_global_configuration_is_left_alone(tmp_path):
    from kubernetes.client import Configuration

    before = Configuration.get_default_copy().host
    kc.KubeClient.from_environment(str(kubeconfig(tmp_path / "kc", server="https://elsewhere:1")))
    assert Configuration.get_default_copy().host == before


def test_a_missing_referenced_file_is_a_config_error(tmp_path):
    path = kubeconfig(tmp_path / "kc", cluster_extra={"certificate-authority": "nope.crt"})
    with pytest.raises(kc.KubeConfigError, match=r"nope\.crt"):
        kc.load_connection(str(path))


def test_a_missing_explicit_kubeconfig_says_so_and_where_it_came_from(tmp_path):
    missing = tmp_path / "gone.yaml"
    with pytest.raises(kc.KubeConfigError) as caught:
        kc.load_connection(str(missing), origin="--kubeconfig")
    assert str(caught.value) == f"kubeconfig {missing} (from --kubeconfig) does not exist"
    with pytest.raises(kc.KubeConfigError, match=r"\(from the kubeconfig argument\)"):
        kc.KubeClient.from_environment(str(missing))


@pytest.mark.parametrize("variable", ["KUBECONFIG", "K8S_AUTH_KUBECONFIG"])
def test_a_missing_kubeconfig_of_a_variable_says_so_and_names_the_variable(
    tmp_path, monkeypatch, variable
):
    missing = tmp_path / "gone.yaml"
    monkeypatch.setenv(variable, str(missing))
    with pytest.raises(kc.KubeConfigError) as caught:
        kc.load_connection()
    assert str(caught.value) == f"kubeconfig {missing} (from {variable}) does not exist"
    monkeypatch.setenv(variable, os.pathsep.join([str(missing), str(tmp_path / "also-gone")]))
    with pytest.raises(kc.KubeConfigError) as caught:
        kc.load_connection()
    assert str(caught.value) == (
        f"none of the kubeconfig files of {variable} exists: {missing}, {tmp_path / 'also-gone'}"
    )


def test_missing_files_of_a_kubeconfig_list_are_skipped_as_kubectl_skips_them(
    tmp_path, monkeypatch
):
    present = kubeconfig(tmp_path / "present", server="https://present:1")
    listed = [tmp_path / "gone-1", present, tmp_path / "gone-2"]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(p) for p in listed))
    conn = kc.load_connection()
    assert conn.server == "https://present:1"
    assert conn.source == f"kubeconfig {present}, context c"


def test_a_kubeconfig_that_is_a_directory_is_refused(tmp_path):
    with pytest.raises(kc.KubeConfigError, match=f"kubeconfig {tmp_path} is not a file"):
        kc.load_connection(str(tmp_path))


def test_in_cluster_reads_the_service_account(tmp_path, monkeypatch):
    sa = tmp_path / "sa"
    sa.mkdir()
    # kubelet writes the token without a newline; surrounding whitespace would be dropped
    (sa / "token").write_text("sa-token\n")
    (sa / "ca.crt").write_bytes(b"CLUSTER CA")
    (sa / "namespace").write_text("c5c3-glance-system")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    conn = kc.in_cluster_connection(sa)
    assert conn.server == "https://10.96.0.1:443"
    assert conn.namespace == "c5c3-glance-system"
    assert conn.authorization() == "Bearer sa-token"
    assert read(conn.ca_file) == b"CLUSTER CA"
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    assert kc.in_cluster_connection(sa).server == "https://[fd00::1]:443"


def test_no_kubeconfig_and_no_pod_says_what_to_set():
    with pytest.raises(kc.KubeConfigError, match="set KUBECONFIG"):
        kc.load_connection()


def client_for(tmp_path, user) -> kc.KubeClient:
    return kc.KubeClient(
        kc.load_connection(str(kubeconfig(tmp_path / "kc", server="http://127.0.0.1:1", user=user)))
    )


def test_a_token_file_is_read_again_when_it_changes(tmp_path):
    token = tmp_path / "token"
    token.write_text("first\n")
    client = client_for(tmp_path, {"tokenFile": str(token)})
    assert client._auth_headers() == {"Authorization": "Bearer first"}
    token.write_text("second\n")
    os.utime(token, (1, 1))
    assert client._auth_headers() == {"Authorization": "Bearer second"}


def test_basic_auth_carries_the_user_name_ansible_operator_encodes_the_owner_in(tmp_path):
    client = client_for(tmp_path, {"username": "b3duZXI=", "password": "x"})
    expected = "Basic " + b64(b"b3duZXI=:x")
    assert client._auth_headers() == {"Authorization": expected}


def write_plugin(tmp_path: Path, status: dict, exit_code: int = 0) -> Path:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert info['kind'] == 'ExecCredential', info\n"
        f"print(json.dumps({{'apiVersion': info['apiVersion'], 'kind': 'ExecCredential', 'status': {status!r}}}))\n"
        "sys.stderr.write(os.environ.get('EXTRA', ''))\n"
        f"sys.exit({exit_code})\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return plugin


def counted_exec_client(tmp_path: Path, token: str, expires: str) -> tuple[kc.KubeClient, Path]:
    """A client whose user runs an exec plugin answering ``token`` valid until ``expires``,
    and the file that gets an ``x`` each time the plugin runs."""
    counter = tmp_path / "calls"
    plugin = write_plugin(tmp_path, {"token": token, "expirationTimestamp": expires})
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\necho x >> {counter}\nexec {plugin}\n")
    wrapper.chmod(0o755)
    client = client_for(
        tmp_path,
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(wrapper)}},
    )
    return client, counter


def test_an_exec_plugin_token_is_used_and_cached_until_it_expires(tmp_path):
    client, counter = counted_exec_client(tmp_path, "exec-token", "2999-01-01T00:00:00Z")
    assert client._auth_headers() == {"Authorization": "Bearer exec-token"}
    assert client._auth_headers() == {"Authorization": "Bearer exec-token"}
    assert counter.read_text().count("x") == 1


def test_an_exec_plugin_that_fails_names_its_error(tmp_path):
    plugin = write_plugin(tmp_path, {}, exit_code=3)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "env": [{"name": "EXTRA", "value": "login first"}],
        }
    }
    # the library logs a failing plugin and goes on without credentials; we refuse instead
    with pytest.raises(
        kc.KubeConfigError, match=r"user 'u': exec plugin .*returned 3\. login first"
    ):
        client_for(tmp_path, user)


def test_an_expired_exec_token_is_asked_for_again(tmp_path):
    client, counter = counted_exec_client(tmp_path, "short-lived", "2000-01-01T00:00:00Z")
    assert client._auth_headers() == {"Authorization": "Bearer short-lived"}
    assert counter.read_text().count("x") == 2  # at load, and again for the request


def test_a_server_that_is_not_http_is_refused(tmp_path):
    with pytest.raises(kc.KubeConfigError, match="not an http"):
        kc.KubeClient(kc.Connection(server="ftp://x"))


def test_resource_paths_of_namespaced_cluster_scoped_and_subresources():
    client = kc.KubeClient(kc.Connection(server="https://127.0.0.1:6443/prefix"))
    assert (
        client.path("apps/v1", "Deployment", "ns", "d")
        == "/apis/apps/v1/namespaces/ns/deployments/d"
    )
    assert client.path("v1", "Secret", "ns") == "/api/v1/namespaces/ns/secrets"
    assert client.path("glance.openstack.c5c3.io/v1alpha1", "Glance", "ns", "g", "status") == (
        "/apis/glance.openstack.c5c3.io/v1alpha1/namespaces/ns/glances/g/status"
    )
    assert client.path("scheduling.k8s.io/v1", "PriorityClass", "ns", "p") == (
        "/apis/scheduling.k8s.io/v1/priorityclasses/p"
    )
    assert client.url_path("/api/v1/x", {"a": None, "force": True, "s": "k=v,l"}) == (
        "/prefix/api/v1/x?force=true&s=k%3Dv%2Cl"
    )


def test_api_error_carries_the_status_reason():
    error = kc.ApiError(409, {"reason": "AlreadyExists", "message": "exists"}, "POST", "/x")
    assert error.already_exists and not error.conflict and not error.not_found
    assert str(error) == "POST /x: 409 AlreadyExists: exists"
    assert kc.ApiError(409, {"reason": "Conflict"}, "PATCH", "/x").conflict
    assert json.dumps(kc.ApiError(404, None, "GET", "/y").status) == "{}"
