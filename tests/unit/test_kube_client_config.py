"""Where the client's connection comes from: kubeconfig files, their merge, credentials,
the in-cluster service account, and the settings it refuses rather than ignores.

The kubeconfig is read by ``kube_config`` (our own, no ``kubernetes`` package) into a
``Connection``; these tests check what lands in it (the CA as ``ca_file`` or ``ca_data``,
client certificates as the files' paths, ``-data`` ones held in memory as ``cert_data`` and
``key_data``, never written anywhere; the credential through ``authorization()``) and the
errors."""

from __future__ import annotations

import base64
import json
import os
import ssl
import stat
import sys
from pathlib import Path

import pytest
import yaml
from support.tls import make_server_tls

from ansible_collections.c5c3.glance.plugins.module_utils.kube import kube_client as kc
from ansible_collections.c5c3.glance.plugins.module_utils.kube import kube_config


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
    # NO_PROXY sends requests direct to the server it names (a proxy-url is always used)
    routed = None if server == "https://api.internal:6443" else expected
    assert config.proxy_for_requests() == routed


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


# --- what is ours now: no kubernetes package, private files, exec details, HTTP ---------------


def test_importing_and_using_the_client_does_not_import_the_kubernetes_package(tmp_path):
    """The point of our own loader and HTTP: a module's cold process does not pay for
    ``import kubernetes`` (only an oidc auth-provider user loads it)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    ca = make_server_tls(tmp_path / "tls").ca_pem
    path = kubeconfig(tmp_path / "kc", cluster_extra={"certificate-authority-data": b64(ca)})
    code = (
        "import sys\n"
        "from ansible_collections.c5c3.glance.plugins.module_utils.kube import kube_client as kc\n"
        f"kc.KubeClient.from_environment({str(path)!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root / ".collections")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def client_pair(tmp_path: Path) -> tuple[bytes, bytes]:
    """A real client certificate and key (PEM): OpenSSL checks that they belong together."""
    tls = make_server_tls(tmp_path / "client")
    return tls.cert_file.read_bytes(), tls.key_file.read_bytes()


@pytest.mark.parametrize("memfd", [True, False], ids=["memfd", "no-memfd"])
def test_data_credentials_stay_in_memory_and_leave_nothing_on_disk(tmp_path, monkeypatch, memfd):
    """``client-key-data`` is never written where it stays: the connection holds it in
    memory (and not in its repr), and the client loads it into its TLS context from an
    anonymous memory file, or, on a system without one, from a private directory it
    removes in the same call. Nothing is left in ``TMPDIR`` either way."""
    cert, key = client_pair(tmp_path)
    path = kubeconfig(
        tmp_path / "kc",
        user={"client-certificate-data": b64(cert), "client-key-data": b64(key)},
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    if not memfd:
        monkeypatch.delattr(os, "memfd_create")
    conn = kc.load_connection(str(path))
    assert (conn.cert_data, conn.key_data, conn.cert_file, conn.key_file) == (cert, key, None, None)
    assert conn.client_certificate() == (cert, key)
    assert key.decode() not in repr(conn) and "key_data" not in repr(conn)
    assert conn.authorization() is None  # the certificate alone authenticates
    client = kc.KubeClient(conn)
    assert isinstance(client._pool.connection_pool_kw["ssl_context"], ssl.SSLContext)
    assert list(scratch.iterdir()) == []


def test_a_client_key_that_does_not_fit_names_the_connection(tmp_path):
    cert, _ = client_pair(tmp_path)
    _, other_key = client_pair(tmp_path / "other")
    path = kubeconfig(
        tmp_path / "kc",
        user={"client-certificate-data": b64(cert), "client-key-data": b64(other_key)},
    )
    with pytest.raises(
        kc.KubeConfigError, match=r"context c\): the client certificate and key cannot be loaded"
    ):
        kc.KubeClient.from_environment(str(path))


def test_invalid_base64_data_names_the_field(tmp_path):
    path = kubeconfig(tmp_path / "kc", cluster_extra={"certificate-authority-data": "not base64!"})
    with pytest.raises(kc.KubeConfigError, match="certificate-authority-data is not base64"):
        kc.load_connection(str(path))


def test_relative_paths_of_a_merged_user_are_relative_to_the_users_own_file(tmp_path, monkeypatch):
    """client-go resolves each entry's paths against the file that defined it: here the
    cluster comes from one directory and the user (certificate, token file) from another."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "certs").mkdir(parents=True)
    (tmp_path / "a" / "ca.crt").write_bytes(b"CA OF A")
    (tmp_path / "b" / "certs" / "c.crt").write_bytes(b"CERT OF B")
    (tmp_path / "b" / "certs" / "c.key").write_bytes(b"KEY OF B")
    (tmp_path / "b" / "token").write_text("token-of-b\n")
    first = kubeconfig(tmp_path / "a" / "kc", cluster_extra={"certificate-authority": "ca.crt"})
    doc = yaml.safe_load(first.read_text())
    doc["users"] = []
    first.write_text(yaml.safe_dump(doc))
    kubeconfig(
        tmp_path / "b" / "kc",
        user={
            "client-certificate": "certs/c.crt",
            "client-key": "certs/c.key",
            "tokenFile": "token",
        },
    )
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'a' / 'kc'}{os.pathsep}{tmp_path / 'b' / 'kc'}")
    conn = kc.load_connection()
    assert (read(conn.ca_file), read(conn.cert_file), read(conn.key_file)) == (
        b"CA OF A",
        b"CERT OF B",
        b"KEY OF B",
    )
    assert conn.authorization() == "Bearer token-of-b"


def test_the_exec_plugin_request_says_non_interactive_and_carries_the_cluster(tmp_path):
    """``KUBERNETES_EXEC_INFO``: ``spec.interactive`` false, and with ``provideClusterInfo``
    the cluster as client-go sends it (CA as data, the exec extension as ``config``)."""
    seen = tmp_path / "info.json"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"open({str(seen)!r}, 'w').write(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',"
        " 'status': {'token': 'tok-' + os.environ['EXTRA']}}))\n"
    )
    plugin.chmod(0o755)
    (tmp_path / "ca.crt").write_bytes(b"CA FILE")
    path = kubeconfig(
        tmp_path / "kc",
        cluster_extra={
            "certificate-authority": "ca.crt",
            "tls-server-name": "kube.example",
            "extensions": [
                {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}
            ],
        },
        user={
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "./plugin.py",  # relative to the kubeconfig's directory
                "env": [{"name": "EXTRA", "value": "42"}],
                "provideClusterInfo": True,
            }
        },
    )
    conn = kc.load_connection(str(path))
    assert conn.authorization() == "Bearer tok-42"
    info = json.loads(seen.read_text())
    assert info == {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {
                "server": "https://127.0.0.1:6443",
                "tls-server-name": "kube.example",
                "certificate-authority-data": b64(b"CA FILE"),
                "config": {"audience": "x"},
            },
        },
    }


def test_an_exec_plugin_may_answer_with_a_client_certificate(tmp_path):
    plugin = write_plugin(
        tmp_path, {"clientCertificateData": "CERT PEM\n", "clientKeyData": "KEY PEM\n"}
    )
    conn = kc.load_connection(
        str(
            kubeconfig(
                tmp_path / "kc",
                user={
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": str(plugin),
                    }
                },
            )
        )
    )
    assert conn.client_certificate() == (b"CERT PEM\n", b"KEY PEM\n")
    assert (conn.cert_file, conn.key_file, conn.cert_data) == (None, None, None)
    assert conn.authorization() is None


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ({}, "missing token or clientCertificateData field in plugin output"),
        ({"clientCertificateData": "C"}, "missing clientKeyData field"),
    ],
)
def test_an_exec_plugin_answer_without_a_credential_is_refused(tmp_path, status, message):
    plugin = write_plugin(tmp_path, status)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}
    with pytest.raises(kc.KubeConfigError, match=f"user 'u': exec plugin .*{message}"):
        client_for(tmp_path, user)


def test_an_exec_plugin_that_is_not_there_names_the_install_hint(tmp_path):
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "c5c3-no-such-plugin",
            "installHint": "install it from x",
        }
    }
    with pytest.raises(
        kc.KubeConfigError, match=r"user 'u': exec plugin c5c3-no-such-plugin: .*install it from x"
    ):
        client_for(tmp_path, user)


def test_the_service_account_token_is_read_again_when_it_rotates(tmp_path, monkeypatch):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("first")
    (sa / "ca.crt").write_bytes(b"CA")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    conn = kc.in_cluster_connection(sa)
    assert conn.authorization() == "Bearer first"
    (sa / "token").write_text("second")
    os.utime(sa / "token", (1, 1))
    assert conn.authorization() == "Bearer second"


@pytest.mark.parametrize(
    ("server", "no_proxy", "bypass"),
    [
        ("https://api.internal:6443", "api.internal", True),
        ("https://x.api.internal:6443", ".api.internal", True),
        ("https://api.internal:6443", "api.internal:6443", True),
        ("https://10.1.2.3:6443", "10.0.0.0/8", True),
        ("https://anything:1", "*", True),
        ("https://api.external:6443", "api.internal,10.0.0.0/8", False),
        ("https://notapi.internal.example:6443", "api.internal", False),
    ],
)
def test_no_proxy_rules_are_the_kubernetes_clients(server, no_proxy, bypass):
    assert kube_config.should_bypass_proxies(server, no_proxy) is bypass


def test_watch_lines_are_split_across_and_within_chunks():
    class Streamed:
        def stream(self, amt=None, decode_content=False):
            yield b'{"a":'
            yield b' 1}\n{"b": 2}\n\n{"c": "\xc3'
            yield b'\xa9"}\n{"partial"'

    assert list(kc._lines(Streamed())) == ['{"a": 1}', '{"b": 2}', "", '{"c": "é"}']


@pytest.fixture
def recorder():
    """An HTTP server on loopback that records each request (request line, headers,
    body) and answers ``{"ok": true}`` (404 with a Status for a path with ``missing``)."""
    import http.server
    import threading

    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            seen.append(
                {
                    "method": self.command,
                    "target": self.path,
                    "headers": dict(self.headers.items()),
                    "body": self.rfile.read(length),
                }
            )
            status, body = (200, {"ok": True})
            if "missing" in self.path:
                status, body = (404, {"kind": "Status", "reason": "NotFound", "message": "gone"})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.seen = seen
    yield server
    server.shutdown()
    server.server_close()


def test_requests_carry_the_agent_the_credential_and_the_body_as_given(tmp_path, recorder):
    port = recorder.server_address[1]
    path = kubeconfig(tmp_path / "kc", server=f"http://127.0.0.1:{port}/prefix")
    client = kc.KubeClient.from_environment(str(path))
    assert client.request("POST", "/api/v1/x", body={"a": [1]}) == {"ok": True}
    client.request("PATCH", "/api/v1/x", body='{"b": 2}', content_type=kc.APPLY_PATCH)
    client.request("PATCH", "/api/v1/x", body=b"raw", content_type="text/plain")
    with pytest.raises(kc.ApiError) as caught:
        client.request("GET", "/api/v1/missing")
    assert (caught.value.code, caught.value.reason) == (404, "NotFound")
    answer = client.raw("GET", "/api/v1/missing")
    assert answer.status == 404 and answer.headers["content-type"] == "application/json"
    first, second, third, fourth = recorder.seen[:4]
    assert first["target"] == "/prefix/api/v1/x"
    assert first["headers"]["User-Agent"] == kc.USER_AGENT
    assert first["headers"]["Authorization"] == "Bearer t0k"
    assert first["headers"]["Content-Type"] == "application/json"
    assert json.loads(first["body"]) == {"a": [1]}
    assert (second["headers"]["Content-Type"], second["body"]) == (kc.APPLY_PATCH, b'{"b": 2}')
    assert (third["headers"]["Content-Type"], third["body"]) == ("text/plain", b"raw")
    assert "Content-Type" not in fourth["headers"] and fourth["body"] == b""
    assert (client.requests, client.writes) == (5, 3)


def test_a_proxy_url_carries_requests_to_a_server_only_the_proxy_knows(tmp_path, recorder):
    """An ``http://`` server through a ``proxy-url`` HTTP proxy: the request goes to the
    proxy with the server's absolute URL (``kube.invalid`` resolves nowhere)."""
    port = recorder.server_address[1]
    path = kubeconfig(
        tmp_path / "kc",
        server="http://kube.invalid:6443",
        cluster_extra={"proxy-url": f"http://127.0.0.1:{port}"},
    )
    client = kc.KubeClient.from_environment(str(path))
    assert client.request("GET", "/version") == {"ok": True}
    assert recorder.seen[0]["target"] == "http://kube.invalid:6443/version"


def test_a_server_that_is_away_is_a_connection_error(tmp_path, recorder):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    client = kc.KubeClient(kc.Connection(server=f"http://127.0.0.1:{free}"), timeout=2)
    with pytest.raises(ConnectionError, match=r"GET /version: "):
        client.request("GET", "/version")


def test_an_oidc_user_gets_its_id_token_through_kubernetes_config(tmp_path):
    """The one credential still read by ``kubernetes.config`` (imported for it alone): an
    ``oidc`` auth-provider's ``id-token`` (here one that has not expired, so no refresh)."""

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    jwt = ".".join([part({"alg": "none"}), part({"exp": 32503680000, "sub": "me"}), "sig"])
    user = {
        "auth-provider": {
            "name": "oidc",
            "config": {"id-token": jwt, "idp-issuer-url": "https://idp.invalid"},
        }
    }
    client = client_for(tmp_path, user)
    assert client._auth_headers() == {"Authorization": f"Bearer {jwt}"}


def test_an_oidc_user_without_the_kubernetes_package_is_told_what_to_do(tmp_path, monkeypatch):
    """The operator image leaves ``kubernetes`` out (its one use is this workstation
    credential): such a user is refused naming the package and the way round it."""
    for name in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # import kubernetes: ImportError
    user = {"auth-provider": {"name": "oidc", "config": {"id-token": "x.y.z"}}}
    with pytest.raises(
        kc.KubeConfigError,
        match="auth-provider oidc needs the kubernetes Python package, which is not installed",
    ):
        client_for(tmp_path, user)
