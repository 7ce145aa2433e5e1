"""Share groups' membership with real clients: confluent-kafka's ShareConsumer joins through
ShareGroupHeartbeat (subscribe, then poll), several consumers read one partition, and kafka-python's
admin lists the group by type and deletes it once its members are gone. Membership is checked with
ShareGroupDescribe (no client here has it: raw kio requests)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from tests.broker.helpers import share_describe, wait

SESSION_MS = 3000  # members that stop heartbeating are gone this soon


def _members(broker: Any, group: str) -> dict[str, Any]:
    (described,) = share_describe(broker.port, group)
    return {m.member_id: m for m in described.members}


def _poll_until(consumers: list[ShareConsumer], condition: Any, timeout: float, what: str) -> None:
    """Polls every consumer in turn (which drives their heartbeats) until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        for c in consumers:
            c.poll(0.1)


def test_share_consumers_join_and_read_one_partition_together(broker_factory) -> None:
    broker = broker_factory(share_session_timeout_ms=SESSION_MS, share_heartbeat_interval_ms=300)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("queue", 1, 1)])["queue"].result(10)
    topic_id = broker.call(broker.broker.ctx.topics.load("queue")).id
    consumers = [ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "q"}) for _ in range(3)]
    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        for c in consumers:
            c.subscribe(["queue"])
        _poll_until(consumers, lambda: len(_members(broker, "q")) == 3, 30, "three members")
        (described,) = share_describe(broker.port, "q")
        assert (described.group_state, described.assignor_name) == ("Stable", "simple")
        for m in described.members:
            assert m.client_id == "rdkafka" and m.subscribed_topic_names == ("queue",)
            (row,) = m.assignment.topic_partitions
            assert (row.topic_id, row.topic_name, tuple(row.partitions)) == (topic_id, "queue", (0,))

        shares = kadmin.list_groups(types_filter=["share"])
        assert [(g["group_id"], g["protocol_type"], g["group_state"]) for g in shares] == [
            ("q", "share", "Stable")
        ]
        assert "q" not in {g["group_id"] for g in kadmin.list_groups(types_filter=["consumer", "classic"])}
        assert kadmin.delete_groups(["q"]) == {"q": "NonEmptyGroupError"}
    finally:
        for c in consumers:
            c.close()
    # Closed consumers leave, or stop heartbeating and are removed when their sessions end.
    wait(lambda: not _members(broker, "q"), SESSION_MS / 1000 + 10, "members gone")
    assert [g["group_state"] for g in kadmin.list_groups(types_filter=["share"])] == ["Empty"]
    assert kadmin.delete_groups(["q"]) == {"q": "OK"}
    assert kadmin.list_groups(types_filter=["share"]) == []
    kadmin.close()
