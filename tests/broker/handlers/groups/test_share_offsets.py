"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets over the raw wire.

No Python admin client implements APIs 90-92 (confluent-kafka 2.16's AdminClient lacks them, and so
does kafka-python 3.0.12's KafkaAdminClient), so the requests are built with kio; the share partitions
are made by ShareFetch and ShareAcknowledge requests, as a share consumer's would.
"""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests.broker.helpers import share_acknowledge, share_fetch, wait
from tests.group_clients import ConsumerProtocolMember
from tests.wire import call

GROUP = "offsets-share"
ACCEPT = 1


def _topic(broker: Any, name: str, values: int, partitions: int = 1) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    _produce(broker, name, range(values))
    return broker.call(broker.broker.ctx.topics.load(name)).id  # type: ignore[no-any-return]


def _produce(broker: Any, name: str, values: range) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in values:
        producer.produce(name, value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0


def _fetch(broker: Any, topic_id: uuid.UUID, member: str, epoch: int, max_records: int = 100) -> list[int]:
    return share_fetch(broker.port, GROUP, topic_id, member, epoch, max_records)


def _accept(broker: Any, topic_id: uuid.UUID, member: str, epoch: int, first: int, last: int) -> None:
    share_acknowledge(broker.port, GROUP, topic_id, member, epoch, first, last, ACCEPT)


# -- the admin's side: APIs 90-92 ---------------------------------------------------------------------
def _describe(broker: Any, topics: dict[str, list[int]] | None, group: str = GROUP, version: int = 1) -> Any:
    """The one group's part of the response."""
    req = request_type(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version)
    wanted = None
    if topics is not None:
        topic = sibling(req, "DescribeShareGroupOffsetsRequestTopic")
        wanted = tuple(make(topic, topic_name=n, partitions=tuple(ps)) for n, ps in topics.items())
    group_cls = sibling(req, "DescribeShareGroupOffsetsRequestGroup")
    response = call(broker.port, make(req, groups=(make(group_cls, group_id=group, topics=wanted),)))
    (described,) = response.groups
    assert described.group_id == group
    return described


def _offsets(described: Any) -> dict[tuple[str, int], tuple[int, int, ErrorCode]]:
    """(topic, partition) -> (start offset, lag, error)."""
    assert described.error_code == ErrorCode.none, described.error_message
    return {
        (t.topic_name, p.partition_index): (p.start_offset, getattr(p, "lag", None), p.error_code)
        for t in described.topics
        for p in t.partitions
    }


def _alter(broker: Any, offsets: dict[tuple[str, int], int], group: str = GROUP) -> Any:
    req = request_type(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0)
    by_topic: dict[str, list[Any]] = {}
    for (name, index), offset in offsets.items():
        part = make(sibling(req, "AlterShareGroupOffsetsRequestPartition"), partition_index=index,
                    start_offset=offset)  # fmt: skip
        by_topic.setdefault(name, []).append(part)
    topic_cls = sibling(req, "AlterShareGroupOffsetsRequestTopic")
    topics = tuple(make(topic_cls, topic_name=n, partitions=tuple(ps)) for n, ps in by_topic.items())
    return call(broker.port, make(req, group_id=group, topics=topics))


def _altered(response: Any) -> dict[tuple[str, int], ErrorCode]:
    assert response.error_code == ErrorCode.none, response.error_message
    return {(t.topic_name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}


def _delete(broker: Any, names: list[str], group: str = GROUP) -> Any:
    req = request_type(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0)
    topic_cls = sibling(req, "DeleteShareGroupOffsetsRequestTopic")
    topics = tuple(make(topic_cls, topic_name=n) for n in names)
    return call(broker.port, make(req, group_id=group, topics=topics))


def test_describe_alter_and_delete_the_start_offset(broker: Any) -> None:
    name = "so-cycle"
    topic_id = _topic(broker, name, 10)
    # never fetched: not initialized, for the named topic and in the group's list
    assert _offsets(_describe(broker, {name: [0]})) == {(name, 0): (-1, -1, ErrorCode.none)}
    assert _describe(broker, None).topics == ()

    # latest by default: the share partition starts at the end (10)
    assert _fetch(broker, topic_id, "m1", 0) == []
    assert _offsets(_describe(broker, {name: [0]})) == {(name, 0): (10, 0, ErrorCode.none)}
    _produce(broker, name, range(10, 15))
    assert _fetch(broker, topic_id, "m1", 1, max_records=3) == [10, 11, 12]
    _accept(broker, topic_id, "m1", 2, 10, 11)
    # 12 in flight, 13 and 14 not yet delivered: the start offset is 12, the lag 3
    described = _describe(broker, None)
    assert _offsets(described) == {(name, 0): (12, 3, ErrorCode.none)}
    assert described.topics[0].topic_id == topic_id
    assert _offsets(_describe(broker, {name: [0]}, version=0)) == {(name, 0): (12, None, ErrorCode.none)}

    # alter: the share partition starts over at 5, and the next fetch gets records from there
    assert _altered(_alter(broker, {(name, 0): 5})) == {(name, 0): ErrorCode.none}
    assert _offsets(_describe(broker, {name: [0]})) == {(name, 0): (5, 10, ErrorCode.none)}
    assert _fetch(broker, topic_id, "m2", 0, max_records=4) == [5, 6, 7, 8]
    assert _offsets(_describe(broker, {name: [0]}))[(name, 0)][0] == 5

    # delete: the state is gone, and a new fetch starts again at the end (latest)
    deleted = _delete(broker, [name])
    assert deleted.error_code == ErrorCode.none
    assert [(t.topic_name, t.topic_id, t.error_code) for t in deleted.responses] == [
        (name, topic_id, ErrorCode.none)
    ]
    assert _offsets(_describe(broker, {name: [0]})) == {(name, 0): (-1, -1, ErrorCode.none)}
    assert _describe(broker, None).topics == ()
    assert _fetch(broker, topic_id, "m3", 0) == []
    _produce(broker, name, range(15, 16))
    assert _fetch(broker, topic_id, "m3", 1) == [15]


def test_alter_initializes_a_share_partition_never_fetched(broker: Any) -> None:
    name = "so-fresh"
    topic_id = _topic(broker, name, 6, partitions=2)
    assert _altered(_alter(broker, {(name, 0): 2})) == {(name, 0): ErrorCode.none}
    # only the altered partition is initialized; the other one is not listed
    assert _offsets(_describe(broker, None)) == {(name, 0): (2, 4, ErrorCode.none)}
    assert _offsets(_describe(broker, {name: [0, 1]}))[(name, 1)] == (-1, -1, ErrorCode.none)
    assert _fetch(broker, topic_id, "m1", 0) == [2, 3, 4, 5]


def test_unknown_topics_and_partitions_and_bad_offsets(broker: Any) -> None:
    name = "so-errors"
    topic_id = _topic(broker, name, 3)
    assert _fetch(broker, topic_id, "m1", 0) == []
    offsets = _offsets(_describe(broker, {name: [0, 4], "so-nowhere": [0]}))
    assert offsets == {
        (name, 0): (3, 0, ErrorCode.none),
        (name, 4): (-1, -1, ErrorCode.unknown_topic_or_partition),
        ("so-nowhere", 0): (-1, -1, ErrorCode.unknown_topic_or_partition),
    }
    altered = _altered(_alter(broker, {(name, 0): 1, (name, 4): 0, ("so-nowhere", 0): 0}))
    assert altered == {
        (name, 0): ErrorCode.none,
        (name, 4): ErrorCode.unknown_topic_or_partition,
        ("so-nowhere", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert _altered(_alter(broker, {(name, 0): -1})) == {(name, 0): ErrorCode.invalid_request}
    # the refused requests changed nothing
    assert _offsets(_describe(broker, {name: [0]})) == {(name, 0): (1, 2, ErrorCode.none)}
    deleted = _delete(broker, ["so-nowhere", name])
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
        ("so-nowhere", ErrorCode.unknown_topic_or_partition),
        (name, ErrorCode.none),
    ]
    assert _alter(broker, {(name, 0): 0}, group="").error_code == ErrorCode.invalid_group_id


def test_a_consumer_groups_id_is_not_a_share_group(broker: Any) -> None:
    name = "so-kinds"
    _topic(broker, name, 3)
    # a group known only by its committed offsets (assign and commit), and a KIP-848 consumer group
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "so-committed",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(offsets=[TopicPartition(name, 0, 2)], asynchronous=False)
    consumer.close()
    member = ConsumerProtocolMember(broker.bootstrap, "so-consumer", name)
    member.start()
    try:
        wait(lambda: member.assignments and member.assignments[-1], 20, "the consumer group's assignment")
        for group in ("so-committed", "so-consumer"):
            described = _describe(broker, {name: [0]}, group=group)
            assert described.error_code == ErrorCode.group_id_not_found and described.topics == ()
            assert _alter(broker, {(name, 0): 0}, group=group).error_code == ErrorCode.group_id_not_found
            deleted = _delete(broker, [name], group=group)
            assert deleted.error_code == ErrorCode.group_id_not_found and deleted.responses == ()
    finally:
        member.finish()
    # nothing was made for them: a share group of that name would show no share partition
    assert _offsets(_describe(broker, None, group="so-free")) == {}
