"""One API server for the reconcile tests, real or the test double, behind one interface.

``ApiEnv`` is what a reconcile scenario sees: a kubeconfig for the playbooks, our own
client to set the scene and to look at the result, and the moves of the controllers that
do not run (no kubelet, no controller-manager): a Deployment becoming ready, a Job
finishing, a Gateway accepting a route. Both back ends get these moves through the API
(status subresource writes), so a scenario reads the same on either.

* ``kube-apiserver``: a real kube-apiserver and etcd (``KUBE_ASSETS_DIR``); no garbage
  collection, and no endpoints controller: a Service has no Endpoints object, so the
  service proxy answers 404 ``services "glance" not found`` and the API health probe
  reports ``EndpointNotReady`` (``probe.classify``); ``Ready`` stays False.
* ``double``: ``tests/support/fake_apiserver.py``, a unit-test double of the REST API;
  its service proxy forwards to a ``/healthcheck`` server the env starts on loopback.
"""

from __future__ import annotations

import copy
import http.server
import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient
from support.cluster import ready_deployment_status
from support.fake_apiserver import FakeAPIServer
from support.playbook_run import PlaybookRun, run_playbook

GROUP_VERSION = "glance.openstack.c5c3.io/v1alpha1"
NAMESPACE = "openstack"
STAMP = "2026-11-30T00:00:00Z"


def sample_documents(name: str = "glance_minimal.yaml") -> list[dict[str, Any]]:
    """The documents of a bundled sample (Glance, GlanceBackends, Secrets)."""
    text = (Path(COLLECTION_ROOT) / "config" / "samples" / name).read_text()
    return [d for d in yaml.safe_load_all(text) if d]


class HealthServer:
    """A stand-in Glance ``/healthcheck`` on 127.0.0.1: answers ``code`` with ``body``."""

    def __init__(self) -> None:
        self.code = 200
        self.body = b"OK"
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                self.send_response(outer.code)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@dataclass
class ApiEnv:
    name: str
    kubeconfig: Path
    client: KubeClient
    namespace: str = NAMESPACE
    double: Any = None
    health: HealthServer | None = None
    runs: list[PlaybookRun] = field(default_factory=list)
    warm: Any = None
    """A ``runner.passes.warm.handle.WarmServer``: the passes run through it, as the runner
    runs them."""

    # -- the scene --------------------------------------------------------------------
    @property
    def reaches_pods(self) -> bool:
        """The service proxy reaches a (stand-in) Glance API: only on the double."""
        return self.double is not None

    def ensure_namespace(self, namespace: str | None = None) -> None:
        namespace = namespace or self.namespace
        if self.client.get("v1", "Namespace", namespace) is None:
            self.client.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        if self.double is not None and self.health is not None:
            self.double.set_service_backend(namespace, "glance", API_PORT, self.health.url)

    def create_all(self, documents: list[dict[str, Any]]) -> None:
        """Create ``documents`` in this env's namespace (whatever namespace they name)."""
        self.ensure_namespace()
        for doc in documents:
            doc = copy.deepcopy(doc)
            doc["metadata"]["namespace"] = self.namespace
            self.client.create(doc)

    def get(
        self, kind: str, name: str, namespace: str | None = None, api_version: str | None = None
    ):
        namespace = namespace or self.namespace
        return self.client.get(api_version or _api_version(kind), kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None, selector: str | None = None):
        namespace = namespace or self.namespace
        return self.client.list(_api_version(kind), kind, namespace, label_selector=selector)

    def merge_patch(self, kind: str, name: str, patch: dict, namespace: str | None = None):
        namespace = namespace or self.namespace
        return self.client.patch(_api_version(kind), kind, name, namespace, patch)

    def condition(self, kind: str, name: str, type_: str, namespace: str | None = None) -> dict:
        namespace = namespace or self.namespace
        obj = self.get(kind, name, namespace) or {}
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond["type"] == type_:
                return cond
        return {}

    def resource_versions(self, namespace: str | None = None) -> dict[tuple[str, str], str]:
        """Every object of the kinds a Glance pass touches, by (kind, name)."""
        namespace = namespace or self.namespace
        out = {}
        for kind in (
            "Glance",
            "GlanceBackend",
            "ConfigMap",
            "Secret",
            "Deployment",
            "Service",
            "PodDisruptionBudget",
            "Job",
            "CronJob",
            "Event",
        ):
            for obj in self.list(kind, namespace):
                out[(kind, obj["metadata"]["name"])] = obj["metadata"]["resourceVersion"]
        return out

    # -- the passes -------------------------------------------------------------------
    def glance_pass(
        self, name: str = "glance", namespace: str | None = None, **extra: Any
    ) -> PlaybookRun:
        namespace = namespace or self.namespace
        run = run_playbook(
            "glance.yml",
            {"glance_name": name, "glance_namespace": namespace, **extra},
            kubeconfig=self.kubeconfig,
            binary=self.warm.binary() if self.warm is not None else None,
        )
        self.runs.append(run)
        assert run.ok, f"{run.failures}\n{run.stdout[-3000:]}"
        return run

    def backend_pass(self, name: str, namespace: str | None = None, **extra: Any) -> PlaybookRun:
        namespace = namespace or self.namespace
        run = run_playbook(
            "glancebackend.yml",
            {"glancebackend_name": name, "glancebackend_namespace": namespace, **extra},
            kubeconfig=self.kubeconfig,
            binary=self.warm.binary() if self.warm is not None else None,
        )
        self.runs.append(run)
        assert run.ok, f"{run.failures}\n{run.stdout[-3000:]}"
        return run

    # -- the controllers that do not run ----------------------------------------------
    def settle(self, namespace: str | None = None, jobs: str | None = "Complete") -> None:
        """Deployments ready at their generation; unfinished Jobs finish as ``jobs``."""
        namespace = namespace or self.namespace
        for deployment in self.list("Deployment", namespace):
            meta = deployment["metadata"]
            replicas = (deployment.get("spec") or {}).get("replicas", 1)
            status = deployment.get("status") or {}
            if (
                status.get("observedGeneration") == meta["generation"]
                and status.get("readyReplicas") == replicas
            ):
                continue
            self.client.patch(
                "apps/v1",
                "Deployment",
                meta["name"],
                namespace,
                {"status": ready_deployment_status(meta["generation"], replicas)},
                subresource="status",
            )
        if jobs is None:
            return
        for job in self.list("Job", namespace):
            conditions = (job.get("status") or {}).get("conditions") or []
            if any(
                c["type"] in ("Complete", "Failed") and c["status"] == "True" for c in conditions
            ):
                continue
            self.client.patch(
                "batch/v1",
                "Job",
                job["metadata"]["name"],
                namespace,
                {"status": finished_job_status(jobs)},
                subresource="status",
            )


_namespaces = itertools.count(1)


def api_env(
    kind: str, request: Any, tmp_path: Path, prefix: str = "test", **double_options: Any
) -> Iterator[ApiEnv]:
    """A fixture body: an ``ApiEnv`` with an empty namespace of its own, on the test double
    (``kind == "double"``, built with ``double_options``) or on the session's real
    kube-apiserver (the fixture ``real_apiserver``; namespaces ``<prefix>-<n>``)."""
    kubeconfig = tmp_path / "kubeconfig"
    health = HealthServer()
    try:
        if kind == "double":
            with FakeAPIServer(**double_options) as double:
                double.write_kubeconfig(kubeconfig)
                client = KubeClient.from_environment(str(kubeconfig))
                yield ApiEnv("double", kubeconfig, client, double=double, health=health)
        else:
            server = request.getfixturevalue("real_apiserver")
            server.write_kubeconfig(kubeconfig)
            client = KubeClient.from_environment(str(kubeconfig))
            namespace = f"{prefix}-{next(_namespaces)}"
            yield ApiEnv("kube-apiserver", kubeconfig, client, namespace=namespace)
    finally:
        health.stop()


def _api_version(kind: str) -> str:
    return {
        "Glance": GROUP_VERSION,
        "GlanceBackend": GROUP_VERSION,
        "Deployment": "apps/v1",
        "PodDisruptionBudget": "policy/v1",
        "HorizontalPodAutoscaler": "autoscaling/v2",
        "NetworkPolicy": "networking.k8s.io/v1",
        "HTTPRoute": "gateway.networking.k8s.io/v1",
        "Job": "batch/v1",
        "CronJob": "batch/v1",
    }.get(kind, "v1")


def finished_job_status(state: str) -> dict[str, Any]:
    """A terminal Job status the API server's Job status validation accepts."""
    if state == "Complete":
        return {
            "startTime": STAMP,
            "completionTime": STAMP,
            "succeeded": 1,
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastProbeTime": STAMP,
                    "lastTransitionTime": STAMP,
                },
                {
                    "type": "Complete",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastProbeTime": STAMP,
                    "lastTransitionTime": STAMP,
                },
            ],
        }
    return {
        "startTime": STAMP,
        "failed": 1,
        "conditions": [
            {
                "type": "FailureTarget",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
                "lastProbeTime": STAMP,
                "lastTransitionTime": STAMP,
            },
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
                "lastProbeTime": STAMP,
                "lastTransitionTime": STAMP,
            },
        ],
    }


def iter_conditions(obj: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        yield cond["type"], cond["status"], cond.get("reason", "")
