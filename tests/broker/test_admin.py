"""Admin APIs through real clients: confluent-kafka's AdminClient and kafka-python's KafkaAdminClient."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import KafkaAdminClient
from kio.schema.errors import ErrorCode

from schooner.broker.handlers import admin_configs, admin_records, admin_topics, cluster
from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type
from schooner.protocol.messages import RequestHeader, encode_response, make, sibling
from schooner.storage import topics as topic_store
from schooner.storage.embedded import EmbeddedRedis

T = 5  # seconds for any one client call


def _name() -> str:
    return f"adm-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def admin(broker: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})


@pytest.fixture
def kadmin(broker: Any) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=T * 1000)
    yield client
    client.close()


def _create(admin: AdminClient, *topics: NewTopic, **kwargs: Any) -> None:
    for future in admin.create_topics(list(topics), operation_timeout=T, request_timeout=T, **kwargs).values():
        future.result(T)


def _error_of(future: Any) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(T)
    return raised.value.args[0]


def _topic_configs(admin: AdminClient, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    return admin.describe_configs([resource], request_timeout=T)[resource].result(T)


def _topic_names(admin: AdminClient) -> set[str]:
    return set(admin.list_topics(timeout=T).topics)


def _stored(broker: Any, name: str) -> topic_store.Topic | None:
    ctx = broker.broker.ctx
    return broker.call(topic_store.load(ctx.redis, ctx.ks, name, ctx.topic_defaults))


# -- CreateTopics / DeleteTopics ------------------------------------------------------------------


def test_create_describe_delete_topic(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=3, config={"retention.ms": "3600000"}))
    assert len(admin.list_topics(timeout=T).topics[name].partitions) == 3
    configs = _topic_configs(admin, name)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "delete"
    assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["schooner.sequence.bits"].is_read_only

    admin.delete_topics([name], operation_timeout=T, request_timeout=T)[name].result(T)
    assert name not in _topic_names(admin)
    assert _stored(broker, name) is None
    again = admin.delete_topics([name], operation_timeout=T, request_timeout=T)[name]
    assert _error_of(again).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_create_existing_topic_is_refused(admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1))
    future = admin.create_topics([NewTopic(name, num_partitions=2)], request_timeout=T)[name]
    assert _error_of(future).code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert len(admin.list_topics(timeout=T).topics[name].partitions) == 1


def test_validate_only_creates_nothing(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=2, config={"retention.ms": "1000"}), validate_only=True)
    assert name not in _topic_names(admin)
    assert _stored(broker, name) is None
    bad = admin.create_topics(
        [NewTopic(name, num_partitions=2, config={"retention.ms": "soon"})], validate_only=True, request_timeout=T
    )[name]
    assert _error_of(bad).code() == KafkaError.INVALID_CONFIG


def test_create_errors_reported_per_topic(kadmin: KafkaAdminClient) -> None:
    good, bad_value, unknown_config, no_partitions, bad_rf = (_name() for _ in range(5))
    result = kadmin.create_topics(
        {
            good: {"num_partitions": 2},
            "bad/name": {},
            bad_value: {"configs": {"retention.ms": "forever"}},
            unknown_config: {"configs": {"no.such.config": "1"}},
            no_partitions: {"num_partitions": 0},
            bad_rf: {"num_partitions": 1, "replication_factor": 0},
        },
        raise_errors=False,
    )
    by_name = {t["name"]: t for t in result["topics"]}
    assert by_name[good]["error_code"] == 0
    assert by_name[good]["num_partitions"] == 2
    assert by_name[good]["replication_factor"] == 1
    assert by_name[good]["configs"]["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert by_name["bad/name"]["error_code"] == ErrorCode.invalid_topic_exception.value
    assert by_name[bad_value]["error_code"] == ErrorCode.invalid_config.value
    assert "retention.ms" in by_name[bad_value]["error_message"]
    assert by_name[unknown_config]["error_code"] == ErrorCode.invalid_config.value
    assert "no.such.config" in by_name[unknown_config]["error_message"]
    assert by_name[no_partitions]["error_code"] == ErrorCode.invalid_partitions.value
    assert by_name[bad_rf]["error_code"] == ErrorCode.invalid_replication_factor.value
    assert set(kadmin.list_topics()) & set(by_name) == {good}


def test_create_with_default_partitions_and_delete_by_id(broker: Any, kadmin: KafkaAdminClient) -> None:
    name = _name()
    created = kadmin.create_topics({name: {}})["topics"][0]
    assert created["num_partitions"] == broker.settings.default_partitions
    stored = _stored(broker, name)
    assert stored is not None and created["topic_id"] == str(stored.id)
    deleted = kadmin.delete_topics([stored.id])["topics"][0]
    assert deleted["error_code"] == 0
    assert deleted["name"] == name
    assert _stored(broker, name) is None
    unknown = kadmin.delete_topics([uuid.uuid4()], raise_errors=False)["topics"][0]
    assert unknown["error_code"] == ErrorCode.unknown_topic_id.value


# -- CreatePartitions -----------------------------------------------------------------------------


def test_create_partitions_grows_and_new_partitions_take_writes(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1))
    admin.create_partitions([NewPartitions(name, 3)], validate_only=True, request_timeout=T)[name].result(T)
    assert _stored(broker, name).partitions == 1  # type: ignore[union-attr]
    admin.create_partitions([NewPartitions(name, 3)], request_timeout=T)[name].result(T)
    assert len(admin.list_topics(timeout=T).topics[name].partitions) == 3

    delivered: list[Any] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})
    producer.produce(name, b"to the new partition", partition=2, on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(T) == 0
    assert delivered == [None]

    for count, fragment in ((2, "higher than the requested 2"), (3, "already has 3")):
        error = _error_of(admin.create_partitions([NewPartitions(name, count)], request_timeout=T)[name])
        assert error.code() == KafkaError.INVALID_PARTITIONS
        assert fragment in error.str()
    missing = admin.create_partitions([NewPartitions(_name(), 2)], request_timeout=T)
    assert _error_of(next(iter(missing.values()))).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_create_partitions_with_kafka_python(broker: Any, kadmin: KafkaAdminClient) -> None:
    name = _name()
    kadmin.create_topics({name: {"num_partitions": 2}})
    response = kadmin.create_partitions({name: 5})
    assert [r.error_code for r in response.results] == [0]
    assert _stored(broker, name).partitions == 5  # type: ignore[union-attr]
    refused = kadmin.create_partitions({name: 4}, raise_errors=False)
    assert [r.error_code for r in refused.results] == [ErrorCode.invalid_partitions.value]


# -- DeleteRecords --------------------------------------------------------------------------------


def _produce(broker: Any, name: str, count: int) -> list[int]:
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4", "linger.ms": 0})
    for i in range(count):
        producer.produce(name, b"v%d" % i, partition=0, on_delivery=lambda err, msg: offsets.append(msg.offset()))
        producer.flush(T)  # one batch per record: offsets then have gaps, as in a compacted topic
    assert len(offsets) == count
    return offsets


def _watermarks(admin: AdminClient, name: str) -> tuple[int, int]:
    tp = TopicPartition(name, 0)
    low = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=T)[tp].result(T).offset
    high = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=T)[tp].result(T).offset
    return low, high


def _read_all(broker: Any, name: str) -> list[bytes]:
    """Every record left in partition 0, read without a consumer group."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tp = KTopicPartition(name, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        values: list[bytes] = []
        deadline = time.monotonic() + T
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value for r in records]
        return values
    finally:
        consumer.close()


def test_delete_records_moves_the_low_watermark(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1))
    offsets = _produce(broker, name, 6)
    assert _watermarks(admin, name) == (offsets[0], offsets[-1] + 1)
    cut = offsets[4]
    futures = admin.delete_records([TopicPartition(name, 0, cut)], request_timeout=T)
    assert next(iter(futures.values())).result(T).low_watermark == cut
    low, high = _watermarks(admin, name)
    assert (low, high) == (cut, offsets[-1] + 1)
    assert _read_all(broker, name) == [b"v4", b"v5"]

    beyond = admin.delete_records([TopicPartition(name, 0, high + 5)], request_timeout=T)
    assert _error_of(next(iter(beyond.values()))).code() == KafkaError.OFFSET_OUT_OF_RANGE
    below = admin.delete_records([TopicPartition(name, 0, offsets[0])], request_timeout=T)
    assert next(iter(below.values())).result(T).low_watermark == cut  # nothing left to delete there
    everything = admin.delete_records([TopicPartition(name, 0, -1)], request_timeout=T)
    assert next(iter(everything.values())).result(T).low_watermark == high
    assert _watermarks(admin, name) == (high, high)
    assert _read_all(broker, name) == []


# -- Configs --------------------------------------------------------------------------------------


def test_incremental_alter_retention_shows_as_dynamic(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1))

    def alter(*entries: ConfigEntry, validate_only: bool = False) -> Any:
        resource = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=list(entries))
        return admin.incremental_alter_configs([resource], validate_only=validate_only, request_timeout=T)[resource]

    def entry(key: str, value: str | None, op: AlterConfigOpType) -> ConfigEntry:
        return ConfigEntry(key, value, incremental_operation=op)

    alter(entry("retention.ms", "60000", AlterConfigOpType.SET), validate_only=True).result(T)
    assert _topic_configs(admin, name)["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    alter(entry("retention.ms", "60000", AlterConfigOpType.SET)).result(T)
    configs = _topic_configs(admin, name)
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert _stored(broker, name).retention_ms == 60000  # type: ignore[union-attr]

    alter(entry("retention.ms", None, AlterConfigOpType.DELETE)).result(T)
    configs = _topic_configs(admin, name)
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == ("604800000", 5)

    refused = [
        entry("retention.ms", "-7", AlterConfigOpType.SET),
        entry("retention.ms", "1", AlterConfigOpType.APPEND),
        entry("schooner.sequence.bits", "12", AlterConfigOpType.SET),
        entry("no.such.config", "1", AlterConfigOpType.SET),
    ]
    for bad in refused:
        error = _error_of(alter(bad))
        assert error.code() == KafkaError.INVALID_CONFIG, bad
        assert bad.name in error.str()


def test_kafka_python_describe_and_alter_configs(broker: Any, kadmin: KafkaAdminClient) -> None:
    name = _name()
    kadmin.create_topics({name: {"configs": {"max.message.bytes": "2000000"}}})
    result = kadmin.alter_configs([KConfigResource("TOPIC", name, {"retention.ms": "120000"})])
    assert result == {"topic": {name: "OK"}}
    described = kadmin.describe_configs([KConfigResource("TOPIC", name)], include_synonyms=True)["topic"][name]
    assert described["retention.ms"]["value"] == "120000"
    assert described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert described["max.message.bytes"]["value"] == "2000000"
    synonyms = {s["name"]: s["source"] for s in described["retention.ms"]["synonyms"]}
    assert synonyms == {"retention.ms": "DYNAMIC_TOPIC_CONFIG", "log.retention.ms": "DEFAULT_CONFIG"}
    assert set(described) == {"retention.ms", "max.message.bytes"}  # the default filter: modified only

    filtered = kadmin.describe_configs(
        [KConfigResource("TOPIC", name, ["cleanup.policy"])], config_filter="all"
    )["topic"][name]
    assert set(filtered) == {"cleanup.policy"}


def test_legacy_alter_configs_replaces_every_override(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1, config={"retention.ms": "1000", "retention.bytes": "4096"}))
    resource = ConfigResource(ConfigResource.Type.TOPIC, name, set_config={"max.message.bytes": "5000"})
    admin.alter_configs([resource], request_timeout=T)[resource].result(T)
    stored = _stored(broker, name)
    assert stored is not None and dict(stored.overrides) == {"max.message.bytes": "5000"}
    bad = ConfigResource(ConfigResource.Type.TOPIC, name, set_config={"compression.type": "brotli"})
    error = _error_of(admin.alter_configs([bad], request_timeout=T)[bad])
    assert error.code() == KafkaError.INVALID_CONFIG and "compression.type" in error.str()
    unknown = ConfigResource(ConfigResource.Type.TOPIC, _name(), set_config={"retention.ms": "1"})
    assert _error_of(admin.alter_configs([unknown], request_timeout=T)[unknown]).code() == 3


def test_broker_configs_are_described_and_static(broker: Any, admin: AdminClient) -> None:
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker.broker_id))
    configs = admin.describe_configs([resource], request_timeout=T)[resource].result(T)
    assert configs["broker.id"].value == str(broker.broker_id)
    assert configs["num.partitions"].value == str(broker.settings.default_partitions)
    assert configs["log.retention.ms"].value == "604800000"
    assert configs["advertised.listeners"].value.endswith(f":{broker.port}")
    change = ConfigResource(ConfigResource.Type.BROKER, str(broker.broker_id), set_config={"num.partitions": "3"})
    error = _error_of(admin.alter_configs([change], request_timeout=T)[change])
    assert error.code() == KafkaError.INVALID_REQUEST and "static" in error.str()


# -- DescribeCluster ------------------------------------------------------------------------------


def test_describe_cluster_lists_the_broker(broker: Any, admin: AdminClient, kadmin: KafkaAdminClient) -> None:
    description = admin.describe_cluster(request_timeout=T).result(T)
    ctx = broker.broker.ctx
    assert description.cluster_id == ctx.cluster_id and description.cluster_id
    assert [(n.id, n.port) for n in description.nodes] == [(broker.broker_id, broker.port)]
    assert description.controller.id == broker.broker_id
    described = kadmin.describe_cluster()
    assert described["cluster_id"] == ctx.cluster_id
    assert [(b["broker_id"], b["port"]) for b in described["brokers"]] == [(broker.broker_id, broker.port)]


# -- Every version, and the cases clients do not send, straight through the handlers ----------------

CREATE, DELETE, GROW = ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS
DESCRIBE, ALTER, INCREMENTAL = ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS
RECORDS, CLUSTER = ApiKey.DELETE_RECORDS, ApiKey.DESCRIBE_CLUSTER
WAIT = datetime.timedelta(seconds=T)


def _versions(api: ApiKey) -> range:
    low, high = SUPPORTED_VERSIONS[api]
    return range(low, high + 1)


def _part(api: ApiKey, version: int, cls: str, **values: Any) -> Any:
    return make(sibling(request_type(api, version), cls), **values)


def _run(broker: Any, handler: Any, api: ApiKey, version: int, **values: Any) -> Any:
    response = broker.call(handler(broker.broker.ctx, make(request_type(api, version), **values)))
    encode_response(RequestHeader(api, version, 1, "test"), response)  # each version must serialize
    return response


def _new_topic(api: ApiKey, version: int, name: str, partitions: int = 1, **values: Any) -> Any:
    config = _part(api, version, "CreatableTopicConfig", name="retention.ms", value="5000")
    fields = dict(num_partitions=partitions, replication_factor=-1, assignments=(), configs=(config,))
    return _part(api, version, "CreatableTopic", name=name, **{**fields, **values})


def _resource(api: ApiKey, version: int, name: str, *configs: Any, kind: int = 2) -> Any:
    return _part(api, version, "AlterConfigsResource", resource_type=kind, resource_name=name, configs=configs)


def test_every_version_of_every_admin_api(broker: Any) -> None:
    names, ids = [], []
    for v in _versions(CREATE):
        names.append(f"{_name()}-v{v}")
        created = _run(
            broker, admin_topics.handle_create, CREATE, v, topics=(_new_topic(CREATE, v, names[-1]),), timeout=WAIT
        ).topics[0]
        assert created.error_code == ErrorCode.none
        ids.append(getattr(created, "topic_id", None))
        if v >= 5:
            configs = {c.name: (c.value, c.config_source) for c in created.configs}
            assert configs["retention.ms"] == ("5000", 1) and created.replication_factor == 1
    for v, name in zip(_versions(GROW), names, strict=False):
        topic = _part(GROW, v, "CreatePartitionsTopic", name=name, count=2, assignments=None)
        grown = _run(broker, admin_topics.handle_create_partitions, GROW, v, topics=(topic,), timeout=WAIT)
        assert grown.results[0].error_code == ErrorCode.none
    for v in _versions(DESCRIBE):
        resource = _part(
            DESCRIBE, v, "DescribeConfigsResource", resource_type=2, resource_name=names[0], configuration_keys=None
        )
        found = _run(broker, admin_configs.handle_describe, DESCRIBE, v, resources=(resource,), include_synonyms=True)
        configs = {c.name: c for c in found.results[0].configs}
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("5000", 1)
        assert len(configs["retention.ms"].synonyms) == 2
    for v in _versions(ALTER):
        config = _part(ALTER, v, "AlterableConfig", name="retention.bytes", value=str(1000 + v))
        altered = _run(broker, admin_configs.handle_alter, ALTER, v, resources=(_resource(ALTER, v, names[1], config),))
        assert altered.responses[0].error_code == ErrorCode.none
        assert dict(_stored(broker, names[1]).overrides) == {"retention.bytes": str(1000 + v)}  # type: ignore[union-attr]
    for v in _versions(INCREMENTAL):
        config = _part(INCREMENTAL, v, "AlterableConfig", name="retention.ms", config_operation=0, value="7")
        resources = (_resource(INCREMENTAL, v, names[2], config),)
        altered = _run(broker, admin_configs.handle_incremental_alter, INCREMENTAL, v, resources=resources)
        assert altered.responses[0].error_code == ErrorCode.none
        assert _stored(broker, names[2]).retention_ms == 7  # type: ignore[union-attr]
    for v in _versions(RECORDS):
        partition = _part(RECORDS, v, "DeleteRecordsPartition", partition_index=1, offset=-1)
        topic = _part(RECORDS, v, "DeleteRecordsTopic", name=names[3], partitions=(partition,))
        deleted = _run(broker, admin_records.handle_delete_records, RECORDS, v, topics=(topic,), timeout=WAIT)
        assert (deleted.topics[0].partitions[0].error_code, deleted.topics[0].partitions[0].low_watermark) == (0, 0)
    for v in _versions(CLUSTER):
        described = _run(
            broker, cluster.handle_describe_cluster, CLUSTER, v, include_cluster_authorized_operations=False
        )
        assert [b.broker_id for b in described.brokers] == [broker.broker_id]
    for v, name, topic_id in zip(_versions(DELETE), names, ids, strict=True):
        if v >= 6:
            by_id = _part(DELETE, v, "DeleteTopicState", name=None, topic_id=topic_id)
            gone = _run(broker, admin_topics.handle_delete, DELETE, v, topics=(by_id,), timeout=WAIT).responses[0]
            assert (gone.name, gone.topic_id) == (name, topic_id)
        else:
            gone = _run(broker, admin_topics.handle_delete, DELETE, v, topic_names=(name,), timeout=WAIT).responses[0]
        assert gone.error_code == ErrorCode.none and _stored(broker, name) is None
