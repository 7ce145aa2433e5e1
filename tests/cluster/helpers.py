"""Helpers of the cluster tests: where a key sits; and, for the tests that kill nodes or move slots, a
numbered acks=all producer, where each partition's slot lives, and what the streams hold."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

import redis
from confluent_kafka import Producer
from redis.cluster import RedisCluster

from schooner.storage.keys import Keyspace
from schooner.storage.log.producers import FIELD_PREFIX, parse_entry
from schooner.storage.redis.embedded_cluster import EmbeddedCluster
from tests.group_clients import ClientThread

CLIENT_LOG = logging.getLogger("librdkafka")  # its connection errors go to the captured log


class NumberedProducer(ClientThread):
    """An idempotent acks=all confluent-kafka producer writing numbered records round the partitions at
    a steady pace (record n to partition n % partitions), until stop_event; then it flushes."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, per_second: int = 1000) -> None:
        super().__init__(name="numbered-producer")
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.per_tick = max(1, per_second // 100)
        self.sent_at: list[float] = []  # by record number
        self.acked: list[tuple[int, int, int, float]] = []  # partition, offset, number, when
        self.failed: list[Any] = []
        self.client_errors: list[str] = []
        self.resent = 0  # records librdkafka sent again after a retriable error (its statistics)
        self.unflushed = -1

    def _run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "statistics.interval.ms": 500,
                "stats_cb": self._stats,
                "error_cb": lambda err: self.client_errors.append(str(err)),
                "logger": CLIENT_LOG,
            }
        )
        number = 0
        while not self.stop_event.is_set():
            for _ in range(self.per_tick):
                self.sent_at.append(time.monotonic())
                partition = number % self.partitions
                producer.produce(self.topic, b"%d" % number, partition=partition, on_delivery=self._done)
                number += 1
            producer.poll(0)
            time.sleep(0.01)
        self.unflushed = producer.flush(90)
        producer.poll(1)  # the last statistics

    def _done(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(err)
        else:
            self.acked.append((msg.partition(), msg.offset(), int(msg.value()), time.monotonic()))

    def _stats(self, text: str) -> None:
        # Records sent more than once: a partition's transmitted count beyond the records it was given.
        partitions = json.loads(text)["topics"].get(self.topic, {}).get("partitions", {}).values()
        again = sum(max(0, p["txmsgs"] - p["msgs"]) for p in partitions if p["partition"] >= 0)
        self.resent = max(self.resent, again)

    def finish(self) -> None:
        """Stops producing and checks that every record was acknowledged, none given up."""
        self.stop_event.set()
        self.join(120)
        assert not self.is_alive(), "the producer did not finish flushing"
        assert self.error is None, self.error
        assert self.unflushed == 0, f"{self.unflushed} records never acknowledged"
        assert not self.failed, self.failed[:5]  # the producer recovered: no record given up
        numbers = sorted(n for _, _, n, _ in self.acked)
        assert numbers == list(range(len(self.sent_at))), "a record acknowledged twice, or never"

    def acked_after(self, moment: float, partitions: set[int]) -> float | None:
        """Seconds from `moment` to the acknowledgement of the first record, produced after it, to one
        of `partitions` (None while there is none)."""
        times = [t for p, _, n, t in list(self.acked) if p in partitions and self.sent_at[n] >= moment]
        return min(times) - moment if times else None

    def longest_wait(self, partitions: set[int], since: float) -> float:
        """The longest a record to one of `partitions`, produced after `since`, waited for its ack."""
        sent = self.sent_at
        return max(t - sent[n] for p, _, n, t in self.acked if p in partitions and sent[n] >= since)


def cluster_client(cluster: EmbeddedCluster) -> RedisCluster:
    return RedisCluster.from_url(cluster.url, require_full_coverage=False)


def owners(client: RedisCluster, ks: Keyspace, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's primary, by port, as the slot map says now."""
    client.nodes_manager.initialize()
    return {p: client.get_node_from_key(ks.stream(topic, p)).port for p in range(partitions)}


def replica_of(cluster: EmbeddedCluster, primary_port: int) -> int:
    """The port of the primary's replica."""
    node = redis.Redis(port=primary_port, decode_responses=True)
    try:
        replicas = [v for k, v in node.info("replication").items() if k.startswith("slave")]
    finally:
        node.close()
    assert len(replicas) == 1, replicas
    return int(replicas[0]["port"])


def stored_numbers(client: RedisCluster, ks: Keyspace, topic: str, partitions: int) -> dict[int, list[int]]:
    """The record numbers each partition's stream holds, in stream order (read with a cluster client,
    not through the broker)."""
    out = {}
    for p in range(partitions):
        entries = client.xrange(ks.stream(topic, p), "-", "+")
        out[p] = [int(fields[b"value"]) for _, fields in entries]
    return out


def producer_epochs(client: RedisCluster, ks: Keyspace, topic: str, partitions: int) -> set[int]:
    """The epochs the partitions' producer states hold. An idempotent producer that had to number its
    records afresh (librdkafka does after OUT_OF_ORDER_SEQUENCE_NUMBER) bumped its epoch."""
    epochs = set()
    for p in range(partitions):
        for field, value in client.hgetall(ks.partition_state(topic, p)).items():
            if field.startswith(FIELD_PREFIX.encode()):
                epochs.add(parse_entry(int(field[len(FIELD_PREFIX) :]), value.decode()).producer_epoch)
    return epochs


def check_stored(producer: NumberedProducer, stored: dict[int, list[int]]) -> tuple[int, int]:
    """Every acknowledged record is stored once, in its partition, in number order: (lost, duplicated)."""
    times = Counter(n for numbers in stored.values() for n in numbers)
    acked = {n for _, _, n, _ in producer.acked}
    lost = len(acked - set(times))
    duplicated = sum(c - 1 for c in times.values())
    assert lost == 0, f"{lost} acknowledged records lost"
    assert duplicated == 0, f"{duplicated} records stored twice"
    assert set(times) == acked, "a record stored that was never acknowledged"
    for p, numbers in stored.items():
        assert all(n % producer.partitions == p for n in numbers), f"partition {p} holds another's record"
        assert numbers == sorted(numbers), f"partition {p} out of order"
    return lost, duplicated


def wait_promoted(cluster: EmbeddedCluster, killed: int, timeout: float = 30) -> float:
    """Waits until a primary replaced the killed one; returns when (monotonic)."""
    deadline = time.monotonic() + timeout
    while True:
        now = cluster.primary_ports()
        if len(now) == cluster.primaries and killed not in now:
            return time.monotonic()
        assert time.monotonic() < deadline, f"no replica took over from {killed}: primaries {now}"
        time.sleep(0.05)


def node_id(port: int) -> str:
    node = redis.Redis(port=port, decode_responses=True)
    try:
        return str(node.execute_command("CLUSTER", "MYID"))
    finally:
        node.close()


class SlotMove:
    """Moves one slot between primaries by hand, a step at a time (as redis-cli --cluster reshard does
    for each slot), so a test can act while the slot is half moved."""

    def __init__(self, cluster: EmbeddedCluster, slot: int, source: int, target: int) -> None:
        self.cluster, self.slot, self.source, self.target = cluster, slot, source, target
        self.source_id, self.target_id = node_id(source), node_id(target)
        self.begun = False

    def _on(self, port: int, *args: Any) -> Any:
        node = redis.Redis(port=port)
        try:
            return node.execute_command(*args)
        finally:
            node.close()

    def begin(self) -> None:
        """The slot is importing on the target and migrating on the source: the source answers ASK for
        keys it does not have, TRYAGAIN for calls on several keys of which it has some."""
        self._on(self.target, "CLUSTER", "SETSLOT", self.slot, "IMPORTING", self.source_id)
        self._on(self.source, "CLUSTER", "SETSLOT", self.slot, "MIGRATING", self.target_id)
        self.begun = True

    def migrate(self, *keys: str) -> None:
        self._on(self.source, "MIGRATE", "127.0.0.1", self.target, "", 0, 5000, "KEYS", *keys)

    def finish(self) -> None:
        """Moves the keys left and gives the slot to the target, on every primary."""
        if not self.begun:
            self.begin()
        left = self._on(self.source, "CLUSTER", "GETKEYSINSLOT", self.slot, 1000)
        if left:
            self.migrate(*(k.decode() for k in left))
        for port in (self.target, self.source, *self._other_primaries()):
            self._on(port, "CLUSTER", "SETSLOT", self.slot, "NODE", self.target_id)

    def _other_primaries(self) -> list[int]:
        """As the source sees them (not asking each node: a test may have stopped one)."""
        lines = self._on(self.source, "CLUSTER", "NODES").decode().splitlines()
        ports = [
            int(f[1].split("@")[0].rsplit(":", 1)[1])
            for f in (line.split() for line in lines)
            if "master" in f[2] and "fail" not in f[2]
        ]
        return [port for port in ports if port not in (self.source, self.target)]


def primary_of(client: redis.RedisCluster, key: str) -> int:
    """The port of the primary that holds the key's slot."""
    return int(client.get_node_from_key(key).port)


def primaries_of(client: redis.RedisCluster, keys: Iterable[str]) -> set[int]:
    return {primary_of(client, key) for key in keys}
