"""Who is on the other end of a connection: the listener, the client's address, and (once it has
authenticated) its principal and tenant. One Session per connection, shared by its requests.

Handlers read the session of the request they serve through SESSION, as they read CLIENT: the
connection sets it for each request, so handler signatures stay (context, request).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ...config import Listener

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


SESSION: ContextVar[Session] = ContextVar("session")
# (client id, client host) of the request being handled; set by the connection for each request.
CLIENT: ContextVar[tuple[str, str]] = ContextVar("client", default=("", ""))
