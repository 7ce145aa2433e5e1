"""KIP-848 consumer groups with a real client: confluent-kafka with group.protocol=consumer."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make
from tests.broker.helpers import fill, wait
from tests.group_clients import ConsumerProtocolMember
from tests.wire import call

# Short timings keep the tests quick; the defaults are Kafka's (45 s session, 5 s heartbeat).
FAST = {"consumer_group_heartbeat_ms": 300, "consumer_group_session_ms": 8000}


def _describe(broker: Any, group: str) -> Any:
    cls = request_type(ApiKey.CONSUMER_GROUP_DESCRIBE, 1)
    return call(broker.port, make(cls, group_ids=(group,), include_authorized_operations=False)).groups[0]


def _stable_assignment(broker: Any, group: str, members: int, timeout: float = 30) -> dict[str, list[int]]:
    """Waits for a Stable group of `members` members; returns each member's partitions."""
    deadline = time.monotonic() + timeout
    while True:
        d = _describe(broker, group)
        if d.error_code == ErrorCode.none and d.group_state == "Stable" and len(d.members) == members:
            return {
                m.member_id: sorted(p for t in m.assignment.topic_partitions for p in t.partitions)
                for m in d.members
            }
        assert time.monotonic() < deadline, d
        time.sleep(0.1)


def test_members_share_a_topic_exactly_once_across_a_leave_and_a_join(broker_factory) -> None:
    broker = broker_factory(**FAST)
    produced = fill(broker.bootstrap, "kip848", 12, 250)
    first = ConsumerProtocolMember(broker.bootstrap, "shared", "kip848", pace=0.1)
    second = ConsumerProtocolMember(broker.bootstrap, "shared", "kip848", pace=0.1)
    members = [first, second]
    for m in members:
        m.start()
    wait(lambda: sum(len(m.consumed) for m in members) > 300, 60, "the first two members consume")
    third = ConsumerProtocolMember(broker.bootstrap, "shared", "kip848", pace=0.1)
    third.start()
    members.append(third)
    wait(lambda: third.started_consuming.is_set(), 60, "a member that joins later gets partitions")
    first.finish()  # one member leaves
    wait(
        lambda: len({c for m in members for c in m.consumed}) >= len(produced), 120, "everything is consumed"
    )
    for m in members[1:]:
        m.finish()
    assert all(m.error is None for m in members), [m.error for m in members]
    counts = Counter(c for m in members for c in m.consumed)
    assert set(counts) == produced
    assert max(counts.values()) == 1, [c for c, n in counts.items() if n > 1][:5]


def test_uniform_assignor_balances_and_moves_little(broker_factory) -> None:
    broker = broker_factory(**FAST)
    fill(broker.bootstrap, "uni", 12, 1)
    uniform = {"group.remote.assignor": "uniform"}
    members = [ConsumerProtocolMember(broker.bootstrap, "uniform", "uni", **uniform) for _ in "ab"]
    for m in members:
        m.start()
    two = _stable_assignment(broker, "uniform", 2)
    assert sorted(len(ps) for ps in two.values()) == [6, 6]
    third = ConsumerProtocolMember(broker.bootstrap, "uniform", "uni", **uniform)
    third.start()
    members.append(third)
    three = _stable_assignment(broker, "uniform", 3)
    assert sorted(len(ps) for ps in three.values()) == [4, 4, 4]
    assert sorted(p for ps in three.values() for p in ps) == list(range(12))
    # Sticky: the first two members only gave partitions up, none moved between them.
    for member_id, partitions in two.items():
        assert set(three[member_id]) <= set(partitions)
    assert _describe(broker, "uniform").assignor_name == "uniform"
    for m in members:
        m.finish()
    assert all(m.error is None for m in members), [m.error for m in members]


def test_range_assignor_gives_contiguous_ranges(broker_factory) -> None:
    broker = broker_factory(**FAST)
    fill(broker.bootstrap, "rng", 12, 1)
    ranged = {"group.remote.assignor": "range"}
    members = [ConsumerProtocolMember(broker.bootstrap, "ranged", "rng", **ranged) for _ in "abc"]
    for m in members:
        m.start()
    ranges = sorted(_stable_assignment(broker, "ranged", 3).values())
    assert ranges == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert _describe(broker, "ranged").assignor_name == "range"
    wait(lambda: all(m.assignments and len(m.assignments[-1]) == 4 for m in members), 20, "clients see it")
    for m in members:
        m.finish()
    assert all(m.error is None for m in members), [m.error for m in members]


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(broker_factory) -> None:
    broker = broker_factory(**FAST)
    fill(broker.bootstrap, "stat", 4, 5)
    other = ConsumerProtocolMember(broker.bootstrap, "statics", "stat", **{"group.instance.id": "b"})
    mine = ConsumerProtocolMember(broker.bootstrap, "statics", "stat", **{"group.instance.id": "a"})
    other.start()
    mine.start()
    before = _stable_assignment(broker, "statics", 2)
    epoch = _describe(broker, "statics").group_epoch
    other_assignments = len(other.assignments)
    by_instance = {m.instance_id: m.member_id for m in _describe(broker, "statics").members}
    mine.finish()  # a static member's close steps out (epoch -2): it keeps its partitions
    stepped_out = {m.instance_id: m.member_epoch for m in _describe(broker, "statics").members}
    assert stepped_out["a"] == -2
    again = ConsumerProtocolMember(broker.bootstrap, "statics", "stat", **{"group.instance.id": "a"})
    again.start()
    wait(
        lambda: bool(again.assignments) and len(again.assignments[-1]) == 2, 30, "the restart gets partitions"
    )
    after = _stable_assignment(broker, "statics", 2)
    new_ids = {m.instance_id: m.member_id for m in _describe(broker, "statics").members}
    assert after[new_ids["a"]] == before[by_instance["a"]]
    assert after[new_ids["b"]] == before[by_instance["b"]]
    assert _describe(broker, "statics").group_epoch == epoch  # no rebalance
    assert len(other.assignments) == other_assignments  # the other member saw nothing
    for m in (other, again):
        m.finish()
    assert all(m.error is None for m in (other, mine, again)), [m.error for m in (other, mine, again)]


def test_commit_resume_and_admin_view(broker_factory) -> None:
    from confluent_kafka.admin import AdminClient

    broker = broker_factory(**FAST)
    fill(broker.bootstrap, "resume", 2, 10)
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "resumers", "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest"}  # fmt: skip
    c = Consumer(conf)
    c.subscribe(["resume"])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 6 and time.monotonic() < deadline:
        got += [m for m in c.consume(6 - len(got), 0.5) if not m.error()]
    c.commit(message=got[-1], asynchronous=False)
    committed = c.committed([TopicPartition("resume", got[-1].partition())], timeout=10)
    assert committed[0].offset == got[-1].offset() + 1
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(10).valid}
    assert "resumers" in listed
    assert str(listed["resumers"].type).upper().endswith("CONSUMER")
    described = admin.describe_consumer_groups(["resumers"])["resumers"].result(10)
    assert str(described.type).upper().endswith("CONSUMER") and str(described.state).endswith("STABLE")
    assert described.partition_assignor == "uniform" and len(described.members) == 1
    assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == {0, 1}
    c.close()
    c = Consumer(conf)
    c.subscribe(["resume"])
    m = None
    deadline = time.monotonic() + 30
    while (m is None or m.error() or m.partition() != got[-1].partition()) and time.monotonic() < deadline:
        m = c.poll(0.5)
    assert m is not None and m.offset() == got[-1].offset() + 1  # resumed after the commit
    c.close()


def test_topics_created_or_grown_later_reach_the_members(broker_factory) -> None:
    from confluent_kafka.admin import AdminClient

    broker = broker_factory(**FAST)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "latecomers", "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000}  # fmt: skip
    c = Consumer(conf)
    try:
        _follow_a_regex_and_growth(broker, admin, c)
    finally:
        c.close()


def _follow_a_regex_and_growth(broker: Any, admin: Any, c: Consumer) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewPartitions, NewTopic

    c.subscribe(["^late-.*"])  # a regex: matched on the broker, against topics as they appear
    for _ in range(5):
        c.poll(0.2)
    admin.create_topics([NewTopic("late-a", 2, 1)])["late-a"].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("late-a", value=b"first", partition=1)
    producer.flush(10)

    def next_value() -> tuple[int, bytes]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                return m.partition(), m.value()
        raise AssertionError("nothing arrived")

    assert next_value() == (1, b"first")
    admin.create_partitions([NewPartitions("late-a", 4)])["late-a"].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap})  # one that sees the new partitions
    producer.produce("late-a", value=b"grown", partition=3)
    producer.flush(10)
    assert next_value() == (3, b"grown")
    assert {tp.partition for tp in c.assignment()} == {0, 1, 2, 3}
