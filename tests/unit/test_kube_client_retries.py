"""When the client sends a request again: client-go's rule, against a real HTTP server.

client-go's ``rest.Request`` sends a request again after an answer 429 or 5xx that carries
``Retry-After`` (whole seconds), for every verb whose body it can send again (all of ours:
bodies are bytes), at most 10 times; an exec plugin's credential is renewed on a 401; a
connection reset is retried for a GET. The server here is a real ``http.server`` on
loopback that answers from a script and records every request it reads, so each test
counts what reached the wire.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from support.exec_plugin import ExecPlugin

from ansible_collections.c5c3.glance.plugins.module_utils.kube import kube_client as kc

OK = (200, {}, {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}})
RESET = "reset"  # close the connection with a TCP reset instead of answering


def busy(status: int, retry_after: str | None = "0") -> tuple[int, dict, dict]:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    return status, headers, {"kind": "Status", "code": status, "message": f"busy {status}"}


class ScriptedServer:
    """Answers the requests it reads, in order, from ``script`` (the last answer repeats);
    ``seen`` is every request as (method, path, body, headers)."""

    def __init__(self, script: list):
        self.script = list(script)
        self.seen: list[tuple[str, str, bytes, dict[str, list[str]]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers: dict[str, list[str]] = {}
                for name, value in self.headers.items():
                    headers.setdefault(name.lower(), []).append(value)
                server.seen.append((self.command, self.path, body, headers))
                step = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if step == RESET:
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    self.connection.close()
                    return
                status, extra, payload = step
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, *args) -> None:
                pass

            def handle_one_request(self) -> None:
                try:
                    super().handle_one_request()
                except OSError:
                    self.close_connection = True  # the socket we reset ourselves

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


def client_of(server: ScriptedServer, timeout: float = 30.0, user=None) -> kc.KubeClient:
    connection = kc.Connection(server=server.url, source="test")
    if user is not None:
        connection = kc.connection_from_document(
            {
                "clusters": [{"name": "k", "cluster": {"server": server.url}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "current-context": "c",
            },
            "test",
        )
    return kc.KubeClient(connection, timeout=timeout)


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "n"}}

VERBS: dict[str, Callable[[kc.KubeClient], object]] = {
    "GET": lambda c: c.get("v1", "ConfigMap", "x", "n"),
    "LIST": lambda c: c.list("v1", "ConfigMap", "n"),
    "POST": lambda c: c.create(CONFIGMAP, field_manager="t"),
    "PUT": lambda c: c.request(
        "PUT", c.path("v1", "ConfigMap", "n", "x"), body=CONFIGMAP, content_type="application/json"
    ),
    "APPLY": lambda c: c.apply(CONFIGMAP, field_manager="t"),
    "PATCH": lambda c: c.patch("v1", "ConfigMap", "x", "n", {"data": {"a": "b"}}),
    "DELETE": lambda c: c.delete("v1", "ConfigMap", "x", "n"),
}


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_is_sent_again_after_429_and_503_with_retry_after(verb):
    """The issue's finding: GET and DELETE were sent again, PATCH (every server-side
    apply) and POST failed on the first answer. Now each verb is sent three times, the
    same body each time, and succeeds."""
    with ScriptedServer([busy(429), busy(503), OK]) as server:
        client = client_of(server)
        VERBS[verb](client)
    assert len(server.seen) == 3
    assert len({(method, path, body) for method, path, body, _ in server.seen}) == 1
    assert client.requests == 3


def test_a_5xx_without_retry_after_is_not_sent_again():
    server = ScriptedServer([busy(500, retry_after=None), OK])
    with server, pytest.raises(kc.ApiError) as caught:
        client_of(server).apply(CONFIGMAP, field_manager="t")
    assert caught.value.code == 500 and len(server.seen) == 1


@pytest.mark.parametrize("retry_after", ["soon", "Wed, 21 Oct 2026 07:28:00 GMT"])
def test_a_retry_after_that_is_not_whole_seconds_is_not_followed(retry_after):
    """client-go reads whole seconds only (``strconv.Atoi``)."""
    server = ScriptedServer([busy(429, retry_after), OK])
    with server, pytest.raises(kc.ApiError, match="429"):
        client_of(server).get("v1", "ConfigMap", "x", "n")
    assert len(server.seen) == 1


def test_a_server_that_stays_busy_gets_the_request_eleven_times_then_the_answer():
    """At most ``MAX_RETRIES`` (client-go's 10) more times; then the last answer is the
    caller's error."""
    with ScriptedServer([busy(429)]) as server, pytest.raises(kc.ApiError, match="busy 429"):
        client_of(server).apply(CONFIGMAP, field_manager="t")
    assert len(server.seen) == kc.MAX_RETRIES + 1


def test_a_wait_past_the_request_timeout_is_not_taken():
    """A Retry-After that would end past the request's timeout gives the answer at once
    (client-go's request context would end during the wait)."""
    server = ScriptedServer([busy(503, "3600"), OK])
    with server, pytest.raises(kc.ApiError, match="503"):
        client_of(server, timeout=5.0).get("v1", "ConfigMap", "x", "n")
    assert len(server.seen) == 1


def test_a_reset_get_is_sent_again_a_reset_post_is_not():
    """A connection reset after the request went out: an idempotent verb is sent again
    (client-go: a GET), a POST is not (the server may have acted on it)."""
    with ScriptedServer([RESET, OK]) as server:
        assert client_of(server).get("v1", "ConfigMap", "x", "n")["metadata"]["name"] == "x"
    assert [m for m, *_ in server.seen] == ["GET", "GET"]
    with ScriptedServer([RESET, OK]) as server, pytest.raises(ConnectionError):
        client_of(server).create(CONFIGMAP)
    assert [m for m, *_ in server.seen] == ["POST"]


def exec_plugin(tmp_path: Path, tokens: list[str]) -> ExecPlugin:
    """A plugin answering the tokens of ``tokens`` in turn (the last repeats), no expiry."""
    return ExecPlugin(tmp_path, [{"token": token} for token in tokens])


UNAUTHORIZED = (401, {}, {"kind": "Status", "code": 401, "message": "Unauthorized"})


def test_an_exec_token_the_server_refuses_is_renewed_and_the_request_sent_once_more(tmp_path):
    plugin = exec_plugin(tmp_path, ["revoked", "fresh"])
    with ScriptedServer([UNAUTHORIZED, OK]) as server:
        client = client_of(server, user=plugin.user)
        client.apply(CONFIGMAP, field_manager="t")
    sent = [headers["authorization"] for *_, headers in server.seen]
    assert sent == [["Bearer revoked"], ["Bearer fresh"]]
    assert plugin.runs == 2  # at load, and once for the 401


def test_a_401_the_renewed_credential_gets_too_is_the_callers_error(tmp_path):
    plugin = exec_plugin(tmp_path, ["revoked", "also-revoked"])
    with ScriptedServer([UNAUTHORIZED]) as server, pytest.raises(kc.ApiError, match="401"):
        client_of(server, user=plugin.user).get("v1", "ConfigMap", "x", "n")
    assert len(server.seen) == 2 and plugin.runs == 2


def test_a_401_with_a_plugin_that_answers_the_same_token_is_not_sent_again(tmp_path):
    plugin = exec_plugin(tmp_path, ["same"])
    with ScriptedServer([UNAUTHORIZED]) as server, pytest.raises(kc.ApiError, match="401"):
        client_of(server, user=plugin.user).get("v1", "ConfigMap", "x", "n")
    assert len(server.seen) == 1 and plugin.runs == 2


def test_a_static_token_is_not_sent_again_after_a_401(tmp_path):
    with ScriptedServer([UNAUTHORIZED, OK]) as server, pytest.raises(kc.ApiError, match="401"):
        client_of(server, user={"token": "t"}).get("v1", "ConfigMap", "x", "n")
    assert len(server.seen) == 1


def test_impersonation_is_sent_as_client_go_sends_it():
    user = {
        "token": "t",
        "as": "alice",
        "as-uid": "u-1",
        "as-groups": ["team-a", "team-b"],
        "as-user-extra": {"scopes.example.com/x": ["read", "write"]},
    }
    with ScriptedServer([OK]) as server:
        client_of(server, user=user).get("v1", "ConfigMap", "x", "n")
    headers = server.seen[0][3]
    assert headers["impersonate-user"] == ["alice"]
    assert headers["impersonate-uid"] == ["u-1"]
    assert headers["impersonate-group"] == ["team-a", "team-b"]
    assert headers["impersonate-extra-scopes.example.com%2fx"] == ["read", "write"]


@pytest.mark.parametrize("field", ["as-groups", "as-uid", "as-user-extra"])
def test_impersonation_details_without_a_user_are_refused_naming_the_user(field):
    value = {"as-groups": ["g"], "as-uid": "1", "as-user-extra": {"k": ["v"]}}[field]
    document = yaml.safe_load(
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\n"
    )
    document["users"] = [{"name": "u", "user": {"token": "t", field: value}}]
    with pytest.raises(
        kc.KubeConfigError, match="user 'u' sets as-groups, as-uid or as-user-extra"
    ):
        kc.connection_from_document(document, "test")
