"""Certificate authorities and the certificates they sign: the one place that makes them.

Three makers use it, each with its own names, lifetimes and extensions, passed in:

* the runner's self-signed mode (``webhook_certs``): the webhook's CA and its serving
  certificate, with the key identifiers and the end-entity constraint;
* the one-node cluster (``hack/node/pki.py``): its CA and the components' client and
  serving certificates;
* the tests (``tests/support/tls.py``): a throw-away CA and a server certificate for
  127.0.0.1.

Every key is ECDSA P-256 and every signature SHA-256; keys are PEM, PKCS #8, unencrypted.
Nothing here writes a file or reads the clock: the callers decide the validity and where
the PEM goes.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVER_AUTH = (ExtendedKeyUsageOID.SERVER_AUTH,)
"""The extended key usage of a serving certificate."""
# A CA's key signs certificates, CRLs and (ECDSA) digital signatures; nothing else. In
# KeyUsage's order: digital_signature, content_commitment, key_encipherment,
# data_encipherment, key_agreement, key_cert_sign, crl_sign, encipher_only, decipher_only.
CA_KEY_USAGE = x509.KeyUsage(True, False, False, False, False, True, True, False, False)


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: PrivateKeyTypes) -> bytes:
    """``key`` as PEM: PKCS #8, unencrypted."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_ca(
    common_name: str,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    path_length: int | None = 0,
    key_identifier: bool = False,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA named ``common_name`` and its key: may sign certificates and CRLs,
    ``path_length`` CAs below it (None: any); ``key_identifier`` adds its
    SubjectKeyIdentifier."""
    key = new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(CA_KEY_USAGE, critical=True)
    )
    if key_identifier:
        builder = builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
        )
    return builder.sign(key, hashes.SHA256()), key


def issue(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    *,
    organization: str | None = None,
    ips: Iterable[str] = (),
    dns_names: Iterable[str] = (),
    usages: Sequence[x509.ObjectIdentifier] = SERVER_AUTH,
    end_entity: bool = False,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate for ``common_name`` (and ``organization``) signed by ``ca`` and its
    new key: the subject alternative names ``ips`` then ``dns_names`` (the extension only
    when there are any), the extended key ``usages``; ``end_entity`` adds the critical
    ``CA:FALSE`` constraint and the AuthorityKeyIdentifier of ``ca``'s key."""
    key = new_key()
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )
    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    names += [x509.DNSName(n) for n in dns_names]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
    if end_entity:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        ).add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.public_key()), critical=False
        )
    return builder.sign(ca_key, hashes.SHA256()), key
