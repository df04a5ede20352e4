"""Two clusters for the target-cluster tests (reference-spec §2.11): the management
cluster of an ``ApiEnv`` and a second real kube-apiserver, the target; the registration
Secret of the target as the operator reads it, and the scene a Glance of the bundled
minimal sample makes across the two."""

from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
from pathlib import Path

from integration.kube_harness import KubeApiServer

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient
from support.api_env import ApiEnv, sample_documents

REGISTRATION_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"
REMOTE_FINALIZER = "openstack.c5c3.io/remote-children"
MAIN_FINALIZER = "glance.openstack.c5c3.io/finalizer"
OWNER_LABELS = (
    "openstack.c5c3.io/owner-kind",
    "openstack.c5c3.io/owner-name",
    "openstack.c5c3.io/owner-namespace",
)
CHILD_KINDS = (
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("policy/v1", "PodDisruptionBudget"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
)
USER_SECRETS = ("glance-db", "glance-service-user", "glance-s3")
ROOT = Path(__file__).resolve().parents[2]
_clusters = itertools.count(1)


class Clusters:
    """The two clusters of one test: the management ``api`` and the target."""

    def __init__(
        self,
        api: ApiEnv,
        target: KubeApiServer,
        tmp_path: Path,
        clusters_namespace: str | None = None,
    ):
        self.api = api
        self.server = target
        self.tmp_path = tmp_path
        self.target = KubeClient.from_environment(str(target.write_kubeconfig(tmp_path / "target")))
        self.clusters_namespace = clusters_namespace or f"clusters-{next(_clusters)}"
        # the default clusters namespace: the passes run with the playbooks' default
        self.extra = {} if clusters_namespace else {"clusters_namespace": self.clusters_namespace}
        api.ensure_namespace(self.clusters_namespace)
        api.ensure_namespace()
        self.namespace = api.namespace
        if self.target.get("v1", "Namespace", self.namespace) is None:
            self.target.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            )

    def kubeconfig(self, certificate: bool = False) -> dict:
        """An inline kubeconfig of the target: its bearer token (``certificate``: a client
        certificate and key as ``-data`` instead, of a ``system:masters`` user) and its
        own serving certificate as the CA (kube-apiserver's self-signed one, for
        127.0.0.1)."""
        ca = self.server.serving_ca()
        user: dict[str, str] = {"token": self.server.token}
        if certificate:
            cert, key = self.server.client_certificate("glance-operator", "system:masters")
            user = {
                "client-certificate-data": base64.b64encode(cert).decode(),
                "client-key-data": base64.b64encode(key).decode(),
            }
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "edge",
                    "cluster": {
                        "server": self.server.client.base_url,
                        "certificate-authority-data": base64.b64encode(ca).decode(),
                    },
                }
            ],
            "users": [{"name": "glance-operator", "user": user}],
            "contexts": [
                {"name": "edge", "context": {"cluster": "edge", "user": "glance-operator"}}
            ],
            "current-context": "edge",
        }

    def register(
        self, name: str = "edge", kubeconfig: dict | None = None, label: bool = True
    ) -> None:
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": self.clusters_namespace,
                "labels": {REGISTRATION_LABEL: "true"} if label else {},
            },
            "data": {
                "kubeconfig": base64.b64encode(
                    json.dumps(kubeconfig or self.kubeconfig()).encode()
                ).decode()
            },
        }
        if self.api.client.get("v1", "Secret", name, self.clusters_namespace) is not None:
            self.api.client.delete("v1", "Secret", name, self.clusters_namespace)
        self.api.client.create(secret)

    def register_as_documented(self) -> list[str]:
        """docs/target-clusters.md's two commands, as a user types them: in a directory
        holding edge.kubeconfig, KUBECONFIG naming the management cluster, kubectl on PATH."""
        doc = (ROOT / "docs" / "target-clusters.md").read_text()
        block = doc.split("```sh\n", 1)[1].split("```", 1)[0]
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        (self.tmp_path / "edge.kubeconfig").write_text(json.dumps(self.kubeconfig()))
        env = {
            "PATH": f"{self.server.assets}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.tmp_path),
            "KUBECONFIG": str(self.api.kubeconfig),
        }
        for line in lines:
            done = subprocess.run(
                line,
                shell=True,
                cwd=self.tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, f"{line}: {done.stdout}{done.stderr}"
        return lines

    def deregister(self, name: str = "edge") -> None:
        self.api.client.delete("v1", "Secret", name, self.clusters_namespace)

    def scene(self, name: str = "glance", cluster: str = "edge") -> None:
        """The Glance and its backend in the management cluster, the Secrets in the target."""
        for doc in sample_documents():
            doc["metadata"]["namespace"] = self.namespace
            if doc["kind"] == "Secret":
                if self.target.get("v1", "Secret", doc["metadata"]["name"], self.namespace) is None:
                    self.target.create(doc)
                continue
            if doc["kind"] == "Glance":
                doc["metadata"]["name"] = name
                doc["spec"]["targetClusterRef"] = {"name": cluster}
            else:
                doc["spec"]["glanceRef"]["name"] = name
                doc["metadata"]["name"] = f"{name}-{doc['metadata']['name']}"
            self.api.client.create(doc)

    def glance(self, name: str = "glance") -> dict | None:
        return self.api.get("Glance", name)

    def children(self, client: KubeClient, name: str = "glance") -> dict[tuple[str, str], dict]:
        """Objects of the child kinds in the namespace that name Glance ``name`` as owner
        (labels or owner reference), or are called like its children (not the user's
        credential Secrets)."""
        out = {}
        for api_version, kind in CHILD_KINDS:
            for obj in client.list(api_version, kind, self.namespace):
                meta = obj["metadata"]
                if kind == "Secret" and meta["name"] in USER_SECRETS:
                    continue
                labels = meta.get("labels") or {}
                named = meta["name"] == name or meta["name"].startswith(f"{name}-")
                if labels.get(OWNER_LABELS[1]) == name or named:
                    out[(kind, meta["name"])] = obj
        return out

    def settle(self) -> None:
        """The target's controllers: its Deployments ready, its Jobs complete."""
        target_env = ApiEnv("target", Path("/dev/null"), self.target, namespace=self.namespace)
        target_env.settle()

    def secrets_ready(self, name: str = "glance") -> dict:
        return self.api.condition("Glance", name, "SecretsReady")
