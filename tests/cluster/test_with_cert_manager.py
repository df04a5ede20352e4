"""The operator's webhook certificate from the real cert-manager: ``make cluster-addons``
(cert-manager v1.21.2's controller and CA injector from its Go module and chart), then
``kubectl apply -k config/default`` over the tier's ``config/selfsigned`` install and back,
as docs/cluster.md "The operator with cert-manager" shows it. No test writes a status of
cert-manager's kinds but the one ``cmctl renew`` writes: its controllers do.

1. ``make cluster-addons`` says cert-manager is installed; its two Deployments run.
2. ``config/default``: cert-manager issues the serving certificate (its CertificateRequest
   approved by cert-manager's own approver), its cainjector puts the certificate's CA into
   both webhook configurations, and the manager serves the Secret's certificate: the API
   server calls the webhook over TLS it verifies, so a Glance is admitted and a Glance
   naming a PriorityClass that does not exist is refused by the validating webhook. No
   admission failed while the manager Deployment rolled (a dry-run create every second).
3. Renewal without a restart: the Certificate made short-lived (``duration: 1h``,
   ``renewBefore: 59m30s``: a new certificate every 30 s) and renewed once by hand, as
   ``cmctl renew`` does; every manager pod serves each new certificate without a restart,
   the cainjector keeps the previous CA beside the new one, and no admission fails while
   the certificates change (a dry-run create every second, through the API server).
4. Back to ``config/selfsigned`` as docs/install.md says (the Certificate and the Issuer
   deleted first): the operator writes its own CA into cert-manager's Secret and the
   webhook answers under it.

The add-ons stay installed for test_with_secrets_from_openbao.py, which runs next and
removes them with ``make cluster-addons-down``; the node's teardown removes them otherwise.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import ssl
import threading
import time
from typing import Any

import pytest
import yaml

from cluster.conftest import MANAGER, OPERATOR_NAMESPACE, wait_until
from cluster.objects import SAMPLE, conditions, get, pod_ready

pytestmark = pytest.mark.cluster

SECTION = "The operator with cert-manager"
CERTIFICATE = "c5c3-glance-serving-cert"
ISSUER = "c5c3-glance-selfsigned-issuer"
SECRET = "c5c3-glance-webhook-server-cert"
WEBHOOKS = {
    "mutatingwebhookconfiguration": "c5c3-glance-mutating-webhook-configuration",
    "validatingwebhookconfiguration": "c5c3-glance-validating-webhook-configuration",
}
NAMESPACE = "cert-manager-glance"  # this module's dry-run Glances (nothing is stored)
WEBHOOK_PORT = 9443
STEP_TIMEOUT = 180


def pem_certificates(data: str) -> list[bytes]:
    """The DER of each certificate of a base64 PEM bundle, in order."""
    text = base64.b64decode(data).decode()
    end = "-----END CERTIFICATE-----"
    blocks = [b.strip() for b in text.split(end) if b.strip()]
    return [ssl.PEM_cert_to_DER_cert(f"{b}\n{end}\n") for b in blocks]


def short(der: bytes) -> str:
    return hashlib.sha256(der).hexdigest()[:12]


def secret_certificates(node) -> tuple[bytes, list[bytes], dict[str, str]]:
    """The Secret's serving certificate, its ``ca.crt`` certificates, its annotations."""
    found = get(node, "secret", SECRET, "-n", OPERATOR_NAMESPACE)
    data = found["data"]
    return (
        pem_certificates(data["tls.crt"])[0],
        pem_certificates(data.get("ca.crt", "")) if data.get("ca.crt") else [],
        found["metadata"].get("annotations") or {},
    )


def bundles(node) -> dict[str, list[bytes]]:
    """Each webhook's caBundle, by ``<configuration>/<webhook>``."""
    out = {}
    for kind, name in WEBHOOKS.items():
        for hook in get(node, kind, name)["webhooks"]:
            out[f"{name}/{hook['name']}"] = pem_certificates(
                hook["clientConfig"].get("caBundle", "")
            )
    return out


def managers(node, terminating: bool = False) -> list[dict[str, Any]]:
    """The manager pods (not those on their way out, unless ``terminating``)."""
    selector = "control-plane=controller-manager"
    pods = get(node, "pods", "-n", OPERATOR_NAMESPACE, "-l", selector)["items"]
    return [p for p in pods if terminating or not p["metadata"].get("deletionTimestamp")]


def rolled_out(node) -> list[dict[str, Any]]:
    """The two manager pods Ready, and none of the replaced ones left."""
    return wait_until(
        "two manager pods Ready and no other",
        lambda: (
            len(pods := managers(node, terminating=True)) == 2
            and all(pod_ready(p) and not p["metadata"].get("deletionTimestamp") for p in pods)
            and pods
        ),
        STEP_TIMEOUT,
    )


def served(ip: str) -> bytes:
    """The certificate a manager pod's webhook server presents (not verified: compared)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection((ip, WEBHOOK_PORT), timeout=5) as raw,
        context.wrap_socket(raw) as tls,
    ):
        return tls.getpeercert(binary_form=True)


def glance(priority_class: str | None = None) -> str:
    """The minimal sample's Glance in this module's namespace, as YAML."""
    doc = next(d for d in yaml.safe_load_all(SAMPLE.read_text()) if d and d["kind"] == "Glance")
    doc["metadata"] = {"name": "glance", "namespace": NAMESPACE}
    if priority_class:
        doc["spec"].setdefault("deployment", {})["priorityClassName"] = priority_class
    return yaml.safe_dump(doc)


def admitted(node, text: str):
    """``kubectl create --dry-run=server`` of ``text``: through both webhooks, nothing kept."""
    return node.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=text, check=False
    )


def webhook_answers(node) -> None:
    """A Glance admitted by both webhooks, and one the validating webhook refuses (only it
    looks PriorityClasses up: the message is its own): the API server reached the webhook
    over TLS it verified."""
    done = admitted(node, glance())
    assert done.returncode == 0, done.stderr
    refused = admitted(node, glance("no-such-priority-class"))
    assert refused.returncode != 0
    assert 'Not found: "no-such-priority-class"' in refused.stderr, refused.stderr


def report(node) -> str:
    """cert-manager's kinds with their status, its controllers' log tails: for the log."""
    out = []
    for kind in ("certificates", "certificaterequests", "issuers"):
        done = node.kubectl("get", kind, "-n", OPERATOR_NAMESPACE, "-o", "wide", check=False)
        out.append(f"{kind}:\n{done.stdout or done.stderr}")
    for deployment in ("cert-manager", "cert-manager-cainjector"):
        logs = node.kubectl(
            "-n", "cert-manager", "logs", f"deploy/{deployment}", "--tail=30", check=False
        )  # fmt: skip
        out.append(f"--- cert-manager/{deployment}:\n{(logs.stdout or logs.stderr)[-4000:]}")
    return "\n".join(out)


class Admissions(threading.Thread):
    """A dry-run create through the API server (and so both webhooks) every second until
    stopped; the failures, with their time."""

    def __init__(self, node):
        super().__init__(daemon=True)
        self.node, self.text = node, glance()
        self.halt = threading.Event()
        self.count, self.failures = 0, []

    def run(self) -> None:
        while not self.halt.is_set():
            done = admitted(self.node, self.text)
            self.count += 1
            if done.returncode != 0:
                self.failures.append((time.strftime("%T"), done.stderr.strip()[-300:]))
            self.halt.wait(1)

    def stop(self) -> None:
        self.halt.set()
        self.join(30)


@pytest.fixture(scope="module")
def addons(shell, node, operator, say) -> list[str]:
    """``make cluster-addons`` as the doc shows it; its lines."""
    done = shell.ok("make cluster-addons", SECTION)
    say(f"[cert-manager] make cluster-addons:\n{done.stdout}{(done.stderr or '')[-1500:]}")
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    return done.stdout.strip().splitlines()


@pytest.fixture(scope="module")
def with_cert_manager(shell, node, addons, say) -> dict[str, Any]:
    """The operator moved to ``config/default``: the doc's lines, each as written; what the
    Secret and the bundles held once the manager rolled out."""
    started = time.monotonic()
    admissions = Admissions(node)  # while the manager Deployment rolls
    admissions.start()
    try:
        shell.ok("kubectl apply -k config/default", SECTION)
        shell.ok(f"kubectl -n {OPERATOR_NAMESPACE} wait certificate/{CERTIFICATE}", SECTION)
        shell.ok(f"kubectl -n {OPERATOR_NAMESPACE} rollout status deployment/{MANAGER}", SECTION)
        rolled_out(node)
    finally:
        admissions.stop()
    say(
        f"[cert-manager] config/default to the manager rolled out: "
        f"{time.monotonic() - started:.1f}s; {admissions.count} admissions meanwhile, "
        f"{len(admissions.failures)} failed: {admissions.failures[:3]}"
    )
    try:
        tls, ca, annotations = secret_certificates(node)
        yield {"tls": tls, "ca": ca, "annotations": annotations, "rollout": admissions}
    finally:
        say("[cert-manager] at the end:\n" + report(node))


def test_the_addons_install_cert_manager(node, addons):
    found = [line for line in addons if line.startswith("cert-manager: ")]
    assert found == [
        "cert-manager: v1.21.2 (controller and cainjector in cert-manager; "
        "its own admission webhook not installed)"
    ], addons
    for deployment in ("cert-manager", "cert-manager-cainjector"):
        got = get(node, "deployment", deployment, "-n", "cert-manager")
        assert got["status"].get("readyReplicas") == 1, got["status"]


def test_config_default_gets_its_certificate_from_cert_manager(node, with_cert_manager):
    certificate = get(node, "certificate", CERTIFICATE, "-n", OPERATOR_NAMESPACE)
    ready = conditions(certificate)["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "Ready"), certificate["status"]
    requests = get(node, "certificaterequests", "-n", OPERATOR_NAMESPACE)["items"]
    ours = [r for r in requests if r["metadata"]["annotations"].get(
        "cert-manager.io/certificate-name") == CERTIFICATE]  # fmt: skip
    assert ours, requests
    approved = conditions(ours[-1])["Approved"]
    # cert-manager's own approver, not a test
    assert (approved["status"], approved["reason"]) == ("True", "cert-manager.io"), approved
    annotations = with_cert_manager["annotations"]
    assert annotations["cert-manager.io/certificate-name"] == CERTIFICATE, annotations
    assert annotations["cert-manager.io/issuer-name"] == ISSUER, annotations
    # self-signed: the certificate is its own CA, and the cainjector put it into every webhook
    assert with_cert_manager["ca"] == [with_cert_manager["tls"]]
    for hook, bundle in bundles(node).items():
        assert with_cert_manager["tls"] in bundle, hook
    for pod in managers(node):
        assert served(pod["status"]["podIP"]) == with_cert_manager["tls"], pod["metadata"]["name"]
    webhook_answers(node)
    # the manager Deployment rolled from config/selfsigned's pods to these: the old ones
    # served until they left the webhook Service (--webhook-shutdown-delay)
    rollout = with_cert_manager["rollout"]
    assert rollout.count >= 10 and rollout.failures == [], rollout.failures


def test_a_renewed_certificate_is_served_without_a_restart(node, with_cert_manager, say):
    before = {p["metadata"]["uid"]: p for p in managers(node)}
    first = with_cert_manager["tls"]
    admissions = Admissions(node)
    admissions.start()
    try:
        node.kubectl(
            "-n", OPERATOR_NAMESPACE, "patch", f"certificate/{CERTIFICATE}", "--type=merge",
            "-p", '{"spec":{"duration":"1h","renewBefore":"59m30s"}}',
        )  # fmt: skip
        # what `cmctl renew` writes: the Issuing condition, on the status
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        issuing = {
            "type": "Issuing",
            "status": "True",
            "reason": "ManuallyTriggered",
            "message": "Certificate re-issuance manually triggered",
            "lastTransitionTime": now,
        }
        node.kubectl(
            "-n", OPERATOR_NAMESPACE, "patch", f"certificate/{CERTIFICATE}",
            "--subresource=status", "--type=json",
            "-p", yaml.safe_dump([{"op": "add", "path": "/status/conditions/-", "value": issuing}]),
        )  # fmt: skip
        seen: list[bytes] = []

        def renewed_and_served():
            tls = secret_certificates(node)[0]
            if tls == first or tls in seen[:-1]:
                return None
            if not seen or seen[-1] != tls:
                seen.append(tls)
            pods = managers(node)
            return all(served(p["status"]["podIP"]) == tls for p in pods) and len(seen) >= 3

        # the hand renewal, then two renewals of the short-lived certificate, each served
        wait_until("three renewed certificates, the last served", renewed_and_served, 240, 1)
    finally:
        admissions.stop()
        node.kubectl(
            "-n", OPERATOR_NAMESPACE, "patch", f"certificate/{CERTIFICATE}", "--type=merge",
            "-p", '{"spec":{"duration":null,"renewBefore":null}}', check=False,
        )  # fmt: skip
    say(
        f"[cert-manager] {len(seen)} renewals served; {admissions.count} admissions, "
        f"{len(admissions.failures)} failed: {admissions.failures[:3]}"
    )
    after = {p["metadata"]["uid"]: p for p in managers(node)}
    assert after.keys() == before.keys(), "a manager pod was replaced"
    for uid, pod in after.items():
        restarts = [c["restartCount"] for c in pod["status"]["containerStatuses"]]
        assert restarts == [c["restartCount"] for c in before[uid]["status"]["containerStatuses"]]
    # the cainjector appends: the bundle trusts the new certificates and still the first
    for hook, bundle in bundles(node).items():
        assert first in bundle and seen[-1] in bundle, (hook, [short(c) for c in bundle])
    assert admissions.count >= 20 and admissions.failures == [], admissions.failures


def test_back_to_selfsigned_the_operator_writes_its_own_ca(shell, node, with_cert_manager, say):
    shell.ok(f"kubectl -n {OPERATOR_NAMESPACE} delete certificate/{CERTIFICATE}", SECTION)
    shell.ok("kubectl apply -k config/selfsigned", SECTION)
    rolled = node.kubectl(
        "-n", OPERATOR_NAMESPACE, "rollout", "status", f"deployment/{MANAGER}", "--timeout=300s",
        check=False,
    )  # fmt: skip
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    rolled_out(node)

    def operator_ca():
        found = get(node, "secret", SECRET, "-n", OPERATOR_NAMESPACE)
        return "ca.key" in found["data"] and secret_certificates(node)

    tls, ca, _ = wait_until("the operator's own CA in the Secret", operator_ca, STEP_TIMEOUT)
    assert ca and ca != [with_cert_manager["tls"]], "still cert-manager's certificate as the CA"
    wait_until(
        "every webhook trusts the operator's CA",
        lambda: all(ca[0] in bundle for bundle in bundles(node).values()),
        STEP_TIMEOUT,
    )
    wait_until(
        "every manager serves the operator's certificate",
        lambda: all(served(p["status"]["podIP"]) == tls for p in managers(node)),
        STEP_TIMEOUT,
    )
    webhook_answers(node)
    left = node.kubectl(
        "get", "certificates,issuers", "-n", OPERATOR_NAMESPACE, "-o", "name"
    ).stdout
    assert left.strip() == "", left
    say(f"[cert-manager] back to config/selfsigned: the operator's CA {short(ca[0])}")
