"""DescribeConfigs: a topic's configs by name, value, source, read-only flag, sensitivity and type, as
Kafka describes them."""

from __future__ import annotations

from typing import Any

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource

from tests.conformance.peers import Peer, create_topic, differences, plain, unique

TOPIC = 2
# Schooner's own topic configs (docs/configuration.md), the one Kafka 4.0 dropped that it still takes
# (docs/compatibility.md), and Confluent Server's schema validation (docs/schemas.md), which Apache Kafka
# does not have.
SCHOONER_ONLY = {
    "schooner.offset.encoding",
    "schooner.sequence.bits",
    "schooner.trim.approximate",
    "schooner.table.format",
    "schooner.table.key.mode",
    "schooner.table.value.mode",
    "message.timestamp.difference.max.ms",
    "confluent.key.schema.validation",
    "confluent.value.schema.validation",
    "confluent.key.subject.name.strategy",
    "confluent.value.subject.name.strategy",
}


def describe(peer: Peer, resource_type: int, name: str) -> dict[str, Any]:
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(resource_type=resource_type, resource_name=name, configuration_keys=None),
        ),
        include_synonyms=True,
        include_documentation=False,
    )
    (result,) = plain(peer.call(request))["results"]
    assert result["error_code"] == "none", result
    return {c["name"]: c for c in result["configs"]}


def test_a_topics_configs_are_kafkas(kafka: Peer, schooner: Peer) -> None:
    topic = unique("configs")
    seen = {}
    for peer in (kafka, schooner):
        create_topic(peer, topic, 1, {"retention.ms": "3600000", "cleanup.policy": "compact"})
        seen[peer.name] = described = describe(peer, TOPIC, topic)
        # Kafka's format step makes min.insync.replicas a dynamic cluster default (KIP-966); a broker
        # started without it, as Schooner's, reports the static default.
        described.pop("min.insync.replicas")
    from_kafka, from_schooner = seen["kafka"], seen["schooner"]
    assert set(from_schooner) - set(from_kafka) == SCHOONER_ONLY
    for name in SCHOONER_ONLY:
        del from_schooner[name]
    diff = differences(from_kafka, from_schooner)
    assert not diff, "\n".join(diff)


BROKER = 4
# Where the broker's description differs by design (docs/compatibility.md): Schooner's own settings keep
# their names, Kafka 4.0 dropped the timestamp difference (Schooner still takes it), and Kafka leaves
# log.retention.ms unset in favour of log.retention.hours.
SCHOONER_BROKER_ONLY_PREFIXES = ("archive_", "cold_store_", "schooner.", "confluent.")
SCHOONER_BROKER_ONLY = {"log.message.timestamp.difference.max.ms", "remote.storage.enable"}
# Set for the tests on one side and not the other: where they come from differs, not what they mean.
SET_FOR_THE_TEST = {"advertised.listeners", "broker.id", "num.partitions", "log.retention.ms"}


def test_the_brokers_configs_are_kafkas_where_both_have_them(kafka: Peer, schooner: Peer) -> None:
    from_kafka = describe(kafka, BROKER, str(kafka.broker_id))
    from_schooner = describe(schooner, BROKER, str(schooner.broker_id))
    own = {n for n in from_schooner if n not in from_kafka}
    assert {n for n in own if not n.startswith(SCHOONER_BROKER_ONLY_PREFIXES)} == SCHOONER_BROKER_ONLY
    shared = sorted(set(from_schooner) & set(from_kafka) - SET_FOR_THE_TEST)
    assert len(shared) >= 20, shared
    for name in shared:
        k, s = from_kafka[name], from_schooner[name]
        assert (s["value"], s["is_sensitive"], s["config_type"]) == (
            k["value"],
            k["is_sensitive"],
            k["config_type"],
        ), name
        assert s["config_source"] == k["config_source"], name
        # Kafka may change these at run time (IncrementalAlterConfigs on the broker); Schooner's broker
        # configs are set at its start, so it says they are read-only.
        assert s["read_only"] or not k["read_only"], name


GROUP = 32
# Kafka 4.4's group configs that Schooner does not take yet (docs/compatibility.md): the streams groups'
# (KIP-1071, with the streams group protocol), the assignment interval of consumer and share groups, and
# share groups' RENEW acknowledgements.
KAFKA_GROUP_ONLY = {
    "consumer.assignment.interval.ms",
    "share.assignment.interval.ms",
    "share.renew.acknowledge.enable",
    "streams.assignment.interval.ms",
    "streams.assignor.name",
    "streams.heartbeat.interval.ms",
    "streams.initial.rebalance.delay.ms",
    "streams.num.standby.replicas",
    "streams.rack.aware.assignment.tags",
    "streams.session.timeout.ms",
}


def test_a_groups_configs_are_kafkas(kafka: Peer, schooner: Peer) -> None:
    """A group's configs (KIP-848's and KIP-932's), described before the group exists: every name both
    have, with its value, source, type, flags and synonyms; and which names only Kafka has."""
    group = unique("group-configs")
    from_kafka, from_schooner = describe(kafka, GROUP, group), describe(schooner, GROUP, group)
    assert set(from_schooner) <= set(from_kafka), set(from_schooner) - set(from_kafka)
    assert set(from_kafka) - set(from_schooner) == KAFKA_GROUP_ONLY
    for name in KAFKA_GROUP_ONLY:
        del from_kafka[name]
    diff = differences(from_kafka, from_schooner)
    assert not diff, "\n".join(diff)
