"""Broker processes sharing one Redis: registration with a heartbeat, and cluster-wide counters."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from .keys import Keyspace


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


async def allocate_broker_id(redis: Any, ks: Keyspace) -> int:
    return int(await redis.incr(ks.broker_id_counter))


async def heartbeat(redis: Any, ks: Keyspace, info: BrokerInfo, ttl_ms: int) -> None:
    """Registers or renews a broker: its address hash and its lapse time, in one MULTI."""
    async with redis.pipeline(transaction=True) as pipe:
        mapping: dict[str, Any] = {"host": info.host, "port": info.port, "rack": info.rack or ""}
        pipe.hset(ks.broker(info.broker_id), mapping=mapping)
        pipe.pexpire(ks.broker(info.broker_id), ttl_ms * 4)
        pipe.zadd(ks.brokers, {str(info.broker_id): _now_ms() + ttl_ms})
        await pipe.execute()


async def unregister(redis: Any, ks: Keyspace, broker_id: int) -> None:
    async with redis.pipeline(transaction=True) as pipe:
        pipe.zrem(ks.brokers, str(broker_id))
        pipe.delete(ks.broker(broker_id))
        await pipe.execute()


async def live_brokers(redis: Any, ks: Keyspace) -> list[BrokerInfo]:
    """Brokers whose registration has not lapsed, by id. Two round trips."""
    ids = await redis.zrangebyscore(ks.brokers, _now_ms(), "+inf")
    if not ids:
        return []
    async with redis.pipeline(transaction=False) as pipe:
        for raw in ids:
            pipe.hgetall(ks.broker(int(raw)))
        infos = await pipe.execute()
    brokers = []
    for raw, h in zip(ids, infos, strict=True):
        if not h:
            continue
        brokers.append(
            BrokerInfo(
                int(raw), h[b"host"].decode(), int(h[b"port"]), (h.get(b"rack") or b"").decode() or None
            )
        )
    return sorted(brokers, key=lambda b: b.broker_id)


async def cluster_id(redis: Any, ks: Keyspace) -> str:
    """The deployment's cluster id, made once by whichever broker asks first."""
    fresh = uuid.uuid4().hex[:22]
    await redis.hsetnx(ks.cluster, "cluster_id", fresh)
    value = await redis.hget(ks.cluster, "cluster_id")
    return value.decode() if value else fresh


async def next_producer_id(redis: Any, ks: Keyspace) -> int:
    return int(await redis.incr(ks.producer_id_counter))
