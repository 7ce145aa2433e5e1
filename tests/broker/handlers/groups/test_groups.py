"""Consumer groups with real clients: sharing, rebalancing, committing, resuming, static members, admin."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.broker.helpers import fill, wait
from tests.clients import Rec, confluent_produce
from tests.group_clients import GroupMember

pytestmark = pytest.mark.both_encodings


def test_three_clients_share_a_topic_exactly_once_across_a_rebalance(broker) -> None:
    produced = fill(broker.bootstrap, "shared12", 12, 100)
    # Records keep coming during the test, so a member that joins late always finds some to consume.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    lock = threading.Lock()
    producing = threading.Event()
    producing.set()

    def done(err: object, msg: object) -> None:
        assert err is None
        with lock:
            produced.add((msg.topic(), msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    def keep_producing() -> None:
        while producing.is_set():
            for p in range(12):
                producer.produce("shared12", value=b"more", partition=p, on_delivery=done)
            producer.poll(0)
            time.sleep(0.1)
        producer.flush(30)

    feeder = threading.Thread(target=keep_producing, daemon=True)
    feeder.start()
    first = GroupMember("confluent", broker.bootstrap, "mix", "shared12", pace=0.1)
    second = GroupMember("kafka-python", broker.bootstrap, "mix", "shared12", pace=0.1)
    members = [first, second]
    for m in members:
        m.start()
    wait(lambda: sum(len(m.consumed) for m in members) > 300, 60, "the first two members consume")
    third = GroupMember("aiokafka", broker.bootstrap, "mix", "shared12", pace=0.1)
    third.start()
    members.append(third)
    wait(lambda: third.started_consuming.is_set(), 60, "a member that joins later gets partitions")
    first.stop_event.set()  # one member leaves
    first.join(30)
    time.sleep(2)
    producing.clear()
    feeder.join(30)
    wait(lambda: len({c for m in members for c in m.consumed}) >= len(produced), 90, "everything is consumed")
    for m in members[1:]:
        m.stop_event.set()
        m.join(30)
    assert all(m.error is None for m in members), [m.error for m in members]
    counts = Counter(c for m in members for c in m.consumed)
    assert set(counts) == produced
    assert max(counts.values()) == 1, [c for c, n in counts.items() if n > 1][:5]


def test_commit_and_resume_where_left_off(broker) -> None:
    confluent_produce(broker.bootstrap, "resume", [Rec(None, b"%d" % i) for i in range(10)])
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "resumers", "auto.offset.reset": "earliest",
            "enable.auto.commit": False}  # fmt: skip
    c = Consumer(conf)
    c.subscribe(["resume"])
    seen = []
    while len(seen) < 4:
        m = c.poll(5)
        if m is not None and not m.error():
            seen.append(m)
    c.commit(message=seen[3], asynchronous=False)  # commits seen[3].offset + 1
    c.close()
    c = Consumer(conf)
    c.subscribe(["resume"])
    m = None
    while m is None or m.error():
        m = c.poll(5)
    assert m.value() == b"4"
    committed = c.committed([TopicPartition("resume", 0)], timeout=10)
    assert committed[0].offset == seen[3].offset() + 1
    c.close()


def test_auto_commit(broker) -> None:
    confluent_produce(broker.bootstrap, "auto", [Rec(None, b"%d" % i) for i in range(5)])
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "autos", "auto.offset.reset": "earliest",
            "auto.commit.interval.ms": 100}  # fmt: skip
    c = Consumer(conf)
    c.subscribe(["auto"])
    got = 0
    while got < 5:
        m = c.poll(5)
        if m is not None and not m.error():
            got += 1
    time.sleep(0.5)
    c.close()
    probe = Consumer({**conf, "enable.auto.commit": False})
    committed = probe.committed([TopicPartition("auto", 0)], timeout=10)[0].offset
    probe.close()
    low, high = Consumer(conf).get_watermark_offsets(TopicPartition("auto", 0), timeout=10)
    assert committed == high


def test_commit_metadata_round_trip_and_seek(broker) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KTP

    delivered = confluent_produce(broker.bootstrap, "meta", [Rec(None, b"%d" % i) for i in range(6)])
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="metas", enable_auto_commit=False)
    tp = KTP("meta", 0)
    c.assign([tp])
    c.commit({tp: OffsetAndMetadata(delivered[2].offset(), "checkpoint-7", -1)})
    assert c.committed(tp, metadata=True).metadata == "checkpoint-7"
    c.seek(tp, delivered[4].offset())
    records = [r for rs in c.poll(5000).values() for r in rs]
    assert [r.value for r in records][:2] == [b"4", b"5"]
    c.close()


def test_static_member_restart_within_session_timeout_keeps_the_generation(broker) -> None:
    fill(broker.bootstrap, "static", 4, 5)
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "statics", "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 10000}  # fmt: skip
    other = Consumer({**conf, "group.instance.id": "b"})
    mine = Consumer({**conf, "group.instance.id": "a"})
    assigned: list[list[int]] = []
    other.subscribe(["static"], on_assign=lambda c, ps: assigned.append([p.partition for p in ps]))
    mine.subscribe(["static"])

    def generation() -> int:
        return broker.call(broker.broker.ctx.groups.group("statics")).generation

    deadline = time.monotonic() + 30
    while (not assigned or len(assigned[-1]) != 2) and time.monotonic() < deadline:
        other.poll(0.2)
        mine.poll(0.2)
    assert assigned and len(assigned[-1]) == 2
    before = generation()
    mine.close()  # a static member's close does not leave the group
    mine = Consumer({**conf, "group.instance.id": "a"})
    mine.subscribe(["static"])
    got = None
    deadline = time.monotonic() + 20
    while got is None and time.monotonic() < deadline:
        other.poll(0.2)
        m = mine.poll(0.2)
        got = m if m is not None and not m.error() else None
    assert got is not None
    assert generation() == before
    assert len(assigned) == 1  # the other member saw no rebalance
    mine.close()
    other.close()


def test_describe_list_and_delete_groups_from_admin_clients(broker) -> None:
    from kafka.admin import KafkaAdminClient

    fill(broker.bootstrap, "adm", 2, 3)
    c = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "watched", "auto.offset.reset": "earliest"}
    )
    c.subscribe(["adm"])
    while (m := c.poll(5)) is None or m.error():
        pass
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert "watched" in {g.group_id for g in listed.valid}
    described = admin.describe_consumer_groups(["watched"])["watched"].result(10)
    assert str(described.state).endswith("STABLE") and len(described.members) == 1
    assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == {0, 1}
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    listed_kp = kp.list_groups()
    assert "watched" in str(listed_kp)
    c.commit(asynchronous=False)
    offsets = kp.list_group_offsets({"watched": None})
    assert "watched" in str(offsets) and "adm" in str(offsets)
    described_kp = kp.describe_groups(["watched"])
    assert "watched" in str(described_kp) and "Stable" in str(described_kp)
    busy = admin.delete_consumer_groups(["watched"])["watched"]
    try:
        busy.result(10)
        raise AssertionError("a group with members must not be deleted")
    except Exception as exc:  # NON_EMPTY_GROUP
        assert "NON_EMPTY_GROUP" in str(exc) or "not empty" in str(exc).lower()
    c.close()
    time.sleep(0.3)
    admin.delete_consumer_groups(["watched"])["watched"].result(10)
    assert "watched" not in {g.group_id for g in admin.list_consumer_groups().result(10).valid}
    kp.close()
