"""SCRAM credentials (RFC 5802, RFC 7677): what a server keeps so that it can check a password without
storing it.

From a password, a salt and an iteration count: SaltedPassword = PBKDF2(password, salt, i), ClientKey =
HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server
Key"). The server keeps salt, i, StoredKey and ServerKey: enough to verify a client's proof and to prove
itself, not enough to log in as the user.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

# mechanism -> hashlib name; Kafka's minimum iteration count is 4096 for both.
MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384  # Kafka's upper bound for AlterUserScramCredentials
DEFAULT_ITERATIONS = 8192


@dataclass(frozen=True, slots=True)
class ScramCredential:
    mechanism: str  # SCRAM-SHA-256 or SCRAM-SHA-512
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password, salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """The stored form of a salted password (AlterUserScramCredentials sends the salted password)."""
    digest = MECHANISMS[mechanism]
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", digest)
    return ScramCredential(mechanism, salt, iterations, stored_key, server_key)


def make_credential(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A new credential for a password, with a fresh random salt unless one is given."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}: one of {', '.join(MECHANISMS)}")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be within {MIN_ITERATIONS}..{MAX_ITERATIONS}")
    salt = os.urandom(32) if salt is None else salt
    salted = salted_password(mechanism, password.encode(), salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


def password_matches(credential: ScramCredential, password: str) -> bool:
    """Whether a password (as SASL PLAIN sends it) is the one this credential was made from."""
    salted = salted_password(credential.mechanism, password.encode(), credential.salt, credential.iterations)
    made = credential_from_salted(credential.mechanism, salted, credential.salt, credential.iterations)
    return hmac.compare_digest(made.stored_key, credential.stored_key)
