"""Before a run: the topics the workloads use. After it, every fault healed: the final logs, read from
offset 0 by fresh Kafka consumers (across the tiers, both isolation levels) and straight from the Redis
streams (the hot tier), one `final` op per source, isolation and partition."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from ..history import History
from .base import CONFLUENT_COMMON, text

LOG, TIERED, SHARE = "chaos-log", "chaos-tiered", "chaos-share"
TXN_IN, TXN_OUT = "chaos-txn-in", "chaos-txn-out"
SHARE_GROUP = "chaos-share"
# name -> (partitions, configs)
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    LOG: (6, {}),
    # Records leave Redis 5 s after they are archived, so a run reads the cold tier while it writes.
    TIERED: (3, {"remote.storage.enable": "true", "local.retention.ms": "5000"}),
    TXN_IN: (3, {}),
    TXN_OUT: (3, {}),
    SHARE: (3, {}),
}
ISOLATIONS = ("read_uncommitted", "read_committed")
IDLE_S = 15.0  # a final read with nothing new for this long has stopped short of the high watermark
PAGE = 1000
ATTEMPTS = 3


def setup_topics(bootstrap: str, topics: dict[str, tuple[int, dict[str, str]]] | None = None) -> None:
    """Creates the topics (an existing one is kept) and sets the share group to start at the earliest
    offset (a share group starts at the latest by default)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = TOPICS if topics is None else topics
    new = [NewTopic(name, parts, 1, config=configs) for name, (parts, configs) in wanted.items()]
    for name, future in admin.create_topics(new, operation_timeout=10).items():
        try:
            future.result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise RuntimeError(f"creating {name}: {exc}") from exc
    earliest = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    group = ConfigResource(ResourceType.GROUP, SHARE_GROUP, incremental_configs=[earliest])
    for future in admin.incremental_alter_configs([group]).values():
        future.result(30)


def final_reads(
    bootstrap: str,
    redis_url: str | None,
    keyspace: str,
    history: History,
    topics: Iterable[str],
    timeout_s: float = 60,
) -> None:
    """Records one `final` op per (source, isolation, topic, partition); redis_url None skips Redis."""
    names = list(topics)
    for topic in names:
        for isolation in ISOLATIONS:
            for attempt in range(ATTEMPTS):
                try:  # metadata or watermarks may time out just after a heal: a fresh consumer again
                    _read_kafka(bootstrap, history, topic, isolation, timeout_s)
                    break
                except KafkaException:
                    if attempt == ATTEMPTS - 1:
                        raise
                    time.sleep(2)
    if redis_url is not None:
        _read_redis(redis_url, keyspace, history, names)


def _read_kafka(bootstrap: str, history: History, topic: str, isolation: str, timeout_s: float) -> None:
    """A fresh consumer assigned every partition at offset 0, until each partition reports its end at or
    past the high watermark taken before the read; a partition that never gets there is `fail`."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chaos-final",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            **CONFLUENT_COMMON,
        }
    )
    try:
        start = history.now()
        parts = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        highs = {p: _high(consumer, topic, p) for p in parts}
        records: dict[int, list[list[Any]]] = {p: [] for p in parts}
        ends: dict[int, int] = {}  # partition -> the offset of its last end-of-partition event
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        deadline = time.monotonic() + timeout_s
        heard = time.monotonic()
        errors: list[str] = []
        while time.monotonic() < deadline and time.monotonic() - heard < IDLE_S:
            if all(ends.get(p, -1) >= highs[p] for p in parts):
                break
            for m in consumer.consume(500, 0.5):
                heard = time.monotonic()
                err, p = m.error(), m.partition() or 0
                if err is None:
                    records[p].append([m.offset(), text(m.value())])
                elif err.code() == KafkaError._PARTITION_EOF:
                    ends[p] = m.offset() or 0
                else:
                    errors.append(str(err))
        for p in parts:
            complete = ends.get(p, -1) >= highs[p]
            history.record(
                "final",
                "final",
                "ok" if complete else "fail",
                start,
                {
                    "source": "kafka",
                    "isolation": isolation,
                    "topic": topic,
                    "partition": p,
                    "records": records[p],
                    "high_watermark": highs[p],
                    "error": None if complete else f"stopped at {ends.get(p)}; {'; '.join(errors[-3:])}",
                },
            )
    finally:
        consumer.close()


def _high(consumer: Consumer, topic: str, partition: int) -> int:
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)
    return int(high)


def _read_redis(redis_url: str, keyspace: str, history: History, topics: list[str]) -> None:
    """The hot tier as the storage layer reads it: each stream's entries below the high watermark, the
    transaction markers left out (as a read_uncommitted Kafka consumer leaves them out)."""
    from schooner.storage.blocking_store import BlockingStore
    from schooner.storage.log.entry import parse_fields
    from schooner.storage.log.read import range_start

    store = BlockingStore.connect(redis_url, keyspace)
    try:
        for name in topics:
            topic = store.topic(name)
            if topic is None:
                continue
            for p in range(topic.partitions):
                start = history.now()
                (bounds,) = store.bounds_of([(topic, p)])
                records: list[list[Any]] = []
                cursor = range_start(topic, 0)
                while True:
                    entries = store.read_range(topic, p, cursor, bounds.high_watermark, PAGE)
                    for entry_id, fields in entries:
                        if b"control" in fields[::2]:
                            continue
                        _, _, value, _ = parse_fields(fields)
                        records.append([topic.offsets.offset_of_id(entry_id), text(value)])
                    if len(entries) < PAGE:
                        break
                    cursor = range_start(topic, topic.offsets.offset_of_id(entries[-1][0]), exclusive=True)
                history.record(
                    "final",
                    "final",
                    "ok",
                    start,
                    {
                        "source": "redis",
                        "isolation": "read_uncommitted",
                        "topic": name,
                        "partition": p,
                        "records": records,
                        "high_watermark": bounds.high_watermark,
                        "error": None,
                    },
                )
    finally:
        store.close()
