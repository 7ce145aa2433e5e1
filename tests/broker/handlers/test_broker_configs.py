"""DescribeConfigs of a broker through confluent-kafka: a setting the operator gave is
STATIC_BROKER_CONFIG (even at its default value), one never given is DEFAULT_CONFIG, as Kafka says."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

T = 10  # seconds for any one client call


def test_only_settings_the_operator_gave_are_static(broker_factory: Any) -> None:
    # num.partitions is given at its default value (1); no broker id is given (Redis allocates one).
    broker = broker_factory(default_partitions=1, auto_create_topics=False)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker.broker_id))
    configs = admin.describe_configs([resource], request_timeout=T)[resource].result(T)
    source = {name: ConfigSource(entry.source) for name, entry in configs.items()}
    assert source["num.partitions"] == ConfigSource.STATIC_BROKER_CONFIG
    assert configs["auto.create.topics.enable"].value == "false"
    assert source["auto.create.topics.enable"] == ConfigSource.STATIC_BROKER_CONFIG
    assert source["broker.id"] == ConfigSource.DEFAULT_CONFIG
    assert source["advertised.listeners"] == ConfigSource.DEFAULT_CONFIG
    assert source["socket.request.max.bytes"] == ConfigSource.DEFAULT_CONFIG
    # The test rig gives the offset encoding as a topic default; retention it leaves alone.
    assert source["schooner.offset.encoding"] == ConfigSource.STATIC_BROKER_CONFIG
    assert source["log.retention.ms"] == ConfigSource.DEFAULT_CONFIG


def test_a_given_broker_id_is_static(broker_factory: Any) -> None:
    broker = broker_factory(broker_id=7)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "7")
    configs = admin.describe_configs([resource], request_timeout=T)[resource].result(T)
    assert (configs["broker.id"].value, ConfigSource(configs["broker.id"].source)) == (
        "7",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
