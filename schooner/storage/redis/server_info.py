"""What the Redis server under Schooner offers and risks: durability for acks=all, eviction, memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError

from .calls import Call, Steps, command

ACKS_ALL_TIMEOUT_MS = 5000


@dataclass
class Durability:
    """What acks=all can wait for: replicas (WAIT), and the local AOF fsync (WAITAOF, Redis 7.2+)."""

    replicas: int = 0
    waitaof: bool = False


def _refused(_: Exception) -> bool:
    return False


def durability() -> Steps[Durability]:
    """Two round trips: INFO, then a WAITAOF probe when AOF is on (it fails on Redis < 7.2)."""
    replication, persistence = yield [command("INFO", "replication"), command("INFO", "persistence")]
    found = Durability(replicas=int(replication.get("connected_slaves", 0)))
    if int(persistence.get("aof_enabled", 0)):
        (found.waitaof,) = yield [command("WAITAOF", 0, 0, 0, parse=lambda _: True, on_error=_refused)]
    return found


def wait_durable(durable: Durability, timeout_ms: int = ACKS_ALL_TIMEOUT_MS) -> Call[Any] | None:
    """acks=all: waits for the replicas Redis has and for the local AOF fsync, where configured."""
    if durable.waitaof:
        return command("WAITAOF", 1, durable.replicas, timeout_ms)
    if durable.replicas:
        return command("WAIT", durable.replicas, timeout_ms)
    return None


@dataclass(frozen=True)
class Memory:
    used: int
    maxmemory: int  # 0: no limit
    policy: str
    system: int = 0  # the host's memory (total_system_memory), 0 when the server does not say

    @property
    def total(self) -> int:
        """What Redis may fill: maxmemory when set, else the host's memory; -1 when unknown."""
        return self.maxmemory or self.system or -1

    @property
    def usable(self) -> int:
        """What is left of `total`; -1 when unknown."""
        return max(self.total - self.used, 0) if self.total > 0 else -1

    @property
    def may_evict(self) -> bool:
        """Any policy but noeviction may drop keys (volatile-* ones drop leases and registrations)."""
        return self.policy != "noeviction"


def _memory(info: Any) -> Memory:
    return Memory(
        int(info.get("used_memory", 0)),
        int(info.get("maxmemory", 0)),
        str(info.get("maxmemory_policy", "noeviction")),
        int(info.get("total_system_memory", 0)),
    )


def memory() -> Call[Memory]:
    # INFO rather than CONFIG GET: hosted Redis services often rename or forbid CONFIG.
    return command("INFO", "memory", parse=_memory)


def is_out_of_memory(exc: BaseException) -> bool:
    """Redis refused a write because used memory is over maxmemory (the storage-full case)."""
    return isinstance(exc, ResponseError) and str(exc).startswith("OOM")
