"""A Glance behind a real Gateway: Envoy Gateway on the node (``make cluster-gateway``, as
docs/cluster.md "A Gateway in front of Glance" shows it), the operator's HTTPRoute attached
to it from ``spec.gateway``, and the large-uploads how-to's claims checked through it.

1. The operator against the real parent status (glance-direct on, one replica): the route to a Gateway that does not exist
   is never accepted (``HTTPRouteReady`` False, ``HTTPRouteNotAccepted``, the Glance not
   Ready); pointed at ``glance-gw`` Envoy Gateway accepts it and the operator, reading that
   status, sets True, ``HTTPRouteAccepted``, and ``status.endpoint`` the public URL. No test
   writes a status.
2. ``/healthcheck`` answers 200 ``OK`` through the HTTPS listener: the doc's ``curl``, run as
   written, and the client here.
3. A 512 MiB ``PUT`` paced at 16 MiB/s (about 32 s, twice Envoy's 15 s default route
   timeout) through the listener answers 204; the image is active at 536870912 bytes and
   its bytes, read back through the Gateway, have the SHA-256 sent.
4. The control, a route of the test's own to the same Service without ``timeouts`` (the
   implementation's default): the same upload lands there too, as Envoy starts a route's
   timeout only when the request has ended; a download read at 16 MiB/s, whose response
   takes about 32 s, is cut short there and comes whole through the operator's route. So
   the operator's ``timeouts.request: 4h`` is what carries slow downloads (and any answer
   that comes more than 15 s after the request's last byte).
   Then figures: unpaced 128 MiB up and down through the listener, with the Envoy pod's
   and the API pod's CPU per GiB (printed, for docs/e2e.md).
5. glance-direct's staged upload through the Gateway: 512 MiB ``PUT .../stage`` lands on
   the pod's staging volume byte for byte (its size and SHA-256 read in the pod), and
   deleting the image frees it.
6. web-download through the Gateway from an HTTPS mirror on the node whose certificate
   chains to a CA of the test's own: before ``spec.importCABundleSecretRef`` the pod
   refuses the mirror's certificate (the mirror sees ``TLSV1_ALERT_UNKNOWN_CA`` from the
   pod) and the image is not imported; with the bundle the pods roll (the template
   carries its digest), the import answers 202 and the image is active with the mirror's
   bytes (SHA-256 read back through the Gateway), the image's system CAs still in the
   pod's default verify paths; a URI the import filter refuses answers 400 and never
   reaches the mirror.
7. The same under an enforced ``spec.networkPolicy`` (``make cluster-netpol``: kube-router's
   policy controller, as docs/cluster.md "NetworkPolicy on the node" shows it): a pod
   started under the policy comes up Ready and serves; through the Gateway it answers 503
   until Envoy Gateway's proxies' namespace (``envoy-gateway-system``, not the Gateway's)
   is among the ingress peers; the mirror's port is refused (the mirror sees nothing, the
   pod logs ``Connection refused``) until ``additionalEgress`` names it, and then the
   import lands whole with no pod rolled. ``make cluster-netpol-down`` leaves none of
   kube-router's chains.
8. With ``staging.sizeLimit: 64Mi`` the same staged upload at 16 MiB/s gets the pod evicted
   by the kubelet (``volume "staging" exceeds the limit``; during the transfer, which dies
   with it, or after its 204: the kubelet's usage figures lag), the image never becomes
   active, and a new pod serves through the Gateway again.
9. Removing ``spec.gateway`` deletes the route (``HTTPRouteNotRequired``) and the hostname
   stops routing (404 from the Gateway).

The module runs after test_operator.py (the kustomize install it shares) and removes the
Gateway, Envoy Gateway, the CRDs and CoreDNS when it ends. Every step logs the Gateway's
and the routes' status and the namespace's events.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e.stack import DEMO_PASSWORD

from cluster.conftest import wait_until
from cluster.diagnosis import named_first
from cluster.gateway_client import Gateway, paced_download, paced_upload
from cluster.https_source import HttpsSource
from cluster.objects import (
    apply,
    conditions,
    get,
    glance_pods,
    pod_cgroup_stats,
    pod_ready,
    sample_documents,
    status_report,
)

pytestmark = pytest.mark.cluster

SECTION = "A Gateway in front of Glance"
GATEWAY_NAMESPACE = "gateway-system"
GATEWAY_NAME = "glance-gw"
NAMESPACE = "gateway-glance"
GLANCE = "glance"
DATABASE = "glance_gateway"
HOSTNAME = "glance.glance.test"
DEFAULT_TIMEOUT_HOSTNAME = "default-timeout.glance.test"
CA = "/var/lib/c5c3-node/gateway/ca.crt"
STAGING_DIR = "/var/lib/glance/staging"  # os_glance_staging_store in the rendered glance-api.conf
CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
SIZE = 512 * 2**20
RATE = 16 * 2**20  # 32 s for SIZE: twice Envoy's default, half make test's old 64 s
ENVOY_DEFAULT_TIMEOUT = 15  # seconds: Envoy's route timeout where the route sets none
READY_TIMEOUT = 600
FIGURE_SIZE = 128 * 2**20  # test_transfer.py's image
FIGURE_ROUNDS = 3
MIRROR_SIZE = 48 * 2**20
MIRROR_PATH = "/mirror/image.raw"
IMPORT_CA_SECRET = "mirror-ca"
IMPORT_CA_FILE = "/etc/glance/import-ca/ca.crt"
IMPORT_TIMEOUT = 300
NETPOL_SECTION = "NetworkPolicy on the node"
ENVOY_GATEWAY_NAMESPACE = "envoy-gateway-system"  # where Envoy Gateway runs its proxies
KUBE_ROUTER_CHAIN = re.compile(r"KUBE-(ROUTER|POD-FW|NWPLCY)-")


def glance(node) -> dict[str, Any]:
    return get(node, "glance", GLANCE, "-n", NAMESPACE)


def route_condition(node) -> dict[str, Any]:
    return conditions(glance(node)).get("HTTPRouteReady", {})


def gateway_report(node) -> str:
    """The Gateway's and the routes' status and the namespace's events, for the log."""
    return status_report(
        node,
        NAMESPACE,
        [("gateway", GATEWAY_NAME, "-n", GATEWAY_NAMESPACE), ("httproutes", "-n", NAMESPACE)],
    )


@pytest.fixture(scope="module")
def gateway(shell, node, say):
    """``make cluster-gateway`` as the doc shows it; the Gateway's address and CA."""
    done = shell.ok("make cluster-gateway", SECTION)
    address = done.stdout.strip().splitlines()[-1]
    say(f"[gateway] make cluster-gateway: {address}; {(done.stderr or '').strip()[-600:]}")
    try:
        assert address == f"{node.layout.node_ip}:30443", done.stdout[-2000:]
        found = get(node, "gateway", GATEWAY_NAME, "-n", GATEWAY_NAMESPACE)
        programmed = conditions(found).get("Programmed", {})
        assert programmed.get("status") == "True", found.get("status")
        yield Gateway(address, Path(CA))
    finally:
        say("[gateway] at the end:\n" + gateway_report(node))
        removed = node.kubectl(
            "delete", "namespace", NAMESPACE, "--ignore-not-found", "--timeout=300s", check=False
        )
        say(f"[gateway] namespace {NAMESPACE} deleted: {removed.returncode == 0}")
        done = shell.run("make cluster-gateway-down", SECTION)
        say(f"[gateway] uninstalled: {done.returncode}: {done.stderr.strip()[-400:]}")
        assert done.returncode == 0, done.stdout + done.stderr


def set_parent(node, gateway_name: str) -> None:
    patch = {
        "spec": {
            "gateway": {
                "parentRef": {"name": gateway_name, "namespace": GATEWAY_NAMESPACE},
                "hostname": HOSTNAME,
            }
        }
    }
    node.kubectl(
        "-n", NAMESPACE, "patch", "glance", GLANCE, "--type=merge", "-p", json.dumps(patch)
    )


@pytest.fixture(scope="module")
def routed(node, operator, services, gateway, say) -> dict[str, Any]:
    """A Glance of one replica whose route first names a Gateway that does not exist, then
    ``glance-gw``; what the operator said at each point."""
    services.create_database(DATABASE)
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    docs = sample_documents(services, NAMESPACE, replicas=1, database=DATABASE)
    for doc in docs:
        if doc["kind"] == "Glance":
            doc["spec"]["gateway"] = {
                "parentRef": {"name": "no-such-gateway", "namespace": GATEWAY_NAMESPACE},
                "hostname": HOSTNAME,
            }
            doc["spec"]["importMethods"] = ["glance-direct", "web-download", "copy-image"]
    apply(node, docs)

    def unaccepted():
        pods = glance_pods(node, NAMESPACE, GLANCE)
        cond = route_condition(node)
        if pods and all(pod_ready(p) for p in pods) and cond.get("status") == "False":
            return glance(node)
        return None

    before = wait_until("API pods Ready, route not accepted", unaccepted, READY_TIMEOUT, 2)
    say("[gateway] route to a missing Gateway:\n" + gateway_report(node))
    diagnosed = named_first(node, f"{NAMESPACE}/{GLANCE}", "route-parent-missing", say)
    set_parent(node, GATEWAY_NAME)

    def accepted():
        found = glance(node)
        ready = conditions(found).get("Ready", {}).get("status") == "True"
        route = conditions(found).get("HTTPRouteReady", {}).get("status") == "True"
        return found if ready and route else None

    after = wait_until("HTTPRouteReady and Ready True", accepted, READY_TIMEOUT, 2)
    say("[gateway] route to glance-gw:\n" + gateway_report(node))
    return {"before": before, "after": after, "diagnosed": diagnosed}


def test_http_route_ready_follows_the_gateways_own_status(node, routed):
    before = conditions(routed["before"])
    assert before["HTTPRouteReady"]["reason"] == "HTTPRouteNotAccepted", before
    assert before["Ready"]["status"] == "False", before
    after = conditions(routed["after"])
    assert after["HTTPRouteReady"]["reason"] == "HTTPRouteAccepted", after
    assert routed["after"]["status"]["endpoint"] == f"https://{HOSTNAME}/"
    route = get(node, "httproute", GLANCE, "-n", NAMESPACE)
    parents = route["status"]["parents"]
    assert [p["controllerName"] for p in parents] == [CONTROLLER], parents
    accepted = {c["type"]: c for c in parents[0]["conditions"]}["Accepted"]
    assert accepted["status"] == "True", parents
    assert accepted["observedGeneration"] == route["metadata"]["generation"]
    assert route["spec"]["rules"][0]["timeouts"] == {"request": "4h"}, route["spec"]


def test_diagnose_named_the_gateway_the_route_asked_for_that_does_not_exist(routed):
    """``make diagnose`` on the route to ``no-such-gateway``: the missing parent first, read
    from the route and the Gateway API, with the fix."""
    first = routed["diagnosed"]["findings"][0]
    assert first["subject"] == f"HTTPRoute {NAMESPACE}/{GLANCE}", first
    assert first["detail"] == f"the Gateway {GATEWAY_NAMESPACE}/no-such-gateway does not exist"
    assert first["fix"].startswith("correct spec.gateway.parentRef"), first


def test_healthcheck_answers_ok_through_the_https_listener(shell, gateway, routed):
    done = shell.ok("curl", SECTION)
    assert done.stdout == "OK", done.stdout + done.stderr
    assert gateway.request(HOSTNAME, "GET", "/healthcheck") == (200, b"OK")


@pytest.fixture(scope="module")
def token(services) -> str:
    return services.keystone_token("demo", DEMO_PASSWORD, "demo")


def new_image(gateway: Gateway, token: str, name: str) -> str:
    status, body = gateway.request(
        HOSTNAME,
        "POST",
        "/v2/images",
        {"name": name, "disk_format": "raw", "container_format": "bare"},
        {"X-Auth-Token": token},
    )
    assert status == 201, body
    return json.loads(body)["id"]


def image(gateway: Gateway, token: str, image_id: str) -> dict[str, Any]:
    status, body = gateway.request(
        HOSTNAME, "GET", f"/v2/images/{image_id}", headers={"X-Auth-Token": token}
    )
    assert status == 200, body
    return json.loads(body)


@pytest.fixture(scope="module")
def control_route(node, gateway, routed):
    """A route of the test's own to the same Service, without ``timeouts``: Envoy Gateway's
    default (Envoy's 15 s route timeout)."""
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "default-timeout", "namespace": NAMESPACE},
        "spec": {
            "parentRefs": [{"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE}],
            "hostnames": [DEFAULT_TIMEOUT_HOSTNAME],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [{"name": GLANCE, "port": 9292}],
                }
            ],
        },
    }
    apply(node, [route])

    def serving():
        return gateway.request(DEFAULT_TIMEOUT_HOSTNAME, "GET", "/healthcheck")[0] == 200

    wait_until("the control route serves", serving, 120, 1)
    yield DEFAULT_TIMEOUT_HOSTNAME
    node.kubectl("delete", "httproute", "default-timeout", "-n", NAMESPACE)


@pytest.fixture(scope="module")
def large_image(gateway, routed, token, say) -> dict[str, Any]:
    """512 MiB uploaded at 16 MiB/s through the operator's route."""
    image_id = new_image(gateway, token, "large-image")
    sent = paced_upload(gateway, HOSTNAME, token, image_id, SIZE, RATE)
    say(
        f"[gateway] {SIZE // 2**20} MiB up at {RATE // 2**20} MiB/s through the operator's "
        f"route: {sent.status} after {sent.seconds:.1f} s ({sent.error or 'no transport error'})"
    )
    return {"id": image_id, "sent": sent}


def test_a_512_mib_upload_at_8_mib_s_through_the_route_lands_whole(
    gateway, large_image, token, say
):
    sent = large_image["sent"]
    assert sent.status == 204 and not sent.error, sent
    assert sent.sent == SIZE
    found = image(gateway, token, large_image["id"])
    assert (found["status"], found["size"]) == ("active", SIZE), found
    size, digest, seconds = gateway.download(HOSTNAME, token, large_image["id"])
    say(f"[gateway] read back through the Gateway: {size / 2**20 / seconds:.1f} MiB/s")
    assert (size, digest) == (SIZE, sent.sha256)


def test_envoys_default_route_timeout_does_not_bound_an_upload(gateway, control_route, token, say):
    """Envoy starts a route's timeout when the request has ended: a slow upload outlasts
    the 15 s default on a route without ``timeouts``, and lands whole."""
    image_id = new_image(gateway, token, "upload-on-the-default")
    sent = paced_upload(gateway, control_route, token, image_id, SIZE, RATE)
    say(
        f"[gateway] the same upload on the default timeout: {sent.status} after "
        f"{sent.seconds:.1f} s ({sent.error or 'no transport error'})"
    )
    assert (sent.status, sent.error, sent.sent) == (204, "", SIZE), sent
    # Paced, it cannot be quicker than SIZE / RATE = 32 s: past the default, not cut by it.
    assert sent.seconds > 2 * ENVOY_DEFAULT_TIMEOUT
    assert image(gateway, token, image_id)["status"] == "active"


def test_a_slow_download_is_cut_at_the_default_timeout_and_not_on_the_route(
    gateway, control_route, large_image, token, say
):
    """Where the 4 h matters: a response that takes longer than 15 s to stream. Read at
    16 MiB/s, the image comes whole through the operator's route and is cut short through
    the route without ``timeouts``: the Gateway closes the connection short of the answer's
    Content-Length."""
    sent = large_image["sent"]
    cut = paced_download(gateway, control_route, token, large_image["id"], RATE)
    whole = paced_download(gateway, HOSTNAME, token, large_image["id"], RATE)
    for label, got in (("default", cut), ("operator's", whole)):
        say(
            f"[gateway] {SIZE // 2**20} MiB down at {RATE // 2**20} MiB/s on the {label} "
            f"route: {got.size / 2**20:.0f} MiB in {got.seconds:.1f} s "
            f"({got.error or 'ended cleanly'}; {got.framing})"
        )
    assert (whole.size, whole.sha256, whole.error) == (SIZE, sent.sha256, ""), whole
    assert cut.size < SIZE and cut.error.startswith("the connection closed after"), cut


def test_transfer_figures_through_the_gateway(node, gateway, routed, token, say):
    """Unpaced 128 MiB up and down through the HTTPS listener, three rounds: the median
    MiB/s and the CPU seconds per GiB the Envoy pod and the API pod spent (their cgroups).
    tests/cluster/test_transfer.py prints the Service's and loopback's for the same Glance
    shape (one replica, the rendered 500m CPU limit); docs/e2e.md keeps both. Asserted: the
    bytes that came back are the bytes sent; nothing on time."""
    selector = f"gateway.envoyproxy.io/owning-gateway-name={GATEWAY_NAME}"
    [envoy] = get(node, "pods", "-n", "envoy-gateway-system", "-l", selector)["items"]
    [api] = live_pods(node)
    uids = {"envoy": envoy["metadata"]["uid"], "api": api["metadata"]["uid"]}

    def cpu() -> dict[str, float]:
        return {k: pod_cgroup_stats(uid).get("cpu", 0.0) for k, uid in uids.items()}

    took: dict[str, list[float]] = {"up": [], "down": []}
    spent = {(d, k): 0.0 for d in took for k in uids}
    for n in range(FIGURE_ROUNDS):
        image_id = new_image(gateway, token, f"figures-{n}")
        before = cpu()
        sent = paced_upload(gateway, HOSTNAME, token, image_id, FIGURE_SIZE, math.inf)
        after = cpu()
        assert (sent.status, sent.error) == (204, ""), sent
        took["up"].append(sent.seconds)
        for k in uids:
            spent["up", k] += after[k] - before[k]
        before = cpu()
        size, digest, seconds = gateway.download(HOSTNAME, token, image_id)
        after = cpu()
        assert (size, digest) == (FIGURE_SIZE, sent.sha256)
        took["down"].append(seconds)
        for k in uids:
            spent["down", k] += after[k] - before[k]
        gateway.request(
            HOSTNAME, "DELETE", f"/v2/images/{image_id}", headers={"X-Auth-Token": token}
        )
    gib = FIGURE_ROUNDS * FIGURE_SIZE / 2**30
    rows = [
        f"{d}: {FIGURE_SIZE / 2**20 / statistics.median(took[d]):.1f} MiB/s; CPU-s per GiB "
        f"Envoy {spent[d, 'envoy'] / gib:.2f}, API {spent[d, 'api'] / gib:.2f}"
        for d in took
    ]
    say(f"[gateway] {FIGURE_SIZE // 2**20} MiB x {FIGURE_ROUNDS} through the Gateway, medians "
        f"(load {os.getloadavg()[0]:.1f}):\n  " + "\n  ".join(rows))  # fmt: skip


def live_pods(node) -> list[dict[str, Any]]:
    """The API pods neither being deleted nor ended (an evicted pod stays, Failed)."""
    return [
        p
        for p in glance_pods(node, NAMESPACE, GLANCE)
        if not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase") not in ("Failed", "Succeeded")
    ]


def in_pod(node, pod: str, *argv: str) -> str:
    return node.kubectl("exec", "-n", NAMESPACE, pod, "-c", "glance-api", "--", *argv).stdout


def test_a_512_mib_staged_upload_lands_whole_in_staging_and_goes_with_the_image(
    node, gateway, routed, token, say
):
    """glance-direct's first half through the Gateway: ``PUT .../stage`` puts the bytes on
    the pod's staging volume, every one of them; deleting the image frees them."""
    image_id = new_image(gateway, token, "staged")
    sent = paced_upload(gateway, HOSTNAME, token, image_id, SIZE, math.inf, to="stage")
    say(f"[gateway] {SIZE // 2**20} MiB staged through the Gateway: {sent.status} "
        f"after {sent.seconds:.1f} s")  # fmt: skip
    assert (sent.status, sent.error) == (204, ""), sent
    assert image(gateway, token, image_id)["status"] == "uploading"
    [pod] = [p["metadata"]["name"] for p in live_pods(node)]
    staged = f"{STAGING_DIR}/{image_id}"
    assert in_pod(node, pod, "stat", "-c", "%s", staged).strip() == str(SIZE)
    assert in_pod(node, pod, "sha256sum", staged).split()[0] == sent.sha256
    status, body = gateway.request(
        HOSTNAME, "DELETE", f"/v2/images/{image_id}", headers={"X-Auth-Token": token}
    )
    assert status == 204, body
    listed = in_pod(node, pod, "ls", "-A", STAGING_DIR).split()
    assert image_id not in listed, listed


@pytest.fixture(scope="module")
def mirror(node):
    """An HTTPS mirror on the node's address, under a CA no image trusts."""
    source = HttpsSource(node.layout.node_ip, MIRROR_PATH, os.urandom(MIRROR_SIZE))
    yield source
    source.stop()


def patch_glance(node, spec: dict[str, Any]) -> None:
    patch = json.dumps({"spec": spec})
    node.kubectl("-n", NAMESPACE, "patch", "glance", GLANCE, "--type=merge", "-p", patch)


def settled(node, gateway, what: str, check=lambda pod: True) -> dict[str, Any]:
    """The one live API pod once the operator has acted on the Glance's generation, the
    Glance is Ready, the pod Ready and passing ``check``, and the API serves through the
    Gateway."""

    def done():
        found = glance(node)
        pods = live_pods(node)
        if (
            found.get("status", {}).get("observedGeneration") == found["metadata"]["generation"]
            and conditions(found).get("Ready", {}).get("status") == "True"
            and len(pods) == 1
            and pod_ready(pods[0])
            and check(pods[0])
            and gateway.request(HOSTNAME, "GET", "/healthcheck") == (200, b"OK")
        ):
            return pods[0]
        return None

    return wait_until(what, done, READY_TIMEOUT, 2)


def config_map(pod: dict[str, Any]) -> str:
    """The content-addressed configuration ConfigMap the pod mounts."""
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    return volumes["config"]["configMap"]["name"]


def import_ca_secret(mirror: HttpsSource) -> dict[str, Any]:
    """The Secret spec.importCABundleSecretRef names: the mirror's CA."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": IMPORT_CA_SECRET, "namespace": NAMESPACE},
        "stringData": {"ca.crt": mirror.ca_pem.decode()},
    }


def web_download(gateway: Gateway, token: str, image_id: str, uri: str) -> tuple[int, bytes]:
    body = {"method": {"name": "web-download", "uri": uri}}
    return gateway.request(
        HOSTNAME, "POST", f"/v2/images/{image_id}/import", body, {"X-Auth-Token": token}
    )


def test_web_download_from_a_private_ca_lands_once_the_import_ca_bundle_is_given(
    node, gateway, routed, token, mirror, say
):
    """The mirror's certificate chains to a CA only spec.importCABundleSecretRef carries:
    without it the pod refuses the mirror, with it the import lands whole."""
    node_ip = node.layout.node_ip
    [before] = [config_map(p) for p in live_pods(node)]
    patch_glance(
        node, {"importFiltering": {"allowedHosts": [node_ip], "allowedPorts": [mirror.port]}}
    )
    settled(
        node,
        gateway,
        "the pod rolled with the mirror allowed by the import filter",
        lambda pod: config_map(pod) != before,
    )

    refused_id = new_image(gateway, token, "mirror-untrusted")
    status, body = web_download(gateway, token, refused_id, mirror.url)
    assert status == 202, body

    def given_up():
        found = image(gateway, token, refused_id)
        if mirror.seen.refused and "os_glance_import_task" not in found:
            return found
        return None

    untrusted = wait_until("the import without the bundle ended", given_up, IMPORT_TIMEOUT, 2)
    say(f"[gateway] web-download without the bundle: image {untrusted['status']}, the mirror "
        f"saw {mirror.seen.refused}, served {mirror.seen.served}")  # fmt: skip
    assert untrusted["status"] != "active", untrusted
    assert mirror.seen.served == [], mirror.seen
    assert all("UNKNOWN_CA" in reason for _, reason in mirror.seen.refused), mirror.seen

    apply(node, [import_ca_secret(mirror)])
    patch_glance(node, {"importCABundleSecretRef": {"name": IMPORT_CA_SECRET}})
    digest = hashlib.sha256(mirror.ca_pem).hexdigest()

    def carries_the_bundle(pod):
        annotations = pod["metadata"].get("annotations") or {}
        return annotations.get("glance.c5c3.io/import-ca-hash") == digest

    pod = settled(node, gateway, "the pod rolled with the import CA bundle", carries_the_bundle)
    name = pod["metadata"]["name"]
    paths = in_pod(node, name, "python", "-c", VERIFY_PATHS).split()
    say(f"[gateway] {name}: default verify file {paths[0]}, {paths[2]} entries in {paths[1]}")
    assert paths[0] == IMPORT_CA_FILE, paths
    assert int(paths[2]) > 100, paths  # the image's system CAs (ca-certificates) stay trusted

    image_id = new_image(gateway, token, "mirror-trusted")
    status, body = web_download(gateway, token, image_id, mirror.url)
    assert status == 202, body

    def active():
        found = image(gateway, token, image_id)
        assert not found.get("os_glance_failed_import"), found
        return found if found["status"] == "active" else None

    landed = wait_until("the web-download image active", active, IMPORT_TIMEOUT, 2)
    size, sha256, seconds = gateway.download(HOSTNAME, token, image_id)
    say(f"[gateway] web-download with the bundle: {landed['status']}, {landed['size']} bytes; "
        f"read back through the Gateway in {seconds:.1f} s")  # fmt: skip
    assert landed["size"] == size == MIRROR_SIZE
    assert sha256 == hashlib.sha256(mirror.payload).hexdigest()
    assert landed["os_hash_value"] == hashlib.sha512(mirror.payload).hexdigest()
    for each in (refused_id, image_id):
        gateway.request(HOSTNAME, "DELETE", f"/v2/images/{each}", headers={"X-Auth-Token": token})


VERIFY_PATHS = (
    "import os, ssl; p = ssl.get_default_verify_paths(); "
    "print(p.cafile, p.capath, len(os.listdir(p.capath)))"
)


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("http://{ip}:{port}/mirror/refused", id="scheme"),
        pytest.param("https://{ip}:{other}/mirror/refused", id="port"),
        pytest.param("https://127.0.0.1:{port}/mirror/refused", id="host"),
    ],
)
def test_a_uri_the_import_filter_refuses_answers_400_and_never_reaches_the_mirror(
    node, gateway, routed, token, mirror, uri
):
    seen = (len(mirror.seen.refused), len(mirror.seen.served))
    image_id = new_image(gateway, token, "mirror-filtered")
    refused = uri.format(ip=node.layout.node_ip, port=mirror.port, other=mirror.port + 1)
    status, body = web_download(gateway, token, image_id, refused)
    assert status == 400, body
    assert image(gateway, token, image_id)["status"] == "queued"
    assert (len(mirror.seen.refused), len(mirror.seen.served)) == seen
    gateway.request(HOSTNAME, "DELETE", f"/v2/images/{image_id}", headers={"X-Auth-Token": token})


def filter_rules() -> str:
    """The node's iptables filter table, where kube-router writes what it enforces."""
    return subprocess.run(
        ["iptables-save", "-t", "filter"], capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def enforced(shell, node, say):
    """``make cluster-netpol`` as docs/cluster.md shows it, then ``make cluster-netpol-down``,
    after which none of kube-router's chains is left on the node."""
    done = shell.ok("make cluster-netpol", NETPOL_SECTION)
    last = done.stdout.strip().splitlines()[-1]
    say(f"[netpol] make cluster-netpol: {last}")
    try:
        assert last.startswith("NetworkPolicy enforced by kube-router v2.1.0"), done.stdout
        yield
    finally:
        log = node.kubectl("-n", "kube-system", "logs", "daemonset/kube-router", check=False)
        say("[netpol] kube-router's log:\n" + (log.stdout + log.stderr)[-4000:])
        done = shell.run("make cluster-netpol-down", NETPOL_SECTION)
        say(f"[netpol] make cluster-netpol-down: {done.returncode}: {done.stderr.strip()[-300:]}")
        assert done.returncode == 0, done.stdout + done.stderr
        left = [line for line in filter_rules().splitlines() if KUBE_ROUTER_CHAIN.search(line)]
        assert left == [], left


def policy_lines(name: str) -> list[str]:
    """kube-router's rules for the policy ``name`` of the test's namespace."""
    marks = (f"run through nw policy {name}", f"policy name: {name} namespace {NAMESPACE}")
    return [line for line in filter_rules().splitlines() if any(m in line for m in marks)]


def enforced_on(pod: dict[str, Any]) -> bool:
    """kube-router sends what the pod sends through the Glance's policy: the chain its
    traffic jumps to (from FORWARD) runs the policy's chain."""
    rules = filter_rules().splitlines()
    source = f"-s {pod['status'].get('podIP')}/32 "
    chains = {
        line.rsplit("-j ", 1)[-1].strip()
        for line in rules
        if line.startswith("-A KUBE-ROUTER-FORWARD ") and source in line
    }
    runs = f'"run through nw policy {GLANCE}"'
    return any(
        line.split()[1] in chains and runs in line for line in rules if line.startswith("-A ")
    )


def peer(namespace: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}


def test_under_an_enforced_network_policy_the_gateway_and_the_mirror_need_their_rules(
    node, services, gateway, routed, mirror, enforced, say
):
    """spec.networkPolicy under a real implementation (``make cluster-netpol``):

    * a pod started under the policy comes up Ready (the kubelet's probes, the operator's
      probe through the API server) and serves with the derived egress alone (database,
      Keystone);
    * the ingress peer the operator adds for spec.gateway is the Gateway's namespace, and
      Envoy Gateway runs its proxies in its own (``envoy-gateway-system``): through the
      Gateway the API is unreachable until that namespace is in spec.networkPolicy.ingress;
    * the web-download mirror is on a port no derived rule names: refused (the mirror sees
      nothing) until ``additionalEgress`` names it, then the import lands whole, with no
      pod rolled."""
    node_ip = node.layout.node_ip
    apply(node, [import_ca_secret(mirror)])
    patch_glance(
        node,
        {
            "importFiltering": {"allowedHosts": [node_ip], "allowedPorts": [mirror.port]},
            "importCABundleSecretRef": {"name": IMPORT_CA_SECRET},
        },
    )  # as the web-download test left it, or made so here
    old = settled(node, gateway, "one pod serving the mirror's filter and CA")["metadata"]["name"]
    policy: dict[str, Any] = {"ingress": [peer(NAMESPACE)]}
    patch_glance(node, {"networkPolicy": policy})
    try:

        def applied():
            found = glance(node)
            acted = found["status"].get("observedGeneration") == found["metadata"]["generation"]
            ready = conditions(found).get("NetworkPolicyReady", {})
            return acted and ready.get("reason") == "NetworkPolicyReady"

        wait_until("the policy applied, NetworkPolicyReady", applied, 120, 1)
        node.kubectl("-n", NAMESPACE, "delete", "pod", old, "--wait=false")

        def started_under_the_policy():
            found = glance(node)
            ready = conditions(found).get("Ready", {}).get("status") == "True"
            acted = found["status"].get("observedGeneration") == found["metadata"]["generation"]
            pods = [p for p in live_pods(node) if p["metadata"]["name"] != old]
            if ready and acted and len(pods) == 1 and pod_ready(pods[0]) and enforced_on(pods[0]):
                return pods[0]
            return None

        pod = wait_until(
            "a pod started under the enforced policy, Ready", started_under_the_policy,
            READY_TIMEOUT, 2,
        )  # fmt: skip
        say("[netpol] the policy's rules on the node:\n" + "\n".join(policy_lines(GLANCE)))
        found = conditions(glance(node))
        assert found["NetworkPolicyReady"]["reason"] == "NetworkPolicyReady", found
        assert found["GlanceAPIReady"]["status"] == "True", found
        status, body = gateway.request(HOSTNAME, "GET", "/healthcheck")
        say(f"[netpol] through the Gateway with {policy['ingress']}: {status} {body[:120]!r}")
        assert status == 503, body  # Envoy's: the upstream refused it

        policy = {"ingress": [peer(NAMESPACE), peer(ENVOY_GATEWAY_NAMESPACE)]}
        patch_glance(node, {"networkPolicy": policy})

        def through_the_gateway():
            return gateway.request(HOSTNAME, "GET", "/healthcheck") == (200, b"OK")

        wait_until("the API served through the Gateway again", through_the_gateway, 120, 1)
        # Keystone and the database from a process that started under the policy.
        fresh = services.keystone_token("demo", DEMO_PASSWORD, "demo")
        blocked_id = new_image(gateway, fresh, "mirror-behind-the-policy")
        seen = (len(mirror.seen.refused), len(mirror.seen.served))
        status, body = web_download(gateway, fresh, blocked_id, mirror.url)
        assert status == 202, body

        def ended():
            found = image(gateway, fresh, blocked_id)
            return found if "os_glance_import_task" not in found else None

        blocked = wait_until("the import behind the policy ended", ended, IMPORT_TIMEOUT, 2)
        logs = node.kubectl(
            "logs", "-n", NAMESPACE, pod["metadata"]["name"], "-c", "glance-api", check=False
        ).stdout  # fmt: skip
        refusals = [
            line
            for line in logs.splitlines()
            if f"Failed to import image {mirror.url}" in line and "Connection refused" in line
        ]
        say(f"[netpol] web-download behind the policy: image {blocked['status']}; the mirror "
            f"saw {(len(mirror.seen.refused), len(mirror.seen.served))} (before {seen}); "
            f"the pod's log: {refusals[-2:]}")  # fmt: skip
        assert blocked["status"] != "active", blocked
        assert (len(mirror.seen.refused), len(mirror.seen.served)) == seen, mirror.seen
        assert refusals, logs[-3000:]

        egress = {
            "to": [{"ipBlock": {"cidr": f"{node_ip}/32"}}],
            "ports": [{"protocol": "TCP", "port": mirror.port}],
        }
        patch_glance(node, {"networkPolicy": dict(policy, additionalEgress=[egress])})

        def opened():
            applied = get(node, "networkpolicy", GLANCE, "-n", NAMESPACE)["spec"]["egress"]
            port = f"--dport {mirror.port} "
            return applied[-1] == egress and any(port in line for line in policy_lines(GLANCE))

        wait_until("kube-router enforcing the additionalEgress rule", opened, 120, 1)
        image_id = new_image(gateway, fresh, "mirror-through-additional-egress")
        status, body = web_download(gateway, fresh, image_id, mirror.url)
        assert status == 202, body

        def active():
            found = image(gateway, fresh, image_id)
            assert not found.get("os_glance_failed_import"), found
            return found if found["status"] == "active" else None

        landed = wait_until("the web-download image active", active, IMPORT_TIMEOUT, 2)
        size, sha256, _ = gateway.download(HOSTNAME, fresh, image_id)
        say(f"[netpol] with additionalEgress: {landed['status']}, {landed['size']} bytes")
        assert (size, sha256) == (MIRROR_SIZE, hashlib.sha256(mirror.payload).hexdigest())
        assert [p["metadata"]["name"] for p in live_pods(node)] == [pod["metadata"]["name"]]
        for each in (blocked_id, image_id):
            gateway.request(
                HOSTNAME, "DELETE", f"/v2/images/{each}", headers={"X-Auth-Token": fresh}
            )
    finally:
        patch_glance(node, {"networkPolicy": None})

        def not_required():
            found = conditions(glance(node)).get("NetworkPolicyReady", {})
            gone = node.kubectl("get", "networkpolicy", GLANCE, "-n", NAMESPACE, check=False)
            return found.get("reason") == "NetworkPolicyNotRequired" and gone.returncode != 0

        wait_until("the policy deleted, NetworkPolicyNotRequired", not_required, 120, 1)


def staging_bound(pod: dict[str, Any]) -> str | None:
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    return (volumes.get("staging", {}).get("emptyDir") or {}).get("sizeLimit")


def evicted(node, pod: str) -> str:
    """The message of the kubelet's ``Evicted`` event on ``pod``, or ''."""
    events = get(node, "events", "-n", NAMESPACE, "--field-selector",
                 f"involvedObject.name={pod},reason=Evicted")  # fmt: skip
    return next((e.get("message", "") for e in events["items"]), "")


def test_a_staged_upload_past_a_64mi_bound_evicts_the_pod_and_the_api_recovers(
    node, gateway, routed, token, say
):
    """``staging.sizeLimit: 64Mi``: the same staged upload at 16 MiB/s goes past it, the
    kubelet evicts the pod (during the transfer, which dies with it, or just after it), the
    image never becomes active, and the Deployment brings the API back through the Gateway
    with nobody's help."""
    patch_glance(node, {"staging": {"sizeLimit": "64Mi"}})

    def bounded():
        pods = live_pods(node)
        ready = (
            route_condition(node).get("status") == "True"
            and conditions(glance(node)).get("Ready", {}).get("status") == "True"
        )
        if ready and len(pods) == 1 and pod_ready(pods[0]) and staging_bound(pods[0]) == "64Mi":
            return pods[0]["metadata"]["name"]
        return None

    victim = wait_until("one Ready pod with staging bounded at 64Mi", bounded, READY_TIMEOUT, 2)
    image_id = new_image(gateway, token, "staged-past-the-bound")
    sent = paced_upload(gateway, HOSTNAME, token, image_id, SIZE, RATE, to="stage")
    message = wait_until(f"{victim} evicted", lambda: evicted(node, victim), 300, 2)
    say(
        f"[gateway] staged at {RATE // 2**20} MiB/s past 64Mi: {sent.status} after "
        f"{sent.seconds:.1f} s, {sent.sent // 2**20} MiB sent ({sent.error or 'no error'}, "
        f"{sent.answer[:80]!r}); {victim}: {message}"
    )
    assert 'volume "staging" exceeds the limit' in message, message
    # Whether the eviction cuts the upload or comes after its 204 is the kubelet's timing:
    # it reads the volume's usage from stats up to a minute old. Either way the bytes are
    # gone with the pod, and the image is never active.
    assert sent.status in (204, 502, 503, None), sent

    def recovered():
        pods = [p for p in live_pods(node) if p["metadata"]["name"] != victim]
        return len(pods) == 1 and pod_ready(pods[0]) and serving()

    def serving():
        return gateway.request(HOSTNAME, "GET", "/healthcheck") == (200, b"OK")

    wait_until("a new API pod serving through the Gateway", recovered, READY_TIMEOUT, 2)
    assert image(gateway, token, image_id)["status"] != "active"
    status, body = gateway.request(
        HOSTNAME, "DELETE", f"/v2/images/{image_id}", headers={"X-Auth-Token": token},
        timeout=180,
    )  # fmt: skip
    assert status == 204, body


def test_removing_spec_gateway_deletes_the_route(node, gateway, routed):
    patch = json.dumps({"spec": {"gateway": None}})
    node.kubectl("-n", NAMESPACE, "patch", "glance", GLANCE, "--type=merge", "-p", patch)

    def not_required():
        cond = route_condition(node)
        gone = node.kubectl("get", "httproute", GLANCE, "-n", NAMESPACE, check=False)
        return cond.get("reason") == "HTTPRouteNotRequired" and gone.returncode != 0

    wait_until("the route deleted, HTTPRouteNotRequired", not_required, 120, 1)
    assert route_condition(node)["status"] == "True"

    def unrouted():
        return gateway.request(HOSTNAME, "GET", "/healthcheck")[0] == 404

    wait_until("the hostname no longer routed", unrouted, 60, 1)
