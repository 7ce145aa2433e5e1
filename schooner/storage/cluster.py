"""Broker processes sharing one Redis: registration with a heartbeat, and cluster-wide counters."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from .keys import Keyspace
from .redis.calls import Call, Steps, command, text, together


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def allocate_broker_id(ks: Keyspace) -> Call[int]:
    return command("INCR", ks.broker_id_counter, parse=int)


# Registration and removal are plain pipelines, not MULTI: the address hash and the live set may sit
# in different slots of a Redis Cluster, and either order of a half-done step is harmless (an address
# without a live entry expires; a live entry without an address is skipped by live_brokers).
def heartbeat(ks: Keyspace, info: BrokerInfo, ttl_ms: int) -> Steps[list[Any]]:
    """Registers or renews a broker: its address hash (expiring) and its lapse time in the live set."""
    key = ks.broker(info.broker_id)
    return together(
        [
            command("HSET", key, "host", info.host, "port", info.port, "rack", info.rack or ""),
            command("PEXPIRE", key, ttl_ms * 4),
            command("ZADD", ks.brokers, _now_ms() + ttl_ms, str(info.broker_id)),
        ]
    )


def unregister(ks: Keyspace, broker_id: int) -> Steps[list[Any]]:
    return together([command("ZREM", ks.brokers, str(broker_id)), command("DEL", ks.broker(broker_id))])


def live_brokers(ks: Keyspace) -> Steps[list[BrokerInfo]]:
    """Brokers whose registration has not lapsed, by id. Two round trips."""
    (ids,) = yield [command("ZRANGEBYSCORE", ks.brokers, _now_ms(), "+inf")]
    if not ids:
        return []
    infos = yield [command("HGETALL", ks.broker(int(raw))) for raw in ids]
    brokers = [
        BrokerInfo(int(raw), text(h[b"host"]), int(h[b"port"]), text(h.get(b"rack")) or None)
        for raw, h in zip(ids, infos, strict=True)
        if h
    ]
    return sorted(brokers, key=lambda b: b.broker_id)


def cluster_id(ks: Keyspace) -> Steps[str]:
    """The deployment's cluster id, made once by whichever broker asks first. One round trip."""
    fresh = uuid.uuid4().hex[:22]
    _, value = yield [
        command("HSETNX", ks.cluster, "cluster_id", fresh),
        command("HGET", ks.cluster, "cluster_id"),
    ]
    return text(value) or fresh


def next_producer_id(ks: Keyspace) -> Call[int]:
    return command("INCR", ks.producer_id_counter, parse=int)
