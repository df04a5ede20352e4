"""Where a workstation pass's time goes: a profile of cold ``ansible-playbook`` passes.

    .venv/bin/python tests/bench/bench_pass.py [--runs N] [--backends N] [--json FILE]

On a real kube-apiserver (the binaries of ``KUBE_ASSETS_DIR``, ``make kube-assets``), the
full sample (without its secret store: no external-secrets here) with ``--backends``
GlanceBackends (3 by default: the sample's two and a copy of its second), each pass run as
a user runs it from the checkout:
``ansible-playbook playbooks/glance.yml -e glance_name=glance -e glance_namespace=<ns>``,
``KUBECONFIG`` set, nothing else. Printed, next to the floor measured in the same run (a
one-task ``debug`` play, run the same way):

* per task of one first pass (a fresh namespace) and of the no-op pass (the median of
  ``--runs`` runs over the converged Glance): wall seconds, the CPU seconds of the
  playbook's process in that span, and of the task's worker (the callback
  ``tests/bench/callback_plugins/pass_profile.py``); the span before the first task
  (imports, configuration, inventory, the playbook's parse) and after the last one;
* the whole run: wall seconds and CPU seconds of the process and everything it waited for
  (``wait4``), as a multiple of the floor's;
* the API requests of each kind of pass by verb and path, discovery apart, from the API
  server's audit log (a real count, the client's own included), and the bytes read from
  and sent to the API server, counted by a TCP relay between the two;
* the programs started (``execve``, counted by ``strace -f`` in a run of their own: a
  module task would start a Python, the in-process steps start none);
* the imports (``python -X importtime`` in a run of its own): how many modules, whether
  cel-python is among them (an unchanged Glance's CEL verdicts are kept), and the largest
  top-level imports.

Then the targets: a no-op pass within 2x the floor's CPU and writing nothing, the first
pass within 3x. Between passes the bench plays the controllers that do not run here
(``ApiEnv.settle``: Deployments ready, Jobs complete). Nothing here asserts a time; the
test ``tests/integration/test_bench_pass.py`` runs it once and checks the counts.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for entry in (ROOT / "tests", ROOT / ".collections", ROOT):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from bench_support import FLOOR_PLAY  # noqa: E402
from integration.kube_harness import KubeApiServer, assets_dir  # noqa: E402
from support.api_env import ApiEnv, sample_documents  # noqa: E402

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (  # noqa: E402
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (  # noqa: E402
    KubeClient,
)

PLAYBOOK = "playbooks/glance.yml"
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})
DISCOVERY = re.compile(r"/(api|apis|version|openapi/.*|api/v1|apis/[^/]+(/[^/]+)?)")
CALLBACKS = Path(__file__).resolve().parent / "callback_plugins"


# -- the API server's side: its audit log and a byte-counting relay -------------------------
class ByteRelay:
    """A TCP relay on 127.0.0.1 to ``target`` that counts the bytes each way (TLS passes
    through untouched: the API server's certificate is for 127.0.0.1, whatever the port)."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.read = self.sent = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for src, dst, up in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pipe, args=(src, dst, up), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
                with self._lock:
                    if up:
                        self.sent += len(chunk)
                    else:
                        self.read += len(chunk)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.read, self.sent

    def close(self) -> None:
        self._stop = True
        self._server.close()


class AuditLog:
    """The requests kube-apiserver logged since the last ``take()``."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = 0

    def take(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open() as f:
            f.seek(self._offset)
            text = f.read()
            self._offset = f.tell()
        events = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [
            e
            for e in events
            if (e.get("user") or {}).get("username") == "admin" and e.get("stage") != "Panic"
        ]


def request_table(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The requests by verb and path (the query dropped), discovery apart, and the writes."""
    by_path: collections.Counter[str] = collections.Counter()
    discovery = writes = 0
    for event in events:
        path = event["requestURI"].split("?", 1)[0]
        if DISCOVERY.fullmatch(path):
            discovery += 1
        if event["verb"] in WRITES:
            writes += 1
        by_path[f"{event['verb']} {path}"] += 1
    return {
        "requests": len(events),
        "discovery": discovery,
        "writes": writes,
        "by_verb": dict(collections.Counter(e["verb"] for e in events)),
        "by_path": dict(sorted(by_path.items())),
    }


# -- one ansible-playbook run ----------------------------------------------------------------
def run_env(kubeconfig: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """What a user's shell has: the checkout's virtual environment on PATH, KUBECONFIG."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "K8S_AUTH_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["KUBECONFIG"] = str(kubeconfig)
    return {**env, **(extra or {})}


def ansible_playbook(argv: list[str], env: dict[str, str], prefix: list[str] | None = None):
    """Run ``ansible-playbook argv`` from the checkout: (wall s, CPU s of it and all it
    waited for, stdout + stderr)."""
    binary = str(Path(sys.executable).parent / "ansible-playbook")
    env = {**env, "C5C3_PASS_STARTED": repr(time.time())}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*(prefix or []), binary, *argv],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        # wait4: the CPU of the process and of every process it waited for (its workers)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"ansible-playbook {' '.join(argv)} failed:\n{text[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, text


class Bench:
    def __init__(self, work: Path, server: KubeApiServer, relay: ByteRelay, audit: AuditLog):
        self.work = work
        self.relay = relay
        self.audit = audit
        self.direct = work / "kubeconfig"
        self.proxied = work / "kubeconfig-relay"
        server.write_kubeconfig(self.direct)
        text = self.direct.read_text().replace(
            f"127.0.0.1:{server.client.base_url.rsplit(':', 1)[1]}", f"127.0.0.1:{relay.port}"
        )
        self.proxied.write_text(text)
        self.client = KubeClient.from_environment(str(self.direct))

    def env(self, namespace: str) -> ApiEnv:
        return ApiEnv("kube-apiserver", self.direct, self.client, namespace=namespace)

    def floor(self, runs: int) -> tuple[float, float]:
        play = self.work / "floor.yml"
        play.write_text(FLOOR_PLAY)
        times = [ansible_playbook([str(play)], run_env(self.proxied)) for _ in range(runs)]
        return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)

    def glance_pass(self, namespace: str, profile: bool = True) -> dict[str, Any]:
        """One pass, with its profile, its requests and its bytes."""
        target = self.work / "profile.json"
        target.unlink(missing_ok=True)
        extra = (
            {
                "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
                "ANSIBLE_CALLBACKS_ENABLED": "pass_profile",
                "C5C3_PASS_PROFILE": str(target),
            }
            if profile
            else {}
        )
        self.audit.take()
        read, sent = self.relay.counts()
        wall, cpu, text = ansible_playbook(self._argv(namespace), run_env(self.proxied, extra))
        read_after, sent_after = self.relay.counts()
        return {
            "wall": wall,
            "cpu": cpu,
            "profile": json.loads(target.read_text()) if profile else None,
            "api": request_table(self.audit.take()),
            "bytes_read": read_after - read,
            "bytes_sent": sent_after - sent,
            "output": text,
        }

    def _argv(self, namespace: str) -> list[str]:
        return [PLAYBOOK, "-e", "glance_name=glance", "-e", f"glance_namespace={namespace}"]

    def programs(self, namespace: str) -> list[str] | None:
        """The programs a no-op pass starts (``strace -f``'s execve), or None without strace."""
        strace = shutil.which("strace")
        if strace is None:
            return None
        log = self.work / "strace.txt"
        prefix = [strace, "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", str(log)]
        ansible_playbook(self._argv(namespace), run_env(self.proxied), prefix)
        started = re.findall(r'execve\("([^"]+)".*\) = 0$', log.read_text(), re.M)
        return [Path(p).name for p in started]

    def imports(self, namespace: str) -> dict[str, Any]:
        """``python -X importtime`` of a no-op pass: the modules, the largest top-level ones."""
        env = run_env(self.proxied, {"PYTHONPROFILEIMPORTTIME": "1"})
        _, _, text = ansible_playbook(self._argv(namespace), env)
        rows = re.findall(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$", text, re.M)
        top = sorted(
            ((int(cumulative), name) for _, cumulative, indent, name in rows if len(indent) == 1),
            reverse=True,
        )
        return {
            "modules": len(rows),
            # A no-op pass's CEL verdicts are kept (admission/cel_verdicts.py): no cel-python.
            "celpy": any(name == "celpy" for *_, name in rows),
            "seconds": sum(int(own) for own, *_ in rows) / 1e6,
            "top": [(name, us / 1e6) for us, name in top[:10]],
        }


# -- the sample, the install, the no-op -------------------------------------------------------
def documents(backends: int) -> list[dict[str, Any]]:
    """The full sample with ``backends`` GlanceBackends (the added ones copies of its
    backend that is not the default), without its secret store."""
    docs = sample_documents("glance_full.yaml")
    for doc in docs:
        if doc["kind"] == "Glance":
            # No external-secrets here: a named store would hold every pass at its gate.
            doc["spec"].pop("secretStoreRef", None)
    have = [d for d in docs if d["kind"] == "GlanceBackend"]
    others = [d for d in have if not d["spec"].get("isDefault")]
    for number in range(len(have), backends):
        copied = copy.deepcopy(others[0])
        copied["metadata"]["name"] = f"{others[0]['metadata']['name']}-{number + 1}"
        docs.append(copied)
    return docs


def only_gather(result: dict[str, Any]) -> bool:
    """A pass that ran the gather step alone of the steps: nothing to apply or report."""
    ran = [t["action"] for t in result["profile"]["tasks"] if t["status"] != "skipped"]
    return [a for a in ran if a.startswith("c5c3.glance.")] == ["c5c3.glance.gather"]


def profile_runs(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    """The first pass in a fresh namespace, the passes to the steady state (the controllers
    played in between), then ``--runs`` no-op passes, the programs and the imports."""
    namespace = "bench"
    env = bench.env(namespace)
    env.create_all(documents(args.backends))
    first = bench.glance_pass(namespace)
    passes = 1
    while True:
        env.settle()
        passes += 1
        if only_gather(bench.glance_pass(namespace)):
            break
        if passes > 8:
            raise SystemExit("no steady state after 8 passes")
    return {
        "first": first,
        "converged_in": passes - 1,
        "noop": [bench.glance_pass(namespace) for _ in range(args.runs)],
        "programs": bench.programs(namespace),
        "imports": bench.imports(namespace),
    }


# -- the table ---------------------------------------------------------------------------------
def median_profile(results: list[dict[str, Any]]) -> dict[str, Any]:
    profiles = [r["profile"] for r in results]
    tasks = []
    for index, task in enumerate(profiles[0]["tasks"]):
        same = [p["tasks"][index] for p in profiles]
        tasks.append(
            {
                **task,
                **{k: statistics.median(t[k] for t in same) for k in ("wall", "main_cpu")},
                "worker_cpu": statistics.median(t["worker_cpu"] for t in same),
            }
        )
    before = {
        k: statistics.median(p["before_first_task"][k] for p in profiles)
        for k in ("wall", "main_cpu")
    }
    return {
        "before_first_task": before,
        "tasks": tasks,
        "wall": statistics.median(r["wall"] for r in results),
        "cpu": statistics.median(r["cpu"] for r in results),
        "stats_at": statistics.median(p["stats_at"] for p in profiles),
    }


def print_profile(label: str, profile: dict[str, Any], floor_cpu: float) -> None:
    print(f"-- {label}")
    print(f"  {'part':<70} {'wall s':>7} {'main':>6} {'worker':>6}  result")
    before = profile["before_first_task"]
    print(
        f"  {'before the first task (imports, configuration, inventory, parse)':<70} "
        f"{before['wall']:7.3f} {before['main_cpu']:6.3f} {'':>6}"
    )
    for task in profile["tasks"]:
        name = (f"{task['role']} : " if task["role"] else "") + task["name"]
        print(
            f"  {name[:70]:<70} {task['wall']:7.3f} {task['main_cpu']:6.3f} "
            f"{task['worker_cpu']:6.3f}  {task['status']}"
        )
    counted = before["main_cpu"] + sum(t["main_cpu"] + t["worker_cpu"] for t in profile["tasks"])
    print(
        f"  {'after the last task (exit), and workers not seen alive (the rest)':<70} "
        f"{profile['wall'] - profile['stats_at']:7.3f} {profile['cpu'] - counted:6.3f}"
    )
    print(
        f"  whole run: {profile['wall']:.2f} s wall, {profile['cpu']:.2f} CPU-s = "
        f"{profile['cpu'] / floor_cpu:.1f}x the floor; {len(profile['tasks'])} tasks "
        f"({sum(t['status'] == 'skipped' for t in profile['tasks'])} skipped), a worker each"
    )


def print_requests(label: str, result: dict[str, Any]) -> None:
    api = result["api"]
    verbs = ", ".join(f"{v} {n}" for v, n in sorted(api["by_verb"].items()))
    print(
        f"-- API requests of {label} (kube-apiserver's audit log): {api['requests']} ({verbs}), "
        f"{api['discovery']} of them discovery, {api['writes']} writes; bytes read "
        f"{result['bytes_read'] / 1024:.1f} KiB, sent {result['bytes_sent'] / 1024:.1f} KiB"
    )
    for path, count in api["by_path"].items():
        print(f"  {count:>3}  {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="no-op passes and floor runs")
    parser.add_argument("--backends", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    assets, why = assets_dir()
    if assets is None:
        raise SystemExit(f"bench_pass needs a real kube-apiserver: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = KubeApiServer(assets, audit_log=work / "audit.log")
        relay = None
        try:
            server.start()
            for crd in load_crds().values():
                server.install_crd(crd)
            port = int(server.client.base_url.rsplit(":", 1)[1])
            relay = ByteRelay(("127.0.0.1", port))
            bench = Bench(work, server, relay, AuditLog(work / "audit.log"))
            load = os.getloadavg()
            print(
                f"pass bench: config/samples/glance_full.yaml with {args.backends} GlanceBackends,"
                f" cold ansible-playbook from the checkout, a real kube-apiserver ({assets}); "
                f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
            )
            floor_wall, floor_cpu = bench.floor(args.runs)
            print(
                f"floor (a one-task play, cold ansible-playbook): median {floor_wall:.2f} s wall, "
                f"{floor_cpu:.2f} CPU-s over {args.runs} runs"
            )
            runs = profile_runs(bench, args)
        finally:
            if relay is not None:
                relay.close()
            server.stop()
    first = median_profile([runs["first"]])
    noop = median_profile(runs["noop"])
    print_profile("the first pass (a fresh namespace), one run", first, floor_cpu)
    print_profile(f"the no-op pass, median of {args.runs} runs", noop, floor_cpu)
    print_requests("the first pass", runs["first"])
    print_requests("a no-op pass", runs["noop"][0])
    programs = runs["programs"]
    print(
        "-- programs a no-op pass starts (strace -f, execve): "
        + ("not counted (no strace on PATH)" if programs is None else ", ".join(programs))
    )
    imports = runs["imports"]
    print(
        f"-- imports of a no-op pass (python -X importtime, every process): {imports['modules']} "
        f"modules, {imports['seconds']:.2f} s, celpy "
        f"{'imported' if imports['celpy'] else 'not imported'}; the largest at top level:"
    )
    for name, seconds in imports["top"]:
        print(f"  {seconds:6.3f}  {name}")
    noop_writes = {r["api"]["writes"] for r in runs["noop"]}
    print(f"targets (the floor: {floor_cpu:.2f} CPU-s):")
    print(
        f"  no-op pass {noop['cpu']:.2f} CPU-s = {noop['cpu'] / floor_cpu:.1f}x (target <= 2x): "
        f"{'met' if noop['cpu'] <= 2 * floor_cpu else 'NOT met'}; writes "
        f"{sorted(noop_writes)} (target 0): {'met' if noop_writes == {0} else 'NOT met'}"
    )
    print(
        f"  first pass {first['cpu']:.2f} CPU-s = {first['cpu'] / floor_cpu:.1f}x "
        f"(target <= 3x): {'met' if first['cpu'] <= 3 * floor_cpu else 'NOT met'}; "
        f"the first install converged in {runs['converged_in']} passes"
    )
    if args.json:
        for result in (runs["first"], *runs["noop"]):
            result.pop("output")
        args.json.write_text(
            json.dumps({"floor": {"wall": floor_wall, "cpu": floor_cpu}, **runs}, indent=1)
        )


if __name__ == "__main__":
    main()
