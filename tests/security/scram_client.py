"""A SCRAM client written from RFC 5802's formulas, for tests: it computes what a client sends and
what a server must answer, independently of schooner.security."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

DIGESTS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass
class ScramClient:
    mechanism: str
    user: str
    password: str
    nonce: str
    gs2_header: str = "n,,"
    server_signature: bytes = b""

    @property
    def digest(self) -> str:
        return DIGESTS[self.mechanism]

    def first(self, extensions: str = "") -> bytes:
        name = self.user.replace("=", "=3D").replace(",", "=2C")
        self.bare = f"n={name},r={self.nonce}{extensions}"
        return (self.gs2_header + self.bare).encode()

    def final(self, server_first: bytes, nonce: str | None = None) -> bytes:
        """The client-final for server_first; `nonce` replaces the combined nonce (a forged one)."""
        attrs = dict(a.split("=", 1) for a in server_first.decode().split(","))
        salt, iterations = base64.b64decode(attrs["s"]), int(attrs["i"])
        salted = hashlib.pbkdf2_hmac(self.digest, self.password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self.digest)
        stored_key = hashlib.new(self.digest, client_key).digest()
        without_proof = f"c={b64(self.gs2_header.encode())},r={nonce or attrs['r']}"
        auth_message = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, self.digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self.digest)
        self.server_signature = hmac.digest(server_key, auth_message, self.digest)
        return f"{without_proof},p={b64(proof)}".encode()

    def verify(self, server_final: bytes) -> bool:
        return hmac.compare_digest(server_final, f"v={b64(self.server_signature)}".encode())
