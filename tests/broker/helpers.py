"""Helpers shared by the broker's test modules: filling topics, waiting for a condition, reading a
group's saved state from Redis, building classic JoinGroup requests, and share groups' raw requests
(ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge).

Test modules import these from here, never from one another."""

from __future__ import annotations

import datetime
import json
import struct
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from schooner.protocol.records import read_batches
from schooner.storage.keys import Keyspace
from tests.wire import call

Produced = tuple[str, int, int]  # topic, partition, offset

JOIN_TIMEOUT = datetime.timedelta(seconds=6)  # session and rebalance timeouts of join_request


def fill(
    bootstrap: str, topic: str, partitions: int, per_partition: int, idempotent: bool = False
) -> set[Produced]:
    """Creates `topic` and writes `per_partition` records to each partition; returns where they went."""
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result arrives
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    return produce_each(bootstrap, topic, partitions, per_partition, idempotent)


def produce_each(
    bootstrap: str,
    topic: str,
    partitions: int,
    per_partition: int,
    idempotent: bool = False,
    tag: bytes = b"",
    timeout: float = 30,
) -> set[Produced]:
    """Writes `per_partition` records (values tag + b"partition-i") to each partition of `topic`, all
    acknowledged within `timeout` seconds; returns where they went. idempotent: a producer whose retries
    cannot append a batch twice, for tests that count every record once (without it, a retry after an
    answer that says "possibly appended" may)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": idempotent})
    produced: set[Produced] = set()

    def done(err: object, msg: Any) -> None:
        assert err is None, err
        produced.add((msg.topic(), msg.partition(), msg.offset()))

    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=tag + b"%d-%d" % (p, i), partition=p, on_delivery=done)
    assert producer.flush(timeout) == 0
    return produced


def wait(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Polls `condition` every 0.1 s until it is true; fails with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def saved_group(client: redis.Redis, ks: Keyspace, group: str) -> dict[str, str]:
    """The group's hash as the coordinator saved it (owner, generation or group_epoch, members, ...)."""
    return {_text(k): _text(v) for k, v in client.hgetall(ks.group(group)).items()}


def committed(client: redis.Redis, ks: Keyspace, group: str) -> dict[str, int]:
    """The group's committed offsets as saved, by the saved partition key."""
    return {_text(k): json.loads(v)["offset"] for k, v in client.hgetall(ks.group_offsets(group)).items()}


def subscription(topic: str) -> bytes:
    """A ConsumerProtocolSubscription v0 to one topic, without user data."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


def join_request(version: int, member_id: str = "", instance: str | None = None) -> Any:
    """A JoinGroup of `version` to the classic group "g<version>", subscribing to topic "t" (range)."""
    cls = request_type(ApiKey.JOIN_GROUP, version)
    protocol = sibling(cls, "JoinGroupRequestProtocol")
    return make(
        cls,
        group_id=f"g{version}",
        session_timeout=JOIN_TIMEOUT,
        rebalance_timeout=JOIN_TIMEOUT,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=(protocol(name="range", metadata=subscription("t")),),
        reason=None,
    )


def share_heartbeat(
    port: int,
    group: str,
    member: str,
    epoch: int,
    topics: tuple[str, ...] | None = None,
    rack: str | None = None,
) -> Any:
    """One ShareGroupHeartbeat (v1); a join (epoch 0) must carry `topics`."""
    cls = request_type(ApiKey.SHARE_GROUP_HEARTBEAT, 1)
    body = make(
        cls, group_id=group, member_id=member, member_epoch=epoch, rack_id=rack, subscribed_topic_names=topics
    )
    return call(port, body)


def share_describe(port: int, *groups: str) -> list[Any]:
    """ShareGroupDescribe (v1) of the groups: one described group each, in order."""
    cls = request_type(ApiKey.SHARE_GROUP_DESCRIBE, 1)
    return list(call(port, make(cls, group_ids=groups, include_authorized_operations=False)).groups)


def share_fetch(
    port: int, group: str, topic_id: uuid.UUID, member: str, epoch: int, max_records: int = 100
) -> list[int]:
    """A ShareFetch (v2) of partition 0 that returns at once; the offsets acquired there. Each record's
    value must say its offset (b"v<offset>")."""
    req = request_type(ApiKey.SHARE_FETCH, 2)
    part = make(sibling(req, "FetchPartition"), partition_index=0, acknowledgement_batches=())
    topic = make(sibling(req, "FetchTopic"), topic_id=topic_id, partitions=(part,))
    response = call(
        port,
        make(req, group_id=group, member_id=member, share_session_epoch=epoch, max_wait=datetime.timedelta(0),
             min_bytes=1, max_bytes=1 << 20, max_records=max_records, batch_size=max_records, topics=(topic,),
             forgotten_topics_data=()),
    )  # fmt: skip
    assert response.error_code == ErrorCode.none, response.error_message
    offsets = []
    for t in response.responses:
        for p in t.partitions:
            assert p.error_code == ErrorCode.none
            acquired = [o for a in p.acquired_records for o in range(a.first_offset, a.last_offset + 1)]
            values = [r.value for b in read_batches(p.records) for r in b.records]
            assert values == [b"v%d" % o for o in acquired]
            offsets += acquired
    return offsets


def share_acknowledge(port: int, group: str, topic_id: uuid.UUID, member: str, epoch: int, first: int,
                      last: int, kind: int) -> None:  # fmt: skip
    """A ShareAcknowledge (v2) of offsets first..last of partition 0, all of one kind (1 accept,
    2 release, 3 reject), which must succeed."""
    req = request_type(ApiKey.SHARE_ACKNOWLEDGE, 2)
    batch = make(sibling(req, "AcknowledgementBatch"), first_offset=first, last_offset=last,
                 acknowledge_types=(kind,))  # fmt: skip
    part = make(sibling(req, "AcknowledgePartition"), partition_index=0, acknowledgement_batches=(batch,))
    topic = make(sibling(req, "AcknowledgeTopic"), topic_id=topic_id, partitions=(part,))
    body = make(req, group_id=group, member_id=member, share_session_epoch=epoch, topics=(topic,))
    response = call(port, body)
    assert response.responses[0].partitions[0].error_code == ErrorCode.none
