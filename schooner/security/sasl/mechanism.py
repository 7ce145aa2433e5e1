"""What every server-side SASL mechanism shares: the steps of an exchange and how one fails.

A mechanism is a state machine with no I/O. The broker feeds it the client's tokens with step(); when
the mechanism needs a user's stored credentials (which live in Redis), it answers NeedCredentials, the
broker loads them and calls resume(). Challenge is a token to send back (the client answers it);
Success ends the exchange with the authenticated user name and a last token for the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from ..scram import ScramCredential

# A user's stored credentials, mechanism name -> credential; None when there is no such user.
Credentials: TypeAlias = Mapping[str, ScramCredential] | None
# What a wrong password and an unknown user are both told.
BAD_CREDENTIALS = "Authentication failed: invalid user name or password"


class SaslFailure(Exception):
    """The exchange failed. str() is the message the client is told: it never says which part of a
    user name and password was wrong."""


@dataclass(frozen=True, slots=True)
class NeedCredentials:
    """The exchange goes on with resume(), given this user's stored credentials."""

    user: str


@dataclass(frozen=True, slots=True)
class Challenge:
    """Send these bytes; the client's answer comes to step()."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Success:
    """The client proved it is `user`. `data` is the mechanism's last message (empty for PLAIN)."""

    data: bytes
    user: str
    # The wall-clock time (ms since the epoch) after which the credential no longer holds (a token's
    # expiry), or None: the broker's re-authentication deadline is never later.
    expires_at_ms: int | None = None


Step: TypeAlias = NeedCredentials | Challenge | Success


class ServerMechanism(Protocol):
    name: str

    def step(self, token: bytes) -> Step:
        """The client's next token. Raises SaslFailure."""
        ...

    def resume(self, credentials: Credentials) -> Step:
        """The credentials asked for by NeedCredentials. Raises SaslFailure."""
        ...


class Finished:
    """A mechanism's state once it has succeeded or failed: every further token fails."""

    @staticmethod
    def refuse() -> SaslFailure:
        return SaslFailure("the SASL exchange is already over")
