"""ACL enforcement on groups (classic, KIP-848 consumer and share groups) and transactional ids, with real
clients on a PLAINTEXT broker where every client is User:ANONYMOUS (tests/broker/acl_rig.py): each denied
path, then the same client allowed; ListGroups, DescribeGroups, OffsetFetch and ListTransactions filtered.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AclOperation as CAclOperation
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make
from tests.broker.acl_rig import CLUSTER, GROUP, PREFIXED, TOPIC, TXN, Op, Secured, T, error_of, secure
from tests.broker.share_rig import ShareRunner, set_group_configs, wait_for
from tests.wire import call

E = KafkaError


@pytest.fixture
def secured(broker_factory: Any) -> Secured:
    return secure(broker_factory)


def fill(s: Secured, topic: str, values: list[bytes]) -> None:
    """The topic with these records, produced under a WRITE grant that is revoked afterwards."""
    s.topic(topic)
    s.grant(TOPIC, topic, Op.WRITE)
    producer = Producer({"bootstrap.servers": s.bootstrap})
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(T) == 0
    s.revoke(TOPIC, topic, Op.WRITE)


def poll_group(
    bootstrap: str, group: str, topic: str, count: int, **conf: Any
) -> tuple[list[bytes], list[int]]:
    """A subscribed consumer's first `count` values and the error codes it met (it stops at the first)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, **conf})  # fmt: skip
    consumer.subscribe([topic])
    values: list[bytes] = []
    errors: list[int] = []
    deadline = time.monotonic() + 20
    while len(values) < count and not errors and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            errors.append(msg.error().code())
        else:
            values.append(msg.value())
    if values and not errors:
        consumer.commit(asynchronous=False)
    consumer.close()
    return values, errors


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_group_needs_read_on_the_group(secured: Secured, protocol: str) -> None:
    fill(secured, "gt", [b"a", b"b"])
    secured.grant(TOPIC, "gt", Op.READ)
    conf = {"group.protocol": protocol}
    if protocol == "classic":
        conf["session.timeout.ms"] = 6000
    assert poll_group(secured.bootstrap, "gg", "gt", 2, **conf) == ([], [E.GROUP_AUTHORIZATION_FAILED])
    secured.grant(GROUP, "gg", Op.READ)
    assert poll_group(secured.bootstrap, "gg", "gt", 2, **conf) == ([b"a", b"b"], [])
    admin = secured.admin()
    committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("gg")])
    (result,) = committed.values()
    assert [(tp.topic, tp.offset) for tp in result.result(T).topic_partitions] == [("gt", 2)]


def test_offset_commit_needs_read_on_each_topic(secured: Secured) -> None:
    for name in ("readable", "described"):
        secured.topic(name)
    secured.grant(GROUP, "cg", Op.READ)
    secured.grant(TOPIC, "readable", Op.READ)
    secured.grant(TOPIC, "described", Op.DESCRIBE)
    consumer = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": "cg"})
    wanted = [TopicPartition("readable", 0, 0), TopicPartition("described", 0, 0)]
    with pytest.raises(KafkaException) as raised:
        consumer.commit(offsets=wanted, asynchronous=False)
    assert raised.value.args[0].code() == E.TOPIC_AUTHORIZATION_FAILED
    consumer.close()
    admin = secured.admin()  # kept: a client that is collected ends its requests
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("cg")])
    (future,) = result.values()
    # The readable topic's offset was stored; the other was refused without disturbing it.
    assert [(tp.topic, tp.offset) for tp in future.result(T).topic_partitions] == [("readable", 0)]


def _commit(s: Secured, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": s.bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()


def test_groups_are_listed_described_fetched_and_deleted_only_as_the_acls_allow(secured: Secured) -> None:
    secured.topic("lt")
    for group in ("team-a", "team-b", "other"):
        secured.grant(GROUP, group, Op.READ)
        secured.grant(TOPIC, "lt", Op.READ)
        _commit(secured, group, "lt", 1)
        secured.revoke(GROUP, group, Op.READ)
    admin = secured.admin()

    def listed() -> set[str]:
        return {g.group_id for g in admin.list_consumer_groups(request_timeout=T).result(T).valid}

    assert listed() == set()
    secured.grant(GROUP, "team-", Op.DESCRIBE, pattern=PREFIXED)
    assert listed() == {"team-a", "team-b"}
    secured.grant(CLUSTER, "", Op.DESCRIBE)  # DESCRIBE on the cluster lists every group
    assert listed() == {"team-a", "team-b", "other"}

    described = admin.describe_consumer_groups(["team-a", "other"], include_authorized_operations=True)
    assert error_of(described["other"]) == E.GROUP_AUTHORIZATION_FAILED
    assert described["team-a"].result(T).authorized_operations == [CAclOperation.DESCRIBE]

    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("other")])
    assert [error_of(f) for f in fetched.values()] == [E.GROUP_AUTHORIZATION_FAILED]
    secured.revoke(TOPIC, "lt", Op.READ)  # the group may be described, the topic may not: left out
    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("team-a")])
    (future,) = fetched.values()
    assert future.result(T).topic_partitions == []

    deleted = admin.delete_consumer_groups(["team-a"], request_timeout=T)
    assert error_of(deleted["team-a"]) == E.GROUP_AUTHORIZATION_FAILED
    secured.grant(GROUP, "team-a", Op.DELETE)
    assert error_of(admin.delete_consumer_groups(["team-a"], request_timeout=T)["team-a"]) == 0
    assert listed() == {"team-b", "other"}


def test_a_share_group_needs_read_on_the_group_and_the_topic(secured: Secured) -> None:
    fill(secured, "st", [b"s1", b"s2"])
    secured.grant(GROUP, "sg", Op.ALTER_CONFIGS)
    set_group_configs(secured.bootstrap, "sg", share_auto_offset_reset="earliest")
    secured.grant(TOPIC, "st", Op.READ)
    denied = ShareRunner("denied", secured.bootstrap, "sg", ["st"]).start()
    wait_for(lambda: bool(denied.errors), 20, "the share consumer hears it may not use the group")
    denied.stop()
    assert any("GROUP_AUTHORIZATION_FAILED" in e or "Group authorization failed" in e for e in denied.errors)
    assert denied.deliveries == []
    secured.grant(GROUP, "sg", Op.READ)
    allowed = ShareRunner("allowed", secured.bootstrap, "sg", ["st"]).start()
    wait_for(lambda: len(allowed.deliveries) == 2, 30, "both records delivered")
    allowed.stop()
    assert sorted(d.value for d in allowed.deliveries) == [b"s1", b"s2"]


# -- transactional ids ----------------------------------------------------------------------------------
def test_init_transactions_needs_write_on_the_transactional_id(secured: Secured) -> None:
    secured.topic("tt")
    secured.grant(TOPIC, "tt", Op.WRITE)
    conf = {
        "bootstrap.servers": secured.bootstrap,
        "transactional.id": "app-1",
        "transaction.timeout.ms": 10000,
    }
    producer = Producer(conf)
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(T)
    assert raised.value.args[0].code() == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    secured.grant(TXN, "app-", Op.WRITE, pattern=PREFIXED)
    producer = Producer(conf)
    producer.init_transactions(T)
    producer.begin_transaction()
    producer.produce("tt", b"in a transaction", partition=0)
    producer.commit_transaction(T)
    # Sending a group's offsets in the transaction needs READ on the group.
    consumer = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": "txg"})
    producer.begin_transaction()
    with pytest.raises(KafkaException) as raised:
        producer.send_offsets_to_transaction(
            [TopicPartition("tt", 0, 1)], consumer.consumer_group_metadata(), T
        )
    assert raised.value.args[0].code() == E.GROUP_AUTHORIZATION_FAILED
    consumer.close()


def _list_transactions(s: Secured) -> set[str]:
    cls = request_type(ApiKey.LIST_TRANSACTIONS, 1)
    body = make(cls, state_filters=(), producer_id_filters=(), duration_filter=-1)
    return {t.transactional_id for t in call(s.port, body).transaction_states}


def _describe_transaction(s: Secured, transactional_id: str) -> ErrorCode:
    body = make(request_type(ApiKey.DESCRIBE_TRANSACTIONS, 0), transactional_ids=(transactional_id,))
    (state,) = call(s.port, body).transaction_states
    return state.error_code


def test_transactions_are_listed_and_described_only_as_the_acls_allow(secured: Secured) -> None:
    for transactional_id in ("shown", "hidden"):
        secured.grant(TXN, transactional_id, Op.WRITE)
        Producer(
            {"bootstrap.servers": secured.bootstrap, "transactional.id": transactional_id}
        ).init_transactions(T)
        secured.revoke(TXN, transactional_id, Op.WRITE)
    assert _list_transactions(secured) == set()
    assert _describe_transaction(secured, "shown") == ErrorCode.transactional_id_authorization_failed
    secured.grant(TXN, "shown", Op.DESCRIBE)
    assert _list_transactions(secured) == {"shown"}
    assert _describe_transaction(secured, "shown") == ErrorCode.none
    assert _describe_transaction(secured, "hidden") == ErrorCode.transactional_id_authorization_failed
