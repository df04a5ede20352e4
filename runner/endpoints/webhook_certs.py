"""The admission webhook's certificate, made and renewed by the operator itself.

``config/selfsigned`` installs the operator without cert-manager. Then every replica keeps
the webhook's certificate authority and serving certificate in one Secret of its own
namespace (``WEBHOOK_CERT_SECRET``), as Gatekeeper's and Kyverno's controllers do:

* the first replica to start makes a CA (ECDSA P-256, 10 years) and a serving certificate
  for the webhook Service's DNS names (1 year), and creates the Secret; a replica that
  loses that race (409 AlreadyExists) reads the winner's;
* every replica writes ``tls.crt``/``tls.key`` from the Secret into its cert dir (an
  emptyDir), where the webhook server reloads them for the next connection, and puts the
  CA bundle into ``clientConfig.caBundle`` of every webhook of the mutating and the
  validating configuration that it is missing from;
* every ``CHECK_INTERVAL`` it reads the Secret again: a serving certificate with less than
  a third of its life left, for other DNS names or not signed by the CA is made anew, and
  a CA with less than a year left is replaced; until the old CA expires the bundle holds
  both, so a replica still serving the old certificate is trusted while it picks up the
  new one. Writes carry the ``resourceVersion`` they read (409 Conflict: read again), so
  replicas never overwrite each other's certificate.

Nothing is written when nothing is due: a check is three GETs. What is due is decided by
:func:`due`, a pure function of the Secret's data, the names and the time.
"""

from __future__ import annotations

import base64
import datetime
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from runner.endpoints import certificates
from runner.logs import Log

log = Log("webhook-cert")

CA_LIFETIME = datetime.timedelta(days=3650)
CA_RENEW_BEFORE = datetime.timedelta(days=365)
CERT_LIFETIME = datetime.timedelta(days=365)
CERT_RENEW_BEFORE = CERT_LIFETIME / 3
CHECK_INTERVAL = 300.0
"""Seconds between two checks of the Secret and the webhook configurations."""
BACKDATE = datetime.timedelta(minutes=5)
"""Certificates start this long before they are made: clocks of nodes differ."""
CA_BUNDLE_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
CERT_KEY = "tls.crt"
KEY_KEY = "tls.key"
LABELS = {
    "app.kubernetes.io/name": "glance-operator",
    "app.kubernetes.io/component": "webhook-certificate",
}
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def service_dns_names(service: str, namespace: str) -> tuple[str, ...]:
    """The names the API server may use for the webhook Service (it calls
    ``<service>.<namespace>.svc``)."""
    return (
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    )


@dataclass(frozen=True)
class Material:
    """The Secret's data, PEM."""

    ca_bundle: bytes
    """The current CA first, then the previous one while it is valid."""
    ca_key: bytes
    cert: bytes
    key: bytes

    def data(self) -> dict[str, str]:
        """The Secret's ``data`` (base64)."""
        return {
            CA_BUNDLE_KEY: _b64(self.ca_bundle),
            CA_KEY_KEY: _b64(self.ca_key),
            CERT_KEY: _b64(self.cert),
            KEY_KEY: _b64(self.key),
        }

    @classmethod
    def from_secret(cls, secret: Mapping[str, Any] | None) -> Material | None:
        data = (secret or {}).get("data") or {}
        try:
            return cls(
                *(base64.b64decode(data[k]) for k in (CA_BUNDLE_KEY, CA_KEY_KEY, CERT_KEY, KEY_KEY))
            )
        except (KeyError, ValueError, TypeError):
            return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _pem_certs(bundle: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(bundle)


def due(
    material: Material | None, dns_names: Sequence[str], now: datetime.datetime
) -> tuple[str, bool] | None:
    """Why the Secret must be written, and whether the CA must be made anew; None when
    it serves as it is."""
    if material is None:
        return "no certificate yet", True
    try:
        ca = _pem_certs(material.ca_bundle)[0]
        ca_key = serialization.load_pem_private_key(material.ca_key, None)
        cert = x509.load_pem_x509_certificate(material.cert)
        serialization.load_pem_private_key(material.key, None)
    except (ValueError, IndexError, TypeError) as error:
        return f"unreadable ({error})", True
    if ca.public_key() != ca_key.public_key():
        return "the CA key does not match the CA", True
    if ca.not_valid_after_utc - now < CA_RENEW_BEFORE:
        return f"the CA expires {ca.not_valid_after_utc:%Y-%m-%d}", True
    try:
        cert.verify_directly_issued_by(ca)
    except Exception as error:  # cryptography's InvalidSignature, ValueError, TypeError
        return f"the certificate is not signed by the CA ({type(error).__name__})", False
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    if sorted(names.get_values_for_type(x509.DNSName)) != sorted(dns_names):
        return "the webhook Service's names changed", False
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    if cert.not_valid_after_utc - now < lifetime / 3:
        return f"the certificate expires {cert.not_valid_after_utc:%Y-%m-%d}", False
    return None


def make(
    dns_names: Sequence[str],
    now: datetime.datetime,
    previous: Material | None = None,
    new_ca: bool = True,
) -> Material:
    """A serving certificate for ``dns_names``: signed by ``previous``'s CA, or by a new
    CA (``new_ca``), whose bundle then keeps the previous CA while it is valid."""
    if new_ca or previous is None:
        ca, ca_key = certificates.make_ca(
            "c5c3-glance webhook CA", now - BACKDATE, now + CA_LIFETIME, key_identifier=True
        )
        bundle = certificates.cert_pem(ca)
        if previous is not None:
            old = _valid_certs(previous.ca_bundle, now)[:1]
            bundle += b"".join(certificates.cert_pem(c) for c in old)
        ca_key_pem = certificates.key_pem(ca_key)
    else:
        ca = _pem_certs(previous.ca_bundle)[0]
        ca_key = serialization.load_pem_private_key(previous.ca_key, None)
        bundle = b"".join(certificates.cert_pem(c) for c in _valid_certs(previous.ca_bundle, now))
        ca_key_pem = previous.ca_key
    cert, key = certificates.issue(
        ca,
        ca_key,
        dns_names[0],
        now - BACKDATE,
        min(now + CERT_LIFETIME, ca.not_valid_after_utc),
        dns_names=dns_names,
        end_entity=True,
    )
    return Material(bundle, ca_key_pem, certificates.cert_pem(cert), certificates.key_pem(key))


def _valid_certs(bundle: bytes, now: datetime.datetime) -> list[x509.Certificate]:
    try:
        return [c for c in _pem_certs(bundle) if c.not_valid_after_utc > now]
    except ValueError:
        return []


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass
class CertRotator:
    """Keeps the Secret, the cert dir and the webhook configurations' CA bundle in step."""

    client: Any
    """The collection's ``KubeClient``."""
    namespace: str
    secret_name: str
    service_name: str
    cert_dir: Path
    webhook_configurations: Mapping[str, str]
    """{kind: name} of the mutating and the validating configuration."""
    clock: Callable[[], datetime.datetime] = _now
    on_ready: Callable[[], None] | None = None
    """Called after a check that left serving files in the cert dir."""

    def __post_init__(self) -> None:
        self.dns_names = service_dns_names(self.service_name, self.namespace)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.writes = 0
        """API writes made (tests and the bench count them)."""

    # -- one check ---------------------------------------------------------------------
    def check(self) -> None:
        """Make or renew what is due, write the files, inject the CA bundle. Raises the
        API's errors."""
        material = self._secret_material()
        self._write_files(material)
        for kind, name in self.webhook_configurations.items():
            self._inject(kind, name, material.ca_bundle)

    def _secret_material(self) -> Material:
        for _attempt in range(5):
            secret = self.client.get("v1", "Secret", self.secret_name, self.namespace)
            current = Material.from_secret(secret)
            reason = due(current, self.dns_names, self.clock())
            if reason is None:
                return current
            why, new_ca = reason
            fresh = make(self.dns_names, self.clock(), current, new_ca=new_ca)
            try:
                if secret is None:
                    self.client.create(self._secret(fresh))
                else:
                    self.client.patch(
                        "v1",
                        "Secret",
                        self.secret_name,
                        self.namespace,
                        {
                            "metadata": {"resourceVersion": secret["metadata"]["resourceVersion"]},
                            "data": fresh.data(),
                        },
                    )
            except Exception as error:
                if getattr(error, "already_exists", False) or getattr(error, "conflict", False):
                    log.info("another replica wrote the certificate first; reading it")
                    continue
                raise
            self.writes += 1
            log.info(
                "webhook certificate written",
                secret=f"{self.namespace}/{self.secret_name}",
                reason=why,
                new_ca=new_ca,
                dns_names=list(self.dns_names),
            )
            return fresh
        raise RuntimeError(f"Secret {self.namespace}/{self.secret_name}: changed under every write")

    def _secret(self, material: Material) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": self.secret_name, "namespace": self.namespace, "labels": LABELS},
            "type": "kubernetes.io/tls",
            "data": material.data(),
        }

    def _write_files(self, material: Material) -> None:
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        # The key first: the webhook server keeps its certificate while the pair mismatches.
        for name, data in ((KEY_KEY, material.key), (CERT_KEY, material.cert)):
            path = self.cert_dir / name
            if path.is_file() and path.read_bytes() == data:
                continue
            fd, tmp = tempfile.mkstemp(dir=self.cert_dir, prefix=f".{name}.")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)

    def _inject(self, kind: str, name: str, bundle: bytes) -> None:
        config = self.client.get("admissionregistration.k8s.io/v1", kind, name)
        if config is None:
            log.warning(
                "webhook configuration not found; no CA bundle injected", kind=kind, name=name
            )
            return
        wanted = _b64(bundle)
        patch: list[dict[str, Any]] = [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": config["metadata"]["resourceVersion"],
            }
        ]
        for index, webhook in enumerate(config.get("webhooks") or []):
            if (webhook.get("clientConfig") or {}).get("caBundle") != wanted:
                patch.append(
                    {
                        "op": "add",
                        "path": f"/webhooks/{index}/clientConfig/caBundle",
                        "value": wanted,
                    }
                )
        if len(patch) == 1:
            return
        self.client.patch(
            "admissionregistration.k8s.io/v1",
            kind,
            name,
            None,
            patch,
            content_type="application/json-patch+json",
        )
        self.writes += 1
        log.info("CA bundle injected", kind=kind, name=name, webhooks=len(patch) - 1)

    # -- the loop ----------------------------------------------------------------------
    def start(self, interval: float = CHECK_INTERVAL) -> CertRotator:
        """Check now and every ``interval`` seconds in a thread; a failed check is logged
        and tried again after ``min(interval, 10 s)``."""

        def loop() -> None:
            wait = 0.0
            while not self._stop.wait(wait):
                try:
                    self.check()
                except Exception as error:
                    log.error("webhook certificate check failed", error=str(error))
                    wait = min(interval, 10.0)
                    continue
                if self.on_ready is not None:
                    self.on_ready()
                wait = interval

        self._thread = threading.Thread(target=loop, name="webhook-cert", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
