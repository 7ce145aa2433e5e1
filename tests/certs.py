"""Certificate authorities and certificates for TLS tests, made with the openssl command line.

`make_certs(folder)` writes two CAs: `ca` signs the broker's certificate (for 127.0.0.1 and localhost) and
two client certificates, `alice` (CN=alice,OU=clients,O=Schooner) and `bob` (CN=bob,OU=clients,O=Schooner);
`other_ca` signs `mallory`, a client certificate the broker must refuse. Keys are unencrypted PEM files,
except `alice_encrypted.key` (password `alice-key-pass`), for clients that want a key password.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"
KEY_PASSWORD = "alice-key-pass"


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Certs:
    folder: Path
    ca: Path  # the CA's certificate: clients trust it, and the broker checks client certificates with it
    broker: Pair
    alice: Pair
    bob: Pair
    other_ca: Path
    mallory: Pair  # signed by other_ca
    alice_encrypted_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(folder: Path, name: str, subject: str) -> Path:
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", DAYS, "-subj", subject,
        "-keyout", f"{name}.key", "-out", f"{name}.crt", cwd=folder,
    )  # fmt: skip
    return folder / f"{name}.crt"


def _signed(folder: Path, name: str, subject: str, ca: str, extensions: str) -> Pair:
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
        "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=folder,
    )  # fmt: skip
    (folder / f"{name}.ext").write_text(extensions)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
        "-days", DAYS, "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=folder,
    )  # fmt: skip
    return Pair(folder / f"{name}.crt", folder / f"{name}.key")


def make_certs(folder: Path) -> Certs:
    folder.mkdir(parents=True, exist_ok=True)
    ca = _ca(folder, "ca", "/O=Schooner Test/CN=Schooner Test CA")
    other_ca = _ca(folder, "other_ca", "/O=Elsewhere/CN=Another CA")
    server = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    client = "extendedKeyUsage=clientAuth\n"
    broker = _signed(folder, "broker", "/O=Schooner/CN=localhost", "ca", server)
    alice = _signed(folder, "alice", "/O=Schooner/OU=clients/CN=alice", "ca", client)
    bob = _signed(folder, "bob", "/O=Schooner/OU=clients/CN=bob", "ca", client)
    mallory = _signed(folder, "mallory", "/O=Schooner/OU=clients/CN=mallory", "other_ca", client)
    _openssl(
        "pkey", "-in", "alice.key", "-aes256", "-passout", f"pass:{KEY_PASSWORD}",
        "-out", "alice_encrypted.key", cwd=folder,
    )  # fmt: skip
    return Certs(folder, ca, broker, alice, bob, other_ca, mallory, folder / "alice_encrypted.key")
