"""ShareFetch and ShareAcknowledge over the raw wire (requests built with kio): share sessions and their
epochs, piggybacked acknowledgements, acquired ranges and delivery counts, and the protocol's errors for
bad input (an offset the member did not acquire, an unknown session epoch, malformed batches), with
nothing else disturbed."""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from schooner.protocol.records import read_batches
from schooner.storage.keys import Keyspace
from tests.broker.helpers import share_heartbeat
from tests.broker.share_rig import set_group_configs
from tests.wire import call

GROUP = "wire-share"
ACCEPT, RELEASE, REJECT = 1, 2, 3


def _topic(broker: Any, name: str, values: int) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(values):
        producer.produce(name, value=b"v%d" % i)
    assert producer.flush(10) == 0
    topic = broker.call(broker.broker.ctx.topics.load(name))
    return topic.id


def _batch(first: int, last: int, *types: int) -> dict[str, Any]:
    return {"first_offset": first, "last_offset": last, "acknowledge_types": types}


def _fetch(port: int, topic_id: uuid.UUID, member: str, epoch: int, acks: tuple[dict[str, Any], ...] = (),
           max_records: int = 100, version: int = 2, forget: bool = False) -> Any:  # fmt: skip
    req = request_type(ApiKey.SHARE_FETCH, version)
    part = make(
        sibling(req, "FetchPartition"),
        partition_index=0,
        acknowledgement_batches=tuple(make(sibling(req, "AcknowledgementBatch"), **a) for a in acks),
    )
    topics = () if forget else (make(sibling(req, "FetchTopic"), topic_id=topic_id, partitions=(part,)),)
    forgotten = (make(sibling(req, "ForgottenTopic"), topic_id=topic_id, partitions=(0,)),) if forget else ()
    return call(
        port,
        make(
            req,
            group_id=GROUP,
            member_id=member,
            share_session_epoch=epoch,
            max_wait=datetime.timedelta(milliseconds=0),
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=max_records,
            batch_size=max_records,
            topics=topics,
            forgotten_topics_data=forgotten,
        ),
    )


def _ack(port: int, topic_id: uuid.UUID, member: str, epoch: int, *acks: dict[str, Any]) -> Any:
    req = request_type(ApiKey.SHARE_ACKNOWLEDGE, 2)
    part = make(
        sibling(req, "AcknowledgePartition"),
        partition_index=0,
        acknowledgement_batches=tuple(make(sibling(req, "AcknowledgementBatch"), **a) for a in acks),
    )
    topic = make(sibling(req, "AcknowledgeTopic"), topic_id=topic_id, partitions=(part,))
    return call(port, make(req, group_id=GROUP, member_id=member, share_session_epoch=epoch, topics=(topic,)))


def _partition(response: Any) -> Any:
    assert response.error_code == ErrorCode.none, response.error_message
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition


def _acquired(response: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in _partition(response).acquired_records]


def _values(response: Any) -> list[bytes | None]:
    return [r.value for b in read_batches(_partition(response).records) for r in b.records]


def test_sessions_acquire_and_piggybacked_acknowledgements(broker_factory: Any) -> None:
    broker = broker_factory(share_record_lock_duration_ms=30_000)
    topic_id = _topic(broker, "wire-share-a", 0)
    port = broker.port
    # latest by default: the share partition starts at the end, so records come after the first fetch
    first = _fetch(port, topic_id, "m1", 0)
    assert _partition(first).acquired_records == ()
    assert first.acquisition_lock_timeout == datetime.timedelta(seconds=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        producer.produce("wire-share-a", value=b"v%d" % i)
    assert producer.flush(10) == 0

    got = _fetch(port, topic_id, "m1", 1, max_records=2)
    assert _acquired(got) == [(0, 1, 1)] and _values(got) == [b"v0", b"v1"]
    other = _fetch(port, topic_id, "m2", 0)
    assert _acquired(other) == [(2, 3, 1)]
    # m1 accepts 0, releases 1 in its next fetch; 1 comes back to it with delivery count 2
    again = _fetch(port, topic_id, "m1", 2, (_batch(0, 1, ACCEPT, RELEASE),))
    assert _partition(again).acknowledge_error_code == ErrorCode.none
    assert _acquired(again) == [(1, 1, 2)]
    # m2 rejects 2 and accepts 3 with ShareAcknowledge; nothing is left to acquire
    done = _ack(port, topic_id, "m2", 1, _batch(2, 3, REJECT, ACCEPT))
    assert done.error_code == ErrorCode.none
    assert done.responses[0].partitions[0].error_code == ErrorCode.none
    assert _fetch(port, topic_id, "m2", 2).responses == ()


def test_bad_input_gets_the_protocols_errors(broker_factory: Any) -> None:
    broker = broker_factory()
    topic_id = _topic(broker, "wire-share-b", 0)
    port = broker.port
    _fetch(port, topic_id, "m1", 0)
    _fetch(port, topic_id, "m2", 0)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("wire-share-b", value=b"only")
    assert producer.flush(10) == 0
    assert _acquired(_fetch(port, topic_id, "m1", 1)) == [(0, 0, 1)]

    # m2 acknowledges m1's record: INVALID_RECORD_STATE, and m1 still holds it
    wrong = _fetch(port, topic_id, "m2", 1, (_batch(0, 0, ACCEPT),))
    assert _partition(wrong).acknowledge_error_code == ErrorCode.invalid_record_state
    assert _ack(port, topic_id, "m2", 2, _batch(0, 0, ACCEPT)).responses[0].partitions[0].error_code == (
        ErrorCode.invalid_record_state
    )
    # session epochs: a stale or future epoch, a session never opened, acks on the opening request
    assert _fetch(port, topic_id, "m1", 7).error_code == ErrorCode.invalid_share_session_epoch
    assert _fetch(port, topic_id, "nobody", 3).error_code == ErrorCode.share_session_not_found
    opening = _ack(port, topic_id, "m1", 0, _batch(0, 0, ACCEPT))
    assert opening.error_code == ErrorCode.invalid_share_session_epoch
    assert _fetch(port, topic_id, "m3", 0, (_batch(0, 0, ACCEPT),)).error_code == ErrorCode.invalid_request
    # malformed batches: last before first, a type out of range, types not matching the width
    for epoch, bad in enumerate((_batch(1, 0, ACCEPT), _batch(0, 0, 9), _batch(0, 2, ACCEPT, ACCEPT)), 2):
        reply = _ack(port, topic_id, "m1", epoch, bad)
        assert reply.responses[0].partitions[0].error_code == ErrorCode.invalid_request
    # none of it disturbed m1's lock: it accepts its record
    assert _partition(_fetch(port, topic_id, "m1", 5, (_batch(0, 0, ACCEPT),))).acknowledge_error_code == (
        ErrorCode.none
    )


def test_closing_the_session_releases_what_the_member_holds(broker_factory: Any) -> None:
    broker = broker_factory()
    topic_id = _topic(broker, "wire-share-c", 0)
    port = broker.port
    _fetch(port, topic_id, "m1", 0)
    _fetch(port, topic_id, "m2", 0)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(3):
        producer.produce("wire-share-c", value=b"v%d" % i)
    assert producer.flush(10) == 0
    assert _acquired(_fetch(port, topic_id, "m1", 1)) == [(0, 2, 1)]
    closed = _fetch(port, topic_id, "m1", -1, (_batch(0, 0, ACCEPT),))
    assert _partition(closed).acknowledge_error_code == ErrorCode.none
    # offsets 1 and 2 were released at once, not after the 30 s lock
    assert _acquired(_fetch(port, topic_id, "m2", 1)) == [(1, 2, 2)]
    assert _fetch(port, topic_id, "m1", 2).error_code == ErrorCode.share_session_not_found


def test_deleting_the_share_group_drops_its_share_partitions(broker_factory: Any, redis_client: Any) -> None:
    broker = broker_factory()
    topic_id = _topic(broker, "wire-share-d", 2)
    ks = Keyspace(broker.settings.keyspace)
    joined = share_heartbeat(broker.port, GROUP, "m1", 0, ("wire-share-d",))
    assert joined.error_code == ErrorCode.none
    _fetch(broker.port, topic_id, "m1", 0)  # makes the share partition (at the latest offset)
    stream = ks.stream("wire-share-d", 0)
    assert [g["name"] for g in redis_client.xinfo_groups(stream)] == [GROUP.encode()]
    assert redis_client.smembers(ks.share_topics(GROUP)) == {b"wire-share-d"}
    assert share_heartbeat(broker.port, GROUP, "m1", -1).error_code == ErrorCode.none  # leaves

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_consumer_groups([GROUP])[GROUP].result(10)
    assert redis_client.xinfo_groups(stream) == []
    assert not redis_client.exists(ks.share_topics(GROUP))
    assert redis_client.xlen(stream) == 2  # the records stay


def test_by_duration_starts_at_the_first_record_no_older_than_that(broker_factory: Any) -> None:
    broker = broker_factory()
    topic_id = _topic(broker, "wire-share-e", 0)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    two_hours_ago = int(time.time() * 1000) - 7_200_000
    for i in range(3):
        producer.produce("wire-share-e", value=b"old%d" % i, timestamp=two_hours_ago)
    for i in range(2):
        producer.produce("wire-share-e", value=b"new%d" % i)
    assert producer.flush(10) == 0
    set_group_configs(broker.bootstrap, GROUP, share_auto_offset_reset="by_duration:PT1H")
    got = _fetch(broker.port, topic_id, "m1", 0)
    assert _values(got) == [b"new0", b"new1"] and _acquired(got) == [(3, 4, 1)]
