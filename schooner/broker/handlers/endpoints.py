"""Where clients are told brokers are: each broker's endpoint on the listener the request arrived on.

A client that connected over SSL must be sent to SSL ports, never to a PLAINTEXT one, so Metadata,
DescribeCluster and FindCoordinator answer with the endpoints of the request's listener, and leave out a
broker that has no such listener (as Kafka does).
"""

from __future__ import annotations

from ...storage.cluster import BrokerInfo
from ..net.session import SESSION


def request_listener() -> str | None:
    """The listener name (security protocol) of the request being served; None outside a connection."""
    session = SESSION.get(None)
    return session.listener.protocol if session is not None else None


def endpoint_for(broker: BrokerInfo, listener: str | None = None) -> tuple[str, int] | None:
    """The broker's address on the request's listener (its first listener's outside a connection)."""
    listener = listener or request_listener()
    if listener is None:
        return broker.host, broker.port
    return broker.endpoint(listener)


def on_listener(brokers: list[BrokerInfo]) -> list[tuple[BrokerInfo, str, int]]:
    """The brokers that have the request's listener, each with its host and port there."""
    listener = request_listener()
    found = []
    for broker in brokers:
        where = endpoint_for(broker, listener)
        if where is not None:
            found.append((broker, *where))
    return found
