"""PLAIN (RFC 4616): one token, `authzid NUL authcid NUL password`, checked against the user's SCRAM
credentials (Schooner stores no passwords: a password matches when it derives one of the user's
credentials, whichever SCRAM mechanism that is)."""

from __future__ import annotations

from ..scram import password_matches
from .mechanism import BAD_CREDENTIALS, Credentials, Finished, NeedCredentials, SaslFailure, Step, Success


class PlainServer:
    name = "PLAIN"

    def __init__(self) -> None:
        self._user: str | None = None
        self._password: str | None = None
        self._over = False  # one token only, whatever comes of it

    def step(self, token: bytes) -> Step:
        if self._over:
            raise Finished.refuse()
        self._over = True
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslFailure("Authentication failed: a PLAIN token is authzid NUL authcid NUL password")
        try:
            authzid, authcid, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslFailure("Authentication failed: the PLAIN token is not UTF-8") from None
        if not authcid or not password:
            raise SaslFailure("Authentication failed: the user name and the password must not be empty")
        if authzid and authzid != authcid:
            # Acting as another user is not supported: the authorization id is empty or the user's own.
            raise SaslFailure("Authentication failed: the authorization id must be empty or the user name")
        self._user, self._password = authcid, password
        return NeedCredentials(authcid)

    def resume(self, credentials: Credentials) -> Step:
        user, password = self._user, self._password
        self._password = None  # checked once
        if user is None or password is None:
            raise Finished.refuse()
        if credentials and any(password_matches(c, password) for c in credentials.values()):
            return Success(b"", user)
        raise SaslFailure(BAD_CREDENTIALS)
