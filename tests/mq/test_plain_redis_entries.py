"""What the MQ library sees of entries that plain Redis clients add to a dense topic."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import Admin, Consumer, ConsumerConfig, Message, Producer
from schooner.storage.keys import Keyspace

from .conftest import wait_until

FAST = ConsumerConfig(start="earliest", lease_ms=1500, poll_ms=10, retry_poll_ms=20)


def test_zero_star_entries_get_the_next_offset_and_star_entries_none(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 1, **{"schooner.offset.encoding": "dense"})
    producer = Producer(url, keyspace=ks, registry=registry)
    assert producer.send("orders", b"first").offset == 0
    stream = ks.stream("orders", 0)
    redis.xadd(stream, {"value": b"zero-star"}, id="0-*")  # the dense recipe: the next offset, 1
    redis.xadd(stream, {"value": b"star"})  # a plain `*`: no offset can be given to it
    seen: list[Message] = []
    with Consumer(url, "orders", "g", seen.append, keyspace=ks, config=FAST, registry=registry):
        wait_until(lambda: len(seen) >= 3)
    assert [(m.offset, m.value) for m in seen] == [(0, b"first"), (1, b"zero-star"), (-1, b"star")]
    producer.close()


def test_topic_stats_of_a_dense_partition_ending_in_a_star_entry(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 1, **{"schooner.offset.encoding": "dense"})
    producer = Producer(url, keyspace=ks, registry=registry)
    for value in (b"a", b"b", b"c"):
        producer.send("orders", value)
    redis.xadd(ks.stream("orders", 0), {"value": b"star"})
    (stats,) = Admin(url, keyspace=ks).topic_stats("orders").partitions
    # Four entries, but the `*` one has no offset: the log ends after the three that have.
    assert (stats.length, stats.first_offset, stats.last_offset, stats.high_watermark) == (4, 0, None, 3)
    producer.close()
