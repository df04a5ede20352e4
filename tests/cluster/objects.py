"""What the cluster tests read and apply: ``kubectl`` JSON, conditions, and the minimal
sample pointed at the services on the node's address."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from e2e.stack import DB_PASSWORD, DB_USER, GLANCE_PASSWORD, S3_ACCESS_KEY, S3_SECRET_KEY

from cluster.conftest import RELEASE, SECOND_BUCKET

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "config" / "samples" / "glance_minimal.yaml"


def get(node, *args: str) -> Any:
    """``kubectl get ... -o json``, decoded."""
    return json.loads(node.kubectl("get", *args, "-o", "json").stdout)


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def pod_ready(pod: dict[str, Any]) -> bool:
    return conditions(pod).get("Ready", {}).get("status") == "True"


def glance_pods(node, namespace: str, glance: str) -> list[dict[str, Any]]:
    """The API pods of the Glance ``glance`` (not its Jobs': a db-purge run's pod carries the
    name and instance labels too, so the component is what tells them apart)."""
    selector = (
        f"app.kubernetes.io/name=glance,app.kubernetes.io/instance={glance},"
        "app.kubernetes.io/component=api"
    )
    return get(node, "pods", "-n", namespace, "-l", selector)["items"]


def apply(node, docs: list[dict[str, Any]], check: bool = True):
    """``kubectl apply -f -`` of ``docs``."""
    text = "---\n".join(yaml.safe_dump(d) for d in docs)
    return node.kubectl("apply", "-f", "-", input=text, check=check)


def sample_documents(
    services,
    namespace: str,
    replicas: int = 2,
    default_backend: str = "s3-default",
    database: str = "glance",
    release: str = RELEASE,
    second_bucket: str = SECOND_BUCKET,
) -> list[dict[str, Any]]:
    """The minimal sample of ``release`` in ``namespace`` with ``replicas``, a second store
    (``s3-second``, bucket ``second_bucket``) and the services' addresses; the store named
    ``default_backend`` is the default."""
    docs = [d for d in yaml.safe_load_all(SAMPLE.read_text()) if d]
    out = []
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind == "Glance":
            spec = doc["spec"]
            spec["openStackRelease"] = release
            spec["image"]["tag"] = release
            spec["deployment"] = {"replicas": replicas}
            spec["database"]["host"] = services.host
            spec["database"]["port"] = services.mariadb_port
            spec["database"]["database"] = database
            spec["keystoneEndpoint"] = services.keystone_url
            spec["cache"]["servers"] = [f"{services.host}:{services.memcached_port}"]
        elif kind == "GlanceBackend":
            doc["spec"]["s3"]["host"] = services.s3_url
            doc["spec"]["s3"]["bucket"] = services.bucket
            doc["spec"]["isDefault"] = default_backend == name
            second = copy.deepcopy(doc)
            second["metadata"]["name"] = "s3-second"
            second["spec"]["s3"]["bucket"] = second_bucket
            second["spec"]["isDefault"] = default_backend == "s3-second"
            out.append(doc)
            doc = second
        elif kind == "Secret" and name == "glance-db":
            doc["stringData"] = {"username": DB_USER, "password": DB_PASSWORD}
        elif kind == "Secret" and name == "glance-service-user":
            doc["stringData"] = {"password": GLANCE_PASSWORD}
        elif kind == "Secret":
            doc["stringData"] = {
                "access-key-id": S3_ACCESS_KEY,
                "secret-access-key": S3_SECRET_KEY,
            }
        out.append(doc)
    return out


def status_report(
    node,
    namespace: str,
    listings: Sequence[tuple[str, ...]],
    logs: Sequence[tuple[str, str]] = (),
    tail: int = 40,
) -> str:
    """For the log: each object ``listings`` names (``kubectl get`` arguments: one object
    or a list) with its status, the last ``tail`` log lines of the ``logs`` Deployments
    (namespace, name), and ``namespace``'s events."""
    out = []
    for args in listings:
        done = node.kubectl("get", *args, "-o", "json", check=False)
        if done.returncode:
            out.append(f"{' '.join(args)}: {done.stderr.strip()}")
            continue
        found = json.loads(done.stdout)
        for obj in found.get("items", [found]):
            out.append(f"{obj['kind']} {obj['metadata']['name']}: {json.dumps(obj.get('status'))}")
    for where, deployment in logs:
        done = node.kubectl(
            "-n", where, "logs", f"deploy/{deployment}", f"--tail={tail}", check=False
        )  # fmt: skip
        out.append(f"--- {where}/{deployment}:\n{(done.stdout or done.stderr)[-6000:]}")
    events = node.kubectl(
        "get", "events", "-n", namespace, "--sort-by=.lastTimestamp", check=False
    ).stdout  # fmt: skip
    return "\n".join(out) + "\n--- events:\n" + events[-4000:]


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among ``text``'s lines (the operator's log lines); the rest skipped."""
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def pod_cgroup_stats(uid: str) -> dict[str, float]:
    """CPU seconds the pod's cgroup used (``cpu``) and was throttled (``throttled``), from
    cgroup v1 (cpuacct and cpu hierarchies) or v2; what is not found is left out."""
    name = f"pod{uid}"
    out: dict[str, float] = {}
    for top in ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup"):
        found = next((Path(d) for d, _, _ in os.walk(top) if Path(d).name == name), None)
        if found is None:
            continue
        if (found / "cpuacct.usage").exists():  # v1, nanoseconds
            out.setdefault("cpu", int((found / "cpuacct.usage").read_text()) / 1e9)
        if (found / "cpu.stat").exists():
            fields = dict(line.split() for line in (found / "cpu.stat").read_text().splitlines())
            if "throttled_time" in fields:  # v1, nanoseconds
                out.setdefault("throttled", int(fields["throttled_time"]) / 1e9)
            if "throttled_usec" in fields:  # v2, microseconds
                out.setdefault("throttled", int(fields["throttled_usec"]) / 1e6)
            if "usage_usec" in fields:
                out.setdefault("cpu", int(fields["usage_usec"]) / 1e6)
    return out
