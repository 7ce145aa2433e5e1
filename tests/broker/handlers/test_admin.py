"""Admin APIs through real clients: confluent-kafka's AdminClient and kafka-python's KafkaAdminClient."""

from __future__ import annotations

import datetime
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
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import KafkaAdminClient
from kio.schema.errors import ErrorCode

from schooner.broker.dispatch import HANDLERS
from schooner.broker.net.session import RequestScope, Session
from schooner.config import Listener
from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type
from schooner.protocol.messages import RequestHeader, encode_response, make, sibling
from schooner.storage.redis.embedded import EmbeddedRedis

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
    futures = admin.create_topics(list(topics), operation_timeout=T, request_timeout=T, **kwargs)
    for future in futures.values():
        future.result(T)


def _error_of(future: Any) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(T)
    return raised.value.args[0]


def _only(futures: dict[Any, Any]) -> Any:
    (future,) = futures.values()
    return future


def _topic_configs(admin: AdminClient, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    return admin.describe_configs([resource], request_timeout=T)[resource].result(T)


def _partition_count(admin: AdminClient, name: str) -> int | None:
    topic = admin.list_topics(timeout=T).topics.get(name)  # all topics: naming one would auto-create it
    return None if topic is None else len(topic.partitions)


def _stored(broker: Any, name: str) -> Any:
    ctx = broker.broker.ctx
    return broker.call(ctx.store.topic(name, ctx.topic_defaults))


# -- Through the clients --------------------------------------------------------------------------


def test_create_describe_delete_topic(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=2, config={"retention.ms": "1000"}), validate_only=True)
    assert _partition_count(admin, name) is None and _stored(broker, name) is None
    bad = NewTopic(name, num_partitions=2, config={"retention.ms": "soon"})
    error = _error_of(admin.create_topics([bad], validate_only=True, request_timeout=T)[name])
    assert error.code() == KafkaError.INVALID_CONFIG and "retention.ms" in error.str()
    _create(admin, NewTopic(name, num_partitions=3, config={"retention.ms": "3600000"}))
    assert _partition_count(admin, name) == 3
    configs = _topic_configs(admin, name)
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == ("3600000", 1)
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == ("delete", 5)
    assert configs["schooner.sequence.bits"].is_read_only
    again = _error_of(admin.create_topics([NewTopic(name, num_partitions=2)], request_timeout=T)[name])
    assert again.code() == KafkaError.TOPIC_ALREADY_EXISTS and _partition_count(admin, name) == 3

    admin.delete_topics([name], operation_timeout=T, request_timeout=T)[name].result(T)
    assert _partition_count(admin, name) is None and _stored(broker, name) is None
    gone = _error_of(admin.delete_topics([name], request_timeout=T)[name])
    assert gone.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_create_errors_reported_per_topic(kadmin: KafkaAdminClient) -> None:
    good, bad_value, unknown_config, no_partitions, bad_rf = (_name() for _ in range(5))
    requested = {
        good: {"num_partitions": 2},
        "bad/name": {},
        bad_value: {"configs": {"retention.ms": "forever"}},
        unknown_config: {"configs": {"no.such.config": "1"}},
        no_partitions: {"num_partitions": 0},
        bad_rf: {"num_partitions": 1, "replication_factor": 0},
    }
    by_name = {t["name"]: t for t in kadmin.create_topics(requested, raise_errors=False)["topics"]}
    assert [by_name[good][k] for k in ("error_code", "num_partitions", "replication_factor")] == [0, 2, 1]
    assert by_name[good]["configs"]["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert by_name["bad/name"]["error_code"] == ErrorCode.invalid_topic_exception
    assert by_name[bad_value]["error_code"] == ErrorCode.invalid_config
    assert "retention.ms" in by_name[bad_value]["error_message"]
    assert by_name[unknown_config]["error_code"] == ErrorCode.invalid_config
    assert "no.such.config" in by_name[unknown_config]["error_message"]
    assert by_name[no_partitions]["error_code"] == ErrorCode.invalid_partitions
    assert by_name[bad_rf]["error_code"] == ErrorCode.invalid_replication_factor
    assert set(kadmin.list_topics()) & set(by_name) == {good}


def test_create_partitions_grows_and_new_partitions_take_writes(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1))
    admin.create_partitions([NewPartitions(name, 3)], validate_only=True, request_timeout=T)[name].result(T)
    assert _partition_count(admin, name) == 1
    admin.create_partitions([NewPartitions(name, 3)], request_timeout=T)[name].result(T)
    assert _partition_count(admin, name) == 3

    delivered: list[Any] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})
    producer.produce(name, b"new", partition=2, on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(T) == 0 and delivered == [None]

    for count, fragment in ((2, "higher than the requested 2"), (3, "already has 3")):
        error = _error_of(admin.create_partitions([NewPartitions(name, count)], request_timeout=T)[name])
        assert error.code() == KafkaError.INVALID_PARTITIONS and fragment in error.str()
    missing = _only(admin.create_partitions([NewPartitions(_name(), 2)], request_timeout=T))
    assert _error_of(missing).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def _produce(broker: Any, name: str, count: int) -> list[int]:
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})
    for i in range(count):
        producer.produce(name, b"v%d" % i, partition=0, on_delivery=lambda e, m: offsets.append(m.offset()))
        producer.flush(T)  # a batch per record: timestamp-encoded offsets then have gaps between them
    assert len(offsets) == count
    return offsets


def _watermarks(admin: AdminClient, name: str) -> tuple[int, int]:
    tp = TopicPartition(name, 0)
    low = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=T)[tp].result(T).offset
    high = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=T)[tp].result(T).offset
    return low, high


def _entries_left(broker: Any, name: str) -> int:
    ctx = broker.broker.ctx
    return int(broker.call(ctx.store.redis.xlen(ctx.ks.stream(name, 0))))


@pytest.mark.both_encodings
def test_delete_records_moves_the_low_watermark(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1))
    offsets = _produce(broker, name, 6)
    high = offsets[-1] + 1
    assert _watermarks(admin, name) == (offsets[0], high)

    def delete_before(offset: int) -> Any:
        return _only(admin.delete_records([TopicPartition(name, 0, offset)], request_timeout=T))

    assert delete_before(offsets[4]).result(T).low_watermark == offsets[4]
    assert _watermarks(admin, name) == (offsets[4], high)
    assert _entries_left(broker, name) == 2
    assert delete_before(offsets[0]).result(T).low_watermark == offsets[4]  # nothing left below it
    assert _error_of(delete_before(high + 5)).code() == KafkaError.OFFSET_OUT_OF_RANGE
    assert delete_before(-1).result(T).low_watermark == high
    assert _watermarks(admin, name) == (high, high)
    assert _entries_left(broker, name) == 0


def test_incremental_alter_retention_shows_as_dynamic(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1))

    def alter(key: str, value: str | None, op: str = "SET", validate_only: bool = False) -> Any:
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType[op])
        resource = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[entry])
        return _only(admin.incremental_alter_configs([resource], validate_only=validate_only))

    def retention() -> tuple[str | None, int]:
        entry = _topic_configs(admin, name)["retention.ms"]
        return entry.value, entry.source

    alter("retention.ms", "60000", validate_only=True).result(T)
    assert retention() == ("604800000", ConfigSource.DEFAULT_CONFIG.value)
    alter("retention.ms", "60000").result(T)
    assert retention() == ("60000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert _stored(broker, name).retention_ms == 60000
    alter("retention.ms", None, "DELETE").result(T)
    assert retention() == ("604800000", ConfigSource.DEFAULT_CONFIG.value)

    for key, value, op in (
        ("retention.ms", "-7", "SET"),
        ("retention.ms", "1", "APPEND"),
        ("schooner.sequence.bits", "12", "SET"),
        ("no.such.config", "1", "SET"),
    ):
        error = _error_of(alter(key, value, op))
        assert error.code() == KafkaError.INVALID_CONFIG and key in error.str(), (key, op)


def test_legacy_alter_configs_replaces_every_override(broker: Any, admin: AdminClient) -> None:
    name = _name()
    _create(admin, NewTopic(name, num_partitions=1, config={"retention.ms": "1", "retention.bytes": "4096"}))

    def alter(topic: str, **configs: str) -> Any:
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config=configs)
        return _only(admin.alter_configs([resource], request_timeout=T))

    alter(name, **{"max.message.bytes": "5000"}).result(T)
    assert dict(_stored(broker, name).overrides) == {"max.message.bytes": "5000"}
    error = _error_of(alter(name, **{"compression.type": "brotli"}))
    assert error.code() == KafkaError.INVALID_CONFIG and "compression.type" in error.str()
    assert _error_of(alter(_name(), **{"retention.ms": "1"})).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_kafka_python_admin_round_trip(broker: Any, kadmin: KafkaAdminClient) -> None:
    name = _name()
    created = kadmin.create_topics({name: {"configs": {"max.message.bytes": "2000000"}}})["topics"][0]
    assert created["num_partitions"] == broker.settings.default_partitions
    assert created["topic_id"] == str(_stored(broker, name).id)
    assert [r.error_code for r in kadmin.create_partitions({name: 5}).results] == [0]
    assert _stored(broker, name).partitions == 5
    refused = kadmin.create_partitions({name: 4}, raise_errors=False)
    assert [r.error_code for r in refused.results] == [ErrorCode.invalid_partitions]

    result = kadmin.alter_configs([KConfigResource("TOPIC", name, {"retention.ms": "120000"})])
    assert result == {"topic": {name: "OK"}}
    described = kadmin.describe_configs([KConfigResource("TOPIC", name)], include_synonyms=True)["topic"]
    retention = described[name]["retention.ms"]
    assert set(described[name]) == {"retention.ms", "max.message.bytes"}  # the default filter: modified only
    assert (retention["value"], retention["config_source"]) == ("120000", "DYNAMIC_TOPIC_CONFIG")
    synonyms = {s["name"]: s["source"] for s in retention["synonyms"]}
    # As Kafka: log.retention.ms has no default of its own (log.retention.hours has), so no synonym.
    assert synonyms == {"retention.ms": "DYNAMIC_TOPIC_CONFIG"}
    only = kadmin.describe_configs([KConfigResource("TOPIC", name, ["cleanup.policy"])], config_filter="all")
    assert set(only["topic"][name]) == {"cleanup.policy"}

    deleted = kadmin.delete_topics([_stored(broker, name).id])["topics"][0]
    assert (deleted["error_code"], deleted["name"]) == (0, name) and _stored(broker, name) is None
    unknown = kadmin.delete_topics([uuid.uuid4()], raise_errors=False)["topics"][0]
    assert unknown["error_code"] == ErrorCode.unknown_topic_id


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
_TIMEOUT = datetime.timedelta(seconds=T)
# Per API: make() refuses a name that no version of the API has.
_DEFAULTS: dict[ApiKey, dict[str, Any]] = {
    CREATE: dict(timeout=_TIMEOUT, validate_only=False), DELETE: dict(timeout=_TIMEOUT),
    GROW: dict(timeout=_TIMEOUT, validate_only=False), RECORDS: dict(timeout=_TIMEOUT),
    DESCRIBE: dict(include_synonyms=True, include_documentation=True),
    ALTER: dict(validate_only=False), INCREMENTAL: dict(validate_only=False),
    CLUSTER: dict(include_cluster_authorized_operations=False, include_fenced_brokers=False),
}  # fmt: skip


def _versions(api: ApiKey) -> range:
    low, high = SUPPORTED_VERSIONS[api]
    return range(low, high + 1)


def _part(api: ApiKey, v: int, cls: str, **values: Any) -> Any:
    return make(sibling(request_type(api, v), cls), **values)


def _call(broker: Any, api: ApiKey, v: int, **values: Any) -> Any:
    """Runs the dispatched handler on the broker's loop, and checks that its response serializes."""
    body = make(request_type(api, v), **{**_DEFAULTS[api], **values})
    scope = RequestScope(Session(Listener("PLAINTEXT", "127.0.0.1", 0), "127.0.0.1"), "test", "/127.0.0.1")
    response = broker.call(HANDLERS[api](broker.broker.ctx, body, scope))
    encode_response(RequestHeader(api, v, 1, "test"), response)
    return response


def _create_req(broker: Any, v: int, *names: str, partitions: int = 1, **values: Any) -> Any:
    config = _part(CREATE, v, "CreatableTopicConfig", name="retention.ms", value="5000")
    fields = dict(num_partitions=partitions, replication_factor=-1, assignments=(), configs=(config,))
    fields.update(values)
    topics = tuple(_part(CREATE, v, "CreatableTopic", name=n, **fields) for n in names)
    return _call(broker, CREATE, v, topics=topics)


def _grow_req(broker: Any, v: int, name: str, count: int) -> Any:
    topic = _part(GROW, v, "CreatePartitionsTopic", name=name, count=count, assignments=None)
    return _call(broker, GROW, v, topics=(topic,)).results[0]


def _describe_req(broker: Any, v: int, name: str, kind: int = 2) -> Any:
    resource = _part(DESCRIBE, v, "DescribeConfigsResource", resource_type=kind, resource_name=name,
                     configuration_keys=None)  # fmt: skip
    return _call(broker, DESCRIBE, v, resources=(resource,)).results[0]


def _alter_req(broker: Any, api: ApiKey, v: int, name: str, *configs: dict[str, Any], kind: int = 2) -> Any:
    entries = tuple(_part(api, v, "AlterableConfig", **c) for c in configs)
    resource = _part(api, v, "AlterConfigsResource", resource_type=kind, resource_name=name, configs=entries)
    return _call(broker, api, v, resources=(resource,)).responses[0]


def _records_req(broker: Any, v: int, name: str, partition: int, offset: int) -> Any:
    partitions = (_part(RECORDS, v, "DeleteRecordsPartition", partition_index=partition, offset=offset),)
    topic = _part(RECORDS, v, "DeleteRecordsTopic", name=name, partitions=partitions)
    return _call(broker, RECORDS, v, topics=(topic,)).topics[0].partitions[0]


def _delete_req(broker: Any, v: int, name: str | None, topic_id: uuid.UUID | None = None) -> Any:
    if v < 6:
        return _call(broker, DELETE, v, topic_names=(name,)).responses[0]
    state = _part(DELETE, v, "DeleteTopicState", name=name, topic_id=topic_id)
    return _call(broker, DELETE, v, topics=(state,)).responses[0]


def test_every_version_of_every_admin_api(broker: Any) -> None:
    names, ids = [], []
    for v in _versions(CREATE):
        names.append(f"{_name()}-v{v}")
        created = _create_req(broker, v, names[-1]).topics[0]
        assert created.error_code == ErrorCode.none
        ids.append(getattr(created, "topic_id", None))
        if v >= 5:
            configs = {c.name: (c.value, c.config_source) for c in created.configs}
            assert configs["retention.ms"] == ("5000", 1) and created.replication_factor == 1
    for v, name in zip(_versions(GROW), names, strict=False):
        assert _grow_req(broker, v, name, 2).error_code == ErrorCode.none
    for v in _versions(DESCRIBE):
        configs = {c.name: c for c in _describe_req(broker, v, names[0]).configs}
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("5000", 1)
        assert [s.name for s in configs["retention.ms"].synonyms] == ["retention.ms"]
    for v in _versions(ALTER):
        value = str(10 + v)
        altered = _alter_req(broker, ALTER, v, names[1], dict(name="retention.bytes", value=value))
        assert altered.error_code == ErrorCode.none
        assert dict(_stored(broker, names[1]).overrides) == {"retention.bytes": value}
    for v in _versions(INCREMENTAL):
        change = dict(name="retention.ms", config_operation=0, value=str(7 + v))
        assert _alter_req(broker, INCREMENTAL, v, names[2], change).error_code == ErrorCode.none
        assert _stored(broker, names[2]).retention_ms == 7 + v
    for v in _versions(RECORDS):
        deleted = _records_req(broker, v, names[3], 1, -1)
        assert (deleted.error_code, deleted.low_watermark) == (ErrorCode.none, 0)
    for v in _versions(CLUSTER):
        assert [b.broker_id for b in _call(broker, CLUSTER, v).brokers] == [broker.broker_id]
    for v, name, topic_id in zip(_versions(DELETE), names, ids, strict=True):
        gone = _delete_req(broker, v, None if v >= 6 else name, topic_id)
        assert gone.error_code == ErrorCode.none and _stored(broker, name) is None
        assert v < 6 or (gone.name, gone.topic_id) == (name, topic_id)


def test_requests_that_clients_guard_against(broker: Any) -> None:
    name, me = _name(), broker.broker_id
    twice = _create_req(broker, 7, name, name)
    assert [(t.name, t.error_code) for t in twice.topics] == [(name, ErrorCode.invalid_request)]
    assert _stored(broker, name) is None

    def assigned(*replicas: tuple[int, ...], partitions: int = -1) -> Any:
        assignments = tuple(
            _part(CREATE, 7, "CreatableReplicaAssignment", partition_index=i, broker_ids=r)
            for i, r in enumerate(replicas)
        )
        return _create_req(broker, 7, name, partitions=partitions, assignments=assignments).topics[0]

    assert assigned((me,), partitions=2).error_code == ErrorCode.invalid_request
    assert assigned((me,), (me + 100,)).error_code == ErrorCode.invalid_replica_assignment
    assert assigned((me, me)).error_code == ErrorCode.invalid_replica_assignment
    created = assigned((me,), (me,), (me,))
    assert (created.error_code, created.num_partitions) == (ErrorCode.none, 3)
    assert _delete_req(broker, 6, name, created.topic_id).error_code == ErrorCode.invalid_request
    assert _delete_req(broker, 6, None, None).error_code == ErrorCode.invalid_request
    assert _delete_req(broker, 6, None, uuid.uuid4()).error_code == ErrorCode.unknown_topic_id
    assert _stored(broker, name) is not None

    configs = {c.name: c for c in _describe_req(broker, 4, name).configs}
    assert configs["retention.ms"].config_type == 5 and configs["retention.ms"].documentation
    assert configs["cleanup.policy"].config_type == 7
    assert "no effect" in configs["segment.bytes"].documentation
    assert _describe_req(broker, 4, _name()).error_code == ErrorCode.unknown_topic_or_partition
    assert _describe_req(broker, 4, "root", kind=8).error_code == ErrorCode.invalid_request
    assert {c.name for c in _describe_req(broker, 4, "", kind=4).configs} >= {"broker.id", "num.partitions"}
    assert _describe_req(broker, 4, str(me + 100), kind=4).error_code == ErrorCode.invalid_request
    # Sequence bits shape the offsets of timestamp-encoded topics only: such a topic keeps them.
    bits = _name()
    wide = tuple(
        _part(CREATE, 7, "CreatableTopicConfig", name=key, value=value)
        for key, value in (("schooner.offset.encoding", "timestamp"), ("schooner.sequence.bits", "12"))
    )
    assert _create_req(broker, 7, bits, configs=wide).topics[0].error_code == ErrorCode.none
    described = {c.name: c for c in _describe_req(broker, 4, bits).configs}
    for key, value in (("schooner.sequence.bits", "12"), ("schooner.offset.encoding", "timestamp")):
        shown = described[key]
        assert (shown.value, shown.config_source, shown.read_only) == (value, 1, True)
    same, other = (dict(name="schooner.sequence.bits", value=value) for value in ("12", "11"))
    assert _alter_req(broker, ALTER, 2, bits, same).error_code == ErrorCode.none
    assert _alter_req(broker, ALTER, 2, bits, other).error_code == ErrorCode.invalid_config
    dense = dict(name="schooner.offset.encoding", value="dense")
    assert _alter_req(broker, ALTER, 2, bits, dense).error_code == ErrorCode.invalid_config
    stored = _stored(broker, bits).offsets
    assert (stored.encoding, stored.bits) == ("timestamp", 12)
    static = _alter_req(broker, ALTER, 2, str(me), dict(name="num.partitions", value="3"), kind=4)
    assert static.error_code == ErrorCode.invalid_request and "static" in static.error_message
    throttled = "leader.replication.throttled.replicas"
    for op, value, expected in ((2, "0:1", "0:1"), (2, "1:1,0:1", "0:1,1:1"), (3, "0:1", "1:1")):
        change = dict(name=throttled, config_operation=op, value=value)
        assert _alter_req(broker, INCREMENTAL, 1, name, change).error_code == ErrorCode.none
        assert _stored(broker, name).configs[throttled] == expected
    policy = dict(name="cleanup.policy", config_operation=3, value="delete")
    assert _alter_req(broker, INCREMENTAL, 1, name, policy).error_code == ErrorCode.invalid_config
    unknown_op = dict(name="retention.ms", config_operation=9, value="1")
    assert _alter_req(broker, INCREMENTAL, 1, name, unknown_op).error_code == ErrorCode.invalid_request
    twice_set = dict(name="retention.ms", value="1")
    assert _alter_req(broker, ALTER, 2, name, twice_set, twice_set).error_code == ErrorCode.invalid_request
    assert _records_req(broker, 2, name, 3, -1).error_code == ErrorCode.unknown_topic_or_partition
    assert _records_req(broker, 2, name, 0, -2).error_code == ErrorCode.offset_out_of_range
    controllers = _call(broker, CLUSTER, 1, endpoint_type=2)
    assert controllers.error_code == ErrorCode.unsupported_endpoint_type


def test_redis_outage_gives_retriable_errors(broker_factory: Any, tmp_path: Any) -> None:
    server = EmbeddedRedis(tmp_path / "redis", persistent=False)
    server.start()
    try:
        broker = broker_factory(redis_url=server.url)
        name = _name()
        assert _create_req(broker, 7, name).topics[0].error_code == ErrorCode.none
        server.kill()
        codes = [
            _create_req(broker, 7, _name()).topics[0].error_code,
            _delete_req(broker, 5, name).error_code,
            _grow_req(broker, 3, name, 4).error_code,
            _alter_req(broker, INCREMENTAL, 1, name).error_code,
            _alter_req(broker, ALTER, 2, name).error_code,
            _describe_req(broker, 4, _name()).error_code,
            _records_req(broker, 2, name, 0, -1).error_code,
        ]
        assert codes == [ErrorCode.request_timed_out] * 6 + [ErrorCode.kafka_storage_error]
        assert all(code.retriable for code in codes)
        assert [b.broker_id for b in _call(broker, CLUSTER, 2).brokers] == [broker.broker_id]
    finally:
        server.stop()
