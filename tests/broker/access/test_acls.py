"""CreateAcls, DescribeAcls and DeleteAcls with the authorizer on, through confluent-kafka's AdminClient and
kafka-python's admin client; Kafka's validation errors over raw kio requests; a change made through one
broker in force on another within a second (the notice, and the version check behind it); super users;
allow_everyone_if_no_acl_found both ways. (With the authorizer off, every ACL API answers
SECURITY_DISABLED: tests/broker/handlers/test_admin_quotas_acls.py.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
)
from kafka.admin import ResourcePattern as KPattern
from kafka.admin import ResourcePatternFilter as KFilter
from kafka.admin import ResourceType as KResourceType
from kafka.errors import ClusterAuthorizationFailedError
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from schooner.security.acls import AclBinding as Binding
from schooner.security.acls import PatternType, PermissionType
from schooner.security.acls import ResourceType as RType
from schooner.storage.redis.calls import drive_sync
from schooner.storage.security import acls as acl_store
from tests.broker.acl_rig import CLUSTER, TOPIC, Op, Secured, T, error_of, secure
from tests.conftest import redis_for
from tests.wire import call

E = KafkaError
ANY = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                       AclPermissionType.ANY)  # fmt: skip


@pytest.fixture
def manager(broker_factory: Any) -> Secured:
    """A secured broker where the test's principal may manage ACLs (ALTER on the cluster), nothing more."""
    s = secure(broker_factory)
    s.grant(CLUSTER, "", Op.ALTER)
    return s


def binding(rtype: Any, name: str, op: Any, pattern: Any = ResourcePatternType.LITERAL,
            principal: str = "User:alice", permission: Any = AclPermissionType.ALLOW,
            host: str = "*") -> AclBinding:  # fmt: skip
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


SET = [
    binding(ResourceType.TOPIC, "orders", AclOperation.READ),
    binding(ResourceType.TOPIC, "ord", AclOperation.WRITE, ResourcePatternType.PREFIXED),
    binding(
        ResourceType.TOPIC,
        "*",
        AclOperation.DESCRIBE,
        principal="User:bob",
        permission=AclPermissionType.DENY,
    ),
    binding(ResourceType.GROUP, "billing", AclOperation.READ, host="10.0.0.1"),
    binding(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
    binding(ResourceType.TRANSACTIONAL_ID, "tx-", AclOperation.WRITE, ResourcePatternType.PREFIXED),
]


def described(admin: Any, f: AclBindingFilter) -> set[AclBinding]:
    return set(admin.describe_acls(f, request_timeout=T).result(T))


def test_create_describe_and_delete_round_trip_with_filters(manager: Secured) -> None:
    admin = manager.admin()
    assert [error_of(f) for f in admin.create_acls(SET, request_timeout=T).values()] == [0] * len(SET)
    assert [error_of(f) for f in admin.create_acls(SET[:1], request_timeout=T).values()] == [0]  # again: one
    mine = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                            AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    assert described(admin, mine) == {b for b in SET if b.principal == "User:alice"}
    topics = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)  # fmt: skip
    assert described(admin, topics) == set(SET[:3])
    matching = AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.MATCH, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    assert described(admin, matching) == set(SET[:3])  # literal, prefix "ord" and the wildcard
    prefixed = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.PREFIXED, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    assert described(admin, prefixed) == {SET[1], SET[5]}

    deleted = admin.delete_acls([prefixed, topics], request_timeout=T)
    results = [f.result(T) for f in deleted.values()]
    # A binding both filters match is reported once, under the first.
    assert set(results[0]) == {SET[1], SET[5]} and set(results[1]) == {SET[0], SET[2]}
    # Left: the group's and the cluster's (and the rig's own grant of ALTER on the cluster).
    assert described(admin, ANY) - {SET[3], SET[4]} == {
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, manager.principal, "*",
                   AclOperation.ALTER, AclPermissionType.ALLOW)
    }  # fmt: skip
    assert {SET[3], SET[4]} <= described(admin, ANY)


def test_a_principal_filter_is_compared_as_a_string(manager: Secured) -> None:
    """A filter principal such as "*" is no error (Kafka does not parse filters): it matches no binding,
    while "User:*" matches the bindings for every user."""
    admin = manager.admin()
    everyone = binding(ResourceType.TOPIC, "shared", AclOperation.READ, principal="User:*")
    created = admin.create_acls([everyone, SET[0]], request_timeout=T)
    assert [error_of(f) for f in created.values()] == [0, 0]

    def by_principal(principal: str) -> AclBindingFilter:
        return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, principal, None,
                                AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip

    assert described(admin, by_principal("*")) == set()
    assert described(admin, by_principal("User:*")) == {everyone}
    deleted = admin.delete_acls([by_principal("*")], request_timeout=T)
    assert [f.result(T) for f in deleted.values()] == [[]]
    assert {everyone, SET[0]} <= described(admin, ANY)


def test_kafka_python_manages_acls_too(manager: Secured) -> None:
    client = KafkaAdminClient(bootstrap_servers=manager.bootstrap, request_timeout_ms=T * 1000)
    try:
        pattern = KPattern(KResourceType.GROUP, "kp-", ACLResourcePatternType.PREFIXED)
        acl = ACL("User:carol", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
        created = client.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        f = ACLFilter("User:carol", None, ACLOperation.ANY, ACLPermissionType.ANY,
                      KFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY))  # fmt: skip
        found, error = client.describe_acls(f)
        assert error.errno == 0
        assert [(a.principal, a.operation, a.resource_pattern.resource_name) for a in found] == [
            ("User:carol", ACLOperation.READ, "kp-")
        ]
        ((_, matched, delete_error),) = client.delete_acls([f])
        assert delete_error.errno == 0 and [a.principal for a in matched] == ["User:carol"]
        assert client.describe_acls(f)[0] == []
    finally:
        client.close()


def test_acl_management_needs_alter_and_describe_on_the_cluster(broker_factory: Any) -> None:
    s = secure(broker_factory)
    admin = s.admin()
    assert [error_of(f) for f in admin.create_acls(SET[:2], request_timeout=T).values()] == [
        E.CLUSTER_AUTHORIZATION_FAILED
    ] * 2
    assert [error_of(f) for f in admin.delete_acls([ANY], request_timeout=T).values()] == [
        E.CLUSTER_AUTHORIZATION_FAILED
    ]
    client = KafkaAdminClient(bootstrap_servers=s.bootstrap, request_timeout_ms=T * 1000)
    every = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                      KFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY))  # fmt: skip
    with pytest.raises(ClusterAuthorizationFailedError):
        client.describe_acls(every)
    client.close()
    s.grant(CLUSTER, "", Op.DESCRIBE)  # describing is allowed now, changing is not
    assert described(admin, ANY) == {
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    }  # fmt: skip
    assert [error_of(f) for f in admin.create_acls(SET[:1], request_timeout=T).values()] == [
        E.CLUSTER_AUTHORIZATION_FAILED
    ]


# -- Kafka's validation, over raw requests (the clients refuse most of these before sending) ----------
def _creation(**changes: Any) -> Any:
    fields = dict(resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a", host="*",
                  operation=3, permission_type=3)  # fmt: skip
    return make(sibling(request_type(ApiKey.CREATE_ACLS, 3), "AclCreation"), **{**fields, **changes})


def test_invalid_creations_get_invalid_request_and_the_valid_ones_are_made(manager: Secured) -> None:
    creations = (
        _creation(resource_type=0),
        _creation(resource_type=4, resource_name="cluster"),
        _creation(resource_pattern_type=2),
        _creation(operation=1),
        _creation(permission_type=9),
        _creation(principal="nobody"),
        _creation(resource_name=""),
        _creation(resource_name="made"),
    )
    response = call(manager.port, make(request_type(ApiKey.CREATE_ACLS, 3), creations=creations))
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (ErrorCode.invalid_request, "Invalid resourceType UNKNOWN"),
        (ErrorCode.invalid_request, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (ErrorCode.invalid_request, "Invalid patternType MATCH"),
        (ErrorCode.invalid_request, "Invalid operation ANY"),
        (ErrorCode.invalid_request, "Invalid permissionType UNKNOWN"),
        (ErrorCode.invalid_request, "Could not parse principal from `nobody` (no colon is present separating "
                                    "the principal type from the principal name)"),
        (ErrorCode.invalid_request, "Invalid empty resource name"),
        (ErrorCode.none, None),
    ]  # fmt: skip
    _, stored = drive_sync(manager.redis, acl_store.load(manager.ks))
    assert {b.name for b in stored if b.resource_type == RType.TOPIC} == {"made"}


def _filter_fields(**changes: Any) -> dict[str, Any]:
    fields = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                  principal_filter=None, host_filter=None, operation=1, permission_type=1)  # fmt: skip
    return {**fields, **changes}


def test_filters_with_unknown_elements_get_invalid_request(manager: Secured) -> None:
    describe = make(request_type(ApiKey.DESCRIBE_ACLS, 3), **_filter_fields(operation=0))
    response = call(manager.port, describe)
    assert response.error_code == ErrorCode.invalid_request and "UNKNOWN" in response.error_message
    cls = sibling(request_type(ApiKey.DELETE_ACLS, 3), "DeleteAclsFilter")
    filters = (
        make(cls, **_filter_fields(pattern_type_filter=0)),
        make(cls, **_filter_fields(resource_type_filter=3)),
    )
    response = call(manager.port, make(request_type(ApiKey.DELETE_ACLS, 3), filters=filters))
    assert [r.error_code for r in response.filter_results] == [ErrorCode.invalid_request, ErrorCode.none]


# -- propagation between brokers ----------------------------------------------------------------------
def _writable(bootstrap: str, topic: str) -> bool:
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 3000})
    outcome: list[Any] = []
    producer.produce(topic, b"x", partition=0, on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(5)
    return len(outcome) == 1 and outcome[0] is None  # (a KafkaError cannot be compared with None)


def _until(check: Any, limit: float) -> float:
    """Seconds until check() holds (polled every 20 ms), failing after `limit`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < limit, "not in force in time"
        time.sleep(0.02)
    return time.monotonic() - started


def _metadata_allowed(port: int, topic: str) -> bool:
    cls = request_type(ApiKey.METADATA, 12)
    t = make(sibling(cls, "MetadataRequestTopic"), topic_id=None, name=topic)
    body = make(cls, topics=(t,), allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return call(port, body).topics[0].error_code == ErrorCode.none


@pytest.fixture
def two(broker_factory: Any) -> Iterator[tuple[Secured, Secured]]:
    a = secure(broker_factory)
    b = Secured(broker_factory(authorizer=True))
    a.grant(CLUSTER, "", Op.ALTER)
    a.topic("everywhere")
    yield a, b


def test_an_acl_created_on_one_broker_is_in_force_on_another_within_a_second(
    two: tuple[Secured, Secured],
) -> None:
    a, b = two
    assert not _metadata_allowed(b.port, "everywhere")
    admin = a.admin()
    created = admin.create_acls([binding(ResourceType.TOPIC, "everywhere", AclOperation.DESCRIBE,
                                         principal="User:ANONYMOUS")], request_timeout=T)  # fmt: skip
    assert [error_of(f) for f in created.values()] == [0]
    assert _until(lambda: _metadata_allowed(b.port, "everywhere"), 1.0) < 1.0
    deleted = admin.delete_acls([ANY], request_timeout=T)
    assert [error_of(f) for f in deleted.values()] == [0]
    assert _until(lambda: not _metadata_allowed(b.port, "everywhere"), 1.0) < 1.0


def test_a_change_whose_notice_was_lost_is_in_force_after_the_version_check(
    two: tuple[Secured, Secured],
) -> None:
    _, b = two
    assert not _metadata_allowed(b.port, "everywhere")
    # What a broker missing the notice sees: the set and the version change, nothing is published.
    grant = Binding(RType.TOPIC, "everywhere", PatternType.LITERAL, "User:ANONYMOUS", "*", Op.DESCRIBE,
                    PermissionType.ALLOW)  # fmt: skip
    plain = redis_for(b.broker.redis_url)
    plain.sadd(b.ks.acl_bindings, acl_store.encode_binding(grant))
    plain.incr(b.ks.acl_version)
    # At most a second since the last check, plus the polling: well under one and a half.
    assert _until(lambda: _metadata_allowed(b.port, "everywhere"), 1.5) < 1.5


# -- super users and allow_everyone_if_no_acl_found ---------------------------------------------------
def test_super_users_bypass_every_acl(broker_factory: Any) -> None:
    s = secure(broker_factory, super_users=["User:ANONYMOUS"])
    s.topic("su")
    s.deny(TOPIC, "su", Op.ALL)
    assert _writable(s.bootstrap, "su")
    admin = s.admin()  # and they manage ACLs with no ACL granting it
    assert [error_of(f) for f in admin.create_acls(SET[:1], request_timeout=T).values()] == [0]


@pytest.mark.parametrize("allow_everyone", [True, False])
def test_allow_everyone_if_no_acl_found(broker_factory: Any, allow_everyone: bool) -> None:
    s = secure(broker_factory, allow_everyone_if_no_acl_found=allow_everyone)
    s.topic("open")
    assert _writable(s.bootstrap, "open") is allow_everyone
    # Once the topic has any ACL (here for another principal), only matching ALLOWs let a client in.
    s.grant(TOPIC, "open", Op.READ, principal="User:someone-else")
    assert not _writable(s.bootstrap, "open")
    s.grant(TOPIC, "open", Op.WRITE)
    assert _writable(s.bootstrap, "open")


def test_a_denial_is_logged_once_a_minute_per_principal_resource_and_operation(
    broker_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    s = secure(broker_factory)
    s.topic("logged")
    s.grant(TOPIC, "logged", Op.DESCRIBE)  # Metadata passes, so each Produce is refused by the broker
    caplog.set_level("INFO", logger="schooner.broker.access.authorizer")
    for _ in range(3):
        assert not _writable(s.bootstrap, "logged")
    denials = [r.getMessage() for r in caplog.records if r.name == "schooner.broker.access.authorizer"]
    assert denials == ["denied: principal User:ANONYMOUS from 127.0.0.1 may not WRITE TOPIC 'logged'"]
