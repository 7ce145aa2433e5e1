"""What the Redis server under Schooner offers and risks: eviction and memory. (What acks=all waits for
is asked on each append lane: lane.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import OutOfMemoryError, ResponseError

from .calls import Call, command, text

ACKS_ALL_TIMEOUT_MS = 5000  # acks=all: how long the lanes' WAIT / WAITAOF may take


@dataclass(frozen=True)
class Memory:
    used: int
    maxmemory: int  # 0: no limit
    policy: str
    system: int = 0  # the host's memory (total_system_memory), 0 when the server does not say
    # What maxmemory does not count (replicas' and the AOF's buffers: mem_not_counted_for_evict).
    not_counted: int = 0

    @property
    def fill(self) -> float:
        """Used memory against maxmemory as Redis measures it to refuse writes; 0.0 without a limit."""
        if not self.maxmemory:
            return 0.0
        return max(self.used - self.not_counted, 0) / self.maxmemory

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


def parse_memory(info: Any) -> Memory:
    return Memory(
        int(info.get("used_memory", 0)),
        int(info.get("maxmemory", 0)),
        str(info.get("maxmemory_policy", "noeviction")),
        int(info.get("total_system_memory", 0)),
        int(info.get("mem_not_counted_for_evict", 0)),
    )


def combined(memories: list[Memory]) -> Memory:
    """A cluster's memory as one server's: the primaries' sums, the riskiest eviction policy."""
    risky = [m.policy for m in memories if m.may_evict]
    return Memory(
        sum(m.used for m in memories),
        0 if any(m.maxmemory == 0 for m in memories) else sum(m.maxmemory for m in memories),
        risky[0] if risky else "noeviction",
        max((m.system for m in memories), default=0),
        sum(m.not_counted for m in memories),
    )


def _fields(raw: Any) -> dict[str, str]:
    if isinstance(raw, dict):
        return {text(k): text(v) if isinstance(v, bytes) else str(v) for k, v in raw.items()}
    out = {}
    for line in text(raw).splitlines():
        name, sep, value = line.partition(":")
        if sep and not line.startswith("#"):
            out[name.strip()] = value.strip()
    return out


def server() -> Call[dict[str, str]]:
    """INFO server's fields as text (redis_version, redis_mode, ...)."""
    return command("INFO", "server", parse=_fields)


def memory() -> Call[Memory]:
    # INFO rather than CONFIG GET: hosted Redis services often rename or forbid CONFIG.
    return command("INFO", "memory", parse=parse_memory)


def is_out_of_memory(exc: BaseException) -> bool:
    """Redis refused a write because used memory is over maxmemory (the storage-full case)."""
    # redis-py's parser gives OutOfMemoryError (its text without the code); hiredis' raw reader the code.
    if isinstance(exc, OutOfMemoryError):
        return True
    return isinstance(exc, ResponseError) and str(exc).startswith("OOM")
