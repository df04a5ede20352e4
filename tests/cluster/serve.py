"""``make cluster-services``: MariaDB, Keystone and an S3 server on the one-node cluster's
address, for a Glance of your own on it (docs/cluster.md, "A Glance of your own").

They are the e2e stack's services (``tests/e2e/stack.py``, installed by ``make e2e-env``),
started as the cluster tests start them, in the foreground until Ctrl-C or SIGTERM. Into
``--out`` it writes:

* ``glance.yaml``: the namespace ``demo``, the sample's Secrets, a Glance of two replicas
  and two GlanceBackends (two buckets), every address pointed at these services;
* ``openrc``: the OpenStack CLI's environment, as the ``demo`` user of project ``demo``.

While it runs, it points Keystone's image endpoints at the Glance's Service once that
exists, as a cloud's catalog would: ``openstack image list`` after ``. openrc`` reaches the
Glance in the pods. Everything it started stops when it stops.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import yaml
from e2e.stack import VENV_BIN, Stack, StackError, http, missing_programs

from cluster.objects import SECOND_BUCKET, sample_documents

NAMESPACE = "demo"
GLANCE = "glance"
DEFAULT_OUT = Path("/var/lib/c5c3-node/services")
DEFAULT_KUBECONFIG = Path("/var/lib/c5c3-node/admin.kubeconfig")
NODE_IP = "10.250.0.1"


def documents(stack: Stack) -> list[dict]:
    docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
    return docs + sample_documents(stack, NAMESPACE)


def openrc(stack: Stack) -> str:
    env = stack.client_env()
    names = [name for name in sorted(env) if name.startswith("OS_")]
    lines = [f"export {name}={shlex.quote(env[name])}" for name in names]
    lines.append(f"export PATH={shlex.quote(str(VENV_BIN))}:$PATH")
    return "\n".join(lines) + "\n"


def glance_service_url(kubeconfig: Path) -> str | None:
    """``http://<ClusterIP>:9292`` of the Glance's API Service, once it exists."""
    done = subprocess.run(
        [
            "kubectl",
            f"--kubeconfig={kubeconfig}",
            "-n",
            NAMESPACE,
            "get",
            "services",
            "-l",
            f"app.kubernetes.io/instance={GLANCE}",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    for service in json.loads(done.stdout).get("items", []):
        if any(port.get("port") == 9292 for port in service["spec"].get("ports", [])):
            return f"http://{service['spec']['clusterIP']}:9292"
    return None


def follow_the_service(stack: Stack, kubeconfig: Path, stop: threading.Event) -> None:
    """Keystone's image endpoints name the Glance Service, whenever it (re)appears."""
    current = None
    while not stop.wait(2.0):
        url = glance_service_url(kubeconfig)
        if url is None or url == current:
            continue
        try:
            (service,) = stack.keystone_admin("GET", "/services?type=image")["services"]
            endpoints = stack.keystone_admin("GET", f"/endpoints?service_id={service['id']}")
            for endpoint in endpoints["endpoints"]:
                stack.keystone_admin(
                    "PATCH", f"/endpoints/{endpoint['id']}", {"endpoint": {"url": url}}
                )
        except (StackError, OSError, ValueError) as error:
            print(f"cannot point Keystone's image endpoints at {url}: {error}", flush=True)
            continue
        current = url
        print(f"Keystone's image endpoints: {url}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make cluster-services", description=__doc__)
    parser.add_argument("--host", default=NODE_IP, help="the address to serve on (the node's)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write")
    parser.add_argument("--kubeconfig", type=Path, default=DEFAULT_KUBECONFIG)
    parser.add_argument(
        "--mariadb-port",
        type=int,
        default=0,
        help="MariaDB's port (default: a free one); the molecule node scenario asks for 3306",
    )
    args = parser.parse_args(argv)
    missing = missing_programs()
    if missing:
        print("the services need `make e2e-env` first; missing: " + ", ".join(missing))
        return 2
    if not args.kubeconfig.is_file():
        print(f"no one-node cluster ({args.kubeconfig} is missing): `make cluster-up` first")
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    # Each run starts afresh: a new database, new Keystone accounts, empty buckets.
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    stack = Stack(
        args.out / "state",
        log=lambda msg: print(msg, flush=True),
        host=args.host,
        mariadb_port=args.mariadb_port,
    )
    try:
        try:
            stack.start_services()
            # The second GlanceBackend's bucket (the stack makes the first).
            made = http("PUT", f"{stack.s3_url}/{SECOND_BUCKET}", body=b"")
            if made.status != 200:
                raise StackError(f"S3 answered {made.status} to creating {SECOND_BUCKET}")
        except StackError as error:
            print(f"the services did not come up: {error}", flush=True)
            return 1
        (args.out / "glance.yaml").write_text(yaml.safe_dump_all(documents(stack)))
        (args.out / "openrc").write_text(openrc(stack))
        follower = threading.Thread(
            target=follow_the_service, args=(stack, args.kubeconfig, stop), daemon=True
        )
        follower.start()
        print(
            f"serving MariaDB, Keystone and S3 on {args.host} until Ctrl-C; "
            f"kubectl apply -f {args.out / 'glance.yaml'}; . {args.out / 'openrc'}",
            flush=True,
        )
        stop.wait()
        follower.join(10)
    finally:
        stack.stop()
    print("services stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
