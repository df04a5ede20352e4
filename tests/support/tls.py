"""A throw-away certificate authority and a server certificate for 127.0.0.1, for tests.

Servers the tests start on loopback (the admission webhook, the test double of the API
server) speak TLS with a certificate signed by a CA made here, so the clients under test
verify a real chain instead of switching verification off. The certificates are made by the
runner's certificate maker (``runner/endpoints/certificates.py``, on ``cryptography``).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from runner.endpoints import certificates


@dataclass(frozen=True)
class ServerTLS:
    """PEM files in one directory: ``ca.crt``, ``tls.crt`` and ``tls.key`` (cert-manager's names)."""

    directory: Path

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def cert_file(self) -> Path:
        return self.directory / "tls.crt"

    @property
    def key_file(self) -> Path:
        return self.directory / "tls.key"

    @property
    def ca_pem(self) -> bytes:
        return self.ca_file.read_bytes()


def make_server_tls(directory: Path, dns_names: tuple[str, ...] = ("localhost",)) -> ServerTLS:
    """Write a CA and a server certificate for 127.0.0.1 and ``dns_names`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    validity = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
    ca, ca_key = certificates.make_ca("c5c3-glance test CA", *validity)
    cert, key = certificates.issue(
        ca, ca_key, "127.0.0.1", *validity, ips=("127.0.0.1",), dns_names=dns_names
    )
    tls = ServerTLS(directory)
    tls.ca_file.write_bytes(certificates.cert_pem(ca))
    tls.cert_file.write_bytes(certificates.cert_pem(cert))
    tls.key_file.write_bytes(certificates.key_pem(key))
    tls.key_file.chmod(0o600)
    return tls
