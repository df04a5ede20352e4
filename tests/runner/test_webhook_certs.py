"""The operator's own webhook certificate (``runner/endpoints/webhook_certs.py``, ``config/selfsigned``).

What is due is a pure function of the Secret's data, the names and the time: tested here
table by table, with the certificates made for real. The rotator then runs against a real
kube-apiserver (``KUBE_ASSETS_DIR``; skipped, saying why, otherwise): two replicas share
one Secret, the CA lands in every webhook of both configurations, nothing is written when
nothing is due, a renewal keeps the CA and a CA renewal keeps the old CA in the bundle,
and a write that lost a race reads the winner's certificate. The API server calling the
webhook with that CA is the cluster tier's (``tests/cluster``).
"""

from __future__ import annotations

import base64
import datetime
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from integration.kube_harness import started_apiserver

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient
from runner.endpoints import webhook_certs as wc
from runner.settings import SettingsError, parse_settings

NOW = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.UTC)
NAMES = wc.service_dns_names("c5c3-glance-webhook-service", "c5c3-glance-system")
DAY = datetime.timedelta(days=1)


def certs(bundle: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(bundle)


def test_the_names_are_the_ones_the_api_server_calls():
    assert NAMES == (
        "c5c3-glance-webhook-service.c5c3-glance-system.svc",
        "c5c3-glance-webhook-service.c5c3-glance-system.svc.cluster.local",
    )


def test_nothing_yet_or_unreadable_means_a_new_ca():
    assert wc.due(None, NAMES, NOW) == ("no certificate yet", True)
    broken = wc.Material(b"not pem", b"", b"", b"")
    reason, new_ca = wc.due(broken, NAMES, NOW)
    assert reason.startswith("unreadable") and new_ca


def test_a_fresh_certificate_is_not_due_until_a_third_of_its_life_is_left():
    made = wc.make(NAMES, NOW)
    cert = x509.load_pem_x509_certificate(made.cert)
    assert sorted(
        cert.extensions.get_extension_for_class(
            x509.SubjectAlternativeName
        ).value.get_values_for_type(x509.DNSName)
    ) == sorted(NAMES)
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == wc.CERT_LIFETIME + wc.BACKDATE
    assert wc.due(made, NAMES, NOW) is None
    assert wc.due(made, NAMES, NOW + 240 * DAY) is None
    reason, new_ca = wc.due(made, NAMES, NOW + 250 * DAY)
    assert reason.startswith("the certificate expires") and not new_ca


def test_other_names_or_another_ca_renew_the_certificate_only():
    made = wc.make(NAMES, NOW)
    assert wc.due(made, ("other.c5c3-glance-system.svc",), NOW) == (
        "the webhook Service's names changed",
        False,
    )
    other = wc.make(NAMES, NOW)
    mixed = wc.Material(made.ca_bundle, made.ca_key, other.cert, other.key)
    reason, new_ca = wc.due(mixed, NAMES, NOW)
    assert reason.startswith("the certificate is not signed by the CA") and not new_ca
    wrong_key = wc.Material(made.ca_bundle, other.ca_key, made.cert, made.key)
    assert wc.due(wrong_key, NAMES, NOW) == ("the CA key does not match the CA", True)


def test_a_renewal_keeps_the_ca():
    made = wc.make(NAMES, NOW)
    later = NOW + 250 * DAY
    renewed = wc.make(NAMES, later, made, new_ca=False)
    assert renewed.ca_bundle == made.ca_bundle and renewed.ca_key == made.ca_key
    assert renewed.cert != made.cert
    assert wc.due(renewed, NAMES, later) is None
    x509.load_pem_x509_certificate(renewed.cert).verify_directly_issued_by(certs(made.ca_bundle)[0])


def test_a_ca_near_its_end_is_replaced_and_the_bundle_keeps_the_old_one():
    made = wc.make(NAMES, NOW)
    late = NOW + wc.CA_LIFETIME - 300 * DAY
    reason, new_ca = wc.due(made, NAMES, late)
    assert reason.startswith("the CA expires") and new_ca
    replaced = wc.make(NAMES, late, made, new_ca=True)
    new, old = certs(replaced.ca_bundle)
    assert old == certs(made.ca_bundle)[0]
    assert new != old
    x509.load_pem_x509_certificate(replaced.cert).verify_directly_issued_by(new)
    assert wc.due(replaced, NAMES, late) is None
    # A later serving renewal drops the old CA once it has expired.
    after = NOW + wc.CA_LIFETIME + DAY
    renewed = wc.make(NAMES, after, replaced, new_ca=False)
    assert certs(renewed.ca_bundle) == [new]


def test_the_certificate_serves_tls_a_client_of_the_bundle_trusts(tmp_path):
    made = wc.make(NAMES, datetime.datetime.now(datetime.UTC))
    (tmp_path / "tls.crt").write_bytes(made.cert)
    (tmp_path / "tls.key").write_bytes(made.key)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(cadata=made.ca_bundle.decode())
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_ctx.wrap_socket(raw, server_hostname=NAMES[0]) as tls,
    ):
        assert tls.recv(2) == b"ok"
    thread.join(timeout=5)
    listener.close()


def test_the_settings_name_what_a_self_managed_certificate_also_needs():
    with pytest.raises(SettingsError) as raised:
        parse_settings([], {"WEBHOOK_CERT_SECRET": "cert", "WEBHOOK_SERVICE": "svc"}, 1)
    assert str(raised.value) == (
        "WEBHOOK_CERT_SECRET: a self-managed webhook certificate also needs "
        "--mutating-webhook-configuration, --validating-webhook-configuration"
    )
    settings = parse_settings(
        [],
        {
            "WEBHOOK_CERT_SECRET": "cert",
            "WEBHOOK_SERVICE": "svc",
            "MUTATING_WEBHOOK_CONFIGURATION": "m",
            "VALIDATING_WEBHOOK_CONFIGURATION": "v",
        },
        1,
    )
    assert (settings.webhook_cert_secret, settings.webhook_service) == ("cert", "svc")
    assert parse_settings([], {}, 1).webhook_cert_secret is None


# --- against a real kube-apiserver ---------------------------------------------------------

NAMESPACE = "c5c3-glance-system"


def webhook_configuration(kind: str, name: str) -> dict:
    prefix = "m" if kind.startswith("Mutating") else "v"
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": f"{prefix}{resource}.kb.io",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {
                    "service": {
                        "name": "c5c3-glance-webhook-service",
                        "namespace": NAMESPACE,
                        "path": f"/{prefix}-{resource}",
                    }
                },
                "rules": [
                    {
                        "apiGroups": ["glance.openstack.c5c3.io"],
                        "apiVersions": ["v1alpha1"],
                        "operations": ["CREATE"],
                        "resources": [f"{resource}s"],
                    }
                ],
            }
            for resource in ("glance", "glancebackend")
        ],
    }


CONFIGURATIONS = {
    "MutatingWebhookConfiguration": "c5c3-glance-mutating-webhook-configuration",
    "ValidatingWebhookConfiguration": "c5c3-glance-validating-webhook-configuration",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with started_apiserver() as server:
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("certs") / "kubeconfig")
        client = KubeClient.from_environment(str(kubeconfig))
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        for kind, name in CONFIGURATIONS.items():
            client.create(webhook_configuration(kind, name))
        yield client


class Clock:
    def __init__(self) -> None:
        self.now = datetime.datetime.now(datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now


def rotator(client, cert_dir: Path, clock: Clock, secret: str) -> wc.CertRotator:
    return wc.CertRotator(
        client,
        namespace=NAMESPACE,
        secret_name=secret,
        service_name="c5c3-glance-webhook-service",
        cert_dir=cert_dir,
        webhook_configurations=CONFIGURATIONS,
        clock=clock,
    )


def bundles(client) -> set[str]:
    found = set()
    for kind, name in CONFIGURATIONS.items():
        config = client.get("admissionregistration.k8s.io/v1", kind, name)
        found |= {w["clientConfig"].get("caBundle", "") for w in config["webhooks"]}
    return found


@pytest.mark.integration
def test_two_replicas_share_one_certificate_and_inject_its_ca(cluster, tmp_path):
    clock = Clock()
    first = rotator(cluster, tmp_path / "a", clock, "shared-cert")
    second = rotator(cluster, tmp_path / "b", clock, "shared-cert")
    first.check()
    assert first.writes == 3  # the Secret, then each configuration's bundle
    second.check()
    assert second.writes == 0
    secret = cluster.get("v1", "Secret", "shared-cert", NAMESPACE)
    assert secret["type"] == "kubernetes.io/tls"
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    for cert_dir in (tmp_path / "a", tmp_path / "b"):
        assert (cert_dir / "tls.crt").read_bytes() == data["tls.crt"]
        assert (cert_dir / "tls.key").read_bytes() == data["tls.key"]
        assert oct((cert_dir / "tls.key").stat().st_mode & 0o777) == "0o600"
    assert bundles(cluster) == {base64.b64encode(data["ca.crt"]).decode()}
    first.check()
    assert first.writes == 3, "a check with nothing due writes nothing"


@pytest.mark.integration
def test_renewals_keep_serving_and_the_ca_bundle_trusts_old_and_new(cluster, tmp_path):
    clock = Clock()
    replica = rotator(cluster, tmp_path / "r", clock, "renewed-cert")
    replica.check()
    original = wc.Material.from_secret(cluster.get("v1", "Secret", "renewed-cert", NAMESPACE))

    clock.now += 250 * DAY  # a third of the serving certificate's life left
    replica.check()
    assert replica.writes == 4, "the Secret once more; the bundle is unchanged"
    renewed = wc.Material.from_secret(cluster.get("v1", "Secret", "renewed-cert", NAMESPACE))
    assert renewed.ca_bundle == original.ca_bundle and renewed.cert != original.cert
    assert (tmp_path / "r" / "tls.crt").read_bytes() == renewed.cert

    clock.now += wc.CA_LIFETIME - 600 * DAY  # the CA has less than a year left
    replica.check()
    rotated = wc.Material.from_secret(cluster.get("v1", "Secret", "renewed-cert", NAMESPACE))
    new, old = certs(rotated.ca_bundle)
    assert old == certs(original.ca_bundle)[0]
    assert (tmp_path / "r" / "tls.crt").read_bytes() == rotated.cert
    x509.load_pem_x509_certificate(rotated.cert).verify_directly_issued_by(new)
    assert bundles(cluster) == {base64.b64encode(rotated.ca_bundle).decode()}
    assert replica.writes == 7


@pytest.mark.integration
def test_a_replica_that_loses_the_race_takes_the_winners_certificate(cluster, tmp_path):
    clock = Clock()
    winner = rotator(cluster, tmp_path / "w", clock, "raced-cert")
    winner.check()
    clock.now += 250 * DAY

    class Racing:
        """The loser's client: the winner renews between the loser's read and write."""

        def __init__(self, inner) -> None:
            self.inner = inner
            self.raced = False

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def patch(self, *args, **kwargs):
            if not self.raced:
                self.raced = True
                winner.check()
            return self.inner.patch(*args, **kwargs)

    racing = Racing(cluster)
    loser = rotator(racing, tmp_path / "l", clock, "raced-cert")
    loser.check()
    assert racing.raced, "the loser's write met the winner's renewal"
    assert loser.writes == 0
    stored = wc.Material.from_secret(cluster.get("v1", "Secret", "raced-cert", NAMESPACE))
    assert (tmp_path / "l" / "tls.crt").read_bytes() == stored.cert
    assert (tmp_path / "w" / "tls.crt").read_bytes() == stored.cert
