#!/usr/bin/env python3
"""`make demo`: the operator live on a one-node cluster on this machine; `make demo-down`
removes it.

    python hack/demo.py          # make demo
    python hack/demo.py --down   # make demo-down

The steps are the project's own targets and the commands docs/install.md and
docs/cluster.md show, in the order a person would type them: the node's Debian packages,
the Docker daemon, the Kubernetes binaries, the one-node cluster (kept when one already
runs), the operator's and Glance's images built and loaded into it, the operator installed
with ``kubectl apply -k config/selfsigned``, MariaDB, Keystone and an S3 server on the
node's address (``make cluster-services``'s, in the background), a Glance of two replicas
with two GlanceBackends applied and waited for, ``kubectl get glance``, an image uploaded
and downloaded with the ``openstack`` client through Keystone's catalog, and
``make diagnose`` on the Glance. One line per step with its seconds; each step's output
goes to ``out/demo/<step>.log``, and a step that fails ends the demo with that log's last
lines. Everything stays up for the user to try; ``--down`` stops the services and takes
the cluster down (what is cached - the images in Docker, the Go programs, the Python
environments - stays, as for every target).

Where this machine cannot make the node (not root, not Linux, no cgroups, the node's
packages missing with no ``apt-get`` to install them, no Go to build the Kubernetes
binaries), it says why and exits 3: the Makefile then runs ``make demo-offline``, the
render of the bundled samples. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HACK = Path(__file__).resolve().parent
sys.path.insert(0, str(HACK))
from node.layout import CGROUP_ROOT, DEFAULT_WORKDIR, LAYOUT  # noqa: E402
from node.packages import missing_packages  # noqa: E402
from node.processes import alive  # noqa: E402

ROOT = HACK.parent
LOGS = ROOT / "out" / "demo"
STATE = Path("/var/lib/c5c3-demo")
SERVICES = STATE / "services"  # make cluster-services's --out: glance.yaml, openrc
SERVICES_LOG = STATE / "services.log"
SERVICES_PID = STATE / "services.pid"
KUBECONFIG = DEFAULT_WORKDIR / "admin.kubeconfig"
RELEASE = "2026.2"
NAMESPACE = "demo"  # make cluster-services's Glance: demo/glance
GLANCE = f"{NAMESPACE}/glance"
OPERATOR = ("c5c3-glance-system", "deployment/c5c3-glance-controller-manager")
IMAGE_BYTES = 4 * 1024 * 1024
CANNOT = 3  # the exit status that sends make to demo-offline


class StepFailed(Exception):
    pass


def live_problems() -> list[str]:
    """Why the one-node cluster cannot be made here, one line each; empty when it can."""
    found = []
    if sys.platform != "linux":
        found.append(f"the one-node cluster runs on Linux (this is {sys.platform})")
        return found
    if os.geteuid() != 0:
        found.append("the one-node cluster needs root (network devices, iptables, mounts, cgroups)")
    if not (CGROUP_ROOT / "memory").is_dir() and not (CGROUP_ROOT / "cgroup.controllers").exists():
        found.append(f"no cgroup hierarchy under {CGROUP_ROOT}")
    if shutil.which("apt-get") is None:
        missing = sorted(set(missing_packages().values()))
        if shutil.which("dockerd") is None:
            missing.append("docker.io")
        if missing:
            found.append(f"no apt-get to install {', '.join(missing)}")
    if not os.environ.get("KUBE_ASSETS_DIR") and shutil.which("go") is None:
        found.append("no Go on PATH to build the Kubernetes binaries (or KUBE_ASSETS_DIR)")
    return found


class Demo:
    """The steps, each timed and logged; the environment the later ones need."""

    def __init__(self, say=print):
        self.say = say
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
        self.env["GLANCE_RELEASES"] = RELEASE
        self.number = 0
        LOGS.mkdir(parents=True, exist_ok=True)

    def step(self, title: str, command: str, timeout: float = 3600, quiet: bool = False) -> str:
        """``command`` in bash in the checkout; one line with its seconds (none when
        ``quiet``: part of a step that says its own); its output."""
        self.number += 1
        slug = re.sub(r"[^a-z0-9]+", "-", title.split(" (")[0].lower()).strip("-")[:40]
        log = LOGS / f"{self.number:02d}-{slug}.log"
        started = time.monotonic()
        try:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise StepFailed(f"{title}: `{command}` still running after {timeout:.0f} s") from exc
        log.write_text(f"$ {command}\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
            raise StepFailed(f"{title}: `{command}` exited {done.returncode} ({log}):\n{tail}")
        if not quiet:
            self.done(title, started)
        return done.stdout

    def done(self, title: str, started: float) -> None:
        self.say(f"[{time.monotonic() - started:6.1f} s] {title}")

    # --- the steps --------------------------------------------------------------------

    def prerequisites(self) -> None:
        self.step("the node's Debian packages (make cluster-packages)", "make -s cluster-packages")
        self.step("a Docker daemon (make docker-engine)", "make -s docker-engine")
        if self.env.get("KUBE_ASSETS_DIR"):  # as every make target takes it
            assets = self.env["KUBE_ASSETS_DIR"]
            self.say(f"[   0.0 s] the Kubernetes binaries of KUBE_ASSETS_DIR={assets}")
        else:
            assets = self.step("the Kubernetes binaries (make kube-assets)", "make -s kube-assets")
            self.env["KUBE_ASSETS_DIR"] = assets.strip().splitlines()[-1]
        self.env["PATH"] = f"{self.env['KUBE_ASSETS_DIR']}:{self.env['PATH']}"
        self.env["KUBECONFIG"] = str(KUBECONFIG)

    def cluster(self) -> None:
        if self.cluster_ready():
            self.say(f"[   0.0 s] the one-node cluster runs already: kept ({KUBECONFIG})")
            return
        self.step("the one-node cluster is up (make cluster-up)", "make -s cluster-up")

    def cluster_ready(self) -> bool:
        if not KUBECONFIG.is_file():
            return False
        done = subprocess.run(
            ["kubectl", "get", "node", LAYOUT.name, "-o",
             "jsonpath={.status.conditions[?(@.type=='Ready')].status}"],
            env=self.env, capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        return done.returncode == 0 and done.stdout.strip() == "True"

    def operator(self) -> None:
        self.step(
            f"the operator's image and Glance {RELEASE}'s built "
            f"(make images GLANCE_RELEASES={RELEASE})",
            "make -s images",
        )
        self.step("the images loaded into the node (make cluster-load-images)",
                  "make -s cluster-load-images")  # fmt: skip
        namespace, deployment = OPERATOR
        self.step(
            "the operator installed and rolled out (kubectl apply -k config/selfsigned)",
            "kubectl apply -k config/selfsigned && "
            f"kubectl -n {namespace} rollout status {deployment} --timeout=300s",
        )

    def services(self) -> None:
        self.step("MariaDB, Keystone and S3 installed (make e2e-env)", "make -s e2e-env")
        started = time.monotonic()
        pid = _pid()
        if pid and alive(pid):
            self.done(f"MariaDB, Keystone and S3 serve already (pid {pid}): kept", started)
            return
        STATE.mkdir(mode=0o700, parents=True, exist_ok=True)
        env = {
            **self.env,
            "PYTHONPATH": f"{ROOT / '.collections'}:{ROOT / 'tests'}:{ROOT}",
        }
        with SERVICES_LOG.open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "cluster.serve", "--out", str(SERVICES)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # it outlives make demo, until make demo-down
            )
        SERVICES_PID.write_text(f"{process.pid}\n")
        self.wait_for_log("serving MariaDB, Keystone and S3", process, 600)
        self.done(
            f"MariaDB, Keystone and S3 serve on {LAYOUT.node_ip} (log: {SERVICES_LOG})", started
        )

    def wait_for_log(self, text: str, process: subprocess.Popen | None, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = SERVICES_LOG.read_text().splitlines() if SERVICES_LOG.exists() else []
            found = [line for line in lines if text in line]
            if found:
                return found[-1]
            if process is not None and process.poll() is not None:
                tail = "\n".join(lines[-25:])
                raise StepFailed(f"the services exited {process.returncode}:\n{tail}")
            time.sleep(0.5)
        raise StepFailed(
            f"the services did not say {text!r} within {timeout:.0f} s ({SERVICES_LOG})"
        )

    def glance(self) -> str:
        self.step(
            f"Glance {GLANCE} Ready, with its two GlanceBackends "
            f"(kubectl apply -f {SERVICES / 'glance.yaml'})",
            f"kubectl apply -f {SERVICES / 'glance.yaml'} && "
            f"kubectl -n {NAMESPACE} wait glance/glance --for=condition=Ready --timeout=600s",
        )
        return self.step(
            "kubectl get glance", f"kubectl -n {NAMESPACE} get glance,glancebackends", quiet=True
        )

    def image(self) -> None:
        started = time.monotonic()
        self.wait_for_log("Keystone's image endpoints: http://", None, 120)
        openrc = shlex.quote(str(SERVICES / "openrc"))
        with tempfile.TemporaryDirectory(prefix="c5c3-demo-") as scratch:
            sent, got = Path(scratch) / "sent.raw", Path(scratch) / "got.raw"
            sent.write_bytes(os.urandom(IMAGE_BYTES))
            image = self.step(
                "openstack image create",
                f". {openrc} && openstack image create --disk-format raw --container-format bare "
                f"--file {sent} demo-image -f value -c id",
                timeout=300,
                quiet=True,
            ).strip()
            self.step(
                "openstack image save",
                f". {openrc} && openstack image save --file {got} {image}",
                timeout=300,
                quiet=True,
            )
            same = hashlib.sha256(sent.read_bytes()).hexdigest()
            if hashlib.sha256(got.read_bytes()).hexdigest() != same:
                raise StepFailed(f"image {image}: the bytes downloaded are not those uploaded")
        self.done(
            f"image {image} ({IMAGE_BYTES // 2**20} MiB) uploaded and downloaded through "
            f"Keystone's catalog, the same bytes (sha256 {same[:12]}...)",
            started,
        )

    def diagnose(self) -> str:
        report = self.step(f"make diagnose GLANCE={GLANCE}", f"make -s diagnose GLANCE={GLANCE}")
        if not report.startswith(f"Glance {GLANCE} is healthy"):
            raise StepFailed(f"make diagnose GLANCE={GLANCE} did not find it healthy:\n{report}")
        return report


def _pid() -> int | None:
    try:
        return int(SERVICES_PID.read_text())
    except (OSError, ValueError):
        return None


def up() -> int:
    problems = live_problems()
    if problems:
        print("make demo: the live demo cannot run on this machine:")
        print("\n".join(f"  - {p}" for p in problems))
        print("make demo: showing `make demo-offline` instead (the bundled samples, rendered)")
        return CANNOT
    started = time.monotonic()
    print(
        "make demo: the operator live on a one-node cluster on this machine "
        f"(each step's output in {LOGS.relative_to(ROOT)}/; `make demo-down` removes it)"
    )
    demo = Demo()
    try:
        demo.prerequisites()
        demo.cluster()
        demo.operator()
        demo.services()
        table = demo.glance()
        print("\n$ kubectl -n demo get glance,glancebackends\n" + table.rstrip() + "\n")
        demo.image()
        report = demo.diagnose()
        print(f"\n$ make diagnose GLANCE={GLANCE}\n" + report.rstrip() + "\n")
    except StepFailed as failed:
        print(f"make demo failed: {failed}", file=sys.stderr)
        print("what it made stays for a look; `make demo-down` removes it", file=sys.stderr)
        return 1
    assets = demo.env["KUBE_ASSETS_DIR"]
    print(
        f"make demo: done in {time.monotonic() - started:.0f} s. It stays up; try:\n"
        f"  export KUBECONFIG={KUBECONFIG} PATH={assets}:$PATH\n"
        f"  kubectl -n {NAMESPACE} get glance,pods\n"
        f"  . {SERVICES / 'openrc'} && openstack image list\n"
        f"  make diagnose GLANCE={GLANCE}\n"
        "  make demo-down"
    )
    return 0


def down() -> int:
    started = time.monotonic()
    pid = _pid()
    if pid and alive(pid):
        os.killpg(pid, signal.SIGTERM)  # the services stop what they started
        deadline = time.monotonic() + 120
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
        print(f"[{time.monotonic() - started:6.1f} s] MariaDB, Keystone and S3 stopped")
    started = time.monotonic()
    done = subprocess.run(["make", "-s", "cluster-down"], cwd=ROOT, check=False,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        print(done.stdout + done.stderr, file=sys.stderr)
        return 1
    print(f"[{time.monotonic() - started:6.1f} s] the one-node cluster removed (make cluster-down)")
    shutil.rmtree(STATE, ignore_errors=True)
    print(
        f"make demo-down: done; {STATE} removed. What is cached stays (the images in Docker, "
        "the Go programs and Python environments in ~/.cache/c5c3-glance)."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down", action="store_true", help="remove what make demo made")
    args = parser.parse_args(argv)
    return down() if args.down else up()


if __name__ == "__main__":
    sys.exit(main())
