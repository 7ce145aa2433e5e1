"""SASL on a connection: the gate in front of the handlers, the exchange under way, and what a
successful exchange makes of the session.

The gate (the connection asks it about every request, before the request's handler starts):
- On a SASL listener the session starts unauthenticated: only ApiVersions, SaslHandshake and
  SaslAuthenticate are served until SaslAuthenticate succeeds; any other request closes the connection.
  Until then no frame may be larger than sasl_max_receive_bytes (frame_limit).
- Once the session's KIP-368 deadline has passed (Session.reauth_deadline, set when
  connections_max_reauth_ms > 0), only SaslHandshake and SaslAuthenticate are served: anything else
  closes the connection. A client that re-authenticates in time gets a new deadline.
- SaslHandshake and SaslAuthenticate, and every request before authentication, are served alone: the
  connection reads the next frame only once the request is answered, so a request is always let
  through (or not) by the session as it is after the exchange step before it.
- A handler that sets Session.closing closes the connection once its response is out (a failed
  authentication is answered, then the connection closes, as in Kafka).
- After a SaslHandshake v0 the client's SASL tokens come in bare frames, without a request header
  (KIP-43, before KIP-152): unframed_request turns such a frame into a SaslAuthenticate v0, and
  encode_unframed answers it with a bare frame. A failure there gets no answer, only the close.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kio.schema.sasl_authenticate.v0.request import SaslAuthenticateRequest as SaslAuthenticateV0
from kio.static.protocol import ResponsePayload

from ...config import Settings
from ...protocol.apis import ApiKey
from ...protocol.framing import frame
from ...protocol.messages import Request, RequestHeader
from ...security.sasl import MECHANISMS, ServerMechanism, Success
from .limits import Limits
from .session import Session

SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
BEFORE_AUTHENTICATION = SASL_APIS | {ApiKey.API_VERSIONS}
# The header of a bare SASL token after a SaslHandshake v0 (compared by identity).
UNFRAMED = RequestHeader(ApiKey.SASL_AUTHENTICATE, 0, -1, None)


@dataclass(slots=True)
class Exchange:
    """Session.sasl between SaslHandshake and the end of SaslAuthenticate."""

    mechanism: ServerMechanism
    unframed: bool = False  # after SaslHandshake v0: tokens come in bare frames
    # Set when the exchange is bound to fail (re-authentication with another mechanism): the message.
    refusal: str | None = None
    tenant: str | None = None  # the tenant of the user whose credentials were read


def enabled_mechanisms(settings: Settings) -> list[str]:
    """sasl_enabled_mechanisms that this broker can serve, in the configured order."""
    return [m for m in settings.sasl_enabled_mechanisms if m in MECHANISMS]


def refusal(session: Session, api_key: int, now: float) -> str | None:
    """Why this request closes the connection instead of being served, or None to serve it."""
    if not session.authenticated:
        if api_key in BEFORE_AUTHENTICATION:
            return None
        return (
            f"{_name(api_key)} before SASL authentication (only ApiVersions, SaslHandshake, SaslAuthenticate)"
        )
    deadline = session.reauth_deadline
    if deadline is not None and now >= deadline and api_key not in SASL_APIS:
        return (
            f"{_name(api_key)} after the session expired (connections_max_reauth_ms): re-authenticate first"
        )
    return None


def served_alone(session: Session, api_key: int) -> bool:
    return not session.authenticated or api_key in SASL_APIS


def frame_limit(session: Session, limits: Limits) -> int:
    return limits.max_request_bytes if session.authenticated else limits.sasl_max_receive_bytes


def unframed_request(session: Session, raw: bytes) -> Request | None:
    """A bare token after SaslHandshake v0, as the SaslAuthenticate v0 that carries it; else None."""
    exchange = session.sasl
    if isinstance(exchange, Exchange) and exchange.unframed:
        return Request(UNFRAMED, SaslAuthenticateV0(auth_bytes=raw))
    return None


def encode_unframed(body: ResponsePayload) -> bytes | None:
    """The bare frame answering an unframed token, or None when it failed (nothing is sent)."""
    if getattr(body, "error_code", 0):
        return None
    return frame(getattr(body, "auth_bytes", b""))


def session_lifetime_ms(settings: Settings, success: Success) -> int:
    """KIP-368: how long the session lasts before the client must re-authenticate; 0 for ever."""
    lifetime = settings.connections_max_reauth_ms
    if lifetime > 0 and success.expires_at_ms is not None:
        lifetime = max(0, min(lifetime, success.expires_at_ms - int(time.time() * 1000)))
    return lifetime


def authenticate(
    session: Session, exchange: Exchange, success: Success, lifetime_ms: int, now: float
) -> None:
    """Makes the session the user's: principal, tenant, mechanism, and the re-authentication deadline."""
    session.principal = f"User:{success.user}"
    session.tenant = exchange.tenant
    session.mechanism = exchange.mechanism.name
    session.authenticated = True
    session.reauth_deadline = now + lifetime_ms / 1000 if lifetime_ms > 0 else None
    session.sasl = None


def _name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API key {api_key}"
