"""Group configs (the GROUP config resource) through real clients: confluent-kafka's AdminClient and
kafka-python's KafkaAdminClient set, describe and delete them; every served version over the wire; a
change reaches the broker's cache at once and survives a broker restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import KafkaAdminClient
from kio.schema.errors import ErrorCode

from schooner.coordinators.groups.configs import GroupConfigs
from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests import wire

T = 10  # seconds for any one client call
GROUP = 32  # the config resource type on the wire


def _group() -> str:
    return f"gc-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def admin(broker: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})


@pytest.fixture
def kadmin(broker: Any) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=T * 1000)
    yield client
    client.close()


def _alter(
    admin: AdminClient, group: str, *changes: tuple[str, str | None, str], validate_only: bool = False
) -> Any:
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType[op]) for k, v, op in changes]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    (future,) = admin.incremental_alter_configs([resource], validate_only=validate_only).values()
    return future


def _describe(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.GROUP, group)
    return admin.describe_configs([resource], request_timeout=T)[resource].result(T)  # type: ignore[no-any-return]


def _error_of(future: Any) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(T)
    return raised.value.args[0]


def _share(broker: Any, group: str) -> Any:
    return broker.call(broker.broker.ctx.group_configs.share(group))


def test_set_describe_and_delete_with_confluent_kafka(broker: Any, admin: AdminClient) -> None:
    group = _group()  # no such group yet: its configs may be set before it exists
    before = _describe(admin, group)
    assert {
        "share.auto.offset.reset",
        "share.record.lock.duration.ms",
        "consumer.session.timeout.ms",
        "errors.deadletterqueue.topic.name",
    } <= set(before)
    assert all(e.source == ConfigSource.DEFAULT_CONFIG.value for e in before.values())
    assert before["share.delivery.count.limit"].value == "5"

    _alter(admin, group, ("share.auto.offset.reset", "earliest", "SET"), validate_only=True).result(T)
    assert _describe(admin, group)["share.auto.offset.reset"].value == "latest"
    assert broker.call(broker.broker.ctx.store.group_configs(group)) == {}

    _alter(
        admin,
        group,
        ("share.auto.offset.reset", "earliest", "SET"),
        ("share.record.lock.duration.ms", "20000", "SET"),
    ).result(T)
    after = _describe(admin, group)
    reset = after["share.auto.offset.reset"]
    assert (reset.value, reset.source) == ("earliest", ConfigSource.GROUP_CONFIG.value)
    assert not reset.is_read_only and not reset.is_default
    lock = after["share.record.lock.duration.ms"]
    assert (lock.value, lock.source) == ("20000", ConfigSource.GROUP_CONFIG.value)
    assert {name: s.source for name, s in lock.synonyms.items()} == {
        "share.record.lock.duration.ms": ConfigSource.GROUP_CONFIG.value,
        "group.share.record.lock.duration.ms": ConfigSource.DEFAULT_CONFIG.value,
    }
    assert after["share.isolation.level"].source == ConfigSource.DEFAULT_CONFIG.value
    config = _share(broker, group)
    assert (config.auto_offset_reset, config.record_lock_duration_ms) == ("earliest", 20000)

    _alter(admin, group, ("share.auto.offset.reset", None, "DELETE")).result(T)
    reset = _describe(admin, group)["share.auto.offset.reset"]
    assert (reset.value, reset.source) == ("latest", ConfigSource.DEFAULT_CONFIG.value)
    assert broker.call(broker.broker.ctx.store.group_configs(group)) == {
        "share.record.lock.duration.ms": "20000"
    }


@pytest.mark.parametrize(
    ("name", "value", "op"),
    [
        ("no.such.config", "1", "SET"),
        ("share.record.lock.duration.ms", "1000", "SET"),
        ("share.record.lock.duration.ms", "ten", "SET"),
        ("share.delivery.count.limit", "11", "SET"),
        ("share.partition.max.record.locks", "5000", "SET"),
        ("share.auto.offset.reset", "by_duration:yesterday", "SET"),
        ("share.isolation.level", "serializable", "SET"),
        ("errors.deadletterqueue.topic.name", "orders-dlq", "SET"),
        ("errors.deadletterqueue.copy.record.enable", "yes", "SET"),
        ("share.delivery.count.limit", "3", "APPEND"),
        ("no.such.config", None, "DELETE"),
    ],
)
def test_bad_names_and_values_get_invalid_config_and_store_nothing(
    broker: Any, admin: AdminClient, name: str, value: str | None, op: str
) -> None:
    group = _group()
    _alter(admin, group, ("share.delivery.count.limit", "4", "SET")).result(T)
    error = _error_of(_alter(admin, group, ("share.session.timeout.ms", "50000", "SET"), (name, value, op)))
    assert error.code() == KafkaError.INVALID_CONFIG and name in error.str(), error.str()
    assert broker.call(broker.broker.ctx.store.group_configs(group)) == {"share.delivery.count.limit": "4"}


def test_legacy_alter_configs_replaces_every_override(broker: Any, admin: AdminClient) -> None:
    group = _group()
    _alter(
        admin,
        group,
        ("share.delivery.count.limit", "4", "SET"),
        ("share.isolation.level", "read_committed", "SET"),
    ).result(T)
    resource = ConfigResource(
        ResourceType.GROUP, group, set_config={"share.auto.offset.reset": "by_duration:PT1H"}
    )
    (future,) = admin.alter_configs([resource], request_timeout=T).values()
    future.result(T)
    described = _describe(admin, group).items()
    overridden = {n: e.value for n, e in described if e.source == ConfigSource.GROUP_CONFIG.value}
    assert overridden == {"share.auto.offset.reset": "by_duration:PT1H"}


def test_kafka_python_admin_round_trip(broker: Any, kadmin: KafkaAdminClient) -> None:
    group = _group()
    result = kadmin.alter_configs([KConfigResource("GROUP", group, {"consumer.session.timeout.ms": "50000"})])
    assert result == {"group": {group: "OK"}}
    described = kadmin.describe_configs([KConfigResource("GROUP", group)], include_synonyms=True)["group"][
        group
    ]
    assert set(described) == {"consumer.session.timeout.ms"}  # kafka-python's default filter: modified only
    session = described["consumer.session.timeout.ms"]
    assert (session["value"], session["config_source"], session["config_type"]) == (
        "50000",
        "DYNAMIC_GROUP_CONFIG",
        "INT",
    )
    assert broker.call(broker.broker.ctx.group_configs.consumer_timeouts(group)) == (50000, 5000)
    refused = kadmin.alter_configs([KConfigResource("GROUP", group, {"consumer.session.timeout.ms": "1"})])
    message = refused["group"][group]
    assert "InvalidConfigurationError" in message and "45000..60000" in message
    reset = kadmin.reset_configs([KConfigResource("GROUP", group, ["consumer.session.timeout.ms"])])
    assert reset == {"group": {group: "OK"}}
    assert kadmin.describe_configs([KConfigResource("GROUP", group)])["group"][group] == {}


def test_an_alter_reaches_the_serving_brokers_cache_at_once(broker_factory: Any) -> None:
    first, second = broker_factory(), broker_factory()
    group = _group()
    for b in (first, second):  # caches that would hold an entry for an hour
        ctx = b.broker.ctx
        ctx.group_configs = GroupConfigs(ctx.store, ctx.settings, cache_seconds=3600)
        assert _share(b, group).delivery_count_limit == 5
    admin = AdminClient({"bootstrap.servers": first.bootstrap, "broker.address.family": "v4"})
    _alter(admin, group, ("share.delivery.count.limit", "3", "SET")).result(T)
    # The broker that served the alter forgot its entry; the other still holds its own.
    assert sorted(_share(b, group).delivery_count_limit for b in (first, second)) == [3, 5]


def test_configs_survive_a_broker_restart(broker_factory: Any) -> None:
    group = _group()
    first = broker_factory()
    admin = AdminClient({"bootstrap.servers": first.bootstrap, "broker.address.family": "v4"})
    _alter(
        admin,
        group,
        ("errors.deadletterqueue.topic.name", "dlq.orders", "SET"),
        ("errors.deadletterqueue.copy.record.enable", "TRUE", "SET"),
    ).result(T)
    first.stop()
    again = broker_factory()
    admin = AdminClient({"bootstrap.servers": again.bootstrap, "broker.address.family": "v4"})
    described = _describe(admin, group)
    assert described["errors.deadletterqueue.topic.name"].value == "dlq.orders"
    assert described["errors.deadletterqueue.copy.record.enable"].value == "true"
    config = _share(again, group)
    assert (config.dlq_topic, config.dlq_copy_record) == ("dlq.orders", True)


# -- every served version, over the wire ----------------------------------------------------------


def _versions(api: ApiKey) -> range:
    low, high = SUPPORTED_VERSIONS[api]
    return range(low, high + 1)


def _part(api: ApiKey, v: int, cls: str, **values: Any) -> Any:
    return make(sibling(request_type(api, v), cls), **values)


def _alter_wire(port: int, api: ApiKey, v: int, group: str, *configs: dict[str, Any]) -> Any:
    entries = tuple(_part(api, v, "AlterableConfig", **c) for c in configs)
    resource = _part(
        api, v, "AlterConfigsResource", resource_type=GROUP, resource_name=group, configs=entries
    )
    body = make(request_type(api, v), resources=(resource,), validate_only=False)
    return wire.call(port, body).responses[0]


def _describe_wire(port: int, v: int, group: str) -> Any:
    api = ApiKey.DESCRIBE_CONFIGS
    resource = _part(
        api,
        v,
        "DescribeConfigsResource",
        resource_type=GROUP,
        resource_name=group,
        configuration_keys=("share.delivery.count.limit",),
    )
    body = make(
        request_type(api, v), resources=(resource,), include_synonyms=True, include_documentation=True
    )
    return wire.call(port, body).results[0]


def test_every_version_of_the_three_apis(broker: Any) -> None:
    for v in _versions(ApiKey.INCREMENTAL_ALTER_CONFIGS):
        group = _group()
        api = ApiKey.INCREMENTAL_ALTER_CONFIGS
        answer = _alter_wire(
            broker.port,
            api,
            v,
            group,
            {"name": "share.delivery.count.limit", "value": "3", "config_operation": 0},
        )
        assert answer.error_code == ErrorCode.none
        assert (answer.resource_type, answer.resource_name) == (GROUP, group)
        dup = {"name": "share.delivery.count.limit", "value": "4", "config_operation": 0}
        assert _alter_wire(broker.port, api, v, group, dup, dup).error_code == ErrorCode.invalid_request
        assert _alter_wire(broker.port, api, v, "", dup).error_code == ErrorCode.invalid_request
    for v in _versions(ApiKey.ALTER_CONFIGS):
        answer = _alter_wire(
            broker.port,
            ApiKey.ALTER_CONFIGS,
            v,
            group,
            {"name": "share.delivery.count.limit", "value": str(6 + v)},
        )
        assert answer.error_code == ErrorCode.none
        for dv in _versions(ApiKey.DESCRIBE_CONFIGS):
            result = _describe_wire(broker.port, dv, group)
            assert result.error_code == ErrorCode.none
            (entry,) = result.configs
            assert (entry.name, entry.value) == ("share.delivery.count.limit", str(6 + v))
            assert entry.config_source == 8
            assert [s.source for s in entry.synonyms] == [8, 5]
            if dv >= 3:
                assert entry.config_type == 3 and entry.documentation
    assert _describe_wire(broker.port, 4, "").error_code == ErrorCode.invalid_request
