"""The image's WSGI shim ``images/glance/glance-wsgi-api`` with the real glance of each release.

The shim replaces ``glance.common.wsgi_app._get_config_files`` so that uWSGI's
``--pyargv "--config-dir A --config-dir B"`` configures glance-api (reference-spec §4.2).
Each release's environment ``.venv-glance/<release>`` (``hack/glance_venv.py``, built on
demand; ``C5C3_SKIP_GLANCE_VENV=1`` skips) runs it in two subprocesses:

* the import-level cases, in one batch: the shim is executed as uWSGI executes it (a
  fresh module from the file, ``sys.argv`` as ``--pyargv`` sets it) with ``init_app``
  stubbed to return what the replaced ``_get_config_files`` returns, or the error;
* the real ``init_app`` of that glance on two config dirs (a file store, sqlite), which
  must build the paste application from exactly those files and answer ``GET /``.

The e2e suite (``test_glance_api.py``) runs the shim under uWSGI with the rendered
command; these tests pin its contract per release without a server, and its drain of an
error's unread body twice: alone (fake applications, a fake ``wsgi.input`` and
``uwsgi.chunked_read``), and, marked ``e2e``, on the session's stack, where a Glance of each
release (and behind uWSGI's HTTP router on the stack's release) whose S3 store's port
refuses connections answers a 64 MiB upload: the client must read the 500 (before the
drain, ``http.client`` got ``ConnectionResetError``, and ``requests`` behind the router
``RemoteDisconnected``), and the same upload succeeds once the port forwards to the S3
server again.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import socket
import socketserver
import subprocess
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from e2e.glance_http import create_image, delete_image, get_image, s3_size
from e2e.stack import RELEASE, VENV, free_port, http
from support.hack_scripts import hack_script

ROOT = Path(__file__).resolve().parents[2]
SHIM = ROOT / "images" / "glance" / "glance-wsgi-api"
SKIP_ENV = "C5C3_SKIP_GLANCE_VENV"

pytestmark = pytest.mark.glance_venv


glance_venv = hack_script("glance_venv")
RELEASES = glance_venv.releases()

# Runs in the release's python. Input: {"shim": path, "cases": {name: {"argv": [...],
# "env": {...}, "drop_hook": bool}}}. Output: {name: {"files": [...]} | {"error": ...}}.
BATCH_DRIVER = textwrap.dedent(
    """
    import importlib.machinery, importlib.util, json, os, sys
    from glance.api.v2 import images
    from glance.common import wsgi_app
    from keystoneauth1.exceptions import connection as ksa_connection

    request = json.loads(sys.stdin.read())
    original = wsgi_app._get_config_files
    original_proxy = images.ImagesController._proxy_request_to_host

    def unreachable_stage_host(self, image, req, body=None):
        raise ksa_connection.ConnectFailure("Unable to establish connection to http://gone")

    def proxy_outcome():
        try:
            images.ImagesController._proxy_request_to_host(None, None, None)
        except Exception as exc:
            return {"raised": type(exc).__name__, "code": getattr(exc, "code", None),
                    "detail": getattr(exc, "detail", str(exc))}
        return {"raised": None}
    def stub_init_app():
        out = {"files": wsgi_app._get_config_files()}
        url = os.environ.get("OS_DEFAULT__WORKER_SELF_REFERENCE_URL")
        if url is not None:
            out["self_url"] = url
        return out
    wsgi_app.init_app = stub_init_app
    results = {}
    for name, case in request["cases"].items():
        wsgi_app._get_config_files = original
        images.ImagesController._proxy_request_to_host = original_proxy
        if case.get("drop_hook"):
            del wsgi_app._get_config_files
        if case.get("drop_proxy_hook"):
            del images.ImagesController._proxy_request_to_host
        if case.get("stage_host_gone"):
            images.ImagesController._proxy_request_to_host = unreachable_stage_host
        saved_env = dict(os.environ)
        os.environ.update(case.get("env", {}))
        sys.argv = list(case["argv"])
        loader = importlib.machinery.SourceFileLoader("glance_wsgi_api", request["shim"])
        module = importlib.util.module_from_spec(
            importlib.util.spec_from_loader(loader.name, loader)
        )
        try:
            loader.exec_module(module)
            results[name] = module.application.__wrapped__  # under the drain wrapper
            if case.get("stage_host_gone"):
                results[name]["proxy"] = proxy_outcome()
        except Exception as exc:  # the shim's errors are the result
            results[name] = {"error": type(exc).__name__, "message": str(exc)}
        finally:
            os.environ.clear()
            os.environ.update(saved_env)
    print("RESULT " + json.dumps(results), flush=True)
    """
)

# The real init_app: loads the shim like uWSGI, then calls the application once.
REAL_DRIVER = textwrap.dedent(
    """
    import io, json, os, sys, wsgiref.util
    from oslo_config import cfg

    request = json.loads(sys.stdin.read())
    sys.argv = request["argv"]
    os.environ.update(request.get("env", {}))
    import runpy
    app = runpy.run_path(request["shim"], run_name="glance_wsgi_api")["application"]
    CONF = cfg.CONF
    seen = {}
    def start_response(status, headers, exc_info=None):
        seen["status"] = status
    environ = {"SCRIPT_NAME": "", "PATH_INFO": "/", "wsgi.input": io.BytesIO()}
    wsgiref.util.setup_testing_defaults(environ)
    body = b"".join(app(environ, start_response))
    print("RESULT " + json.dumps({
        "config_file": list(CONF.config_file),
        "worker_self_reference_url": CONF.worker_self_reference_url,
        "default_backend": CONF.glance_store.default_backend,
        "local_datadir": CONF["local"].filesystem_store_datadir,
        "status": seen.get("status"),
        "versions": [v["id"] for v in json.loads(body)["versions"]],
    }), flush=True)
    os._exit(0)  # not the interpreter shutdown: glance's staging-cleanup thread may be running
    """
)

# Loads the shim like uWSGI (init_app stubbed), then uses the S3 driver's executor the way
# its multipart upload does: two threads busy, a third part must wait for one of them.
BOUND_DRIVER = textwrap.dedent(
    """
    import concurrent.futures, importlib.machinery, importlib.util, json, sys, threading, types
    from glance.common import wsgi_app
    from glance_store._drivers import s3

    request = json.loads(sys.stdin.read())
    wsgi_app.init_app = lambda: None
    sys.argv = ["uwsgi"]
    loader = importlib.machinery.SourceFileLoader("glance_wsgi_api", request["shim"])
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    release, submitted = threading.Event(), []
    with s3.futures.ThreadPoolExecutor(max_workers=2) as executor:
        busy = [executor.submit(release.wait) for _ in range(2)]
        third = threading.Thread(target=lambda: submitted.append(executor.submit(len, "x")))
        third.start()
        third.join(1.0)
        third_waited = third.is_alive() and not submitted
        release.set()
        third.join(30)
        results = [f.result() for f in busy] + [submitted[0].result()]
    try:
        module.bound_s3_part_uploads(types.SimpleNamespace(__name__="gone", futures=None))
        refused = None
    except module.ShimError as exc:
        refused = str(exc)
    print("RESULT " + json.dumps({
        "executor": s3.futures.ThreadPoolExecutor.__name__,
        "wait_is_kept": s3.futures.wait is concurrent.futures.wait,
        "third_waited": third_waited,
        "results": results,
        "slots_free_after": executor.slots._value,
        "refused": refused,
    }), flush=True)
    """
)


# Loads the shim like uWSGI (init_app stubbed), then runs its drain wrapper alone around
# fake applications, with a fake ``wsgi.input`` and a fake ``uwsgi.chunked_read``.
DRAIN_DRIVER = textwrap.dedent(
    """
    import importlib.machinery, importlib.util, io, json, sys, types
    from glance.common import wsgi_app

    request = json.loads(sys.stdin.read())
    wsgi_app.init_app = lambda: None
    sys.argv = ["uwsgi"]
    loader = importlib.machinery.SourceFileLoader("glance_wsgi_api", request["shim"])
    shim = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(shim)
    events = []

    class Input(io.BytesIO):
        def read(self, *args):
            data = super().read(*args)
            events.append(("server read", len(data)))
            return data

    def chunks(blocks):
        def chunked_read(timeout=0):
            events.append(("chunked_read", timeout))
            return blocks.pop(0) if blocks else b""
        return chunked_read

    def app(status, read=0, lazy=False, raises=False):
        def application(environ, start_response):
            def respond():
                environ["wsgi.input"].read(read)
                if raises:
                    raise RuntimeError("the store is gone")
                start_response(status, [("Content-Type", "text/plain")])
                events.append(("start_response", status))
                return [b"answer " + status.encode()]
            if not lazy:
                return respond()
            def generate():
                yield from respond()
            return generate()
        return application

    def run(application, body=b"", chunked_read=None, **headers):
        events.clear()
        logged = []
        wrapped = shim.drain_unread_body_on_error(application, chunked_read, logged.append)
        environ = {"REQUEST_METHOD": "PUT", "PATH_INFO": "/v2/images/x/file",
                   "wsgi.input": Input(body), **headers}
        given = environ["wsgi.input"]
        try:
            result = wrapped(environ, lambda status, headers, exc_info=None: None)
        except RuntimeError as exc:
            return {"raised": str(exc), "events": list(events), "logged": logged,
                    "left": len(body) - given.tell()}
        blocks = []
        for block in result:
            events.append(("block out", len(block)))
            blocks.append(block.decode())
        return {"blocks": blocks, "events": list(events), "logged": logged,
                "left": len(body) - given.tell(),
                "unwrapped": result.__class__.__name__ == "list",
                "input_wrapped": environ["wsgi.input"] is not given}

    body = bytes(3 * 1024 * 1024 + 5)
    cl = {"CONTENT_LENGTH": str(len(body))}
    chunked = {"HTTP_TRANSFER_ENCODING": "chunked"}
    out = {
        "error-part-read": run(app("500 Internal Server Error", read=1000), body, **cl),
        "error-all-read": run(app("400 Bad Request", read=len(body)), body, **cl),
        "success-part-read": run(app("204 No Content", read=1000), body, **cl),
        "no-body": run(app("404 Not Found"), b"", REQUEST_METHOD="GET"),
        "lazy-error": run(app("503 Service Unavailable", read=10, lazy=True), body, **cl),
        "lazy-success": run(app("200 OK", read=10, lazy=True), body, **cl),
        "raises": run(app("500 Internal Server Error", read=10, raises=True), body, **cl),
        "too-large": run(app("500 Internal Server Error", read=10), body,
                         CONTENT_LENGTH=str(shim.DRAIN_MAX_BYTES + 11)),
        "expect-continue": run(app("401 Unauthorized"), body, HTTP_EXPECT="100-continue", **cl),
        "chunked-error": run(app("500 Internal Server Error"), b"",
                             chunks([b"a" * 100, b"b" * 50]), **chunked),
        "chunked-read-to-end": run(app("500 Internal Server Error"), b"", chunks([]), **chunked),
        "chunked-outside-uwsgi": run(app("500 Internal Server Error"), b"", None, **chunked),
    }
    # The bounds, on drain_body alone: a clock that moves 25 s per look, endless chunks.
    ticks = iter(range(0, 10000, 25))
    endless = lambda timeout=0: b"x" * 1024
    environ = {"HTTP_TRANSFER_ENCODING": "chunked"}
    out["slow"] = shim.drain_body(environ, shim.CountingInput(Input(b"")), endless,
                                  clock=lambda: next(ticks))
    shim.DRAIN_MAX_BYTES = 10 * 1024
    out["endless"] = shim.drain_body(environ, shim.CountingInput(Input(b"")), endless)
    out["no-uwsgi"] = shim.uwsgi_chunked_read(None)
    try:
        shim.uwsgi_chunked_read(types.SimpleNamespace())
        out["refused"] = None
    except shim.ShimError as exc:
        out["refused"] = str(exc)
    print("RESULT " + json.dumps(out), flush=True)
    """
)


def _python(release: str) -> Path:
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: the Glance {release} environment is not built or used")
    try:
        return glance_venv.ensure_venv(release, log=lambda _: None)
    except glance_venv.GlanceVenvError as exc:
        pytest.fail(
            f"cannot build .venv-glance/{release} (make glance-venvs; or set {SKIP_ENV}=1 "
            f"to skip these tests): {exc}",
            pytrace=False,
        )


def _run(python: Path, driver: str, request: dict[str, Any], cwd: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), "-c", driver],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OS_", "PYTHON")) and k != "HOME"
        }
        | {"HOME": str(cwd)},  # oslo.config also looks in ~/.glance/ and ~/
        timeout=300,
    )
    results = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    try:
        return json.loads(results[-1].removeprefix("RESULT "))
    except (ValueError, IndexError):
        pytest.fail(
            f"the driver failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
            f"{proc.stderr[-3000:]}"
        )


# ---------------------------------------------------------------------------------------
# the import-level cases


class Tree:
    """Two config dirs as the pod mounts them, plus a third for the error cases."""

    def __init__(self, base: Path) -> None:
        self.config = base / "glance-api.conf.d"
        self.backends = base / "backends.conf.d"
        self.empty = base / "empty.conf.d"
        self.glance_dir = base / "os-glance-config-dir"
        for directory in (self.config, self.backends, self.empty, self.glance_dir):
            directory.mkdir(parents=True)
        for name in ("logging.conf", "glance-api.conf", "zz-last.conf", "00-first.conf"):
            (self.config / name).write_text("[DEFAULT]\n")
        # Not *.conf, hidden (a Kubernetes volume's ..data link), or not a file.
        (self.config / "glance-api-paste.ini").write_text("")
        (self.config / "policy.yaml").write_text("")
        (self.config / ".hidden.conf").write_text("")
        (self.config / "dir.conf").mkdir()
        (self.backends / "backends.conf").write_text("[DEFAULT]\n")
        (self.glance_dir / "glance-api.conf").write_text("[DEFAULT]\n")

    def config_files(self) -> list[str]:
        names = ("00-first.conf", "glance-api.conf", "logging.conf", "zz-last.conf")
        return [str(self.config / n) for n in names]

    def backends_files(self) -> list[str]:
        return [str(self.backends / "backends.conf")]


SELF_URL = "OS_DEFAULT__WORKER_SELF_REFERENCE_URL"
# (label, the kubelet's expansion of http://$(POD_IP):9292 or another value, what glance
# must read): an IPv6 host is bracketed, everything else is left alone.
SELF_URLS = (
    ("ipv4", "http://10.244.1.7:9292", "http://10.244.1.7:9292"),
    ("ipv6", "http://fd00:10:244::1a:9292", "http://[fd00:10:244::1a]:9292"),
    ("ipv6-loopback", "http://::1:9292", "http://[::1]:9292"),
    ("ipv6-bracketed", "http://[fd00::7]:9292", "http://[fd00::7]:9292"),
    ("hostname", "http://glance-0.glance:9292/", "http://glance-0.glance:9292/"),
    ("no-port", "http://fd00::7", "http://fd00::7"),
    ("not-a-url", "fd00::7:9292", "fd00::7:9292"),
)


def cases(tree: Tree) -> dict[str, dict[str, Any]]:
    c, b = str(tree.config) + "/", str(tree.backends) + "/"
    own = {"OS_GLANCE_CONFIG_DIR": str(tree.glance_dir)}
    return {
        "pyargv": {"argv": ["uwsgi", "--config-dir", c, "--config-dir", b], "env": own},
        "reversed": {"argv": ["uwsgi", "--config-dir", b, "--config-dir", c]},
        "equals-form": {"argv": ["uwsgi", f"--config-dir={c}", f"--config-dir={b}"]},
        "one-dir": {"argv": ["uwsgi", "--config-dir", b]},
        "no-config-dir": {"argv": ["uwsgi"], "env": own},
        "unknown-argument": {"argv": ["uwsgi", "--config-dir", c, "--config-file", "x.conf"]},
        "missing-value": {"argv": ["uwsgi", "--config-dir"]},
        "missing-value-before-option": {"argv": ["uwsgi", "--config-dir", "--config-dir", b]},
        "missing-dir": {"argv": ["uwsgi", "--config-dir", str(tree.empty) + "-nope"]},
        "no-conf-files": {"argv": ["uwsgi", "--config-dir", str(tree.empty)]},
        "no-hook": {"argv": ["uwsgi", "--config-dir", c], "drop_hook": True},
        "no-proxy-hook": {"argv": ["uwsgi", "--config-dir", c], "drop_proxy_hook": True},
        "stage-host-gone": {"argv": ["uwsgi", "--config-dir", c], "stage_host_gone": True},
        **{
            f"self-url-{label}": {"argv": ["uwsgi", "--config-dir", c], "env": {SELF_URL: url}}
            for label, url, _ in SELF_URLS
        },
    }


class ShimRuns:
    """One batch of import-level cases per release, and one real init_app per release."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.tree = Tree(base / "tree")
        self.batches: dict[str, dict[str, Any]] = {}
        self.real: dict[str, dict[str, Any]] = {}

    def case(self, release: str, name: str) -> dict[str, Any]:
        if release not in self.batches:
            request = {"shim": str(SHIM), "cases": cases(self.tree)}
            self.batches[release] = _run(_python(release), BATCH_DRIVER, request, self.base)
        return self.batches[release][name]

    def init_app(self, release: str) -> tuple[dict[str, Any], list[str]]:
        base = self.base / f"real-{release}"
        config, backends = base / "glance-api.conf.d", base / "backends.conf.d"
        files = [config / "glance-api.conf", config / "logging.conf", backends / "backends.conf"]
        if release not in self.real:
            python = _python(release)
            for directory in (config, backends, base / "staging", base / "tasks", base / "local"):
                directory.mkdir(parents=True)
            prefix = subprocess.run(
                [str(python), "-c", "import sys; print(sys.prefix)"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            paste = Path(prefix) / "etc" / "glance" / "glance-api-paste.ini"
            files[0].write_text(
                textwrap.dedent(
                    f"""\
                    [DEFAULT]
                    enabled_backends = local:file
                    [glance_store]
                    default_backend = local
                    [database]
                    connection = sqlite:///{base}/glance.sqlite
                    [paste_deploy]
                    config_file = {paste}
                    [os_glance_staging_store]
                    filesystem_store_datadir = {base}/staging
                    [os_glance_tasks_store]
                    filesystem_store_datadir = {base}/tasks
                    """
                )
            )
            # Not a logging config here: only proves a second file of the dir is loaded.
            files[1].write_text("[DEFAULT]\ndebug = false\n")
            files[2].write_text(f"[local]\nfilesystem_store_datadir = {base}/local\n")
            argv = ["uwsgi", "--config-dir", f"{config}/", "--config-dir", f"{backends}/"]
            # An IPv6 pod's URL as the kubelet expands it: glance must read it bracketed.
            env = {SELF_URL: "http://fd00::1:9292"}
            self.real[release] = _run(
                python, REAL_DRIVER, {"shim": str(SHIM), "argv": argv, "env": env}, self.base
            )
        return self.real[release], [str(f) for f in files]


@pytest.fixture(scope="module")
def shim_runs(tmp_path_factory) -> ShimRuns:
    return ShimRuns(tmp_path_factory.mktemp("wsgi-shim"))


def test_the_shim_is_an_executable_python_file():
    assert os.access(SHIM, os.X_OK)
    compile(SHIM.read_text(), str(SHIM), "exec")


@pytest.mark.parametrize("release", RELEASES)
def test_pyargv_config_dirs_give_every_conf_file_sorted_per_dir_in_argv_order(shim_runs, release):
    tree = shim_runs.tree
    # OS_GLANCE_CONFIG_DIR, glance's own lookup, is not consulted once --config-dir is given.
    assert shim_runs.case(release, "pyargv") == {
        "files": tree.config_files() + tree.backends_files()
    }
    assert shim_runs.case(release, "reversed") == {
        "files": tree.backends_files() + tree.config_files()
    }
    assert shim_runs.case(release, "equals-form") == shim_runs.case(release, "pyargv")
    assert shim_runs.case(release, "one-dir") == {"files": tree.backends_files()}


@pytest.mark.parametrize("release", RELEASES)
def test_without_config_dir_glance_keeps_its_own_lookup(shim_runs, release):
    assert shim_runs.case(release, "no-config-dir") == {
        "files": [str(shim_runs.tree.glance_dir / "glance-api.conf")]
    }


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("unknown-argument", "unexpected argument '--config-file'"),
        ("missing-value", "--config-dir needs a directory"),
        ("missing-value-before-option", "--config-dir needs a directory"),
        ("missing-dir", "no such directory"),
        ("no-conf-files", "no *.conf file in"),
    ],
)
@pytest.mark.parametrize("release", RELEASES)
def test_arguments_the_shim_cannot_honour_stop_the_application(shim_runs, release, name, message):
    result = shim_runs.case(release, name)
    assert result.get("error") == "ShimError", result
    assert message in result["message"]


@pytest.mark.parametrize("release", RELEASES)
def test_a_glance_without_get_config_files_is_refused_loudly(shim_runs, release):
    result = shim_runs.case(release, "no-hook")
    assert result.get("error") == "ShimError", result
    assert "glance.common.wsgi_app._get_config_files no longer exists" in result["message"]
    assert "images/glance/glance-wsgi-api" in result["message"]


@pytest.mark.parametrize("release", RELEASES)
def test_a_forwarded_call_to_a_stage_host_that_is_gone_is_a_504_not_a_500(shim_runs, release):
    # glance catches only requests' errors around its keystoneauth call: without the guard
    # the ConnectFailure escapes as a 500 and a staged image can no longer be deleted.
    result = shim_runs.case(release, "stage-host-gone")
    assert result["proxy"] == {
        "raised": "HTTPGatewayTimeout",
        "code": 504,
        "detail": "Stage host is unavailable",
    }


@pytest.mark.parametrize("release", RELEASES)
def test_a_glance_without_the_proxy_method_is_refused_loudly(shim_runs, release):
    result = shim_runs.case(release, "no-proxy-hook")
    assert result.get("error") == "ShimError", result
    assert "ImagesController._proxy_request_to_host no longer exists" in result["message"]


@pytest.mark.parametrize(("label", "given", "read"), SELF_URLS)
@pytest.mark.parametrize("release", RELEASES)
def test_an_ipv6_pod_url_is_bracketed_and_any_other_left_alone(
    shim_runs, release, label, given, read
):
    result = shim_runs.case(release, f"self-url-{label}")
    assert result.get("self_url") == read, (given, result)


@pytest.mark.parametrize("release", RELEASES)
def test_the_real_init_app_builds_glance_from_the_config_dirs(shim_runs, release):
    result, files = shim_runs.init_app(release)
    assert result["worker_self_reference_url"] == "http://[fd00::1]:9292"
    assert result["config_file"] == files
    assert result["default_backend"] == "local"
    assert result["local_datadir"] == str(Path(files[2]).parents[1] / "local")  # 2nd dir
    assert result["status"].startswith("300"), result
    assert "v2.0" in result["versions"]


@pytest.mark.parametrize("release", RELEASES)
def test_an_s3_upload_holds_at_most_one_part_per_thread_in_memory(release, tmp_path):
    # glance_store queues every part of a multipart upload without bound; the shim's
    # executor makes the reading request wait instead (tests/e2e/test_upload_path.py).
    result = _run(_python(release), BOUND_DRIVER, {"shim": str(SHIM)}, tmp_path)
    assert result["executor"] == "BoundedThreadPoolExecutor"
    assert result["wait_is_kept"]
    assert result["third_waited"], "a third part was queued while both threads were busy"
    assert result["results"] == [True, True, 1]
    assert result["slots_free_after"] == 2
    assert "gone no longer uploads parts" in result["refused"]


# ---------------------------------------------------------------------------------------
# an error answered to an upload whose body is not read to its end, on the stack

MIB = 1024 * 1024
OUTAGE_UPLOAD_SIZE = 64 * MIB

# Runs in the e2e environment: one PUT of ``size`` bytes, sent whole before the answer is
# read, with Content-Length or chunked in 1 MiB blocks (the size in x-openstack-image-size),
# by one of two clients: ``requests`` (urllib3 2, as python-glanceclient and the openstack
# CLI send it), or ``http.client`` as tests/cluster/load.py (the chaos load) sends it.
# Output: the status and body it read, or the error it got.
UPLOAD_CLIENT = textwrap.dedent(
    """
    import hashlib, http.client, json, random, sys, time, urllib.parse
    import requests
    req = json.loads(sys.stdin.read())
    data = random.Random(req["seed"]).randbytes(req["size"])
    headers = {"X-Auth-Token": req["token"], "Content-Type": "application/octet-stream"}
    blocks = [data[i:i + 1048576] for i in range(0, len(data), 1048576)]
    if req["chunked"]:
        headers["x-openstack-image-size"] = str(len(data))
    started = time.monotonic()
    try:
        if req["client"] == "requests":
            body = iter(blocks) if req["chunked"] else data
            resp = requests.put(req["url"], data=body, headers=headers, timeout=600)
            out = {"status": resp.status_code, "body": resp.text[:2000], "error": None}
        else:
            url = urllib.parse.urlsplit(req["url"])
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
            conn.putrequest("PUT", url.path)
            for name, value in headers.items():
                conn.putheader(name, value)
            if req["chunked"]:
                conn.putheader("Transfer-Encoding", "chunked")
            else:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders()
            for block in blocks:
                conn.send(b"%x\\r\\n%s\\r\\n" % (len(block), block) if req["chunked"] else block)
            if req["chunked"]:
                conn.send(b"0\\r\\n\\r\\n")
            resp = conn.getresponse()
            out = {"status": resp.status, "body": resp.read()[:2000].decode(), "error": None}
            conn.close()
    except (OSError, http.client.HTTPException, requests.RequestException) as exc:
        out = {"status": None, "body": "", "error": repr(exc)}
    out["seconds"] = round(time.monotonic() - started, 2)
    out["sha512"] = hashlib.sha512(data).hexdigest()
    print(json.dumps(out))
    """
)
CLIENTS = ("requests", "http.client")


def _upload(
    stack, url: str, token: str, image_id: str, size: int, chunked: bool, seed: int, client: str
):
    request = {
        "client": client,
        "url": f"{url}/v2/images/{image_id}/file",
        "token": token,
        "size": size,
        "chunked": chunked,
        "seed": seed,
    }
    return stack.e2e_python(UPLOAD_CLIENT, request)


class S3Door:
    """A port of 127.0.0.1 where nothing listens until :meth:`open`: then every connection
    is passed on to the stack's S3 server (moto keeps its objects in memory: it is never
    stopped). Closed, the port refuses connections, as a stopped server's, or the node's
    iptables REJECT of tests/cluster/test_chaos.py."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.target_port = target_port
        self.server: socketserver.ThreadingTCPServer | None = None

    def open(self) -> None:
        target = self.target_port

        class Pass(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with socket.create_connection(("127.0.0.1", target), timeout=300) as upstream:
                    back = threading.Thread(target=_pump, args=(upstream, self.request))
                    back.start()
                    _pump(self.request, upstream)
                    back.join(300)

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.server = Server(("127.0.0.1", self.port), Pass)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while block := source.recv(65536):
            sink.sendall(block)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _launch_release(stack, release_venv, release: str, name: str, edit_more=None, extra_env=None):
    """A Glance API of ``release`` from a variant of the stack's render; (url, process).

    The stack's own release runs from the e2e environment on the stack's database; another
    release from ``.venv-glance/<release>`` on a database of its own (as test_releases.py).
    """
    venv, database = VENV, None
    if release != RELEASE:
        venv = release_venv(release)
        database = f"glance_{name}_{release}".replace(".", "_").replace("-", "_")
        stack.create_database(database)

    def edit(docs: list[dict[str, Any]]) -> None:
        spec = next(d for d in docs if d["kind"] == "Glance")["spec"]
        if database is not None:
            spec["openStackRelease"] = release
            spec["image"]["tag"] = release
            spec["database"]["database"] = database
        if edit_more is not None:
            edit_more(docs)

    rendered, remap = stack.variant(f"{name}-{release}", edit, venv=venv)
    if database is not None:
        stack.run_container(f"glance-db-sync-{name}-{release}", rendered, remap, "Job", "db-sync")
    port = free_port()
    proc = stack.launch_from(f"glance-api-{name}-{release}", rendered, remap, port, extra_env)
    return f"http://127.0.0.1:{port}", proc


# Every release behind the workers' own HTTP (the default), and the stack's release behind
# uWSGI's HTTP router too (``httpKeepAlive: true``): the router forwards the body the
# worker drains.
FRONTS = [(release, "http-socket") for release in RELEASES] + [(RELEASE, "router")]


@pytest.mark.e2e
@pytest.mark.parametrize(("release", "front"), FRONTS)
def test_an_upload_while_s3_is_unreachable_is_an_http_error_then_succeeds_once_it_is_back(
    stack, release_venv, release, front, say, timed
):
    """The store's port refuses connections: glance gives up on the store before it has read
    the body and answers 5xx; the client, still sending, must read that answer (not a
    connection reset). Once the store answers again the same image uploads."""
    door = S3Door(stack.moto_port)

    def unreachable_s3(docs: list[dict[str, Any]]) -> None:
        backend = next(d for d in docs if d["kind"] == "GlanceBackend")
        backend["spec"]["s3"]["host"] = f"http://127.0.0.1:{door.port}"
        if front == "router":
            glance = next(d for d in docs if d["kind"] == "Glance")
            glance["spec"].setdefault("apiServer", {})["uwsgi"] = {"httpKeepAlive": True}

    name = "s3-away" if front == "http-socket" else f"s3-away-{front}"
    # botocore's default (legacy) retries back off 1+2+4+8 s at random before glance_store
    # gives up on a refused store: 4-13 s per upload, ~35 s of each case's ~50, measured.
    # One attempt makes glance answer at once - sooner than with the default, so the
    # client is still sending when the 500 comes: the case the shim's drain is for.
    url, proc = _launch_release(
        stack, release_venv, release, name, unreachable_s3, {"AWS_MAX_ATTEMPTS": "1"}
    )
    if front == "router":
        assert "--http" in proc.popen.args, proc.popen.args
    token = stack.demo_token()
    image_id = create_image(url, token, f"e2e-s3-away-{release}")
    try:
        outcomes = {}
        for client, chunked in itertools.product(CLIENTS, (False, True)):
            out = _upload(stack, url, token, image_id, OUTAGE_UPLOAD_SIZE, chunked, 1, client)
            kind = f"{client} {'chunked' if chunked else 'Content-Length'}"
            outcomes[kind] = out
            say(
                f"\n[e2e] {release} {front} S3 unreachable, {OUTAGE_UPLOAD_SIZE // MIB} MiB {kind}: "
                f"status {out['status']} error {out['error']} in {out['seconds']} s"
            )
            # No image is active without its data.
            assert get_image(url, token, image_id)["status"] == "queued"
        for kind, out in outcomes.items():
            assert out["error"] is None, (kind, out)
            assert 500 <= out["status"] < 600, (kind, out)
            assert out["body"], (kind, out)
        door.open()
        out = _upload(stack, url, token, image_id, OUTAGE_UPLOAD_SIZE, False, 2, "http.client")
        say(f"\n[e2e] {release} S3 back: status {out['status']} in {out['seconds']} s")
        assert out["status"] == 204, out
        image = get_image(url, token, image_id)
        assert image["status"] == "active"
        assert image["size"] == OUTAGE_UPLOAD_SIZE
        assert image["os_hash_value"] == out["sha512"]
        assert s3_size(stack, stack.bucket, image_id) == OUTAGE_UPLOAD_SIZE
        # Each answer above was drained whole (glance gave up before it read a byte).
        drains = _drain_lines(proc)
        say(f"\n[e2e] {release}: " + "; ".join(drains))
        assert len(drains) == len(outcomes), drains
        assert all(
            re.fullmatch(
                rf"glance-wsgi-api: PUT /v2/images/{image_id}/file answered 500: drained "
                rf"{OUTAGE_UPLOAD_SIZE} bytes in [0-9.]+ s",
                line,
            )
            for line in drains
        ), drains
    finally:
        delete_image(url, token, image_id)
        proc.stop()
        door.close()


def _drain_lines(proc) -> list[str]:
    return [
        line[line.index("glance-wsgi-api: ") :]
        for line in proc.log.read_text(errors="replace").splitlines()
        if "glance-wsgi-api: " in line
    ]


@pytest.mark.e2e
def test_a_successful_upload_and_an_error_to_a_body_read_to_its_end_are_unchanged(
    stack, say, timed
):
    """On the stack's Glance (S3 answers): an upload succeeds as before, and an error to a
    request whose body glance read whole (a create with an unknown disk format) is
    answered at once; neither is drained."""
    token = stack.demo_token()
    logged = len(_drain_lines(stack.glance))
    image_id = create_image(stack.glance_url, token, "e2e-drain-success")
    try:
        for client in CLIENTS:
            out = _upload(stack, stack.glance_url, token, image_id, 8 * MIB, False, 3, client)
            say(
                f"\n[e2e] S3 up, 8 MiB {client} Content-Length: {out['status']} in {out['seconds']} s"
            )
            assert out["status"] == 204, out
            image = get_image(stack.glance_url, token, image_id)
            assert image["status"] == "active"
            assert image["os_hash_value"] == out["sha512"]
            delete_image(stack.glance_url, token, image_id)
            image_id = create_image(stack.glance_url, token, "e2e-drain-success")
    finally:
        delete_image(stack.glance_url, token, image_id)
    body = {"name": "e2e-bad-format", "disk_format": "no-such-format", "container_format": "bare"}
    started = time.monotonic()
    resp = http("POST", f"{stack.glance_url}/v2/images", body, {"X-Auth-Token": token})
    assert resp.status == 400, resp
    assert b"no-such-format" in resp.body, resp.body
    say(f"\n[e2e] a 400 to a body read whole: in {time.monotonic() - started:.2f} s")
    assert _drain_lines(stack.glance)[logged:] == []


@pytest.fixture(scope="module")
def drains(tmp_path_factory) -> dict[str, dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}

    def run(release: str) -> dict[str, Any]:
        if release not in runs:
            base = tmp_path_factory.mktemp(f"drain-{release}")
            runs[release] = _run(_python(release), DRAIN_DRIVER, {"shim": str(SHIM)}, base)
        return runs[release]

    return run


LEFT = 3 * 1024 * 1024 + 5 - 1000  # the fake body, less what the application read


@pytest.mark.parametrize("release", RELEASES)
def test_an_error_drains_the_unread_body_before_its_first_byte_goes_out(drains, release):
    result = drains(release)["error-part-read"]
    assert result["blocks"] == ["answer 500 Internal Server Error"]
    assert result["left"] == 0
    # Read in blocks of at most 1 MiB, after the answer was decided, before it goes out.
    reads = [e[1] for e in result["events"] if e[0] == "server read"]
    assert reads == [1000, 1024 * 1024, 1024 * 1024, LEFT - 2 * 1024 * 1024]
    order = [e[0] for e in result["events"]]
    assert order.index("start_response") < order.index("block out")
    assert order[-2] == "server read", order
    assert result["logged"] == [
        f"glance-wsgi-api: PUT /v2/images/x/file answered 500: drained {LEFT} bytes in "
        + result["logged"][0].rsplit(" in ", 1)[1]
    ]


@pytest.mark.parametrize("release", RELEASES)
def test_a_success_or_a_body_read_to_its_end_is_handed_on_untouched(drains, release):
    runs = drains(release)
    success = runs["success-part-read"]
    assert success["unwrapped"], "a success answer is returned as the application gave it"
    assert success["left"] == LEFT  # nothing drained
    assert success["logged"] == []
    read_all = runs["error-all-read"]
    assert read_all["unwrapped"]
    assert [e for e in read_all["events"] if e[0] == "server read"] == [
        ["server read", 3 * 1024 * 1024 + 5]
    ]
    assert read_all["logged"] == []
    no_body = runs["no-body"]
    assert no_body["unwrapped"] and not no_body["input_wrapped"]
    assert no_body["logged"] == []


@pytest.mark.parametrize("release", RELEASES)
def test_a_lazy_application_drains_before_its_first_block_only_on_an_error(drains, release):
    runs = drains(release)
    error = runs["lazy-error"]
    order = [e[0] for e in error["events"]]
    assert order[:2] == ["server read", "start_response"]
    assert order[-1] == "block out" and order[-2] == "server read", order
    assert error["left"] == 0
    success = runs["lazy-success"]
    assert success["left"] == 3 * 1024 * 1024 + 5 - 10
    assert success["logged"] == []
    raised = runs["raises"]
    assert raised["raised"] == "the store is gone"
    assert raised["left"] == 0
    assert "answered with an exception: drained" in raised["logged"][0]


@pytest.mark.parametrize("release", RELEASES)
def test_a_chunked_body_is_drained_with_uwsgi_chunked_read(drains, release):
    runs = drains(release)
    error = runs["chunked-error"]
    assert [e for e in error["events"] if e[0] == "chunked_read"] == [["chunked_read", 60]] * 3
    assert "drained 150 bytes" in error["logged"][0]
    read_to_end = runs["chunked-read-to-end"]  # uWSGI answers b"" once the last chunk was read
    assert read_to_end["logged"] == []
    outside = runs["chunked-outside-uwsgi"]
    assert outside["logged"] == [
        "glance-wsgi-api: PUT /v2/images/x/file answered 500: not drained: a chunked body "
        "outside uWSGI"
    ]


@pytest.mark.parametrize("release", RELEASES)
def test_past_its_bounds_the_body_is_not_drained(drains, release):
    runs = drains(release)
    too_large = runs["too-large"]
    assert too_large["logged"] == [
        "glance-wsgi-api: PUT /v2/images/x/file answered 500: not drained: 1073741825 bytes "
        "left, more than 1073741824"
    ]
    assert [e for e in too_large["events"] if e[0] == "server read"] == [["server read", 10]]
    waits = runs["expect-continue"]
    assert waits["left"] == 3 * 1024 * 1024 + 5
    assert "not drained: the client waits for 100 Continue" in waits["logged"][0]
    assert runs["slow"].startswith("drain stopped after 75.0 s: 2048 bytes read"), runs["slow"]
    assert runs["endless"] == "drain stopped: more than 10240 bytes"


@pytest.mark.parametrize("release", RELEASES)
def test_a_uwsgi_without_chunked_read_is_refused_loudly(drains, release):
    runs = drains(release)
    assert runs["no-uwsgi"] is None
    assert "this uWSGI has no uwsgi.chunked_read" in runs["refused"]
