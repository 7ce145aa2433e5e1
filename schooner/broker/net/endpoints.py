"""Where clients are told brokers are: each broker's endpoint on the listener the request arrived on.

A client that connected over SSL must be sent to SSL ports, never to a PLAINTEXT one, so Metadata,
DescribeCluster and FindCoordinator answer with the endpoints of the request's listener, and leave out a
broker that has no such listener (as Kafka does).
"""

from __future__ import annotations

from ...storage.cluster import BrokerInfo
from .session import RequestScope


def endpoint_for(broker: BrokerInfo, scope: RequestScope) -> tuple[str, int] | None:
    """The broker's address on the request's listener; None when it has no such listener."""
    return broker.endpoint(scope.session.listener.protocol)


def on_listener(brokers: list[BrokerInfo], scope: RequestScope) -> list[tuple[BrokerInfo, str, int]]:
    """The brokers that have the request's listener, each with its host and port there."""
    found = []
    for broker in brokers:
        where = endpoint_for(broker, scope)
        if where is not None:
            found.append((broker, *where))
    return found
