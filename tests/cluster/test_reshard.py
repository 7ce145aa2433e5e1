"""Slots move between primaries and back (`redis-cli --cluster reshard`) while an idempotent acks=all producer
writes to 12 partitions and a consumer group reads them: the slots of partitions in use move, and no
acknowledged record is lost or doubled, in the streams or in what the group consumes.

While a slot moves, an append to its partition gets TRYAGAIN or ASK (the append script declares every
key of its partition, and some do not exist), and after the move MOVED: the lane fails such a call
unrun (cluster_lanes.py) and the producer sends it again.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from typing import Any

import redis
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from redis.cluster import key_slot

from schooner.storage.keys import Keyspace
from schooner.storage.redis.embedded_cluster import EmbeddedCluster, redis_cli_binary
from tests.broker.helpers import wait
from tests.cluster.helpers import (
    CLIENT_LOG,
    NumberedProducer,
    check_stored,
    cluster_client,
    node_id,
    owners,
    stored_numbers,
)
from tests.group_clients import ClientThread

PARTITIONS = 12
MOVED_PARTITIONS = 2  # the reshard moves as many slots as it takes to carry this many partitions


class GroupReader(ClientThread):
    """One member of a consumer group, recording the numbers it consumes."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(name="group-reader")
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.consumed: list[tuple[int, int, float]] = []  # partition, number, when
        self.assigned = False

    def _run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "auto.offset.reset": "earliest",
                "logger": CLIENT_LOG,
            }
        )

        def on_assign(_: Any, partitions: Any) -> None:
            self.assigned = True

        consumer.subscribe([self.topic], on_assign=on_assign)
        try:
            while not self.stop_event.is_set():
                for m in consumer.consume(500, 0.2):
                    if not m.error():
                        self.consumed.append((m.partition(), int(m.value()), time.monotonic()))
        finally:
            consumer.close()


def _owned_slots(port: int) -> list[int]:
    """The node's slots, ascending, as it says itself."""
    node = redis.Redis(port=port)
    try:
        ranges = [
            (int(r[0]), int(r[1])) for r in node.execute_command("CLUSTER", "SLOTS") if int(r[2][1]) == port
        ]
    finally:
        node.close()
    return sorted(s for start, end in ranges for s in range(start, end + 1))


def _slots_to_carry(port: int, slots: list[int]) -> int:
    """How many of the node's slots `redis-cli --cluster reshard` must move, taking them from its lowest,
    to carry these slots (redis-cli moves a source's slots in ascending order)."""
    owned = _owned_slots(port)
    return max(owned.index(s) for s in slots) + 1


def _reshard(cluster: EmbeddedCluster, source: int, target: int, count: int) -> float:
    started = time.monotonic()
    subprocess.run(
        [redis_cli_binary(), "--cluster", "reshard", f"127.0.0.1:{source}",
         "--cluster-from", node_id(source), "--cluster-to", node_id(target),
         "--cluster-slots", str(count), "--cluster-yes"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    # A loaded machine (make test-cluster runs a second cluster beside this one) may take its time
    # to settle the new slot owners' config epochs.
    cluster.wait_ok(timeout=90, slot_owners=0)  # a move may empty its source
    return time.monotonic() - started


def test_a_reshard_during_acks_all_production_loses_nothing_and_the_group_reads_on(
    cluster_factory, broker_factory, keyspace
) -> None:
    cluster = cluster_factory()
    broker = broker_factory(redis_url=cluster.url)
    ks = Keyspace(keyspace)
    client = cluster_client(cluster)
    # redis-cli moves a source's lowest slots first, and takes them back from the target's lowest: so the
    # source is the primary owning slot 0 (the moved slots then sit below all of the target's own) and the
    # topic is named so that at least MOVED_PARTITIONS of its partitions live there.
    source = client.nodes_manager.get_node_from_slot(0).port
    lowest = _owned_slots(source)
    topic = next(
        name
        for name in (f"reshard-{i}" for i in range(1000))
        if sum(key_slot(ks.stream(name, p).encode()) in lowest for p in range(PARTITIONS)) >= MOVED_PARTITIONS
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)
    before = owners(client, ks, topic, PARTITIONS)
    target = next(port for port in sorted(set(before.values())) if port != source)
    on_source = sorted(
        (key_slot(ks.stream(topic, p).encode()), p) for p, port in before.items() if port == source
    )
    moving = on_source[:MOVED_PARTITIONS]
    count = _slots_to_carry(source, [slot for slot, _ in moving])

    reader = GroupReader(broker.bootstrap, "readers", topic)
    reader.start()
    wait(lambda: reader.assigned, 30, "the group assigns the partitions")
    producer = NumberedProducer(broker.bootstrap, topic, PARTITIONS)
    producer.start()
    wait(lambda: len(producer.acked) > 2000 and len(reader.consumed) > 1000, 30, "producing and consuming")
    moved_at = time.monotonic()
    took = _reshard(cluster, source, target, count)
    # The partitions in use moved. The slot map is read from one node, which may learn the new owners a
    # moment after redis-cli has finished (by gossip, on a loaded machine): so until it shows them.
    wait(
        lambda: all(owners(client, ks, topic, PARTITIONS)[p] == target for _, p in moving),
        30,
        "the slot map shows the moved partitions on the target",
    )
    time.sleep(1)
    back = _slots_to_carry(target, [slot for slot, _ in moving])
    assert back == count, (back, count)  # the target's own slots stay where they are
    took_back = _reshard(cluster, target, source, back)
    time.sleep(2)
    producer.finish()
    wait(lambda: owners(client, ks, topic, PARTITIONS) == before, 30, "the partitions are back")
    lost, duplicated = check_stored(producer, stored_numbers(client, ks, topic, PARTITIONS))
    client.close()

    total = len(producer.sent_at)
    wait(lambda: len(reader.consumed) >= total, 60, "the group consumes every record")
    time.sleep(1)  # a duplicate arriving late would show
    reader.stop_event.set()
    reader.join(30)
    assert reader.error is None, reader.error
    times = Counter(n for _, n, _ in reader.consumed)
    assert set(times) == set(range(total)), "the group's records differ from the acknowledged"
    assert max(times.values()) == 1, "the group consumed a record twice"
    moved = {p for _, p in moving}
    consumed_after = [
        t for p, n, t in reader.consumed if p in moved and producer.sent_at[n] > moved_at + took
    ]
    assert consumed_after, "nothing produced to the moved partitions after the reshard was consumed"
    print(
        f"\nreshard: {count} slots (partitions {sorted(moved)}) moved in {took:.2f} s under production, "
        f"{back} back in {took_back:.2f} s; "
        f"{total} records acknowledged, lost {lost}, duplicated {duplicated}; records sent again "
        f"{producer.resent}; longest wait for an ack "
        f"{max(t - producer.sent_at[n] for _, _, n, t in producer.acked):.2f} s"
    )
