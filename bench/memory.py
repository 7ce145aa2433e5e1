"""Redis memory per record: MEMORY USAGE ... SAMPLES 0 of a stream, divided by its XLEN."""

from __future__ import annotations

from dataclasses import dataclass

import redis


@dataclass(frozen=True, slots=True)
class StreamMemory:
    key: str
    entries: int
    bytes: int
    bytes_per_record: float


def stream_memory(client: redis.Redis, key: str) -> StreamMemory:
    entries = int(client.xlen(key))
    used = client.memory_usage(key, samples=0)
    if not entries or used is None:
        raise RuntimeError(f"stream {key} is empty or missing")
    return StreamMemory(key, entries, int(used), int(used) / entries)


def keys_memory(client: redis.Redis, keys: list[str]) -> int:
    """Total MEMORY USAGE (SAMPLES 0) of several keys; missing keys count zero."""
    return sum(int(client.memory_usage(key, samples=0) or 0) for key in keys)
