"""Client quotas (stored in Redis) and ACLs (no authorizer: SECURITY_DISABLED), through real clients and
the raw wire.

kafka-python 3 has the client-quota messages but no admin call for them, and confluent-kafka has neither,
so quotas go through kafka-python's own encoding on its admin connection, and through kio at each version.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
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
    ResourcePattern,
)
from kafka.admin import ResourceType as KResourceType
from kafka.errors import SecurityDisabledError
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kio.schema.errors import ErrorCode

from schooner.broker.handlers.acls import NO_AUTHORIZER
from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from schooner.storage.keys import Keyspace
from tests.wire import call

T = 5  # seconds for any one client call
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


@pytest.fixture
def kadmin(broker: Any) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=T * 1000)
    yield client
    client.close()


def _send(kadmin: KafkaAdminClient, request: Any) -> Any:
    """One request on kafka-python's admin connection, encoded by kafka-python at the version it picks."""
    return kadmin._manager.run(kadmin._manager.send, request)


# -- client quotas through kafka-python's encoding ----------------------------------------------------
Entity = list[tuple[str, str | None]]


def _alter(
    kadmin: KafkaAdminClient,
    entries: list[tuple[Entity, list[tuple[str, float | None]]]],
    validate_only: bool = False,
) -> list[tuple[int, str | None]]:
    """Alters quotas (a None value removes the key); returns (error code, message) per entry."""
    request = AlterClientQuotasRequest(
        entries=[
            AlterClientQuotasRequest.EntryData(
                entity=[
                    AlterClientQuotasRequest.EntryData.EntityData(entity_type=t, entity_name=n)
                    for t, n in entity
                ],
                ops=[
                    AlterClientQuotasRequest.EntryData.OpData(key=k, value=v or 0.0, remove=v is None)
                    for k, v in ops
                ],
            )
            for entity, ops in entries
        ],
        validate_only=validate_only,
    )
    response = _send(kadmin, request)
    return [(e.error_code, e.error_message) for e in response.entries]


def _describe(
    kadmin: KafkaAdminClient, components: list[tuple[str, int, str | None]], strict: bool = False
) -> Any:
    request = DescribeClientQuotasRequest(
        components=[
            DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=name)
            for t, m, name in components
        ],
        strict=strict,
    )
    return _send(kadmin, request)


def _found(response: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert response.error_code == 0, response.error_message
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


def _stored(client: redis.Redis, broker: Any) -> dict[str, dict[str, str]]:
    ks = Keyspace(broker.settings.keyspace)
    ids = sorted(m.decode() for m in client.smembers(ks.quota_entities))
    return {i: {k.decode(): v.decode() for k, v in client.hgetall(ks.quota_entity(i)).items()} for i in ids}


ALICE: Entity = [("user", "alice")]
ALICE_APP: Entity = [("user", "alice"), ("client-id", "app-1")]
DEFAULT_USER: Entity = [("user", None)]
APP: Entity = [("client-id", "app-1")]
DEFAULT_CLIENT: Entity = [("client-id", None)]
ODD_NAME: Entity = [("user", "a,b=<default>")]  # separators and the default marker, as a real name


@pytest.fixture
def seeded(kadmin: KafkaAdminClient) -> KafkaAdminClient:
    results = _alter(
        kadmin,
        [
            (ALICE, [("producer_byte_rate", 1024.0), ("request_percentage", 12.5)]),
            (ALICE_APP, [("consumer_byte_rate", 2048.0)]),
            (DEFAULT_USER, [("producer_byte_rate", 512.0)]),
            (APP, [("controller_mutation_rate", 3.5)]),
            (DEFAULT_CLIENT, [("consumer_byte_rate", 100.0)]),
            (ODD_NAME, [("producer_byte_rate", 7.0)]),
            ([("ip", "10.0.0.1")], [("connection_creation_rate", 30.0)]),
            ([("ip", None)], [("connection_creation_rate", 10.0)]),
        ],
    )
    assert results == [(0, None)] * 8
    return kadmin


def test_altered_quotas_are_stored_in_redis(
    seeded: KafkaAdminClient, broker: Any, redis_client: redis.Redis
) -> None:
    assert _stored(redis_client, broker) == {
        "client-id=<default>": {"consumer_byte_rate": "100.0"},
        "client-id=app-1": {"controller_mutation_rate": "3.5"},
        "ip=10.0.0.1": {"connection_creation_rate": "30.0"},
        "ip=<default>": {"connection_creation_rate": "10.0"},
        "user=a%2Cb%3D%3Cdefault%3E": {"producer_byte_rate": "7.0"},
        "user=<default>": {"producer_byte_rate": "512.0"},
        "user=alice": {"producer_byte_rate": "1024.0", "request_percentage": "12.5"},
        "user=alice,client-id=app-1": {"consumer_byte_rate": "2048.0"},
    }


def _key(entity: Entity) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(entity))


@pytest.mark.parametrize(
    ("components", "strict", "expected"),
    [
        # EXACT: that name; not strict, so entities with more components match too.
        ([("user", EXACT, "alice")], False, [ALICE, ALICE_APP]),
        ([("user", EXACT, "alice")], True, [ALICE]),
        ([("user", EXACT, "a,b=<default>")], False, [ODD_NAME]),
        ([("user", EXACT, "bob")], False, []),
        # DEFAULT: the default entity of the type only.
        ([("user", DEFAULT, None)], False, [DEFAULT_USER]),
        ([("client-id", DEFAULT, None)], True, [DEFAULT_CLIENT]),
        # SPECIFIED: any entity with that type, the default included (as Kafka 4's metadata image matches).
        ([("user", SPECIFIED, None)], True, [ALICE, DEFAULT_USER, ODD_NAME]),
        ([("client-id", SPECIFIED, None)], False, [ALICE_APP, APP, DEFAULT_CLIENT]),
        ([("user", EXACT, "alice"), ("client-id", SPECIFIED, None)], True, [ALICE_APP]),
        ([("user", SPECIFIED, None), ("client-id", EXACT, "app-1")], False, [ALICE_APP]),
        ([("ip", SPECIFIED, None)], False, [[("ip", "10.0.0.1")], [("ip", None)]]),
        ([("ip", DEFAULT, None)], False, [[("ip", None)]]),
        # No component: everything unless strict (then only an entity of no component, which cannot be).
        (
            [],
            False,
            [
                ALICE,
                ALICE_APP,
                DEFAULT_USER,
                APP,
                DEFAULT_CLIENT,
                ODD_NAME,
                [("ip", "10.0.0.1")],
                [("ip", None)],
            ],
        ),  # fmt: skip
        ([], True, []),
    ],
)
def test_describe_matches_as_kafka_does(
    seeded: KafkaAdminClient,
    components: list[tuple[str, int, str | None]],
    strict: bool,
    expected: list[Entity],
) -> None:
    found = _found(_describe(seeded, components, strict))
    assert set(found) == {_key(e) for e in expected}


def test_describe_returns_the_stored_values(seeded: KafkaAdminClient) -> None:
    found = _found(_describe(seeded, [("user", EXACT, "alice")], strict=True))
    assert found == {_key(ALICE): {"producer_byte_rate": 1024.0, "request_percentage": 12.5}}


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([("user", EXACT, "a"), ("user", DEFAULT, None)], ErrorCode.invalid_request, "more than once"),
        ([("user", EXACT, None)], ErrorCode.invalid_request, "MATCH_TYPE_EXACT"),
        ([("user", DEFAULT, "x")], ErrorCode.invalid_request, "MATCH_TYPE_DEFAULT"),
        ([("user", SPECIFIED, "x")], ErrorCode.invalid_request, "MATCH_TYPE_SPECIFIED"),
        ([("user", 7, None)], ErrorCode.invalid_request, "Unknown match type 7"),
        ([("ip", SPECIFIED, None), ("user", SPECIFIED, None)], ErrorCode.invalid_request, "IP filter"),
        ([("", SPECIFIED, None)], ErrorCode.invalid_request, "empty entity type"),
        ([("group", SPECIFIED, None)], ErrorCode.unsupported_version, "Unsupported entity type group"),
    ],
)
def test_describe_refuses_bad_filters(
    kadmin: KafkaAdminClient, components: list[tuple[str, int, str | None]], code: ErrorCode, message: str
) -> None:
    response = _describe(kadmin, components)
    assert response.error_code == code
    assert message in response.error_message
    assert response.entries is None


def test_remove_deletes_keys_and_then_the_entity(
    seeded: KafkaAdminClient, broker: Any, redis_client: redis.Redis
) -> None:
    assert _alter(seeded, [(ALICE, [("request_percentage", None)])]) == [(0, None)]
    assert _stored(redis_client, broker)["user=alice"] == {"producer_byte_rate": "1024.0"}
    # Removing a key the entity does not have is no error; removing the last one removes the entity.
    assert _alter(seeded, [(ALICE, [("producer_byte_rate", None), ("consumer_byte_rate", None)])]) == [
        (0, None)
    ]
    stored = _stored(redis_client, broker)
    assert "user=alice" not in stored and "user=alice,client-id=app-1" in stored
    ks = Keyspace(broker.settings.keyspace)
    assert not redis_client.exists(ks.quota_entity("user=alice"))
    assert _key(ALICE) not in _found(_describe(seeded, [("user", SPECIFIED, None)]))


def test_set_and_remove_in_one_entry_and_overwrite(
    kadmin: KafkaAdminClient, broker: Any, redis_client: redis.Redis
) -> None:
    assert _alter(kadmin, [(APP, [("producer_byte_rate", 10.0), ("request_percentage", 50.0)])]) == [
        (0, None)
    ]
    assert _alter(kadmin, [(APP, [("producer_byte_rate", 20.0), ("request_percentage", None)])]) == [
        (0, None)
    ]
    assert _stored(redis_client, broker) == {"client-id=app-1": {"producer_byte_rate": "20.0"}}


def test_validate_only_checks_but_stores_nothing(
    kadmin: KafkaAdminClient, broker: Any, redis_client: redis.Redis
) -> None:
    results = _alter(
        kadmin,
        [(ALICE, [("producer_byte_rate", 1.0)]), (ALICE, [("nonsense", 1.0)])],
        validate_only=True,
    )
    assert results[0] == (0, None)
    assert results[1][0] == ErrorCode.invalid_request
    assert _stored(redis_client, broker) == {}
    assert _found(_describe(kadmin, [])) == {}


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        (ALICE, [("nonsense_rate", 1.0)], "Invalid configuration key nonsense_rate"),
        (ALICE, [("nonsense_rate", None)], "Invalid configuration key nonsense_rate"),
        (ALICE, [("connection_creation_rate", 5.0)], "Invalid configuration key connection_creation_rate"),
        ([("ip", "10.0.0.1")], [("producer_byte_rate", 5.0)], "Invalid configuration key producer_byte_rate"),
        (ALICE, [("producer_byte_rate", 1.5)], "producer_byte_rate must be a Long value"),
        ([("ip", None)], [("connection_creation_rate", 0.5)], "must be a Long value"),
        (ALICE, [("request_percentage", float("inf"))], "must be a finite number"),
        (ALICE, [("producer_byte_rate", 1.0), ("producer_byte_rate", None)], "Duplicate quota key"),
        ([], [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
        ([("user", "a"), ("user", "b")], [("producer_byte_rate", 1.0)], "duplicate entity entry user"),
        ([("group", "g")], [("producer_byte_rate", 1.0)], "Unhandled client quota entity type: group"),
        ([("user", "")], [("producer_byte_rate", 1.0)], "Empty user not supported"),
        (
            [("ip", "10.0.0.1"), ("user", "a")],
            [("producer_byte_rate", 1.0)],
            "IP entity should not be combined",
        ),
        ([("ip", "not-an-ip")], [("connection_creation_rate", 1.0)], "not-an-ip is not a valid IP"),
    ],
)
def test_invalid_alterations_get_invalid_request(
    kadmin: KafkaAdminClient,
    broker: Any,
    redis_client: redis.Redis,
    entity: Entity,
    ops: list[tuple[str, float | None]],
    message: str,
) -> None:
    # A good entry beside the bad one is applied: each entry stands alone, as in Kafka.
    results = _alter(kadmin, [(entity, ops), (APP, [("producer_byte_rate", 9.0)])])
    assert results[0][0] == ErrorCode.invalid_request
    assert message in (results[0][1] or "")
    assert results[1] == (0, None)
    assert _stored(redis_client, broker) == {"client-id=app-1": {"producer_byte_rate": "9.0"}}


def test_the_same_entity_twice_in_one_request(
    kadmin: KafkaAdminClient, broker: Any, redis_client: redis.Redis
) -> None:
    results = _alter(kadmin, [(APP, [("producer_byte_rate", 1.0)]), (APP, [("producer_byte_rate", 2.0)])])
    assert results[0] == (0, None)
    assert results[1][0] == ErrorCode.invalid_request and "duplicate entity" in (results[1][1] or "")
    assert _stored(redis_client, broker) == {"client-id=app-1": {"producer_byte_rate": "1.0"}}


@pytest.mark.parametrize("version", [0, 1])
def test_quota_apis_at_each_version_over_kio(broker: Any, redis_client: redis.Redis, version: int) -> None:
    alter_cls = request_type(ApiKey.ALTER_CLIENT_QUOTAS, version)
    entry, entity, op = (sibling(alter_cls, n) for n in ("EntryData", "EntityData", "OpData"))
    response = call(
        broker.port,
        make(
            alter_cls,
            entries=(
                make(
                    entry,
                    entity=(make(entity, entity_type="user", entity_name=None),),
                    ops=(make(op, key="consumer_byte_rate", value=4096.0, remove=False),),
                ),
            ),
            validate_only=False,
        ),
    )
    assert [(e.error_code, [(d.entity_type, d.entity_name) for d in e.entity]) for e in response.entries] == [
        (ErrorCode.none, [("user", None)])
    ]
    describe_cls = request_type(ApiKey.DESCRIBE_CLIENT_QUOTAS, version)
    component = sibling(describe_cls, "ComponentData")
    response = call(
        broker.port,
        make(
            describe_cls,
            components=(make(component, entity_type="user", match_type=DEFAULT, match=None),),
            strict=True,
        ),
    )
    assert response.error_code == ErrorCode.none
    assert [
        ([(d.entity_type, d.entity_name) for d in e.entity], [(v.key, v.value) for v in e.values])
        for e in response.entries
    ] == [  # fmt: skip
        ([("user", None)], [("consumer_byte_rate", 4096.0)])
    ]


# -- ACLs: no authorizer -------------------------------------------------------------------------------
@pytest.fixture
def admin(broker: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})


def _binding(name: str) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, name, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
        AclPermissionType.ALLOW,
    )  # fmt: skip


def _security_disabled(future: Any) -> None:
    with pytest.raises(KafkaException) as raised:
        future.result(T)
    error: KafkaError = raised.value.args[0]
    assert error.code() == KafkaError.SECURITY_DISABLED
    assert NO_AUTHORIZER in error.str()


def test_confluent_create_acls_gets_security_disabled_per_binding(admin: AdminClient) -> None:
    futures = admin.create_acls([_binding("t1"), _binding("t2")], request_timeout=T)
    assert len(futures) == 2
    for future in futures.values():
        _security_disabled(future)


def test_confluent_describe_acls_lists_nothing(admin: AdminClient) -> None:
    # librdkafka reads DescribeAcls' top-level error code but drops it (a known client behaviour): the call
    # succeeds with no bindings. kafka-python and the raw-wire tests below see SECURITY_DISABLED itself.
    acl_filter = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert admin.describe_acls(acl_filter, request_timeout=T).result(T) == []


def test_confluent_delete_acls_gets_security_disabled_per_filter(admin: AdminClient) -> None:
    filters = [
        AclBindingFilter(
            ResourceType.TOPIC,
            "t1",
            ResourcePatternType.LITERAL,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        ),  # fmt: skip
        AclBindingFilter(
            ResourceType.GROUP,
            None,
            ResourcePatternType.ANY,
            "User:bob",
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        ),  # fmt: skip
    ]
    futures = admin.delete_acls(filters, request_timeout=T)
    assert len(futures) == 2
    for future in futures.values():
        _security_disabled(future)


def _kpattern() -> ResourcePattern:
    return ResourcePattern(KResourceType.TOPIC, "t1", ACLResourcePatternType.LITERAL)


def test_kafka_python_acl_calls_get_security_disabled(kadmin: KafkaAdminClient) -> None:
    acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, _kpattern())
    created = kadmin.create_acls([acl, acl])
    assert created["succeeded"] == [] and created["failed"] == [SecurityDisabledError, SecurityDisabledError]

    acl_filter = ACLFilter("User:alice", "*", ACLOperation.ANY, ACLPermissionType.ANY, _kpattern())
    with pytest.raises(SecurityDisabledError) as raised:
        kadmin.describe_acls(acl_filter)
    assert NO_AUTHORIZER in str(raised.value)

    deleted = kadmin.delete_acls([acl_filter])
    assert [(f, matched, error) for f, matched, error in deleted] == [(acl_filter, [], SecurityDisabledError)]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_acl_apis_at_each_version_over_kio(broker: Any, version: int) -> None:
    create_cls = request_type(ApiKey.CREATE_ACLS, version)
    creation = make(
        sibling(create_cls, "AclCreation"), resource_type=2, resource_name="t", resource_pattern_type=3,
        principal="User:a", host="*", operation=3, permission_type=3,
    )  # fmt: skip
    response = call(broker.port, make(create_cls, creations=(creation,) * 3))
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (ErrorCode.security_disabled, NO_AUTHORIZER)
    ] * 3

    filter_values: dict[str, Any] = dict(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
        host_filter=None, operation=1, permission_type=1,
    )  # fmt: skip
    describe_cls = request_type(ApiKey.DESCRIBE_ACLS, version)
    response = call(broker.port, make(describe_cls, **filter_values))
    assert (response.error_code, response.error_message, response.resources) == (
        ErrorCode.security_disabled,
        NO_AUTHORIZER,
        (),
    )

    delete_cls = request_type(ApiKey.DELETE_ACLS, version)
    delete_filter = make(sibling(delete_cls, "DeleteAclsFilter"), **filter_values)
    response = call(broker.port, make(delete_cls, filters=(delete_filter, delete_filter)))
    assert [(r.error_code, r.error_message, r.matching_acls) for r in response.filter_results] == [
        (ErrorCode.security_disabled, NO_AUTHORIZER, ())
    ] * 2
