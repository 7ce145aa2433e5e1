"""MQ library throughput against raw Redis Streams on the same server, in the same run.

produce: Producer.send_batch (append.lua, 1,000 records a call) vs pipelined XADD (1,000 a pipeline).
consume: a Consumer with a no-op handler vs a bare loop of XREADGROUP COUNT 100 then one XACK of the
batch's IDs, both reading the same entries (the topic's stream, the records MQ produce appended; each
in a group of its own), both acking every entry after it was handled, in batches of 100. The Consumer
reads through the lease-checked queue_read script, builds a Message per entry, times the handler, and
sends its acks with its next read (one round trip a batch); a raw loop that pipelines the same way is
measured too (raw_pipelined_msgs_per_s). The three consume loops alternate within each run. CPU
microseconds per message are those of this process (the consumer) and of redis-server.
Values are 100 bytes. `python -m bench.mq` runs it on an embedded redis-server; the suite calls
run(redis_url).
"""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import Consumer, ConsumerConfig, Message, OutgoingMessage, Producer
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync
from schooner.storage.topics import metadata

from .servers import process_cpu_seconds

VALUE = (b"0123456789abcdef" * 7)[:100]
MESSAGES = 50_000
RUNS = 3
CHUNK = 1000
READ_COUNT = 100


def _create_topic(url: str, ks: Keyspace, name: str) -> None:
    redis = client.connect_sync(url)
    try:
        drive_sync(redis, metadata.create(ks, name, 1, {}, {}))
    finally:
        redis.close()


def _raw_produce(redis: Any, key: str, messages: int) -> float:
    started = time.perf_counter()
    for start in range(0, messages, CHUNK):
        pipe = redis.pipeline(transaction=False)
        for _ in range(min(CHUNK, messages - start)):
            pipe.execute_command("XADD", key, "*", "value", VALUE)
        pipe.execute()
    return messages / (time.perf_counter() - started)


def _mq_produce(url: str, ks: Keyspace, topic: str, messages: int) -> float:
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    batch = [OutgoingMessage(VALUE, partition=0)] * CHUNK
    started = time.perf_counter()
    for start in range(0, messages, CHUNK):
        producer.send_batch(topic, batch[: min(CHUNK, messages - start)])
    rate = messages / (time.perf_counter() - started)
    producer.close()
    return rate


def _cpu_now(redis_pid: int | None) -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime, process_cpu_seconds(redis_pid)


class Consumed:
    """One consume loop's figures: msgs/s, and CPU µs per message of this process and of redis-server."""

    def __init__(self, messages: int, wall: float, before: tuple[float, float], after: tuple[float, float]):
        self.rate = messages / wall
        self.client_us = (after[0] - before[0]) / messages * 1e6
        self.redis_us = (after[1] - before[1]) / messages * 1e6


def _raw_consume(redis: Any, key: str, messages: int, redis_pid: int | None, pipelined: bool) -> Consumed:
    """XREADGROUP COUNT 100, then XACK of those IDs; pipelined: the XACK goes with the next read."""
    group = "rawp" if pipelined else "raw"
    redis.execute_command("XGROUP", "CREATE", key, group, "0")
    read = ["XREADGROUP", "GROUP", group, "c", "COUNT", READ_COUNT, "STREAMS", key, ">"]
    done, ids = 0, []
    before = _cpu_now(redis_pid)
    started = time.perf_counter()
    while done < messages:
        if pipelined and ids:
            pipe = redis.pipeline(transaction=False)
            pipe.execute_command("XACK", key, group, *ids)
            pipe.execute_command(*read)
            reply = pipe.execute()[1]
        else:
            reply = redis.execute_command(*read)
        ids = [entry_id for entry_id, _ in reply[0][1]]
        if not pipelined:
            redis.execute_command("XACK", key, group, *ids)
        done += len(ids)
    if pipelined:
        redis.execute_command("XACK", key, group, *ids)
    wall = time.perf_counter() - started
    return Consumed(messages, wall, before, _cpu_now(redis_pid))


def _mq_consume(url: str, ks: Keyspace, topic: str, messages: int, redis_pid: int | None) -> Consumed:
    """From the first message handled to the last: the consumer's start (a connection, loading its
    scripts, joining the group) is left out, as the raw loops' connection and XGROUP CREATE are."""
    count = [0]
    first: list[tuple[float, tuple[float, float]]] = []
    finished = threading.Event()

    def handler(message: Message) -> None:
        if not count[0]:
            first.append((time.perf_counter(), _cpu_now(redis_pid)))
        count[0] += 1
        if count[0] >= messages:
            finished.set()

    config = ConsumerConfig(start="earliest", batch_size=READ_COUNT, poll_ms=5)
    registry = CollectorRegistry()
    consumer = Consumer(url, topic, "bench", handler, keyspace=ks, config=config, registry=registry)
    consumer.start()
    if not finished.wait(300):
        raise RuntimeError(f"the MQ consumer handled {count[0]} of {messages} messages")
    ended, after = time.perf_counter(), _cpu_now(redis_pid)
    consumer.stop()
    ((started, before),) = first
    return Consumed(messages - 1, ended - started, before, after)


def _clean(redis: Any, ks: Keyspace) -> None:
    keys = list(redis.scan_iter(match=f"{ks.prefix}:*", count=1000))
    for start in range(0, len(keys), 500):
        redis.delete(*keys[start : start + 500])


def run(redis_url: str, messages: int = MESSAGES, runs: int = RUNS) -> dict[str, float]:
    """MQ produce and consume throughput (msgs/s, the median of `runs`) and their ratios to raw XADD /
    XREADGROUP+XACK measured in the same runs, with CPU per consumed message."""
    rates: dict[str, list[float]] = {"mq_produce": [], "raw_produce": []}
    consumed: dict[str, list[Consumed]] = {"mq": [], "raw": [], "raw_pipelined": []}
    redis = client.connect_sync(redis_url)
    try:
        redis_pid = int(redis.info("server").get("process_id", 0)) or None  # a local server: its CPU
        for n in range(runs):
            ks = Keyspace(f"benchmq-{uuid.uuid4().hex[:8]}")
            raw_key, topic = f"{ks.prefix}:raw", "bench-mq"
            try:
                _create_topic(redis_url, ks, topic)
                rates["raw_produce"].append(_raw_produce(redis, raw_key, messages))
                rates["mq_produce"].append(_mq_produce(redis_url, ks, topic, messages))
                stream = ks.stream(topic, 0)  # the entries MQ produce appended, read by all three
                order = ["raw", "mq", "raw_pipelined"] if n % 2 == 0 else ["mq", "raw_pipelined", "raw"]
                for kind in order:
                    if kind == "mq":
                        consumed[kind].append(_mq_consume(redis_url, ks, topic, messages, redis_pid))
                    else:
                        pipelined = kind == "raw_pipelined"
                        consumed[kind].append(_raw_consume(redis, stream, messages, redis_pid, pipelined))
            finally:
                _clean(redis, ks)
    finally:
        redis.close()
    mid = {name: statistics.median(values) for name, values in rates.items()}
    for kind, runs_of in consumed.items():
        mid[f"{kind}_consume"] = statistics.median(c.rate for c in runs_of)
        mid[f"{kind}_client_us"] = statistics.median(c.client_us for c in runs_of)
        mid[f"{kind}_redis_us"] = statistics.median(c.redis_us for c in runs_of)
    results = {
        "mq_produce_msgs_per_s": round(mid["mq_produce"]),
        "raw_xadd_msgs_per_s": round(mid["raw_produce"]),
        "mq_produce_ratio": round(mid["mq_produce"] / mid["raw_produce"], 3),
        "mq_consume_msgs_per_s": round(mid["mq_consume"]),
        "raw_xreadgroup_msgs_per_s": round(mid["raw_consume"]),
        "mq_consume_ratio": round(mid["mq_consume"] / mid["raw_consume"], 3),
        "raw_pipelined_msgs_per_s": round(mid["raw_pipelined_consume"]),
        "mq_consume_vs_pipelined_ratio": round(mid["mq_consume"] / mid["raw_pipelined_consume"], 3),
        "mq_consume_client_us_per_msg": round(mid["mq_client_us"], 3),
        "raw_consume_client_us_per_msg": round(mid["raw_client_us"], 3),
        "mq_consume_redis_us_per_msg": round(mid["mq_redis_us"], 3),
        "raw_consume_redis_us_per_msg": round(mid["raw_redis_us"], 3),
    }
    r = results
    print(
        f"MQ produce {r['mq_produce_msgs_per_s']:,.0f} msgs/s = {r['mq_produce_ratio']:.2f} x pipelined XADD "
        f"({r['raw_xadd_msgs_per_s']:,.0f}); MQ consume {r['mq_consume_msgs_per_s']:,.0f} msgs/s = "
        f"{r['mq_consume_ratio']:.2f} x XREADGROUP+XACK ({r['raw_xreadgroup_msgs_per_s']:,.0f}), "
        f"{r['mq_consume_vs_pipelined_ratio']:.2f} x the pipelined loop "
        f"({r['raw_pipelined_msgs_per_s']:,.0f}); CPU us/msg consumer "
        f"{r['mq_consume_client_us_per_msg']:.2f} vs {r['raw_consume_client_us_per_msg']:.2f}, "
        f"redis {r['mq_consume_redis_us_per_msg']:.2f} vs {r['raw_consume_redis_us_per_msg']:.2f}; "
        f"{messages:,} messages of {len(VALUE)} B, median of {runs} runs",
        file=sys.stderr,
    )
    return {k: float(v) for k, v in results.items()}


def main() -> int:
    from schooner.storage.redis.embedded import EmbeddedRedis

    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(Path(data), persistent=False)
        server.start()
        try:
            print(run(server.url))
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
