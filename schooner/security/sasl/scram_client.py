"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), client side, without channel binding: the
counterpart of scram_server.py, for Schooner's own tools (the CLI's admin client logs in with it).

    client = ScramClient("SCRAM-SHA-512", "alice", "secret")
    first = client.first()                  # send; the server answers server-first
    final = client.final(server_first)      # send; the server answers server-final
    client.verify(server_final)             # raises SaslFailure unless the server knew the password

No I/O: the caller carries the tokens (in SaslAuthenticate requests).
"""

from __future__ import annotations

import hmac
import os

from ..scram import MECHANISMS, credential_from_salted, salted_password
from .mechanism import SaslFailure
from .scram_server import b64, encode_saslname, scram_text, unb64

GS2_HEADER = "n,,"  # no channel binding, no authorization id


class ScramClient:
    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._user = user
        self._password = password
        self._nonce = nonce or b64(os.urandom(24))
        self._bare = ""
        self._server_signature = b""

    def first(self) -> bytes:
        self._bare = f"n={encode_saslname(self._user)},r={self._nonce}"
        return (GS2_HEADER + self._bare).encode()

    def final(self, server_first: bytes) -> bytes:
        """The client-final message: the proof that the client knows the password."""
        text = scram_text(server_first)
        attrs = _attributes(text)
        if "e" in attrs:
            raise SaslFailure(f"Authentication failed: the server says {attrs['e']}")
        nonce, salt_text, iterations_text = attrs.get("r", ""), attrs.get("s"), attrs.get("i", "")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslFailure("Authentication failed: the server's nonce does not extend ours")
        if salt_text is None or not iterations_text.isdigit():
            raise SaslFailure("Authentication failed: the server-first message has no salt or iterations")
        salt = unb64(salt_text, "salt")
        salted = salted_password(self.mechanism, self._password.encode(), salt, int(iterations_text))
        credential = credential_from_salted(self.mechanism, salted, salt, int(iterations_text))
        client_key = hmac.digest(salted, b"Client Key", self._digest)
        without_proof = f"c={b64(GS2_HEADER.encode())},r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = hmac.digest(credential.stored_key, auth_message, self._digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = hmac.digest(credential.server_key, auth_message, self._digest)
        return f"{without_proof},p={b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        """Checks the server's signature: a server that does not hold the user's keys cannot make it."""
        attrs = _attributes(scram_text(server_final))
        if "e" in attrs:
            raise SaslFailure(f"Authentication failed: the server says {attrs['e']}")
        if not self._server_signature or not hmac.compare_digest(
            unb64(attrs.get("v", ""), "server signature"), self._server_signature
        ):
            raise SaslFailure("Authentication failed: the server's signature is wrong")


def plain_token(user: str, password: str) -> bytes:
    """PLAIN's one message (RFC 4616): no authorization id, the user, the password."""
    return b"\0" + user.encode() + b"\0" + password.encode()


def _attributes(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out.setdefault(key, value)
    return out
