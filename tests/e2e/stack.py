"""A real Glance with real Keystone, MariaDB and an S3 server, on 127.0.0.1, from the render.

Nothing here knows how Glance is configured or launched: the operator's render decides
it. :class:`Stack` renders a Glance (the minimal sample, pointed at the local services)
through ``playbooks/render.yml`` and then does what the kubelet would do with the objects:

* every volume mount of a container becomes a directory: a ConfigMap's or a Secret's keys
  are written there as files, an emptyDir is an empty directory;
* the container's ``env`` is resolved: each ``secretKeyRef`` against the rendered Secrets
  (the DB connection) and the input Secrets (the service user password), each
  ``fieldRef`` from the pod's downward API (``status.podIP`` is 127.0.0.1 here), and every
  ``$(VAR)`` of a value expanded from the variables defined before it, as the kubelet does;
* the db-sync Job's ``command`` runs to completion, then the Deployment's ``command``
  (uWSGI with the image's WSGI shim) is started and must answer ``/healthcheck``.

The pod's paths, port and programs do not exist on this machine: :class:`Remap` is the ONE
table that moves them (cluster path -> temporary path, the image's shim and metadefs ->
this repository and the e2e environment, ``--http :9292`` -> a free loopback port, bare
program names -> the e2e environment, the pod's own address ``<pod IP>:9292`` -> the
loopback port the process listens on), applied to the command, the mount paths, the files
written and the environment values alike. After it, nothing may still name a cluster path
or the cluster port: that is checked, so the harness never touches the host's ``/etc``.

A test may render a variant of the input (:meth:`Stack.variant`: the stack's input changed
by the test, its pod files under a root of its own, the same Remap table) and launch a
Glance API from it (:meth:`Stack.launch_from`) or run one of its Job/CronJob containers
(:meth:`Stack.run_container`), against the same MariaDB, Keystone and S3 server.

The services around Glance are the harness's own, each on a free port of 127.0.0.1 (or of
``Stack.host``: the cluster tests put them on the one-node cluster's address, where pods
reach them, and start them alone with :meth:`Stack.start_services`) with its state under
one temporary directory: MariaDB (private datadir and socket), moto's S3 server,
Keystone (sqlite; served by uWSGI). Every process gets its own process group and log file
and is stopped in reverse order (SIGTERM, or SIGINT for uWSGI; SIGKILL after a grace
period) by :meth:`Stack.stop`, which the session fixture calls in a ``finally`` block.

Everything runs from the e2e environment ``.venv-glance/e2e-2026.2`` (``make e2e-env``).
"""

from __future__ import annotations

import base64
import contextlib
import getpass
import grp
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2026.2"
VENV = ROOT / ".venv-glance" / f"e2e-{RELEASE}"
VENV_BIN = VENV / "bin"
SHIM = ROOT / "images" / "glance" / "glance-wsgi-api"
SAMPLE = ROOT / "config" / "samples" / "glance_minimal.yaml"
# Files the Glance image puts next to its configuration (images/glance/Dockerfile, COPY):
# the path in the image -> the repository's copy.
IMAGE_FILES = {
    "/etc/glance/schema-image.json": ROOT / "images" / "glance" / "schema-image.json",
}
PLAYBOOK = ROOT / "playbooks" / "render.yml"
DEBIAN_DIRS = ("/usr/sbin", "/usr/bin")

# Programs the suite cannot run without (``make e2e-env`` installs them): in the e2e
# environment, Debian's mariadb-server, and Debian's qemu-utils (the image ships qemu-img
# for the image_conversion import plugin; glance-api finds it on PATH).
E2E_PROGRAMS = (
    "python",
    "uwsgi",
    "keystone-manage",
    "glance-manage",
    "moto_server",
    "openstack",
    "glance",
)
MARIADB_PROGRAMS = ("mariadbd", "mariadb-install-db", "mariadb")
QEMU_IMG = "qemu-img"

# Credentials of the local services (nothing here leaves 127.0.0.1).
ADMIN_PASSWORD = "e2e-admin-password"
GLANCE_PASSWORD = "e2e-glance-service-password"
DEMO_PASSWORD = "e2e-demo-password"
DB_USER = "glance"
DB_PASSWORD = "e2e-glance-db-password"
S3_ACCESS_KEY = "E2EACCESSKEY"
S3_SECRET_KEY = "e2e-s3-secret-key"
# Run with the e2e environment's Python (boto3): a user of moto's IAM with a policy allowing
# every S3 action, and a key pair of moto's making, printed as one JSON line.
S3_USER_SCRIPT = r"""
import json, sys, boto3
url, name = sys.argv[1], sys.argv[2]
iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1",
                   aws_access_key_id="moto", aws_secret_access_key="moto")
iam.create_user(UserName=name)
allow = {"Version": "2012-10-17",
         "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
iam.put_user_policy(UserName=name, PolicyName="s3", PolicyDocument=json.dumps(allow))
key = iam.create_access_key(UserName=name)["AccessKey"]
print(json.dumps({"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}))
"""
REGION = "RegionOne"
BUCKET = "glance-e2e"

# Timeouts (seconds): generous for a loaded 2-core machine; nothing asserts on time.
READY_TIMEOUT = 180
COMMAND_TIMEOUT = 300
STOP_GRACE = 10


class StackError(RuntimeError):
    """The stack could not be brought up; the message says which part and why."""


# ---------------------------------------------------------------------------------------
# what the suite needs


def debian_program(name: str) -> str | None:
    """A program of a Debian package (MariaDB's, qemu-img): on PATH or in its directory."""
    return shutil.which(name) or next(
        (
            str(Path(d) / name)
            for d in DEBIAN_DIRS
            if os.access(Path(d) / name, os.X_OK) and (Path(d) / name).is_file()
        ),
        None,
    )


def missing_programs() -> list[str]:
    """What ``make e2e-env`` would install and is not there (empty: the suite can run)."""
    missing = [
        f"{VENV_BIN / name} (the e2e environment)"
        for name in E2E_PROGRAMS
        if not os.access(VENV_BIN / name, os.X_OK)
    ]
    missing += [
        f"{name} (Debian mariadb-server)" for name in MARIADB_PROGRAMS if not debian_program(name)
    ]
    if not debian_program(QEMU_IMG):
        missing.append(f"{QEMU_IMG} (Debian qemu-utils)")
    return missing


# ---------------------------------------------------------------------------------------
# the ONE remap table: from the pod to this machine


@dataclass(frozen=True)
class Remap:
    """Where the pod's paths, its port and its programs are on this machine.

    =====================================================  ===============================
    in the pod (rendered)                                  here
    =====================================================  ===============================
    ``/var/lib/openstack/bin/glance-wsgi-api``              ``images/glance/glance-wsgi-api``
                                                            (the shim the image ships)
    ``/var/lib/openstack/...`` (the image's environment:     ``<e2e venv>/...`` (the same
    ``bin/python``, ``etc/glance/metadefs`` ...)            environment, built from the
                                                            same pins)
    ``/etc/glance/...`` (config volumes, healthcheck file)  ``<root>/etc/glance/...``
    ``/var/lib/glance/...`` (staging, tasks-work, cache)    ``<root>/var/lib/glance/...``
    ``/tmp`` (the ``tmp`` emptyDir)                         ``<root>/tmp`` (also ``TMPDIR``)
    ``--http :9292`` (container port 9292, all addresses)   ``--http 127.0.0.1:<port>``
    the downward API's ``status.podIP``                     ``127.0.0.1`` (:data:`POD_IP`)
    the pod's own address in an env value                    ``127.0.0.1:<port>``: so
    (``http://$(POD_IP):9292``, glance's                    ``http://127.0.0.1:<port>``,
    ``worker_self_reference_url``)                          one per process
    a bare program (``uwsgi``, ``glance-manage`` ...)       ``<e2e venv>/bin/<program>``,
                                                            first on ``PATH``
    the image's environment                                 ``PATH``, ``HOME=<root>/home``,
                                                            ``LANG``, ``TMPDIR``; nothing
                                                            else of this process
    an image file Glance finds in ``/etc/glance``           ``<root>/home/.glance/<file>``
    (:data:`IMAGE_FILES`: ``schema-image.json``)            (from ``images/glance``)
    =====================================================  ===============================

    Glance looks for ``schema-image.json`` with oslo.config's ``find_file``: next to its
    configuration files (the mounted directories), then ``~/.glance``, ``~``,
    ``/etc/glance``, ``/etc``. The image puts it in ``/etc/glance``; that is the host's
    here, never written, so the harness puts the same file in ``~/.glance``, which is
    searched earlier (and wins over anything the host may hold).

    Paths are replaced wherever they occur (command tokens, mount paths, the files written
    from ConfigMaps and Secrets, env values), only at a path boundary, longest first, in
    one pass. :meth:`check` refuses anything that still names a pod path or the port.
    """

    root: Path
    port: int
    venv: Path = VENV
    shim: Path = SHIM

    CLUSTER_PORT = 9292
    CLUSTER_PREFIXES = ("/etc/glance", "/var/lib/glance", "/var/lib/openstack")
    POD_IP = "127.0.0.1"

    @property
    def downward_api(self) -> dict[str, str]:
        """The pod fields a ``fieldRef`` may name, as they are here."""
        return {"status.podIP": self.POD_IP, "status.podIPs": self.POD_IP}

    def own_address(self, value: str) -> str:
        """The pod's own ``<pod IP>:9292`` in ``value`` moved to this process's port."""
        return re.sub(
            rf"(?<![\w.]){re.escape(self.POD_IP)}:{self.CLUSTER_PORT}(?!\d)",
            f"{self.POD_IP}:{self.port}",
            value,
        )

    @property
    def paths(self) -> dict[str, str]:
        return {
            "/var/lib/openstack/bin/glance-wsgi-api": str(self.shim),
            "/var/lib/openstack": str(self.venv),
            "/etc/glance": str(self.root / "etc/glance"),
            "/var/lib/glance": str(self.root / "var/lib/glance"),
            "/tmp": str(self.root / "tmp"),
        }

    def _pattern(self) -> re.Pattern[str]:
        keys = sorted(self.paths, key=len, reverse=True)
        alternatives = "|".join(re.escape(k) for k in keys)
        # A path starts at a boundary and the key ends at one ("/tmp" is not "/tmpfs").
        return re.compile(rf"(?<![\w.\-/])({alternatives})(?=/|$|[^\w.\-])")

    def text(self, value: str) -> str:
        """Every pod path in ``value`` moved here."""
        return self._pattern().sub(lambda m: self.paths[m.group(1)], value)

    def path(self, pod_path: str) -> Path:
        return Path(self.text(pod_path))

    def command(self, argv: Sequence[str]) -> list[str]:
        """The container command as it runs here."""
        out = [self.text(token) for token in argv]
        if "/" not in out[0] and (self.venv / "bin" / out[0]).exists():
            out[0] = str(self.venv / "bin" / out[0])
        for i, token in enumerate(out[:-1]):
            if token in ("--http", "--http-socket", "--http11-socket") and out[i + 1] in (
                f":{self.CLUSTER_PORT}",
                f"0.0.0.0:{self.CLUSTER_PORT}",
            ):
                out[i + 1] = f"127.0.0.1:{self.port}"
        self.check(out, "command")
        return out

    def environment(self, container_env: Mapping[str, str]) -> dict[str, str]:
        """The image's environment here, plus the container's (paths moved)."""
        home = self.root / "home"
        home.mkdir(parents=True, exist_ok=True)
        found_by_glance = home / ".glance"  # oslo.config searches it before /etc/glance
        found_by_glance.mkdir(exist_ok=True)
        for image_path, source in IMAGE_FILES.items():
            if Path(image_path).parent != Path("/etc/glance"):
                raise StackError(f"{image_path}: only files of /etc/glance are mirrored")
            shutil.copyfile(source, found_by_glance / Path(image_path).name)
        tmp = self.path("/tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(tmp),
        }
        env.update(
            {name: self.own_address(self.text(value)) for name, value in container_env.items()}
        )
        self.check(list(env.values()), "environment")
        return env

    def check(self, values: Sequence[str], what: str) -> None:
        for value in values:
            for prefix in self.CLUSTER_PREFIXES:
                if re.search(rf"(?<![\w.\-/]){re.escape(prefix)}(?=/|$|[^\w.\-])", value):
                    raise StackError(f"{what}: {value!r} still names {prefix}: extend Remap")
            if re.search(rf"(?<!\d){self.CLUSTER_PORT}(?!\d)", value) and value.startswith(
                (":", "0.0.0.0")
            ):
                raise StackError(f"{what}: {value!r} still binds port {self.CLUSTER_PORT}")
            own = f"{self.POD_IP}:{self.CLUSTER_PORT}"
            if self.port != self.CLUSTER_PORT and re.search(rf"{re.escape(own)}(?!\d)", value):
                raise StackError(f"{what}: {value!r} still names the pod's {own}")


# ---------------------------------------------------------------------------------------
# small helpers


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def http(
    method: str,
    url: str,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> Response:
    """One HTTP request; an error status is returned, not raised."""
    data = body
    hdrs = dict(headers or {})
    if body is not None and not isinstance(body, bytes):
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return Response(resp.status, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as err:
        return Response(err.code, dict(err.headers), err.read())


def wait_for(what: str, check: Callable[[], bool], proc: Process | None, timeout: float) -> float:
    """Poll ``check`` until it is true; the seconds it took. Fails early if ``proc`` dies."""
    started = time.monotonic()
    while True:
        if proc is not None and proc.popen.poll() is not None:
            raise StackError(
                f"{what}: {proc.name} exited with {proc.popen.returncode} before it was "
                f"ready\n{proc.tail()}"
            )
        with contextlib.suppress(OSError, urllib.error.URLError):
            if check():
                return time.monotonic() - started
        if time.monotonic() - started > timeout:
            tail = proc.tail() if proc else ""
            raise StackError(f"{what}: not ready after {timeout}s\n{tail}")
        time.sleep(0.2)


def http_ok(url: str, statuses: Sequence[int] = (200,)) -> Callable[[], bool]:
    return lambda: http("GET", url, timeout=5).status in statuses


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path
    stop_signal: int = signal.SIGTERM

    def tail(self, lines: int = 60) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return f"--- last lines of {self.log} ---\n" + "\n".join(text[-lines:])

    def stop(self) -> int | None:
        """Stop its process group: the stop signal, then SIGKILL after a grace period."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, self.stop_signal)
            try:
                self.popen.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(STOP_GRACE)
        # Workers left behind in the group (uWSGI's) go too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        return self.popen.returncode


# ---------------------------------------------------------------------------------------
# the rendered objects


def _decode(data: Mapping[str, str] | None) -> dict[str, str]:
    return {k: base64.b64decode(v, validate=True).decode() for k, v in (data or {}).items()}


@dataclass
class Rendered:
    """The manifests of one render, and the input Secrets next to them."""

    objects: list[dict[str, Any]]
    input_secrets: dict[str, dict[str, str]]

    def find(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [
            o
            for o in self.objects
            if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
        ]
        if len(found) != 1:
            raise StackError(f"the render holds {len(found)} {kind} {name or ''}, not one")
        return found[0]

    def secret_data(self, name: str) -> dict[str, str]:
        """A Secret's data as text: a rendered one, else one of the input."""
        for obj in self.objects:
            if obj["kind"] == "Secret" and obj["metadata"]["name"] == name:
                return _decode(obj.get("data"))
        if name in self.input_secrets:
            return self.input_secrets[name]
        raise StackError(f"Secret {name} is neither rendered nor in the input")

    def volume_files(self, volume: Mapping[str, Any]) -> dict[str, str] | None:
        """The files a volume shows: a ConfigMap's or Secret's keys; None for an emptyDir."""
        if "configMap" in volume:
            return dict(self.find("ConfigMap", volume["configMap"]["name"]).get("data") or {})
        if "secret" in volume:
            return self.secret_data(volume["secret"]["secretName"])
        if "emptyDir" in volume:
            return None
        raise StackError(f"volume {volume['name']}: unsupported source {sorted(volume)}")

    def container_env(
        self, container: Mapping[str, Any], downward_api: Mapping[str, str]
    ) -> dict[str, str]:
        """The container's ``env`` as the kubelet resolves it.

        ``secretKeyRef`` from the Secrets, ``fieldRef`` from ``downward_api`` (the pod's
        fields here, :attr:`Remap.downward_api`), and ``$(VAR)`` in a ``value`` expanded
        from the variables defined before it (``$$`` is a literal ``$``; an unknown
        ``$(VAR)`` is kept as it is), Kubernetes' dependent environment variables.
        """
        env: dict[str, str] = {}
        for entry in container.get("env") or []:
            if "value" in entry:
                env[entry["name"]] = expand_dependent(str(entry["value"]), env)
                continue
            source = entry.get("valueFrom") or {}
            field_ref = source.get("fieldRef")
            if field_ref is not None:
                if field_ref["fieldPath"] not in downward_api:
                    raise StackError(f"env {entry['name']}: no pod field {field_ref['fieldPath']}")
                env[entry["name"]] = downward_api[field_ref["fieldPath"]]
                continue
            ref = source.get("secretKeyRef")
            if ref is None:
                raise StackError(
                    f"env {entry['name']}: only value, fieldRef and secretKeyRef supported"
                )
            data = self.secret_data(ref["name"])
            if ref["key"] not in data:
                raise StackError(f"env {entry['name']}: Secret {ref['name']} has no {ref['key']}")
            env[entry["name"]] = data[ref["key"]]
        return env


_DEPENDENT = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand_dependent(value: str, defined: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion of an env value (``k8s.io/kubernetes`` expansion)."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return defined[name] if name in defined else match.group(0)

    return _DEPENDENT.sub(one, value)


def pod_container(obj: Mapping[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod spec of a Deployment or Job, and its container ``name``."""
    pod = obj["spec"]["template"]["spec"]
    for container in pod["containers"]:
        if container["name"] == name:
            return pod, container
    raise StackError(f"{obj['kind']} {obj['metadata']['name']} has no container {name}")


def materialize(
    rendered: Rendered, pod: Mapping[str, Any], container: Mapping[str, Any], remap: Remap
) -> None:
    """Every mount of ``container`` as a directory here, with its volume's files."""
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        target = remap.path(mount["mountPath"])
        remap.check([str(target)], f"mount {mount['name']}")
        target.mkdir(parents=True, exist_ok=True)
        files = rendered.volume_files(volumes[mount["name"]])
        for key, text in (files or {}).items():
            content = remap.text(text)
            remap.check(content.splitlines(), f"{mount['name']}/{key}")
            path = target / key
            if path.exists() and path.read_text() != content:
                raise StackError(f"{path}: two volumes disagree about its content")
            path.write_text(content)


# ---------------------------------------------------------------------------------------
# the stack


@dataclass
class Stack:
    root: Path
    log: Callable[[str], None] = field(default=lambda msg: print(msg, file=sys.stderr))
    processes: list[Process] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    # moto's environment on top of the tools' (the upload bench keeps its objects in memory)
    moto_env: dict[str, str] = field(default_factory=dict)
    # filled in by start()
    mariadb_port: int = 0
    moto_port: int = 0
    keystone_port: int = 0
    glance_port: int = 0
    memcached_port: int = 0  # nothing listens there: Glance must cope without memcached
    # The address MariaDB, Keystone and the S3 server listen on: loopback here, the node's
    # address when pods of the one-node cluster use them (tests/cluster).
    host: str = "127.0.0.1"
    bucket: str = ""
    rendered: Rendered | None = None
    remap: Remap | None = None
    glance: Process | None = None
    moto: Process | None = None
    glance_container: dict[str, Any] = field(default_factory=dict)
    glance_env: dict[str, str] = field(default_factory=dict)
    glance_command: list[str] = field(default_factory=list)

    # -- processes ------------------------------------------------------------------------

    def spawn(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        stop_signal: int = signal.SIGTERM,
    ) -> Process:
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{name}.log"
        with open(log, "ab") as out:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else self.tool_env(),
                cwd=self.root,
                start_new_session=True,  # its own process group: stopped by id, alone
            )
        proc = Process(name, popen, log, stop_signal)
        self.processes.append(proc)
        return proc

    def run(
        self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        """Run a command to completion; its output goes to ``logs/<name>.log``."""
        started = time.monotonic()
        proc = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=dict(env) if env is not None else self.tool_env(),
            cwd=self.root,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        self.timings[name] = time.monotonic() - started
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / f"{name}.log", "a") as out:
            out.write(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}\n")
        if proc.returncode != 0:
            raise StackError(
                f"{name}: exit {proc.returncode}: {' '.join(argv)}\n"
                f"{(proc.stdout + proc.stderr)[-6000:]}"
            )
        return proc

    def tool_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A clean environment for the harness's own tools (no OS_* of the caller)."""
        env = {
            "PATH": f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.root / "home"),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.root / "tmp"),
        }
        (self.root / "home").mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        env.update(extra or {})
        return env

    def stop(self) -> None:
        """Stop every process, the last started first; never raises."""
        for proc in reversed(self.processes):
            try:
                proc.stop()
            except Exception as exc:  # keep stopping the others
                self.log(f"[e2e] stopping {proc.name}: {exc}")
        self.processes.clear()

    # -- bring-up -------------------------------------------------------------------------

    def start(self) -> None:
        """Everything, ready; on failure the caller still calls :meth:`stop`."""
        started = time.monotonic()
        self._ports()
        with ThreadPoolExecutor(max_workers=3) as pool:
            keystone = pool.submit(self._keystone)
            render = pool.submit(self._render)
            database = pool.submit(self._mariadb)
            self._moto()
            render.result()
            database.result()
            self._glance_db_sync()
            self._glance_start()
            keystone.result()
        self.timings["stack"] = time.monotonic() - started
        self.log(f"[e2e] stack up in {self.timings['stack']:.1f}s: {self.describe()}")

    def start_services(self) -> None:
        """MariaDB, Keystone and the S3 server only, ready, on :attr:`host`: the services
        around a Glance that runs elsewhere (in pods of the one-node cluster)."""
        started = time.monotonic()
        self._ports()
        with ThreadPoolExecutor(max_workers=2) as pool:
            keystone = pool.submit(self._keystone)
            database = pool.submit(self._mariadb)
            self._moto()
            database.result()
            keystone.result()
        self.timings["services"] = time.monotonic() - started
        self.log(
            f"[e2e] services up in {self.timings['services']:.1f}s: keystone "
            f"{self.keystone_url}, mariadb {self.host}:{self.mariadb_port}, s3 {self.s3_url}"
        )

    def start_mariadb(self) -> None:
        """MariaDB alone, ready, on :attr:`host` (the reconcile tests of managed database
        mode: tests/support/mariadb_controller.py makes databases and users in it)."""
        self._ports()
        self._mariadb()

    def root_sql(self, name: str, statement: str) -> subprocess.CompletedProcess:
        """``statement`` as MariaDB's root over the private socket (what mariadb-operator
        does with its own privileged connection); the output in ``logs/<name>.log``."""
        return self.run(
            name,
            [
                debian_program("mariadb"),
                "--no-defaults",
                f"--socket={self.root / 'mariadb' / 'mysqld.sock'}",
                "-uroot",
                "-N",
                "-B",
                "-e",
                statement,
            ],
        )

    def _ports(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        # MariaDB's port may be asked for (make cluster-services --mariadb-port); else free.
        self.mariadb_port, self.moto_port = self.mariadb_port or free_port(), free_port()
        self.keystone_port, self.glance_port = free_port(), free_port()
        self.memcached_port = free_port()
        self.bucket = BUCKET

    def describe(self) -> str:
        return (
            f"glance http://127.0.0.1:{self.glance_port}, keystone {self.keystone_url}, "
            f"mariadb {self.host}:{self.mariadb_port}, s3 {self.s3_url}, logs {self.root / 'logs'}"
        )

    @property
    def keystone_url(self) -> str:
        return f"http://{self.host}:{self.keystone_port}/v3"

    @property
    def glance_url(self) -> str:
        return f"http://127.0.0.1:{self.glance_port}"

    @property
    def s3_url(self) -> str:
        return f"http://{self.host}:{self.moto_port}"

    # MariaDB: a private datadir and socket, TCP on the stack's host address only.
    def _mariadb(self) -> None:
        base = self.root / "mariadb"
        data, sock = base / "data", base / "mysqld.sock"
        (base / "tmp").mkdir(parents=True, exist_ok=True)
        user = getpass.getuser()
        self.run(
            "mariadb-install-db",
            [
                debian_program("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={data}",
                f"--user={user}",
                "--auth-root-authentication-method=socket",
                f"--auth-root-socket-user={user}",
                "--skip-test-db",
                "--skip-name-resolve",
            ],
        )
        self._mariadbd()
        self.run(
            "mariadb-sql",
            [
                debian_program("mariadb"),
                "--no-defaults",
                f"--socket={sock}",
                "-uroot",
                "-e",
                f"CREATE USER '{DB_USER}'@'%' IDENTIFIED BY '{DB_PASSWORD}';",
            ],
        )
        self.create_database("glance")

    def _mariadbd(self) -> None:
        """The server on the datadir :meth:`_mariadb` made, ready."""
        base = self.root / "mariadb"
        data, sock = base / "data", base / "mysqld.sock"
        user = getpass.getuser()
        proc = self.spawn(
            "mariadbd",
            [
                debian_program("mariadbd"),
                "--no-defaults",
                f"--datadir={data}",
                f"--socket={sock}",
                f"--pid-file={base / 'mariadbd.pid'}",
                f"--tmpdir={base / 'tmp'}",
                f"--bind-address={self.host}",
                f"--port={self.mariadb_port}",
                f"--user={user}",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M",
                "--innodb-flush-log-at-trx-commit=0",
                "--character-set-server=utf8mb3",
            ],
        )
        self.timings["mariadb ready"] = wait_for(
            "MariaDB",
            lambda: sock.exists() and self._mariadb_ping(sock),
            proc,
            READY_TIMEOUT,
        )
        self.mariadb = proc

    def stop_mariadb(self) -> None:
        """Stop MariaDB (SIGTERM, as a service stop does); :meth:`start_mariadb_again`
        brings it back."""
        self.mariadb.stop()
        self.processes.remove(self.mariadb)

    def start_mariadb_again(self) -> float:
        """MariaDB on the datadir and port it had, ready; the seconds until it answered."""
        self._mariadbd()
        return self.timings["mariadb ready"]

    def restart_mariadb(self, down: float) -> float:
        """Stop MariaDB (SIGTERM, as a service restart does), keep it down ``down`` seconds,
        start it again on the same datadir and port; the seconds until it answered again."""
        self.stop_mariadb()
        time.sleep(down)
        return self.start_mariadb_again()

    def create_database(self, name: str) -> None:
        """An empty database ``name`` the Glance DB user owns (MariaDB's root socket)."""
        if not re.fullmatch(r"\w+", name):
            raise StackError(f"database name {name!r}: letters, digits and _ only")
        self.run(
            f"mariadb-create-{name}",
            [
                debian_program("mariadb"),
                "--no-defaults",
                f"--socket={self.root / 'mariadb' / 'mysqld.sock'}",
                "-uroot",
                "-e",
                f"CREATE DATABASE {name} CHARACTER SET utf8 COLLATE utf8_general_ci; "
                f"GRANT ALL PRIVILEGES ON {name}.* TO '{DB_USER}'@'%';",
            ],
        )

    @staticmethod
    def _mariadb_ping(sock: Path) -> bool:
        proc = subprocess.run(
            [
                debian_program("mariadb"),
                "--no-defaults",
                f"--socket={sock}",
                "-uroot",
                "-e",
                "SELECT 1",
            ],
            capture_output=True,
            check=False,
            timeout=30,
        )
        return proc.returncode == 0

    # moto: the S3 server, one bucket created up front (glance does not create it).
    def _moto(self) -> None:
        proc = self.spawn(
            "moto",
            [str(VENV_BIN / "moto_server"), "-H", self.host, "-p", str(self.moto_port)],
            env=self.tool_env(self.moto_env),
        )
        self.timings["moto ready"] = wait_for("moto", http_ok(self.s3_url + "/"), proc, 60)
        self.moto = proc
        created = http("PUT", f"{self.s3_url}/{self.bucket}", body=b"")
        if created.status != 200:
            raise StackError(f"moto: creating bucket {self.bucket}: {created.status}")

    # moto checks no S3 key unless told to (its /moto-api/reset-auth): a user of its own IAM
    # with a key pair moto made, and the switch that makes moto check every request's key
    # and signature, so a wrong secret key is refused as a real S3 server refuses it.
    def s3_user(self, name: str) -> tuple[str, str]:
        """A user of moto's IAM allowed every S3 action, and its (access key id, secret
        key), made while moto checks no key. Held in memory: not written to the stack's
        logs."""
        done = subprocess.run(
            [str(VENV_BIN / "python"), "-c", S3_USER_SCRIPT, self.s3_url, name],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=self.tool_env(),
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            raise StackError(f"moto: creating the S3 user {name}: {done.stderr[-3000:]}")
        key = json.loads(done.stdout)
        return key["id"], key["secret"]

    @contextlib.contextmanager
    def s3_checking_keys(self):
        """Within: moto refuses a request whose key it does not know or whose signature is
        wrong (403 ``InvalidAccessKeyId``, ``SignatureDoesNotMatch``); after, none again."""
        self._s3_checks(True)
        try:
            yield
        finally:
            self._s3_checks(False)

    def _s3_checks(self, on: bool) -> None:
        answer = http(
            "POST",
            f"{self.s3_url}/moto-api/reset-auth",
            body=b"0" if on else b"inf",  # requests allowed before checks begin
            headers={"Content-Type": "text/plain"},
        )
        if answer.status != 200:
            raise StackError(f"moto: reset-auth: HTTP {answer.status}: {answer.body[:300]!r}")

    # Keystone: sqlite, fernet, bootstrapped, served by uWSGI; the users Glance needs.
    def _keystone(self) -> None:
        base = self.root / "keystone"
        base.mkdir(parents=True, exist_ok=True)
        conf = base / "keystone.conf"
        conf.write_text(
            "[DEFAULT]\nuse_stderr = true\n"
            f"[database]\nconnection = sqlite:///{base / 'keystone.sqlite'}\n"
            f"[fernet_tokens]\nkey_repository = {base / 'fernet-keys'}\n"
            f"[fernet_receipts]\nkey_repository = {base / 'fernet-keys'}\n"
            f"[credential]\nkey_repository = {base / 'credential-keys'}\n"
            # Test token requests several times faster (real-glance-notes.md).
            "[identity]\npassword_hash_rounds = 4\n"
        )
        manage = [str(VENV_BIN / "keystone-manage"), "--config-file", str(conf)]
        owner = ["--keystone-user", getpass.getuser(), "--keystone-group", _group()]
        self.run("keystone-db-sync", [*manage, "db_sync"])
        self.run("keystone-fernet-setup", [*manage, "fernet_setup", *owner])
        self.run("keystone-credential-setup", [*manage, "credential_setup", *owner])
        url = self.keystone_url
        self.run(
            "keystone-bootstrap",
            [
                *manage,
                "bootstrap",
                "--bootstrap-password",
                ADMIN_PASSWORD,
                "--bootstrap-region-id",
                REGION,
                "--bootstrap-admin-url",
                url,
                "--bootstrap-internal-url",
                url,
                "--bootstrap-public-url",
                url,
            ],
        )
        proc = self.spawn(
            "keystone",
            [
                str(VENV_BIN / "uwsgi"),
                "--http",
                f"{self.host}:{self.keystone_port}",
                "--http-keepalive",
                "--http-auto-chunked",
                "--module",
                "keystone.wsgi.api:application",
                "--master",
                "--need-app",
                "--lazy-apps",
                "--processes",
                "2",
                "--threads",
                "1",
            ],
            # pyuwsgi: the application reads os.environ of the launching process.
            env=self.tool_env({"OS_KEYSTONE_CONFIG_FILES": str(conf)}),
            stop_signal=signal.SIGINT,  # uWSGI 2.0 reloads on SIGTERM
        )
        self.timings["keystone ready"] = wait_for("Keystone", http_ok(url), proc, READY_TIMEOUT)
        self._keystone_accounts()

    def keystone_token(self, user: str, password: str, project: str) -> str:
        resp = http(
            "POST",
            f"{self.keystone_url}/auth/tokens",
            {
                "auth": {
                    "identity": {
                        "methods": ["password"],
                        "password": {
                            "user": {
                                "name": user,
                                "domain": {"id": "default"},
                                "password": password,
                            }
                        },
                    },
                    "scope": {"project": {"name": project, "domain": {"id": "default"}}},
                }
            },
        )
        if resp.status != 201:
            raise StackError(f"Keystone token for {user}: {resp.status} {resp.body[:500]!r}")
        return resp.headers["X-Subject-Token"]

    def keystone_admin(self, method: str, path: str, body: Any = None) -> Any:
        """One Keystone API call as the cloud admin; the JSON answer (None when empty)."""
        token = self.keystone_token("admin", ADMIN_PASSWORD, "admin")
        resp = http(method, self.keystone_url + path, body, {"X-Auth-Token": token})
        if resp.status not in (200, 201, 204):
            raise StackError(f"Keystone {method} {path}: {resp.status} {resp.body[:500]!r}")
        return resp.json() if resp.body else None

    def add_image_region(self, region: str, url: str) -> Callable[[], None]:
        """Region ``region`` in Keystone's catalog with an image endpoint at ``url``.

        What a second Glance region looks like to glance-download (it finds the other
        Glance in the user's service catalog). Returns the call that removes both again.
        """
        self.keystone_admin("POST", "/regions", {"region": {"id": region}})
        (service,) = self.keystone_admin("GET", "/services?type=image")["services"]
        created = [
            self.keystone_admin(
                "POST",
                "/endpoints",
                {
                    "endpoint": {
                        "service_id": service["id"],
                        "interface": interface,
                        "url": url,
                        "region_id": region,
                    }
                },
            )["endpoint"]["id"]
            for interface in ("public", "internal")
        ]

        def remove() -> None:
            for endpoint in created:
                self.keystone_admin("DELETE", f"/endpoints/{endpoint}")
            self.keystone_admin("DELETE", f"/regions/{region}")

        return remove

    def _keystone_accounts(self) -> None:
        token = self.keystone_token("admin", ADMIN_PASSWORD, "admin")

        def call(method: str, path: str, body: Any = None, ok: Sequence[int] = (200, 201, 204)):
            resp = http(method, self.keystone_url + path, body, {"X-Auth-Token": token})
            if resp.status not in ok:
                raise StackError(f"Keystone {method} {path}: {resp.status} {resp.body[:500]!r}")
            return resp.json() if resp.body else None

        def project(name: str) -> str:
            return call("POST", "/projects", {"project": {"name": name, "domain_id": "default"}})[
                "project"
            ]["id"]

        def role(name: str) -> str:
            found = call("GET", f"/roles?name={name}")["roles"]
            if found:
                return found[0]["id"]
            return call("POST", "/roles", {"role": {"name": name}})["role"]["id"]

        def user(name: str, password: str) -> str:
            body = {"user": {"name": name, "password": password, "domain_id": "default"}}
            return call("POST", "/users", body)["user"]["id"]

        def grant(project_id: str, user_id: str, role_id: str) -> None:
            call("PUT", f"/projects/{project_id}/users/{user_id}/roles/{role_id}")

        service, demo = project("service"), project("demo")
        glance, demo_user = user("glance", GLANCE_PASSWORD), user("demo", DEMO_PASSWORD)
        for name in ("admin", "service"):
            grant(service, glance, role(name))
        grant(demo, demo_user, role("member"))
        image = call("POST", "/services", {"service": {"name": "glance", "type": "image"}})
        for interface in ("public", "internal", "admin"):
            endpoint = {
                "service_id": image["service"]["id"],
                "interface": interface,
                "url": self.glance_url,
                "region_id": REGION,
            }
            call("POST", "/endpoints", {"endpoint": endpoint})

    # The render: the minimal sample pointed at the local services.
    def render_input(self) -> list[dict[str, Any]]:
        docs = [d for d in yaml.safe_load_all(SAMPLE.read_text()) if d]
        for doc in docs:
            kind, name = doc["kind"], doc["metadata"]["name"]
            if kind == "Glance":
                spec = doc["spec"]
                # The e2e environment is the Glance of this release.
                spec["openStackRelease"] = RELEASE
                spec["image"]["tag"] = RELEASE
                spec["database"]["host"] = self.host
                spec["database"]["port"] = self.mariadb_port
                spec["keystoneEndpoint"] = self.keystone_url
                spec["cache"]["servers"] = [f"{self.host}:{self.memcached_port}"]
            elif kind == "GlanceBackend":
                doc["spec"]["s3"]["host"] = self.s3_url
                doc["spec"]["s3"]["bucket"] = self.bucket
            elif kind == "Secret" and name == doc_secret(docs, "database"):
                doc["stringData"] = {"username": DB_USER, "password": DB_PASSWORD}
            elif kind == "Secret" and name == doc_secret(docs, "serviceUser"):
                doc["stringData"] = {"password": GLANCE_PASSWORD}
            elif kind == "Secret":
                doc["stringData"] = {
                    "access-key-id": S3_ACCESS_KEY,
                    "secret-access-key": S3_SECRET_KEY,
                }
        return docs

    def _render(self) -> None:
        self.rendered = self.render("render", self.render_input())
        self.remap = Remap(self.root / "pod", self.glance_port)

    def render(self, name: str, docs: list[dict[str, Any]]) -> Rendered:
        """Render the input ``docs`` through the playbook, under ``<root>/<name>``."""
        base = self.root / name
        base.mkdir(parents=True, exist_ok=True)
        source = base / "input.yaml"
        source.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        playbook = Path(sys.executable).parent / "ansible-playbook"
        self.run(
            name,
            [
                str(playbook),
                str(PLAYBOOK),
                "-e",
                f"render_input={source}",
                "-e",
                f"render_output={base / 'out'}",
            ],
            env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"},
        )
        objects = [
            d for d in yaml.safe_load_all((base / "out" / "manifests.yaml").read_text()) if d
        ]
        secrets = {}
        for doc in docs:
            if doc["kind"] == "Secret":
                data = _decode(doc.get("data"))
                data.update({k: str(v) for k, v in (doc.get("stringData") or {}).items()})
                secrets[doc["metadata"]["name"]] = data
        return Rendered(objects, secrets)

    def variant(
        self, name: str, edit: Callable[[list[dict[str, Any]]], None], venv: Path = VENV
    ) -> tuple[Rendered, Remap]:
        """A render of the stack's input changed by ``edit``, and its own pod root.

        Same database, Keystone and S3 as the stack's Glance; the files of its pod are
        written under ``<root>/pod-<name>`` (a free port is bound by :meth:`launch_from`).
        ``venv`` stands for the image's environment (another release's Glance).
        """
        docs = self.render_input()
        edit(docs)
        remap = Remap(self.root / f"pod-{name}", 0, venv=venv)
        return self.render(f"render-{name}", docs), remap

    def run_container(
        self,
        name: str,
        rendered: Rendered,
        remap: Remap,
        kind: str,
        container_name: str,
        object_name: str | None = None,
    ) -> subprocess.CompletedProcess:
        """Run a rendered Job's or CronJob's container to completion (must exit 0).

        ``object_name`` picks the object when the render holds more than one of ``kind``
        (the db-sync Job next to an upgrade phase Job).
        """
        obj = rendered.find(kind, object_name)
        pod, container = pod_container(obj["spec"].get("jobTemplate", obj), container_name)
        materialize(rendered, pod, container, remap)
        env = remap.environment(rendered.container_env(container, remap.downward_api))
        return self.run(name, remap.command(container["command"]), env=env)

    def start_container(
        self, name: str, rendered: Rendered, remap: Remap, container_name: str
    ) -> Process:
        """Start a container of the rendered Deployment (a sidecar) as the kubelet would.

        Its mounts are materialized, its command and environment remapped; it is not
        waited for. The caller stops it (:meth:`Process.stop`; :meth:`stop` at the latest).
        """
        pod, container = pod_container(rendered.find("Deployment"), container_name)
        materialize(rendered, pod, container, remap)
        env = remap.environment(rendered.container_env(container, remap.downward_api))
        command = [*container["command"], *(container.get("args") or [])]
        return self.spawn(name, remap.command(command), env=env)

    def launch_from(
        self,
        name: str,
        rendered: Rendered,
        remap: Remap,
        port: int,
        extra_env: Mapping[str, str] | None = None,
    ) -> Process:
        """Start the Glance API container of ``rendered`` on ``port``; wait for health.

        ``extra_env`` is added to the container's rendered environment (a test's setting
        of a library under Glance, never one the operator renders).
        """
        remap = replace(remap, port=port)
        pod, container = pod_container(rendered.find("Deployment"), "glance-api")
        materialize(rendered, pod, container, remap)
        env = remap.environment(rendered.container_env(container, remap.downward_api))
        env.update(extra_env or {})
        proc = self.spawn(
            name, remap.command(container["command"]), env=env, stop_signal=signal.SIGINT
        )
        self.timings[f"{name} ready"] = wait_for(
            f"Glance ({name})",
            http_ok(f"http://127.0.0.1:{port}/healthcheck"),
            proc,
            READY_TIMEOUT,
        )
        return proc

    # Glance: the db-sync Job, then the Deployment's container.
    def _glance_db_sync(self) -> None:
        self.run_container("glance-db-sync", self.rendered, self.remap, "Job", "db-sync")

    def _glance_start(self) -> None:
        rendered, remap = self.rendered, self.remap
        deployment = rendered.find("Deployment")
        pod, container = pod_container(deployment, "glance-api")
        materialize(rendered, pod, container, remap)
        self.glance_container = container
        self.glance_env = remap.environment(rendered.container_env(container, remap.downward_api))
        self.glance_command = remap.command(container["command"])
        self.glance = self.launch_glance("glance-api", self.glance_port)

    def launch_glance(
        self,
        name: str,
        port: int,
        edit: Callable[[list[str]], list[str]] | None = None,
    ) -> Process:
        """Start the rendered Glance API container on ``port``; wait for its health check.

        The stack's own instance runs on ``glance_port``; a test may start another one from
        the same rendered container (same files, same environment but its own address) on a
        port of its own. ``edit`` turns the remapped command into another one (the upload
        bench's hand-tuned launches); the rendered command otherwise.
        """
        remap = replace(self.remap, port=port)
        command = remap.command(self.glance_container["command"])
        if edit is not None:
            command = edit(command)
        # Same files and secrets; its own address (worker_self_reference_url) on ``port``.
        env = remap.environment(
            self.rendered.container_env(self.glance_container, remap.downward_api)
        )
        proc = self.spawn(name, command, env=env, stop_signal=signal.SIGINT)
        self.timings[f"{name} ready"] = wait_for(
            f"Glance ({name})",
            http_ok(f"http://127.0.0.1:{port}/healthcheck"),
            proc,
            READY_TIMEOUT,
        )
        return proc

    # -- for the tests --------------------------------------------------------------------

    def client_env(self, user: str = "demo", password: str = DEMO_PASSWORD) -> dict[str, str]:
        """The environment of the OpenStack CLIs, as user ``user`` of project ``demo``."""
        return self.tool_env(
            {
                "OS_AUTH_URL": self.keystone_url,
                "OS_AUTH_TYPE": "password",
                "OS_USERNAME": user,
                "OS_PASSWORD": password,
                "OS_PROJECT_NAME": "demo",
                "OS_USER_DOMAIN_NAME": "Default",
                "OS_PROJECT_DOMAIN_NAME": "Default",
                "OS_IDENTITY_API_VERSION": "3",
                "OS_IMAGE_API_VERSION": "2",
                "OS_INTERFACE": "public",
                "OS_REGION_NAME": REGION,
            }
        )

    def cli(self, program: str, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
        """Run ``openstack`` or ``glance`` of the e2e environment as the demo user.

        Standard input is closed: both CLIs upload whatever a non-terminal stdin holds when
        no ``--file`` is given (``glance image-create`` would create an empty, active image).
        """
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("timeout", COMMAND_TIMEOUT)
        return subprocess.run(
            [str(VENV_BIN / program), *args],
            env=self.client_env(),
            cwd=self.root,
            check=False,
            preexec_fn=_close_stdin,
            **kwargs,
        )

    def e2e_python(self, code: str, payload: Any = None, **kwargs: Any) -> Any:
        """Run ``code`` with the e2e environment's python; ``payload`` as JSON on stdin.

        The code prints one JSON document on its last line; that is returned.
        """
        proc = subprocess.run(
            [str(VENV_BIN / "python"), "-c", code],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=self.client_env(),
            cwd=self.root,
            timeout=kwargs.pop("timeout", COMMAND_TIMEOUT),
            check=False,
            **kwargs,
        )
        if proc.returncode != 0:
            raise AssertionError(f"e2e python failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def sql(self, statement: str, database: str = "glance") -> list[list[str]]:
        """A statement on ``database``, as the Glance DB user over TCP; the rows as text."""
        proc = subprocess.run(
            [
                debian_program("mariadb"),
                "--no-defaults",
                f"-h{self.host}",
                f"-P{self.mariadb_port}",
                f"-u{DB_USER}",
                f"-p{DB_PASSWORD}",
                "-N",
                "-B",
                database,
                "-e",
                statement,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if proc.returncode != 0:
            raise StackError(f"SQL on {database}: {statement!r}: {proc.stderr.strip()}")
        return [line.split("\t") for line in proc.stdout.splitlines()]

    def demo_token(self) -> str:
        return self.keystone_token("demo", DEMO_PASSWORD, "demo")

    def log_tails(self, lines: int = 40) -> str:
        return "\n".join(p.tail(lines) for p in self.processes)


def doc_secret(docs: list[dict[str, Any]], ref: str) -> str | None:
    """The name of the Secret the Glance's ``spec.<ref>.secretRef`` names."""
    for doc in docs:
        if doc["kind"] == "Glance":
            return doc["spec"][ref]["secretRef"]["name"]
    return None


def _close_stdin() -> None:
    os.close(0)


def _group() -> str:
    return grp.getgrgid(os.getgid()).gr_name
