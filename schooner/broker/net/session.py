"""Who is on the other end of a connection: the listener, the client's address, and (once it has
authenticated) its principal and tenant. One Session per connection, shared by its requests.

A handler learns who asks from its third argument, a RequestScope: the connection's session, the
request's client id and the client's quota windows (dispatch builds it), so a handler's answer depends
on its arguments alone and a test of one handler passes a scope instead of setting any context.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ...config import Listener
from ...security.acls import Caller
from ...security.quotas import ClientLimits

ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True)
class Session:
    listener: Listener
    host: str  # the client's IP address, as ACLs name hosts
    port: int = 0  # the client's port (for logs: host and port tell one connection from another)
    # Kafka's principal, "User:<name>": ANONYMOUS on PLAINTEXT and on SSL without a client certificate.
    principal: str = ANONYMOUS
    tenant: str | None = None  # the principal's tenant: its topics, groups and ids live apart
    # False on a SASL listener until SaslAuthenticate succeeds: until then only ApiVersions,
    # SaslHandshake and SaslAuthenticate are served.
    authenticated: bool = True
    # The SASL exchange under way (the mechanism's server state), between SaslHandshake and the end of
    # SaslAuthenticate; None otherwise.
    sasl: Any = None
    mechanism: str | None = None  # the SASL mechanism the session authenticated with
    # KIP-368: the loop time by which the client must re-authenticate, or None for never.
    reauth_deadline: float | None = None
    # KIP-219: the loop time until which this connection's quota keeps it muted (nothing read).
    throttled_until: float = 0.0
    # Set by a handler: once this request's response (if any) is out, the connection closes; the text
    # says why, for the log (a failed SASL authentication).
    closing: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def user(self) -> str:
        """The principal's name without its "User:" type."""
        return self.principal.partition(":")[2]


@dataclass(frozen=True, slots=True)
class RequestScope:
    """Who sent the request a handler serves, beside the request itself: the handler's third argument.

    The connection builds it for each request (session, client id, host) and dispatch adds the client's
    quota windows when some client quota applies to it (broker/quotas.py).
    """

    session: Session
    client_id: str = ""  # the request header's client id ("" when it has none)
    # The client's address as Kafka shows it beside a client id (a group member's client host):
    # "/<ip>"; "" outside a connection.
    client_host: str = ""
    # The quota windows the client is counted in, for a handler that shapes its answer by them
    # (Fetch caps max_bytes at what consumer_byte_rate allows); None when no quota applies.
    limits: ClientLimits | None = None
    # When the connection read the request (time.monotonic()): the group coordinator refuses to serve a
    # request read before it last let the group go (ownership.py); callers outside a connection: now.
    received_at: float = field(default_factory=time.monotonic)

    @property
    def caller(self) -> Caller:
        """The principal and host that ACLs are checked for."""
        return Caller(self.session.principal, self.session.host)

    @property
    def tenant(self) -> str | None:
        return self.session.tenant
