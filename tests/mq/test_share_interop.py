"""An `schooner.mq` consumer and a Kafka share consumer (confluent-kafka's ShareConsumer, KIP-932) in
one group on one topic are one queue (docs/share-groups.md): every record goes to one of them, once.

The share consumer joins through ShareGroupHeartbeat (API 76): this test needs the broker to serve it.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from confluent_kafka import AcknowledgeType
from prometheus_client import CollectorRegistry

from schooner.mq import Consumer, ConsumerConfig, Message
from schooner.mq.admin import Admin
from schooner.storage.keys import Keyspace
from tests.broker.share_rig import Delivery, ShareRunner, create_topic, produce, wait_for

TOPIC, GROUP = "one-queue", "workers"
N, WAVE = 300, 50  # a wave is larger than the share window (10): the MQ member always gets some


def test_mq_and_share_consumers_split_one_queue(
    broker_factory: Any, redis_server: Any, redis: Any, keyspace: str
) -> None:
    # A window of 10 records in flight keeps the share consumer from taking whole waves ahead of time.
    broker = broker_factory(share_partition_max_record_locks=10)
    create_topic(broker.bootstrap, TOPIC)
    ks = Keyspace(keyspace)
    admin = Admin(redis, keyspace=ks)

    def share_accept(d: Delivery) -> Any:
        time.sleep(0.002)
        return AcknowledgeType.ACCEPT

    runner = ShareRunner("share", broker.bootstrap, GROUP, [TOPIC], share_accept).start()
    by_mq: list[Message] = []

    def mq_handle(m: Message) -> None:
        time.sleep(0.002)
        by_mq.append(m)

    values = [b"r%03d" % i for i in range(N)]
    try:
        # The share consumer's first ShareFetch makes the group's queue on the partition (at the latest
        # offset, the share group's default), so every record produced from here on is the queue's.
        wait_for(lambda: any(g.name == GROUP for g in admin.groups(TOPIC)), 30, "the share consumer fetching")
        config = ConsumerConfig(start="earliest", batch_size=5, lease_ms=2000, poll_ms=10)
        with Consumer(redis_server.url, TOPIC, GROUP, mq_handle, keyspace=ks, config=config,
                      registry=CollectorRegistry()):  # fmt: skip
            # The MQ member holds the partition's lease before the first record lands.
            wait_for(lambda: redis.exists(ks.mq_lease(TOPIC, 0, GROUP)), 30, "the MQ member's lease")
            for i in range(0, N, WAVE):  # in waves, while both consume
                produce(broker.bootstrap, TOPIC, values[i : i + WAVE])
                time.sleep(0.05)
            wait_for(lambda: len(by_mq) + len(runner.deliveries) >= N, 60, "all records consumed")
            time.sleep(0.5)  # anything delivered twice would show up now
    finally:
        runner.stop()
    by_share = runner.deliveries
    assert runner.errors == []
    got = Counter([m.value for m in by_mq] + [d.value for d in by_share])
    assert sorted(got) == values and set(got.values()) == {1}  # every record once, across both
    assert by_mq and by_share, (len(by_mq), len(by_share))
    assert {m.deliveries for m in by_mq} == {1} and {d.delivery_count for d in by_share} == {1}
    # Both kinds settle in the same Redis consumer group: nothing is left pending or unread.
    assert [(p.messages, p.pending) for p in admin.lag(TOPIC, GROUP)] == [(0, 0)]
    (group,) = [g for g in admin.groups(TOPIC) if g.name == GROUP]
    assert group.share and group.members == []  # the MQ member left the registry when it stopped
