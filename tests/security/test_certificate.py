"""A certificate's subject as an RFC 2253 name, checked against openssl's own RFC 2253 printing and against
the hex form Java (and so Kafka) gives attributes without an RFC 2253 keyword."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest

from schooner.security.certificate import CertificateError, escape_value, oid_text, subject_dn
from tests.certs import Certs


def self_signed(folder: Path, subject: str, *flags: str) -> bytes:
    """A throwaway self-signed certificate with this openssl -subj, as DER."""
    key, cert = folder / "k.pem", folder / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-days", "1", "-subj", subject, "-keyout", str(key), "-out", str(cert), *flags],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return ssl.PEM_cert_to_DER_cert(cert.read_text())


def openssl_rfc2253(der: bytes) -> str:
    out = subprocess.run(
        ["openssl", "x509", "-inform", "DER", "-noout", "-subject", "-nameopt", "RFC2253"],
        input=der, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return out.stdout.decode().strip().removeprefix("subject=")


def test_the_test_certificates(certs: Certs) -> None:
    def dn(path: Path) -> str:
        return subject_dn(ssl.PEM_cert_to_DER_cert(path.read_text()))

    assert dn(certs.alice.cert) == "CN=alice,OU=clients,O=Schooner"
    assert dn(certs.bob.cert) == "CN=bob,OU=clients,O=Schooner"
    assert dn(certs.broker.cert) == "CN=localhost,O=Schooner"
    assert dn(certs.ca) == "CN=Schooner Test CA,O=Schooner Test"


@pytest.mark.parametrize(
    "subject",
    [
        "/C=DE/ST=Berlin/L=Berlin/O=Schooner/OU=clients/CN=alice",
        "/DC=org/DC=example/UID=u123/CN=svc",
        '/O=Smith, Jones & Co/CN=a\\+b;c<d>e"f\\\\g',  # characters RFC 2253 escapes
        "/CN=#hash/OU= padded ",  # a leading # or space and a trailing space are escaped
    ],
)
def test_matches_openssl_rfc2253_output(tmp_path: Path, subject: str) -> None:
    der = self_signed(tmp_path, subject)
    assert subject_dn(der) == openssl_rfc2253(der)


def test_a_multi_valued_name_keeps_der_order(tmp_path: Path) -> None:
    der = self_signed(tmp_path, "/O=Schooner/OU=clients/CN=alice+UID=a1", "-multivalue-rdn")
    assert subject_dn(der) == "CN=alice+UID=a1,OU=clients,O=Schooner"  # as Java writes it
    assert openssl_rfc2253(der) == "UID=a1+CN=alice,OU=clients,O=Schooner"  # openssl reverses the values


def test_utf8_values_stay_as_they_are(tmp_path: Path) -> None:
    der = self_signed(tmp_path, "/O=Schooner/CN=Zoë Ångström", "-utf8")
    assert subject_dn(der) == "CN=Zoë Ångström,O=Schooner"


def test_attributes_without_a_keyword_are_an_oid_and_the_hex_of_their_value(tmp_path: Path) -> None:
    der = self_signed(tmp_path, "/O=Schooner/CN=alice/emailAddress=a@x.io")
    # emailAddress (1.2.840.113549.1.9.1) is an IA5String: tag 0x16, length 6, the text.
    assert subject_dn(der) == "1.2.840.113549.1.9.1=#1606" + b"a@x.io".hex() + ",CN=alice,O=Schooner"


def test_helpers() -> None:
    assert oid_text(bytes([0x55, 0x04, 0x03])) == "2.5.4.3"
    assert oid_text(bytes([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x01])) == "1.2.840.113549.1.9.1"
    assert (
        escape_value("a,b") == "a\\,b"
        and escape_value(" x ") == "\\ x\\ "
        and escape_value("a\nb") == "a\\0Ab"
    )


@pytest.mark.parametrize(
    "der", [b"", b"\x30", b"\x30\x05\x02\x01", b"\x04\x00", b"\x30\x00", b"\x30\x03\x30\x01\x02"]
)
def test_what_is_not_a_certificate_is_an_error(der: bytes) -> None:
    with pytest.raises(CertificateError):
        subject_dn(der)
