"""Broker processes sharing one Redis: registration with a heartbeat, and cluster-wide counters."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config import Listener
from .keys import Keyspace
from .redis.calls import Call, Steps, command, script, text, together


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    host: str  # the first listener's advertised address (what brokers registered before listeners)
    port: int
    rack: str | None = None
    # Each listener's advertised address, by listener name (its security protocol): a client is told
    # the addresses of the listener its request arrived on. Empty: host and port are PLAINTEXT's.
    endpoints: Mapping[str, tuple[str, int]] = field(default_factory=dict, hash=False)

    def endpoint(self, protocol: str) -> tuple[str, int] | None:
        """Where this broker's listener for `protocol` is advertised, or None when it has none."""
        if not self.endpoints:
            return (self.host, self.port) if protocol == "PLAINTEXT" else None
        return self.endpoints.get(protocol)


def format_endpoints(endpoints: Mapping[str, tuple[str, int]]) -> str:
    """PROTOCOL://host:port,... as advertised.listeners writes them (IPv6 hosts in brackets)."""
    return ",".join(
        f"{protocol}://{f'[{host}]' if ':' in host else host}:{port}"
        for protocol, (host, port) in endpoints.items()
    )


def parse_endpoints(text: str) -> dict[str, tuple[str, int]]:
    found = {}
    for item in filter(None, text.split(",")):
        listener = Listener.parse(item)
        found[listener.protocol] = (listener.host, listener.port)
    return found


def _now_ms() -> int:
    return int(time.time() * 1000)


def allocate_broker_id(ks: Keyspace) -> Call[int]:
    return script("broker_id_allocate", [ks.broker_id_counter], [], int)


# Registration and removal are plain pipelines, not MULTI: the address hash and the live set may sit
# in different slots of a Redis Cluster, and either order of a half-done step is harmless (an address
# without a live entry expires; a live entry without an address is skipped by live_brokers).
# Registration runs as scripts that Redis takes when full (allow-oom), so a broker never lapses while
# records wait to be archived.
def heartbeat(ks: Keyspace, info: BrokerInfo, ttl_ms: int) -> Steps[list[Any]]:
    """Registers or renews a broker: its address hash (expiring) and its lapse time in the live set."""
    return together(
        [
            script("broker_register", [ks.broker(info.broker_id)], [ttl_ms * 4, *_fields(info)]),
            script("broker_live", [ks.brokers], [_now_ms() + ttl_ms, str(info.broker_id)]),
        ]
    )


def _fields(info: BrokerInfo) -> list[str | int]:
    return [
        "host", info.host, "port", info.port, "rack", info.rack or "",
        "endpoints", format_endpoints(info.endpoints),
    ]  # fmt: skip


def unregister(ks: Keyspace, broker_id: int) -> Steps[list[Any]]:
    return together([command("ZREM", ks.brokers, str(broker_id)), command("DEL", ks.broker(broker_id))])


def live_brokers(ks: Keyspace, live_at_ms: int | None = None) -> Steps[list[BrokerInfo]]:
    """Brokers whose registration has not lapsed, by id; with `live_at_ms` (wall clock), those whose
    registration had not lapsed then. Two round trips."""
    since = _now_ms() if live_at_ms is None else live_at_ms
    (ids,) = yield [command("ZRANGEBYSCORE", ks.brokers, since, "+inf")]
    if not ids:
        return []
    infos = yield [command("HGETALL", ks.broker(int(raw))) for raw in ids]
    brokers = [_broker_info(int(raw), h) for raw, h in zip(ids, infos, strict=True) if h]
    return sorted(brokers, key=lambda b: b.broker_id)


def _broker_info(broker_id: int, h: dict[bytes, bytes]) -> BrokerInfo:
    host, port = text(h[b"host"]), int(h[b"port"])
    try:
        endpoints = parse_endpoints(text(h.get(b"endpoints")))
    except ValueError:
        endpoints = {}  # as a broker from before listeners registered: host and port, PLAINTEXT
    return BrokerInfo(broker_id, host, port, text(h.get(b"rack")) or None, endpoints)


def cluster_id(ks: Keyspace) -> Steps[str]:
    """The deployment's cluster id, made once by whichever broker asks first. One round trip, two when
    it is new: it is read first, so a broker starts while Redis refuses writes (over maxmemory)."""
    (known,) = yield [command("HGET", ks.cluster, "cluster_id")]
    if known:
        return text(known)
    fresh = uuid.uuid4().hex[:22]
    _, value = yield [
        command("HSETNX", ks.cluster, "cluster_id", fresh),
        command("HGET", ks.cluster, "cluster_id"),
    ]
    return text(value) or fresh


def next_producer_id(ks: Keyspace) -> Call[int]:
    return command("INCR", ks.producer_id_counter, parse=int)
