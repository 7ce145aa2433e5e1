"""Compaction of a changelog-like partition: records examined per second, and Redis memory before and after.

A compacted topic gets `records` records over `keys` distinct keys (100-byte values) through the append
script; then the compactor's steps (log_compact.lua, 500 entries each) run until nothing is left to do.
Memory is MEMORY USAGE (SAMPLES 0) of all the partition's keys, the compactor's own included. A step's
time is one client round trip, script included: what an append to the partition may wait for.
`python -m bench` includes it; `python -m bench.compaction [RECORDS KEYS]` runs it alone on an embedded
redis-server and adds the steps' own time inside Redis (from SLOWLOG), and run(redis_url) on any Redis.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from schooner.storage.keys import Keyspace
from schooner.storage.log import append, compaction
from schooner.storage.log.append import RecordBatch
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.topics import metadata

from .memory import keys_memory

VALUE = (b"0123456789abcdef" * 7)[:100]
RECORDS = 200_000
KEYS = 1_000
CHUNK = 1000
OLD = 1_700_000_000_000  # record timestamps well past any lag


class _Record:
    __slots__ = ("key", "value", "timestamp", "headers")

    def __init__(self, key: bytes) -> None:
        self.key: bytes | None = key
        self.value: bytes | None = VALUE
        self.timestamp = OLD
        self.headers: list[tuple[str, bytes | None]] = []


SLOWLOG_US = 300  # steps faster than this are not logged: they count as below it


def _server_times(redis: Any, token: str, steps: int) -> dict[str, float]:
    """Median, 99th percentile and maximum of the steps' own time in Redis (ms), from SLOWLOG."""
    logged = [
        int(e["duration"])
        for e in redis.slowlog_get(2 * steps + 100)
        if e["command"].startswith(b"EVALSHA") and f" {token} ".encode() in e["command"]
    ]
    times = sorted([0] * (steps - len(logged)) + logged)

    def at(q: float) -> float:
        return times[min(len(times) - 1, int(q * len(times)))] / 1000

    return {
        "compaction_server_p50_ms": at(0.5),
        "compaction_server_p99_ms": at(0.99),
        "compaction_server_max_ms": at(1),
    }


def run(
    redis_url: str,
    records: int = RECORDS,
    keys: int = KEYS,
    step_entries: int = 500,
    server_times: bool = False,
) -> dict[str, Any]:
    """server_times: also the steps' time inside Redis, from its SLOWLOG (which this reconfigures: use it
    on a Redis of the benchmark's own)."""
    ks = Keyspace(f"benchcompact-{uuid.uuid4().hex[:8]}")
    token = f"bench-{uuid.uuid4().hex[:8]}"
    redis = client.connect_sync(redis_url)
    extra: dict[str, float] = {}
    try:
        topic = drive_sync(redis, metadata.create(ks, "changelog", 1, {"cleanup.policy": "compact"}, {}))
        for start in range(0, records, CHUNK):
            batch = [_Record(b"key-%d" % (i % keys)) for i in range(start, min(start + CHUNK, records))]
            run_sync(redis, append.append(ks, topic, 0, RecordBatch(batch)))
        partition = ks.partition_keys("changelog", 0)
        before = keys_memory(redis, partition)
        if server_times:
            saved = {k: v for k, v in redis.config_get("slowlog-*").items() if k and v is not None}
            redis.config_set("slowlog-log-slower-than", SLOWLOG_US)
            redis.config_set("slowlog-max-len", 2 * records // step_entries + 100)
            redis.slowlog_reset()
        assert run_sync(redis, compaction.claim(ks, topic, 0, token))
        scanned = removed = 0
        durations: list[float] = []
        started = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            step = run_sync(redis, compaction.step(ks, topic, 0, token, step_entries))
            durations.append(time.perf_counter() - t0)
            scanned, removed = scanned + step.scanned, removed + step.removed
            if not step.more:
                break
        seconds = time.perf_counter() - started
        if server_times:
            extra = _server_times(redis, token, len(durations))
            redis.config_set("slowlog-log-slower-than", saved["slowlog-log-slower-than"])
            redis.config_set("slowlog-max-len", saved["slowlog-max-len"])
        run_sync(redis, compaction.release(ks, topic, 0, token))
        after = keys_memory(redis, partition)
        left = int(redis.xlen(ks.stream("changelog", 0)))
    finally:
        for key in redis.scan_iter(match=f"{ks.prefix}:*", count=1000):
            redis.delete(key)
        redis.close()
    return {
        "compaction_records": records,
        "compaction_keys": keys,
        "compaction_entries_left": left,
        "compaction_removed": removed,
        "compaction_examined_per_s": round(scanned / seconds),
        "compaction_step_entries": step_entries,
        "compaction_median_step_ms": round(statistics.median(durations) * 1000, 2),
        "compaction_slowest_step_ms": round(max(durations) * 1000, 2),
        "compaction_steps": len(durations),
        "compaction_memory_before_bytes": before,
        "compaction_memory_after_bytes": after,
        **extra,
    }


def main(argv: list[str]) -> int:
    from schooner.storage.redis.embedded import EmbeddedRedis

    records, keys = (int(argv[0]), int(argv[1])) if len(argv) == 2 else (RECORDS, KEYS)
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(Path(data), persistent=False)
        server.start()
        try:
            for name, value in run(server.url, records, keys, server_times=True).items():
                print(f"{name:36} {value}")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
