"""Fetch sessions (KIP-227): opening, incremental fetches, forgotten partitions, closing, the two
session errors, the cache limit, topic ids, and real clients that use sessions (kafka-python) or not
(librdkafka)."""

from __future__ import annotations

import datetime
import socket
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from kio.schema.fetch.v13.request import FetchPartition as FetchPartition13
from kio.schema.fetch.v13.request import FetchRequest as FetchRequest13
from kio.schema.fetch.v13.request import FetchTopic as FetchTopic13

from schooner.broker.partitions.fetch_sessions import FetchSessions, WantedPartition, WantedTopic
from tests.clients import Rec, confluent_consume, confluent_produce
from tests.wire import connect, exchange, produce_request

PARTITIONS = 3


def create(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def fetch(
    session_id: int,
    epoch: int,
    topic: str,
    offsets: dict[int, int],
    forgotten: tuple[int, ...] = (),
) -> FetchRequest:
    """A Fetch v12 that does not wait, of `offsets` (partition: fetch offset)."""
    parts = tuple(
        FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20) for p, o in offsets.items()
    )
    return FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=0,
        max_bytes=1 << 22,
        session_id=session_id,
        session_epoch=epoch,
        topics=(FetchTopic(topic=topic, partitions=parts),) if parts else (),
        forgotten_topics_data=(ForgottenTopic(topic=topic, partitions=forgotten),) if forgotten else (),
    )


def shown(response: Any) -> dict[int, tuple[int, int]]:
    """partition: (high watermark, bytes of records) of every partition in the response."""
    return {
        p.partition_index: (p.high_watermark, len(p.records or b""))
        for t in response.responses
        for p in t.partitions
    }


def one(sock: socket.socket, body: Any) -> Any:
    (response,) = exchange(sock, [body])
    return response


def produce(port: int, topic: str, partition: int, values: list[bytes]) -> None:
    with connect(port) as sock:
        (response,) = exchange(sock, [produce_request(topic, values, partition=partition)])
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


def test_a_session_sends_only_what_changed(broker) -> None:
    create(broker.bootstrap, "sess")
    produce(broker.port, "sess", 0, [b"a", b"b"])
    with connect(broker.port) as sock:
        opened = one(sock, fetch(0, 0, "sess", {0: 0, 1: 0, 2: 0}))
        assert opened.error_code == ErrorCode.none and opened.session_id != 0
        sid = opened.session_id
        assert set(shown(opened)) == {0, 1, 2}  # a full response: every partition
        assert shown(opened)[0][0] == 2 and shown(opened)[0][1] > 0

        # Epoch 1 with nothing named: the session's offsets are read again; nothing changed but
        # partition 0, whose records are still there from offset 0 (the client has not moved it).
        first = one(sock, fetch(sid, 1, "sess", {}))
        assert first.session_id == sid and set(shown(first)) == {0}
        # The client moves partition 0 past its records: nothing left to send.
        moved = one(sock, fetch(sid, 2, "sess", {0: 2}))
        assert moved.error_code == ErrorCode.none and shown(moved) == {}

        produce(broker.port, "sess", 1, [b"x"])
        grown = one(sock, fetch(sid, 3, "sess", {}))
        assert set(shown(grown)) == {1} and shown(grown)[1][0] == 1

        # Forget partition 1: new records there no longer show; partition 2 still does.
        one(sock, fetch(sid, 4, "sess", {1: 1}))
        produce(broker.port, "sess", 1, [b"y"])
        produce(broker.port, "sess", 2, [b"z"])
        forgot = one(sock, fetch(sid, 5, "sess", {}, forgotten=(1,)))
        assert set(shown(forgot)) == {2}
        # A partition named again joins the session again.
        back = one(sock, fetch(sid, 6, "sess", {1: 0, 2: 1}))
        assert set(shown(back)) == {1} and shown(back)[1][0] == 2


def test_unknown_session_and_wrong_epoch_are_errors(broker) -> None:
    create(broker.bootstrap, "sess-err")
    with connect(broker.port) as sock:
        sid = one(sock, fetch(0, 0, "sess-err", {0: 0})).session_id
        assert sid != 0
        for epoch in (2, 7, 2**31 - 1):
            wrong = one(sock, fetch(sid, epoch, "sess-err", {}))
            assert wrong.error_code == ErrorCode.invalid_fetch_session_epoch
            assert wrong.session_id == 0 and wrong.responses == ()
        # A refused request does not advance the epoch: 1 is still the next.
        assert one(sock, fetch(sid, 1, "sess-err", {})).error_code == ErrorCode.none
        assert one(sock, fetch(sid, 1, "sess-err", {})).error_code == ErrorCode.invalid_fetch_session_epoch
        missing = one(sock, fetch(sid ^ 0x5A5A, 1, "sess-err", {}))
        assert missing.error_code == ErrorCode.fetch_session_id_not_found and missing.responses == ()


def test_closing_and_replacing_a_session(broker) -> None:
    create(broker.bootstrap, "sess-close")
    produce(broker.port, "sess-close", 0, [b"a"])
    with connect(broker.port) as sock:
        sid = one(sock, fetch(0, 0, "sess-close", {0: 0})).session_id
        # Epoch -1 closes it and answers as a sessionless full fetch.
        closed = one(sock, fetch(sid, -1, "sess-close", {0: 0, 1: 0}))
        assert closed.error_code == ErrorCode.none and closed.session_id == 0
        assert set(shown(closed)) == {0, 1}
        gone = one(sock, fetch(sid, 1, "sess-close", {}))
        assert gone.error_code == ErrorCode.fetch_session_id_not_found

        # Epoch 0 with an id closes that one and opens another.
        old = one(sock, fetch(0, 0, "sess-close", {0: 0})).session_id
        new = one(sock, fetch(old, 0, "sess-close", {0: 1, 2: 0}))
        assert new.session_id not in (0, old) and set(shown(new)) == {0, 2}
        assert one(sock, fetch(old, 1, "sess-close", {})).error_code == ErrorCode.fetch_session_id_not_found
        assert one(sock, fetch(new.session_id, 1, "sess-close", {})).error_code == ErrorCode.none

        # No session asked for: none is opened.
        assert one(sock, fetch(0, -1, "sess-close", {0: 0})).session_id == 0


def test_the_cache_limit_keeps_the_larger_sessions(broker_factory) -> None:
    broker = broker_factory(fetch_session_cache_slots=2)
    create(broker.bootstrap, "sess-cap")
    with connect(broker.port) as sock:
        small = one(sock, fetch(0, 0, "sess-cap", {0: 0})).session_id
        pair = one(sock, fetch(0, 0, "sess-cap", {0: 0, 1: 0})).session_id
        assert small and pair
        # Full, and a one-partition session is no larger than any: answered without a session.
        refused = one(sock, fetch(0, 0, "sess-cap", {2: 0}))
        assert refused.error_code == ErrorCode.none and refused.session_id == 0 and set(shown(refused)) == {2}
        # A three-partition session takes the smallest one's place.
        big = one(sock, fetch(0, 0, "sess-cap", {0: 0, 1: 0, 2: 0})).session_id
        assert big not in (0, small, pair)
        assert one(sock, fetch(small, 1, "sess-cap", {})).error_code == ErrorCode.fetch_session_id_not_found
        assert one(sock, fetch(pair, 1, "sess-cap", {})).error_code == ErrorCode.none
        assert one(sock, fetch(big, 1, "sess-cap", {})).error_code == ErrorCode.none

    none = broker_factory(fetch_session_cache_slots=0)
    create(none.bootstrap, "sess-none")
    with connect(none.port) as sock:
        assert one(sock, fetch(0, 0, "sess-none", {0: 0})).session_id == 0


def test_an_idle_session_makes_room_first() -> None:
    # The 2-minute idle rule, on the cache itself (a broker test would wait 2 minutes).
    sessions = FetchSessions(limit=2, idle_seconds=0.0)
    wanted = [WantedTopic("t", None, [WantedPartition(0, 0, 1)])]
    first = sessions.begin(0, 0, wanted, [])
    second = sessions.begin(0, 0, wanted, [])
    assert not isinstance(first, ErrorCode) and not isinstance(second, ErrorCode)
    assert first.session is not None and second.session is not None
    third = sessions.begin(0, 0, wanted, [])  # both idle "long enough": the least recently used goes
    assert not isinstance(third, ErrorCode) and third.session is not None
    assert first.session.id not in sessions and second.session.id in sessions and len(sessions) == 2


def test_sessions_by_topic_id(broker) -> None:
    create(broker.bootstrap, "sess-id", 2)
    produce(broker.port, "sess-id", 1, [b"a"])
    with connect(broker.port) as sock:
        meta = one(sock, fetch(0, -1, "sess-id", {0: 0}))
        assert meta.error_code == ErrorCode.none
        topic_id = _topic_id(broker, "sess-id")

        def by_id(sid: int, epoch: int, offsets: dict[int, int]) -> FetchRequest13:
            parts = tuple(
                FetchPartition13(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                for p, o in offsets.items()
            )
            return FetchRequest13(
                max_wait=datetime.timedelta(0),
                min_bytes=0,
                max_bytes=1 << 22,
                session_id=sid,
                session_epoch=epoch,
                topics=(FetchTopic13(topic_id=topic_id, partitions=parts),) if parts else (),
                forgotten_topics_data=(),
            )

        opened = one(sock, by_id(0, 0, {0: 0, 1: 0}))
        assert opened.session_id and set(shown(opened)) == {0, 1}
        assert opened.responses[0].topic_id == topic_id
        again = one(sock, by_id(opened.session_id, 1, {1: 1}))
        assert again.error_code == ErrorCode.none and shown(again) == {}
        produce(broker.port, "sess-id", 0, [b"b"])
        grown = one(sock, by_id(opened.session_id, 2, {}))
        assert set(shown(grown)) == {0} and grown.responses[0].topic_id == topic_id


def _topic_id(broker: Any, topic: str) -> uuid.UUID:
    import redis

    from schooner.storage.keys import Keyspace

    client = redis.Redis.from_url(broker.redis_url)
    try:
        raw = client.hget(Keyspace(broker.settings.keyspace).topic(topic), "id")
    finally:
        client.close()
    assert raw is not None
    return uuid.UUID(raw.decode())


def test_kafka_python_reads_everything_through_a_session(broker) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    create(broker.bootstrap, "sess-kp")
    expected = set()
    for p in range(PARTITIONS):
        values = [b"%d-%d" % (p, i) for i in range(50)]
        confluent_produce(broker.bootstrap, "sess-kp", [Rec(None, v) for v in values], partition=p)
        expected.update(values)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    consumer.assign([KTP("sess-kp", p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got: list[bytes] = []
    try:
        while len(got) < len(expected):
            polled = consumer.poll(1000)
            assert polled or len(got) < len(expected)
            for records in polled.values():
                got.extend(r.value for r in records)
            if not polled:
                break
        # More records after the session has settled: incremental fetches must show them.
        confluent_produce(broker.bootstrap, "sess-kp", [Rec(None, b"late")], partition=1)
        for _ in range(20):
            polled = consumer.poll(500)
            for records in polled.values():
                got.extend(r.value for r in records)
            if b"late" in got:
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted([*expected, b"late"])  # each exactly once
    sessions = broker.broker.ctx.fetch_sessions.sessions()
    assert sessions and max(s.epoch for s in sessions) >= 2  # kafka-python opened one, fetched in it


def test_librdkafka_fetches_without_sessions(broker) -> None:
    create(broker.bootstrap, "sess-rd", 1)
    confluent_produce(broker.bootstrap, "sess-rd", [Rec(None, b"%d" % i) for i in range(20)])
    got = confluent_consume(broker.bootstrap, "sess-rd", 20)
    assert [m.value() for m in got] == [b"%d" % i for i in range(20)]
    # librdkafka 2.16 sends session id 0 and epoch -1 (no KIP-227): the broker opens nothing.
    assert len(broker.broker.ctx.fetch_sessions) == 0


@pytest.mark.parametrize("epoch", [0, -1])
def test_a_sessionless_full_fetch_still_answers_every_partition(broker, epoch: int) -> None:
    create(broker.bootstrap, f"sess-full{epoch + 1}")
    with connect(broker.port) as sock:
        response = one(sock, fetch(0, epoch, f"sess-full{epoch + 1}", {0: 0, 1: 0, 2: 0}))
    assert set(shown(response)) == {0, 1, 2}
