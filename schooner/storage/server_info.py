"""What the Redis server under Schooner offers and risks: durability for acks=all, eviction, memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError, ResponseError

ACKS_ALL_TIMEOUT_MS = 5000


@dataclass
class Durability:
    """What acks=all can wait for: replicas (WAIT), and the local AOF fsync (WAITAOF, Redis 7.2+)."""

    replicas: int = 0
    waitaof: bool = False


async def durability(redis: Any) -> Durability:
    found = Durability()
    try:
        info = await redis.info("replication")
        found.replicas = int(info.get("connected_slaves", 0))
        persistence = await redis.info("persistence")
        if int(persistence.get("aof_enabled", 0)):
            await redis.execute_command("WAITAOF", 0, 0, 0)  # raises on Redis < 7.2
            found.waitaof = True
    except RedisError:
        pass
    return found


async def wait_durable(redis: Any, durable: Durability, timeout_ms: int = ACKS_ALL_TIMEOUT_MS) -> None:
    """acks=all: waits for the replicas Redis has and for the local AOF fsync, where configured."""
    if durable.waitaof:
        await redis.execute_command("WAITAOF", 1, durable.replicas, timeout_ms)
    elif durable.replicas:
        await redis.execute_command("WAIT", durable.replicas, timeout_ms)


@dataclass(frozen=True)
class Memory:
    used: int
    maxmemory: int  # 0: no limit
    policy: str

    @property
    def may_evict(self) -> bool:
        """Any policy but noeviction may drop keys (volatile-* ones drop leases and registrations)."""
        return self.policy != "noeviction"


async def memory(redis: Any) -> Memory:
    # INFO rather than CONFIG GET: hosted Redis services often rename or forbid CONFIG.
    info = await redis.info("memory")
    return Memory(
        int(info.get("used_memory", 0)),
        int(info.get("maxmemory", 0)),
        str(info.get("maxmemory_policy", "noeviction")),
    )


def is_out_of_memory(exc: BaseException) -> bool:
    """Redis refused a write because used memory is over maxmemory (the storage-full case)."""
    return isinstance(exc, ResponseError) and str(exc).startswith("OOM")
