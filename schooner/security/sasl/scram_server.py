"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, without channel binding.

The exchange:
    client-first   n,,n=<user>,r=<client nonce>[,<extension>=<value>...]
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<combined nonce>,p=<base64 proof>
    server-final   v=<base64 server signature>
The proof is checked against the stored key (security/scram.py): the client knows the password only if
H(proof XOR HMAC(StoredKey, AuthMessage)) is the StoredKey. The server nonce is fresh for each exchange,
so a client-final recorded from another exchange names the wrong nonce and fails. (A nonce that ends
with the combined one is accepted too, as Kafka does: librdkafka 2.0 repeats the client nonce first.)

Accepted: the GS2 header "n,," or "n,a=<the same user>," (no channel binding: "p=" and "y" fail).
User names are SASLprep-light: "=2C" and "=3D" stand for "," and "="; no other "=" may appear, and no
Unicode normalization is applied (names compare as given). Kafka's `tokenauth` extension (delegation
tokens) is refused; other extensions are ignored. An unknown user gets a made-up salt and fails at the
proof like a wrong password, so the exchange does not tell which users exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

from ..scram import DEFAULT_ITERATIONS, MECHANISMS, ScramCredential
from .mechanism import (
    BAD_CREDENTIALS,
    Challenge,
    Credentials,
    Finished,
    NeedCredentials,
    SaslFailure,
    Step,
    Success,
)

NONCE_BYTES = 24
# Salts made up for unknown users come from this secret, so that one name always gets the same salt
# (a changing salt would tell a name apart from a real user's).
_FAKE_SALT_SECRET = os.urandom(32)

_START, _CREDENTIALS, _FINAL, _OVER = range(4)


def decode_saslname(text: str) -> str:
    """RFC 5802's saslname: "=2C" is ",", "=3D" is "="; any other "=" is an error."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "=":
            code = text[i + 1 : i + 3]
            if code == "2C":
                out.append(",")
            elif code == "3D":
                out.append("=")
            else:
                raise SaslFailure("Authentication failed: a user name has '=' only in =2C or =3D")
            i += 3
            continue
        if ch == ",":
            raise SaslFailure("Authentication failed: a user name has ',' only as =2C")
        out.append(ch)
        i += 1
    return "".join(out)


def encode_saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _valid_nonce(nonce: str) -> bool:
    # Printable ASCII but ','.
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslFailure(f"Authentication failed: the {what} is not base64") from None


class ScramServer:
    def __init__(self, name: str, nonce: str | None = None) -> None:
        if name not in MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {name}")
        self.name = name
        self._digest = MECHANISMS[name]
        self._server_nonce = nonce or b64(os.urandom(NONCE_BYTES))
        self._state = _START
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""  # the combined nonce
        self._user = ""
        self._credential: ScramCredential | None = None
        self._real = False  # False: a made-up credential for an unknown user, which always fails

    def step(self, token: bytes) -> Step:
        state, self._state = self._state, _OVER  # any failure below ends the exchange
        if state == _START:
            user = self._client_first(scram_text(token))
            self._state = _CREDENTIALS
            return NeedCredentials(user)
        if state == _FINAL:
            return self._client_final(scram_text(token))
        raise Finished.refuse()

    def resume(self, credentials: Credentials) -> Step:
        if self._state != _CREDENTIALS:
            self._state = _OVER
            raise Finished.refuse()
        found = credentials.get(self.name) if credentials else None
        self._real = found is not None
        self._credential = found if found is not None else self._made_up()
        c = self._credential
        self._server_first = f"r={self._nonce},s={b64(c.salt)},i={c.iterations}"
        self._state = _FINAL
        return Challenge(self._server_first.encode())

    # -- messages -----------------------------------------------------------------------------------
    def _client_first(self, message: str) -> str:
        flag, comma, rest = message.partition(",")
        authzid, comma2, bare = rest.partition(",")
        if not comma or not comma2:
            raise SaslFailure("Authentication failed: the client-first message has no GS2 header")
        if flag != "n":
            raise SaslFailure("Authentication failed: channel binding is not supported (GS2 flag must be n)")
        attrs = bare.split(",")
        if attrs[0].startswith("m="):
            raise SaslFailure("Authentication failed: mandatory SCRAM extensions are not supported")
        if len(attrs) < 2 or not attrs[0].startswith("n=") or not attrs[1].startswith("r="):
            raise SaslFailure("Authentication failed: the client-first message is not n=<user>,r=<nonce>")
        user = decode_saslname(attrs[0][2:])
        if not user:
            raise SaslFailure("Authentication failed: the user name is empty")
        if authzid and (not authzid.startswith("a=") or decode_saslname(authzid[2:]) != user):
            raise SaslFailure("Authentication failed: the authorization id must be empty or the user name")
        client_nonce = attrs[1][2:]
        if not _valid_nonce(client_nonce):
            raise SaslFailure("Authentication failed: the client nonce is not printable ASCII without ','")
        for extension in attrs[2:]:
            key, equals, _ = extension.partition("=")
            if not key or not equals:
                raise SaslFailure("Authentication failed: a SCRAM extension is not <name>=<value>")
            if key == "tokenauth":
                raise SaslFailure("Authentication failed: delegation tokens (tokenauth) are not supported")
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        self._nonce = client_nonce + self._server_nonce
        self._user = user
        return user

    def _client_final(self, message: str) -> Success:
        without_proof, sep, proof_text = message.rpartition(",p=")
        attrs = without_proof.split(",")
        if not sep or len(attrs) < 2 or not attrs[0].startswith("c=") or not attrs[1].startswith("r="):
            raise SaslFailure("Authentication failed: the client-final message is not c=..,r=..,p=..")
        if unb64(attrs[0][2:], "channel binding") != self._gs2_header.encode():
            raise SaslFailure("Authentication failed: the channel binding does not match the GS2 header")
        # The combined nonce, or (as Kafka accepts) any nonce that ends with it: librdkafka 2.0 sends
        # the client nonce once more before it. The fresh server nonce must be there either way.
        if not attrs[1][2:].endswith(self._nonce):
            raise SaslFailure("Authentication failed: the nonce is not this exchange's")
        proof = unb64(proof_text, "proof")
        c = self._credential
        assert c is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_signature = hmac.digest(c.stored_key, auth_message, self._digest)
        if len(proof) != len(client_signature):
            raise SaslFailure(BAD_CREDENTIALS)
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        matches = hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), c.stored_key)
        if not (matches and self._real):
            raise SaslFailure(BAD_CREDENTIALS)
        server_signature = hmac.digest(c.server_key, auth_message, self._digest)
        return Success(f"v={b64(server_signature)}".encode(), self._user)

    def _made_up(self) -> ScramCredential:
        salt = hmac.digest(_FAKE_SALT_SECRET, self._user.encode(), "sha256")
        size = hashlib.new(self._digest).digest_size
        return ScramCredential(self.name, salt, DEFAULT_ITERATIONS, os.urandom(size), os.urandom(size))


def scram_text(token: bytes) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslFailure("Authentication failed: the SCRAM message is not UTF-8") from None
