"""Fetch wake-ups on a Redis Cluster: a long-polling fetch on one broker is woken by an append made
through another, on partitions of every primary, through sharded pub/sub; and a broker hears the
notices of the partitions its fetches wait on, and of no other.

The broker also looks at the partitions its fetches wait on every half second (waiters.RECHECK_SECONDS).
The tests that time a wake-up put that look off (`notices_only`), so only a notice can end a wait before
its max wait: the bound is then far from any pause a loaded machine makes, and each check also checks that
the waiting broker heard the notice."""

from __future__ import annotations

import datetime
import threading
import time
from collections import Counter
from typing import Any

import pytest
import redis
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from schooner.broker.partitions import waiters
from schooner.storage.keys import Keyspace
from schooner.storage.topic_partition import TopicPartition as Partition
from tests.broker.helpers import wait
from tests.wire import call, produce_request

PARTITIONS = 12
MAX = 1 << 20
MAX_WAIT_MS = 8000  # long against NOTICE_WOKEN_WITHIN, short of the test socket's 10 s timeout
# Seconds, with the half-second look put off: a notice wakes in milliseconds; a wait that no notice
# ended lasts its max wait (8 s, or the consumer's 10 s fetch.wait.max.ms).
NOTICE_WOKEN_WITHIN = 5.0


@pytest.fixture
def brokers(broker_factory, redis_cluster) -> tuple[Any, Any]:
    """Broker a, where fetches wait, and broker b, through which records are produced."""
    return broker_factory(redis_url=redis_cluster.url), broker_factory(redis_url=redis_cluster.url)


@pytest.fixture
def notices_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Puts off the brokers' half-second look at waited partitions: only a notice ends a wait early."""
    monkeypatch.setattr(waiters, "RECHECK_SECONDS", 60.0)
    time.sleep(0.6)  # the look sleeping now (0.5 s) ends, and the next sleeps 60 s


def _create(a: Any, topic: str) -> None:
    """The topic, every partition placed on broker a (so a consumer fetches from a only)."""
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    placed = NewTopic(topic, num_partitions=PARTITIONS, replica_assignment=[[a.broker_id]] * PARTITIONS)
    admin.create_topics([placed])[topic].result(10)


def _one_per_primary(redis_cluster: Any, keyspace: str, topic: str) -> list[int]:
    """A partition of the topic on each primary of the cluster."""
    client = redis.RedisCluster.from_url(redis_cluster.url)
    try:
        by_node: dict[str, int] = {}
        for p in range(PARTITIONS):
            by_node.setdefault(client.get_node_from_key(Keyspace(keyspace).stream(topic, p)).name, p)
    finally:
        client.close()
    assert len(by_node) == 3, by_node
    return sorted(by_node.values())


def _heard(broker: Any) -> Counter[Partition]:
    async def read() -> Counter[Partition]:
        return Counter(broker.broker.sharded_notices.heard)

    return broker.call(read())  # type: ignore[no-any-return]


def _subscribed(broker: Any) -> set[Partition]:
    async def read() -> set[Partition]:
        return broker.broker.sharded_notices.subscribed  # type: ignore[no-any-return]

    return broker.call(read())  # type: ignore[no-any-return]


def _produce(b: Any, topic: str, partition: int, value: bytes) -> None:
    response = call(b.port, produce_request(topic, [value], partition=partition))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


def _fetch(port: int, topic: str, partitions: list[int], max_wait_ms: int, offset: int = 0) -> Any:
    """A raw Fetch (v12) of the partitions from `offset`, waiting up to max_wait_ms for one byte."""
    parts = tuple(
        FetchPartition(partition=p, fetch_offset=offset, partition_max_bytes=MAX) for p in partitions
    )
    return call(
        port,
        FetchRequest(
            max_wait=datetime.timedelta(milliseconds=max_wait_ms),
            min_bytes=1,
            max_bytes=MAX,
            topics=(FetchTopic(topic=topic, partitions=parts),),
            forgotten_topics_data=(),
        ),
    )


class _Waiting:
    """A Fetch in a thread of its own; `returned` is when its response arrived."""

    def __init__(
        self, port: int, topic: str, partitions: list[int], max_wait_ms: int, offset: int = 0
    ) -> None:
        self.response: Any = None
        self.returned = 0.0
        args = (port, topic, partitions, max_wait_ms, offset)
        self._thread = threading.Thread(target=self._run, args=args)
        self._thread.start()

    def _run(self, port: int, topic: str, partitions: list[int], max_wait_ms: int, offset: int) -> None:
        self.response = _fetch(port, topic, partitions, max_wait_ms, offset)
        self.returned = time.monotonic()

    def join(self) -> Any:
        self._thread.join(30)
        assert self.response is not None, "the fetch did not return"
        return self.response


def test_raw_long_poll_is_woken_by_another_brokers_append_on_every_primary(
    brokers, redis_cluster, keyspace, notices_only
) -> None:
    a, b = brokers
    _create(a, "wake")
    for p in _one_per_primary(redis_cluster, keyspace, "wake"):
        tp = Partition("wake", p)
        before = _heard(a)[tp]
        waiting = _Waiting(a.port, "wake", [p], max_wait_ms=MAX_WAIT_MS)
        wait(lambda tp=tp: tp in _subscribed(a), 10, f"a subscribes to {tp}")  # type: ignore[misc]
        time.sleep(0.1)  # the fetch reads again once the subscription is confirmed, then waits
        assert waiting.response is None  # still waiting: the partition is empty
        produced = time.monotonic()
        _produce(b, "wake", p, b"wake %d" % p)
        response = waiting.join()
        records = response.responses[0].partitions[0].records
        assert records and b"wake %d" % p in records
        assert waiting.returned - produced < NOTICE_WOKEN_WITHIN, (tp, waiting.returned - produced)
        wait(lambda tp=tp, before=before: _heard(a)[tp] == before + 1, 5, f"a heard {tp}")  # type: ignore[misc]


def test_a_broker_hears_only_the_partitions_its_fetches_wait_on(brokers, redis_cluster, keyspace) -> None:
    a, b = brokers
    _create(a, "only")
    waited = _one_per_primary(redis_cluster, keyspace, "only")
    waiting = _Waiting(a.port, "only", waited, max_wait_ms=MAX_WAIT_MS)
    wait(lambda: _subscribed(a) == {Partition("only", p) for p in waited}, 10, "a subscribes to its waits")
    for p in range(PARTITIONS):
        _produce(b, "only", p, b"x")
    response = waiting.join()
    assert any(part.records for part in response.responses[0].partitions)
    # The waited partitions stay subscribed a while after the fetch returned (a consumer fetches again).
    expected = {Partition("only", p): 1 for p in waited}
    wait(lambda: _heard(a) == expected, 5, f"a hears its three partitions: {_heard(a)}")
    time.sleep(0.3)
    assert _heard(a) == expected
    assert _heard(b) == Counter()  # b waits on nothing, so it hears nothing, not even its own appends


def test_confluent_consumer_long_poll_is_woken_across_brokers(
    brokers, redis_cluster, keyspace, notices_only
) -> None:
    a, b = brokers
    _create(a, "tail")
    partitions = _one_per_primary(redis_cluster, keyspace, "tail")
    consumer = Consumer(
        {
            "bootstrap.servers": a.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10_000,
            "fetch.error.backoff.ms": 10,
        }
    )
    consumer.assign([TopicPartition("tail", p, 0) for p in partitions])
    try:
        wanted = {Partition("tail", p) for p in partitions}
        while not wanted <= _subscribed(a):  # the consumer's fetch waits on a
            assert consumer.poll(0.1) is None
        for p in partitions:
            produced = time.monotonic()
            _produce(b, "tail", p, b"tail %d" % p)
            msg = consumer.poll(10)
            arrived = time.monotonic()
            assert msg is not None and msg.error() is None
            assert (msg.partition(), msg.value()) == (p, b"tail %d" % p)
            assert arrived - produced < NOTICE_WOKEN_WITHIN, (p, arrived - produced)
    finally:
        consumer.close()
    assert _heard(a) == Counter({Partition("tail", p): 1 for p in partitions})


def test_wake_ups_resume_after_the_partitions_primary_fails_over(
    cluster_factory, broker_factory, keyspace, notices_only
) -> None:
    # cluster_factory first: its cluster then outlives the brokers at teardown.
    cluster = cluster_factory()
    a = broker_factory(redis_url=cluster.url)
    b = broker_factory(redis_url=cluster.url)
    _create(a, "fo")
    # A partition whose primary is not the node the brokers were pointed at.
    client = redis.RedisCluster.from_url(cluster.url)
    try:
        port, p = next(
            (node.port, p)
            for p in range(PARTITIONS)
            if (node := client.get_node_from_key(Keyspace(keyspace).stream("fo", p))).port
            != cluster.nodes[0].port
        )
    finally:
        client.close()
    tp = Partition("fo", p)

    def woken_at_once() -> bool:
        """A Fetch waiting on a at the end of the partition is woken by b's append well before its
        max wait, and a heard the notice. False while the cluster fails over (errors meanwhile)."""
        now = _fetch(a.port, "fo", [p], 0).responses[0].partitions[0]
        if now.error_code != ErrorCode.none:
            time.sleep(0.2)
            return False
        before = _heard(a)[tp]
        waiting = _Waiting(a.port, "fo", [p], max_wait_ms=MAX_WAIT_MS, offset=now.high_watermark)
        time.sleep(0.3)  # subscribed by now when all is well
        produced = time.monotonic()
        produce = call(b.port, produce_request("fo", [b"x"], partition=p))
        got = waiting.join().responses[0].partitions[0]
        return (
            produce.responses[0].partition_responses[0].error_code == ErrorCode.none
            and got.error_code == ErrorCode.none
            and bool(got.records)
            and 0 <= waiting.returned - produced < NOTICE_WOKEN_WITHIN
            and _heard(a)[tp] == before + 1
        )

    assert woken_at_once()
    cluster.node_for_port(port).kill()
    deadline = time.monotonic() + 30
    while not woken_at_once():
        assert time.monotonic() < deadline, "wake-ups did not resume after the failover"
    assert port not in cluster.primary_ports()
