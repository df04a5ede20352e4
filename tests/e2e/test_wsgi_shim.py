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
command; these tests pin its contract per release without a server.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
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
            results[name] = module.application
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
