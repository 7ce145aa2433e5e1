"""Share groups (KIP-932) against the MQ library on the same topic size, in the same run.

Each run fills a one-partition topic with N 100-byte records, then times:
- the MQ library's Consumer draining its own copy of them (lease-checked XREADGROUP of 100, XACK);
- one confluent-kafka ShareConsumer (librdkafka, implicit acknowledgement: each poll accepts the
  previous one's records) draining the share group's copy through the broker;
- four ShareConsumers on the same one partition, each in its own thread.
The figures are share / MQ, measured side by side; the median of the runs.
`python -m bench.share` starts its own servers; the suite calls run(ep).
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import uuid
from typing import Any

from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from prometheus_client import CollectorRegistry

from schooner.mq import OutgoingMessage, Producer
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync
from schooner.storage.topics import metadata

from . import mq
from .servers import BenchServers, Endpoints

MESSAGES = 100_000
RUNS = 5
CONSUMERS = 4
TIMEOUT_S = 300.0


def _fill(ep: Endpoints, topic: str, messages: int) -> None:
    redis = client.connect_sync(ep.redis_url)
    try:
        drive_sync(redis, metadata.create(ep.keyspace, topic, 1, {}, {}))
    finally:
        redis.close()
    producer = Producer(ep.redis_url, keyspace=ep.keyspace, registry=CollectorRegistry())
    batch = [OutgoingMessage(mq.VALUE, partition=0)] * mq.CHUNK
    for start in range(0, messages, mq.CHUNK):
        producer.send_batch(topic, batch[: min(mq.CHUNK, messages - start)])
    producer.close()


def _earliest(bootstrap: str, group: str) -> None:
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)


def _share_consume(bootstrap: str, topic: str, messages: int, consumers: int) -> float:
    group = f"bench-share-{uuid.uuid4().hex[:8]}"
    _earliest(bootstrap, group)
    count = [0]
    lock = threading.Lock()
    done = threading.Event()
    ready = threading.Barrier(consumers + 1)
    errors: list[str] = []

    def consume() -> None:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            c.subscribe([topic])
            ready.wait()
            while not done.is_set():
                got = sum(1 for m in c.poll(0.1) if not m.error())
                if got:
                    with lock:
                        count[0] += got
                        if count[0] >= messages:
                            done.set()
        except Exception as exc:
            errors.append(repr(exc))
            done.set()
        finally:
            c.close()

    threads = [threading.Thread(target=consume, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    ready.wait()
    started = time.perf_counter()
    if not done.wait(TIMEOUT_S):
        raise RuntimeError(f"{consumers} share consumers got {count[0]} of {messages} records")
    rate = messages / (time.perf_counter() - started)
    for t in threads:
        t.join(30)
    if errors:
        raise RuntimeError(errors[0])
    return rate


def run(ep: Endpoints, messages: int = MESSAGES, runs: int = RUNS) -> dict[str, Any]:
    """Share-group consume rates with 1 and CONSUMERS consumers, each divided by the MQ library's rate
    in the same run (the median of the runs' ratios, and of the rates)."""
    rates: dict[str, list[float]] = {"mq": [], "share_1": [], f"share_{CONSUMERS}": []}
    for run_no in range(runs):
        mq_topic, share_topic = f"bench-share-mq-{run_no}", f"bench-share-{run_no}"
        _fill(ep, mq_topic, messages)
        _fill(ep, share_topic, messages)
        rates["mq"].append(mq._mq_consume(ep.redis_url, ep.keyspace, mq_topic, messages))
        rates["share_1"].append(_share_consume(ep.bootstrap, share_topic, messages, 1))
        # The four consumers read the same records again: a new group starts at the earliest offset.
        rates[f"share_{CONSUMERS}"].append(_share_consume(ep.bootstrap, share_topic, messages, CONSUMERS))
    results: dict[str, Any] = {"messages": messages, "runs": runs}
    for name, values in rates.items():
        results[f"{name}_msgs_per_s"] = round(statistics.median(values))
    for name in ("share_1", f"share_{CONSUMERS}"):
        paired = [s / m for s, m in zip(rates[name], rates["mq"], strict=True)]
        results[f"{name}_ratio"] = round(statistics.median(paired), 3)
    results["rates"] = rates
    return results


def main() -> int:
    with BenchServers() as ep:
        results = run(ep)
    for name, value in results.items():
        if name != "rates":
            print(f"{name:28} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
