"""ACLs for real principals: SCRAM users over SASL_SSL and a client certificate's mapped name over mutual
TLS, on one broker with the authorizer on. The admin (a super user) grants; each principal gets what its
bindings allow and nothing else."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.broker.sasl_rig import add_user
from tests.certs import Certs
from tests.clients import Rec, confluent_consume, confluent_produce

from .tls_helpers import CN_RULE, bootstrap, confluent_tls
from .tls_helpers import tls_broker as make_tls_broker

ALLOW = AclPermissionType.ALLOW
LITERAL = ResourcePatternType.LITERAL


def sasl(certs: Certs, user: str) -> dict[str, Any]:
    return {
        **confluent_tls(certs),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


@pytest.fixture
def secured(broker_factory: Any, certs: Certs, redis_server: Any, keyspace: str) -> Any:
    for user in ("admin", "writer", "stranger"):
        add_user(redis_server.url, keyspace, user, f"{user}-secret")
    running = make_tls_broker(
        broker_factory,
        certs,
        listeners=("SASL_SSL", "SSL"),
        ssl_client_auth="required",
        ssl_principal_mapping_rules=CN_RULE,
        authorizer=True,
        super_users=["User:admin"],
    )
    admin = AdminClient({"bootstrap.servers": bootstrap(running, "SASL_SSL"), **sasl(certs, "admin")})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(20)
    grants = [
        AclBinding(ResourceType.TOPIC, "orders", LITERAL, "User:writer", "*", AclOperation.WRITE, ALLOW),
        AclBinding(ResourceType.TOPIC, "orders", LITERAL, "User:alice", "*", AclOperation.READ, ALLOW),
        # tests.clients' readers assign partitions under the group id "unused" (librdkafka looks up its
        # coordinator): every principal may use that group, so what differs is the topic's ACLs.
        AclBinding(ResourceType.GROUP, "unused", LITERAL, "User:*", "*", AclOperation.READ, ALLOW),
    ]
    for future in admin.create_acls(grants).values():
        future.result(20)
    return running


def produce_error(bootstrap_servers: str, conf: dict[str, Any]) -> KafkaError | None:
    producer = Producer({"bootstrap.servers": bootstrap_servers, "message.timeout.ms": 10000, **conf})
    outcome: list[KafkaError | None] = []
    producer.produce("orders", b"x", partition=0, on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(20)
    assert outcome, "no delivery report"
    return outcome[0]


def test_a_scram_user_gets_what_its_acls_allow(secured: Any, certs: Certs) -> None:
    where = bootstrap(secured, "SASL_SSL")
    confluent_produce(where, "orders", [Rec(b"k", b"from writer")], **sasl(certs, "writer"))
    refused = produce_error(where, sasl(certs, "stranger"))
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as read_refused:  # WRITE does not give READ
        confluent_consume(where, "orders", 1, **sasl(certs, "writer"), **{"group.id": "g"})
    assert read_refused.value.args[0].code() in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
    )


def test_a_certificate_principal_gets_what_its_acls_allow(secured: Any, certs: Certs) -> None:
    confluent_produce(bootstrap(secured, "SASL_SSL"), "orders", [Rec(b"k", b"v")], **sasl(certs, "writer"))
    tls = bootstrap(secured, "SSL")
    # alice's certificate maps to User:alice, who may READ orders but not write it; bob's maps to
    # User:bob, who may do neither.
    got = confluent_consume(tls, "orders", 1, **confluent_tls(certs, certs.alice))
    assert [m.value() for m in got] == [b"v"]
    refused = produce_error(tls, confluent_tls(certs, certs.alice))
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    bob = AdminClient({"bootstrap.servers": tls, **confluent_tls(certs, certs.bob)})
    topic = bob.list_topics("orders", timeout=20).topics["orders"]
    assert topic.error is not None and topic.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    refused = produce_error(tls, confluent_tls(certs, certs.bob))
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
