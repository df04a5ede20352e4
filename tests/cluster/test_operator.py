"""The operator as users run it, end to end on the one-node cluster, no playbook from outside.

In order (each test builds on the one before, as a user's first day does):

1. ``kubectl apply -k config/selfsigned``: the manager pods run under the namespace's
   restricted Pod Security Standard, one holds the Lease, their probes and ``/metrics``
   answer through the pod network, and the operator made its webhook certificate and put
   the CA into both webhook configurations;
2. the API server calls the admission webhook: a Glance only the webhook refuses is
   refused with the webhook's message;
3. a Glance with two replicas and two GlanceBackends, on MariaDB, Keystone and S3 at the
   node's address: the db-sync Job's pod runs glance-manage on the database, the API pods
   of the built Glance image pass their rendered probes, ``GlanceAPIReady`` and ``Ready``;
4. ``openstack image create --file`` through the Service: active, the object in S3, the
   same bytes back;
5. a default flip between the backends rolls the pods while the API keeps answering;
6. deleting the Glance releases its finalizer and leaves nothing it owned.

The figures (install, Glance to Ready, MiB/s through the Service) are printed, and
docs/e2e.md keeps them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import time
from typing import Any

import pytest
from e2e.glance_http import s3_digest
from e2e.stack import http
from support.user_shell import run_as_user

from cluster import ready_timeline
from cluster.conftest import (
    GLANCE_IMAGE,
    OPERATOR_IMAGE,
    OPERATOR_NAMESPACE,
    ROOT,
    wait_until,
)
from cluster.objects import (
    apply,
    conditions,
    get,
    glance_pods,
    pod_ready,
    sample_documents,
)

NAMESPACE = "openstack"
GLANCE = "glance"
IMAGE_SIZE = 32 * 1024 * 1024
READY_TIMEOUT = 600
TIMELINE = ROOT / "out" / "ready-timeline.txt"
GROUP = "glance.openstack.c5c3.io"

pytestmark = pytest.mark.cluster


def glance(node) -> dict[str, Any]:
    return get(node, "glance", GLANCE, "-n", NAMESPACE)


def api_pods(node) -> list[dict[str, Any]]:
    return glance_pods(node, NAMESPACE, GLANCE)


def glance_documents(services, default_backend: str = "s3-default") -> list[dict[str, Any]]:
    return sample_documents(services, NAMESPACE, default_backend=default_backend)


# --- 1. the install -------------------------------------------------------------------------


def test_the_manager_runs_restricted_and_one_replica_leads(node, operator):
    namespace = get(node, "namespace", OPERATOR_NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    pods = get(node, "pods", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager")
    running = [p for p in pods["items"] if p["status"]["phase"] == "Running"]
    assert len(running) == 2, [p["status"] for p in pods["items"]]
    for pod in running:
        assert [c["image"] for c in pod["spec"]["containers"]] == [OPERATOR_IMAGE]
        assert pod_ready(pod), pod["status"]
        # Admitted by the namespace's enforce=restricted: a violating pod is refused, so
        # its security context is what the restricted level asks for.
        context = pod["spec"]["containers"][0]["securityContext"]
        assert context["runAsNonRoot"] and not context["allowPrivilegeEscalation"]
    lease = wait_until(
        "the leader election Lease has a holder",
        lambda: (
            get(node, "lease", "c5c3-glance-operator", "-n", OPERATOR_NAMESPACE)
            .get("spec", {})
            .get("holderIdentity")
        ),
        120,
    )
    assert any(lease.startswith(p["metadata"]["name"]) for p in running), lease


def test_probes_and_metrics_answer_through_the_pod_network(node, operator):
    pods = get(node, "pods", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager")
    for pod in pods["items"]:
        ip = pod["status"]["podIP"]
        assert http("GET", f"http://{ip}:8081/healthz").status == 200
        assert http("GET", f"http://{ip}:8081/readyz").status == 200
        metrics = http("GET", f"http://{ip}:8080/metrics")
        assert metrics.status == 200
        assert b"leader_election_master_status" in metrics.body or b"# TYPE" in metrics.body


def test_the_operator_made_its_webhook_certificate_and_injected_the_ca(node, operator):
    secret = get(node, "secret", "c5c3-glance-webhook-server-cert", "-n", OPERATOR_NAMESPACE)
    bundle = base64.b64decode(secret["data"]["ca.crt"])
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        name = f"c5c3-glance-{kind.removesuffix('webhookconfiguration')}-webhook-configuration"
        config = get(node, kind, name)
        for webhook in config["webhooks"]:
            assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == bundle, webhook["name"]


# --- 2. the webhook, called by the API server -----------------------------------------------


def test_a_glance_only_the_webhook_refuses_is_refused_with_its_message(node, operator, services):
    docs = [d for d in glance_documents(services) if d["kind"] == "Glance"]
    docs[0]["metadata"]["name"] = "refused"
    docs[0]["spec"]["deployment"]["priorityClassName"] = "no-such-priority-class"
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    done = apply(node, docs, check=False)
    assert done.returncode != 0
    assert done.stderr.strip() == (
        'The Glance "refused" is invalid: spec.deployment.priorityClassName: '
        'Not found: "no-such-priority-class"'
    ), done.stderr
    assert node.kubectl("get", "glance", "refused", "-n", NAMESPACE, check=False).returncode != 0
    # The CRD cannot know which PriorityClasses exist: the verdict is the webhook's.
    logs = node.kubectl(
        "logs", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager", "--tail=-1"
    ).stdout
    reviews = [json.loads(line) for line in logs.splitlines() if '"admission review"' in line]
    assert any(
        r["path"] == "/validate-glance-openstack-c5c3-io-v1alpha1-glance"
        and r["name"] == "refused"
        and r["allowed"] is False
        for r in reviews
    ), reviews


# --- 3. a Glance ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ready_glance(node, operator, services, say) -> dict[str, float]:
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    started, applied = time.monotonic(), time.time()
    apply(node, glance_documents(services))
    wait_until(
        "the Glance is Ready",
        lambda: conditions(glance(node)).get("Ready", {}).get("status") == "True",
        READY_TIMEOUT,
        interval=2,
    )
    took = time.monotonic() - started
    say(f"[cluster] Glance (2 replicas, 2 stores) created to Ready: {took:.1f}s")
    found = ready_timeline.steps(node, NAMESPACE, GLANCE, OPERATOR_NAMESPACE)
    text = ready_timeline.table(found, applied)
    TIMELINE.parent.mkdir(parents=True, exist_ok=True)
    TIMELINE.write_text(f"kubectl apply to Ready: {took:.1f} s\n{text}\n")
    say(f"[cluster] the way to Ready ({TIMELINE}):\n{text}")
    return {"ready": took, "steps": found}


def test_the_way_to_ready_goes_in_the_order_the_design_says(ready_glance):
    """The timeline's steps (cluster/ready_timeline.py) in the order the pass enforces:
    admission, the first pass, the configuration and the db-sync Job; the Deployment only
    once the Job is complete (reference-spec 2.3); Ready only once every API pod is. The
    API server's stamps are whole seconds, cut down: a later step never reads earlier."""
    steps = ready_glance["steps"]
    admitted = ready_timeline.first(steps, "the Glance admitted")
    assert ready_timeline.first(steps, "operator: pass started") >= admitted
    assert ready_timeline.first(steps, "the configuration written") >= admitted
    job_done = ready_timeline.last(steps, "db-sync", "Complete")
    assert ready_timeline.first(steps, "Deployment", "created") >= job_done
    assert ready_timeline.first(steps, "the Glance Ready") >= ready_timeline.last(
        steps, "API pod", "Ready"
    )
    assert ready_timeline.last(steps, "operator: pass finished") >= ready_timeline.first(
        steps, "the Glance Ready"
    )


def test_db_sync_ran_glance_manage_in_a_pod_of_the_glance_image(node, ready_glance, services):
    jobs = get(node, "jobs", "-n", NAMESPACE)["items"]
    sync = [j for j in jobs if j["metadata"]["name"].endswith("db-sync")]
    assert sync, [j["metadata"]["name"] for j in jobs]
    assert sync[0]["status"].get("succeeded") == 1, sync[0]["status"]
    container = sync[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == GLANCE_IMAGE
    assert "glance-manage" in " ".join(container.get("command", []) + container.get("args", []))
    pods = get(node, "pods", "-n", NAMESPACE, "-l", f"job-name={sync[0]['metadata']['name']}")
    assert [p["status"]["phase"] for p in pods["items"]] == ["Succeeded"]
    tables = {row[0] for row in services.sql("SHOW TABLES")}
    assert {"images", "image_locations", "alembic_version"} <= tables, tables


def test_the_api_pods_pass_their_rendered_probes(node, ready_glance):
    pods = api_pods(node)
    assert len(pods) == 2
    for pod in pods:
        assert pod_ready(pod), pod["status"]
        api = next(c for c in pod["spec"]["containers"] if c["name"] == "glance-api")
        assert api["image"] == GLANCE_IMAGE
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert api.get(probe, {}).get("httpGet", {}).get("path") == "/healthcheck", probe
        status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "glance-api")
        assert status["ready"] and status["restartCount"] == 0, status
    found = conditions(glance(node))
    assert found["GlanceAPIReady"]["status"] == "True", found["GlanceAPIReady"]
    assert found["Ready"]["status"] == "True"


def test_diagnose_says_the_ready_glance_is_healthy_with_every_check_from_its_pod(
    node, ready_glance
):
    """docs/operations.md's command, as typed in the checkout with the node's KUBECONFIG:
    healthy, no finding, and every check from inside an API pod (a real exec through the
    API server and the kubelet) passed: /healthcheck, the database with Glance's URL,
    Keystone with the service user, an image list with its token, both S3 stores, and the
    staging volume's use against its bound (the sample's 10Gi; no image cache here)."""
    done = run_as_user("make diagnose GLANCE=openstack/glance FORMAT=json", node.kubeconfig)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert (report["state"], report["findings"]) == ("healthy", []), report
    assert sorted(c["check"] for c in report["checks"]) == [
        "database",
        "healthcheck",
        "images",
        "keystone",
        "s3",
        "s3",
        "volume",
    ], report["checks"]
    assert all(c["ok"] for c in report["checks"]), report["checks"]
    (volume,) = [c for c in report["checks"] if c["check"] == "volume"]
    assert volume["subject"] == "staging (/var/lib/glance/staging)", volume
    assert volume["bound"] == 10 * 2**30 and 0 < volume["used"] < 2**20, volume


# --- 4. an image through the Service --------------------------------------------------------


def service_url(node) -> str:
    services = get(node, "services", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={GLANCE}")[
        "items"
    ]
    api = [s for s in services if any(p["port"] == 9292 for p in s["spec"]["ports"])]
    assert len(api) == 1, [s["metadata"]["name"] for s in services]
    return f"http://{api[0]['spec']['clusterIP']}:9292"


@pytest.fixture(scope="module")
def image_endpoint(node, ready_glance, services) -> str:
    """Keystone's catalog names the Glance Service, as a cloud's would."""
    url = service_url(node)
    image_services = services.keystone_admin("GET", "/services?type=image")["services"]
    for endpoint in services.keystone_admin(
        "GET", f"/endpoints?service_id={image_services[0]['id']}"
    )["endpoints"]:
        services.keystone_admin("PATCH", f"/endpoints/{endpoint['id']}", {"endpoint": {"url": url}})
    return url


def test_an_image_goes_up_through_the_service_and_comes_back_the_same(
    services, image_endpoint, tmp_path, say
):
    source = tmp_path / "image.raw"
    source.write_bytes(os.urandom(IMAGE_SIZE))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    started = time.monotonic()
    created = services.cli(
        "openstack",
        "image",
        "create",
        "--disk-format",
        "raw",
        "--container-format",
        "bare",
        "--file",
        str(source),
        "-f",
        "json",
        "cluster-image",
    )
    up = time.monotonic() - started
    assert created.returncode == 0, created.stderr
    image = json.loads(created.stdout)
    assert image["status"] == "active"
    stored = s3_digest(services, services.bucket, image["id"])
    assert stored["size"] == IMAGE_SIZE and stored["sha256"] == digest
    target = tmp_path / "image.out"
    started = time.monotonic()
    saved = services.cli("openstack", "image", "save", "--file", str(target), image["id"])
    down = time.monotonic() - started
    assert saved.returncode == 0, saved.stderr
    assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    mib = IMAGE_SIZE / 2**20
    say(
        f"[cluster] {mib:.0f} MiB through the Service with the openstack CLI: "
        f"up {mib / up:.1f} MiB/s ({up:.1f}s), down {mib / down:.1f} MiB/s ({down:.1f}s)"
    )


# --- 5. a default flip rolls the pods while the API answers ---------------------------------


def test_a_default_flip_rolls_the_pods_while_the_api_keeps_answering(
    node, services, image_endpoint, say
):
    before = {p["metadata"]["name"] for p in api_pods(node)}
    generation = get(node, "deployment", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=glance")[
        "items"
    ][0]["metadata"]["generation"]
    token = services.keystone_token("demo", "e2e-demo-password", "demo")
    failures: list[str] = []
    answered = 0
    stop = threading.Event()

    def keep_asking() -> None:
        nonlocal answered
        while not stop.is_set():
            resp = http("GET", f"{image_endpoint}/v2/images", headers={"X-Auth-Token": token})
            if resp.status == 200:
                answered += 1
            else:
                failures.append(f"{resp.status} {resp.body[:200]!r}")
            time.sleep(0.2)

    asker = threading.Thread(target=keep_asking, daemon=True)
    asker.start()
    started = time.monotonic()
    try:
        flipped = [
            d for d in glance_documents(services, "s3-second") if d["kind"] == "GlanceBackend"
        ]
        # The old default first, so that no moment has two (the webhook refuses two).
        apply(node, [d for d in flipped if d["metadata"]["name"] == "s3-default"])
        apply(node, [d for d in flipped if d["metadata"]["name"] == "s3-second"])
        wait_until(
            "the pods rolled to the new default",
            lambda: (
                not before & {p["metadata"]["name"] for p in api_pods(node)}
                and len([p for p in api_pods(node) if pod_ready(p)]) == 2
                and conditions(glance(node)).get("Ready", {}).get("status") == "True"
            ),
            READY_TIMEOUT,
            interval=2,
        )
    finally:
        stop.set()
        asker.join(timeout=30)
    after = get(node, "deployment", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=glance")
    assert after["items"][0]["metadata"]["generation"] > generation
    say(
        f"[cluster] default flip: rolled in {time.monotonic() - started:.1f}s, "
        f"{answered} image lists answered, {len(failures)} failed"
    )
    assert answered > 0
    assert failures == []


# --- 6. deletion ----------------------------------------------------------------------------


def leader_metrics(node) -> str:
    """The metrics page of the manager pod holding the Lease (the one that runs passes)."""
    holder = get(node, "lease", "c5c3-glance-operator", "-n", OPERATOR_NAMESPACE)["spec"]
    pods = get(node, "pods", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager")
    [leader] = [
        p
        for p in pods["items"]
        if holder.get("holderIdentity", "").startswith(p["metadata"]["name"])
    ]
    page = http("GET", f"http://{leader['status']['podIP']}:8080/metrics")
    assert page.status == 200
    return page.body.decode()


def counted(page: str, series: str, result: str) -> float:
    """``series{glance,namespace,result}`` of this Glance on a metrics page (0 when absent)."""
    labels = f'glance="{GLANCE}",namespace="{NAMESPACE}",result="{result}"'
    for line in page.splitlines():
        if line.startswith(series + "{") and all(part in line for part in labels.split(",")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


PURGE_RECORD = "cobaltcore.c5c3.io/last-db-purge-job-uid"


def test_a_real_purge_run_is_recorded_on_the_glance_and_counted_once(node, ready_glance, say):
    """The CronJob controller runs the db-purge CronJob (``*/1 * * * *`` for one run); the
    run's end wakes the Glance, whose pass reports it (``DBPurgeReady``) and records its UID
    in ``cobaltcore.c5c3.io/last-db-purge-job-uid`` as the reference does; the runner counts
    it in ``glance_operator_db_purge_total`` once, however many passes follow. The db-sync
    Job is recorded the same way (``last-db-sync-job-uid``)."""
    sync = get(node, "job", f"{GLANCE}-db-sync", "-n", NAMESPACE)
    annotations = glance(node)["metadata"].get("annotations") or {}
    assert annotations.get("cobaltcore.c5c3.io/last-db-sync-job-uid") == sync["metadata"]["uid"]
    before = counted(leader_metrics(node), "glance_operator_db_purge_total", "succeeded")
    patch = {"spec": {"dbPurge": {"schedule": "*/1 * * * *"}}}
    node.kubectl(
        "patch", "glance", GLANCE, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch)
    )

    def purge_runs() -> list[dict[str, Any]]:
        jobs = get(node, "jobs", "-n", NAMESPACE)["items"]
        return [
            j
            for j in jobs
            if any(
                o.get("kind") == "CronJob" and o.get("name") == f"{GLANCE}-db-purge"
                for o in j["metadata"].get("ownerReferences") or []
            )
        ]

    started = time.monotonic()
    [run] = wait_until("the CronJob controller started a purge run", purge_runs, 150, 2)
    # Back to the default schedule at once: this run is the only one.
    patch = {"spec": {"dbPurge": {"schedule": None}}}
    node.kubectl(
        "patch", "glance", GLANCE, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch)
    )
    uid = run["metadata"]["uid"]
    wait_until(
        "the Glance records the finished run",
        lambda: (glance(node)["metadata"].get("annotations") or {}).get(PURGE_RECORD) == uid,
        180,
        1,
    )
    say(
        f"[cluster] purge run {run['metadata']['name']} recorded {time.monotonic() - started:.0f}s after the schedule"
    )
    finished = get(node, "job", run["metadata"]["name"], "-n", NAMESPACE)
    assert finished["status"].get("succeeded") == 1, finished["status"]
    purge = conditions(glance(node))["DBPurgeReady"]
    assert (purge["status"], purge["reason"]) == ("True", "DBPurgeScheduled"), purge
    wait_until(
        "the run is counted",
        lambda: (
            counted(leader_metrics(node), "glance_operator_db_purge_total", "succeeded")
            == before + 1
        ),
        60,
        1,
    )
    # The pass of the schedule's restore and any after it count nothing again.
    wait_until(
        "the schedule's restore observed",
        lambda: (
            glance(node)["status"].get("observedGeneration")
            == glance(node)["metadata"]["generation"]
        ),
        120,
        1,
    )
    assert [j["metadata"]["uid"] for j in purge_runs()] == [uid]  # one run: the one counted
    page = leader_metrics(node)
    assert counted(page, "glance_operator_db_purge_total", "succeeded") == before + 1
    assert counted(page, "glance_operator_db_purge_total", "failed") == 0
    assert (glance(node)["metadata"].get("annotations") or {}).get(PURGE_RECORD) == uid


def test_deleting_the_glance_releases_the_finalizer_and_leaves_nothing(node, ready_glance):
    uid = glance(node)["metadata"]["uid"]
    node.kubectl("delete", "glance", GLANCE, "-n", NAMESPACE, "--wait=true", "--timeout=300s")
    assert node.kubectl("get", "glance", GLANCE, "-n", NAMESPACE, check=False).returncode != 0

    def owned_left() -> list[str]:
        kinds = "deployments,services,configmaps,secrets,jobs,cronjobs,poddisruptionbudgets"
        items = get(node, kinds, "-n", NAMESPACE)["items"]
        return [
            f"{i['kind']}/{i['metadata']['name']}"
            for i in items
            if any(o.get("uid") == uid for o in i["metadata"].get("ownerReferences") or [])
        ]

    wait_until("nothing the Glance owned is left", lambda: owned_left() == [], 180)
    wait_until("no Glance API pod is left", lambda: api_pods(node) == [], 180)
