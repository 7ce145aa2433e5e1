"""SaslHandshake and SaslAuthenticate: one SASL exchange per connection, and KIP-368 re-authentication.

SaslHandshake names the mechanism and starts the exchange (Session.sasl); each SaslAuthenticate carries
one client token to the mechanism (security/sasl/), which may ask for the user's stored credentials:
those are read from the users hash of the deployment's base keyspace, never a tenant's. Success makes
the session the user's (authentication.authenticate); any failure is answered with
SASL_AUTHENTICATION_FAILED and its message, then the connection closes, as Kafka does.

Re-authentication (KIP-368) is a new SaslHandshake and SaslAuthenticate on an authenticated
connection: it must use the session's mechanism and prove the same principal, or it fails and closes.
"""

from __future__ import annotations

import asyncio
import datetime
import logging

from kio.schema.errors import ErrorCode

from ...protocol.messages import NO_RESPONSE, NoResponse, make
from ...protocol.request_types import SaslAuthenticateRequest, SaslHandshakeRequest
from ...protocol.response_types import SaslAuthenticateResponse, SaslHandshakeResponse, response_for
from ...security.sasl import Challenge, NeedCredentials, SaslFailure, Step, Success, server_for
from ...storage.keys import Keyspace
from ..context import BrokerContext
from ..net.authentication import Exchange, authenticate, enabled_mechanisms, session_lifetime_ms
from ..net.session import RequestScope, Session
from .common import STORAGE_ERRORS

log = logging.getLogger(__name__)


async def handle_sasl_handshake(
    ctx: BrokerContext, body: SaslHandshakeRequest, scope: RequestScope
) -> SaslHandshakeResponse:
    session = scope.session
    resp = response_for(body)
    enabled = tuple(enabled_mechanisms(ctx.settings))

    def answer(error: ErrorCode, close: str | None = None) -> SaslHandshakeResponse:
        if close is not None:
            session.sasl = None
            session.closing = close
        return make(resp, error_code=error, mechanisms=enabled)

    if not session.listener.sasl:
        return make(resp, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    if session.sasl is not None:
        return answer(ErrorCode.illegal_sasl_state, "a second SaslHandshake during a SASL exchange")
    if body.mechanism not in enabled:
        return answer(
            ErrorCode.unsupported_sasl_mechanism, f"SASL mechanism {body.mechanism!r} is not enabled"
        )
    exchange = Exchange(server_for(body.mechanism), unframed=body.__version__ == 0)
    if session.authenticated:  # KIP-368 re-authentication
        if exchange.unframed:
            return answer(ErrorCode.illegal_sasl_state, "re-authentication needs SaslHandshake v1")
        if body.mechanism != session.mechanism:
            exchange.refusal = f"Re-authentication must use {session.mechanism}, not {body.mechanism}"
    session.sasl = exchange
    return answer(ErrorCode.none)


async def handle_sasl_authenticate(
    ctx: BrokerContext, body: SaslAuthenticateRequest, scope: RequestScope
) -> SaslAuthenticateResponse | NoResponse:
    session = scope.session
    resp = response_for(body)
    exchange = session.sasl
    if not session.listener.sasl:  # answered, as SaslHandshake is there: the connection stays open
        return _answer(
            resp, b"", error=ErrorCode.illegal_sasl_state, message="This listener does not use SASL"
        )
    if not isinstance(exchange, Exchange):
        return _failed(
            session, resp, ErrorCode.illegal_sasl_state, "SaslAuthenticate without a SaslHandshake"
        )
    if exchange.refusal is not None:
        return _failed(session, resp, ErrorCode.sasl_authentication_failed, exchange.refusal)
    try:
        step: Step = exchange.mechanism.step(body.auth_bytes)
        if isinstance(step, NeedCredentials):
            # Users live under the deployment's base keyspace, whatever tenant the context serves.
            user = await ctx.store.user(Keyspace(ctx.settings.keyspace), step.user)
            credentials = user.credentials if user is not None else None
            exchange.tenant = user.tenant if user is not None else None
            # PLAIN derives a key from the password (PBKDF2): off the event loop.
            step = await asyncio.to_thread(exchange.mechanism.resume, credentials)
    except SaslFailure as exc:
        return _failed(session, resp, ErrorCode.sasl_authentication_failed, str(exc))
    except STORAGE_ERRORS as exc:
        # Not the client's fault, and no SASL error is retriable: close, so that it connects again.
        log.warning("cannot read SASL credentials: %s", exc)
        session.sasl = None
        session.closing = "the users hash is out of reach"
        return NO_RESPONSE
    if isinstance(step, Challenge):
        return _answer(resp, step.data)
    assert isinstance(step, Success)
    principal = f"User:{step.user}"
    if session.authenticated and principal != session.principal:
        message = f"Re-authentication as {principal} on a connection of {session.principal}"
        return _failed(session, resp, ErrorCode.sasl_authentication_failed, message)
    lifetime_ms = session_lifetime_ms(ctx.settings, step)
    authenticate(session, exchange, step, lifetime_ms, asyncio.get_running_loop().time())
    return _answer(resp, step.data, lifetime_ms)


def _answer(
    resp: type[SaslAuthenticateResponse],
    data: bytes,
    lifetime_ms: int = 0,
    error: ErrorCode = ErrorCode.none,
    message: str | None = None,
) -> SaslAuthenticateResponse:
    return make(
        resp,
        error_code=error,
        error_message=message,
        auth_bytes=data,
        session_lifetime=datetime.timedelta(milliseconds=lifetime_ms),
    )


def _failed(
    session: Session, resp: type[SaslAuthenticateResponse], error: ErrorCode, message: str
) -> SaslAuthenticateResponse:
    """The error answer; the connection closes once it is out."""
    session.sasl = None
    session.closing = f"SASL authentication failed: {message}"
    return make(
        resp,
        error_code=error,
        error_message=message,
        auth_bytes=b"",
        session_lifetime=datetime.timedelta(0),
    )
