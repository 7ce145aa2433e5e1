"""The group config table, pure: names, checks against the broker's bounds, the session/heartbeat rule,
ISO-8601 durations, and what DescribeConfigs reports."""

from __future__ import annotations

import dataclasses

import pytest

from schooner.config import Settings
from schooner.coordinators.groups import config_defs as defs
from schooner.coordinators.groups.share.config import share_group_config
from schooner.storage.topics.config import ConfigSource, ConfigType, InvalidConfig

STOCK = Settings()

GOOD = [
    ("consumer.session.timeout.ms", "50000", "50000"),
    ("consumer.heartbeat.interval.ms", "+6000", "6000"),
    ("share.auto.offset.reset", "earliest", "earliest"),
    ("share.auto.offset.reset", "latest", "latest"),
    ("share.auto.offset.reset", "by_duration:PT1H30M", "by_duration:PT1H30M"),
    ("share.auto.offset.reset", "by_duration:P1DT0.5S", "by_duration:P1DT0.5S"),
    ("share.isolation.level", "read_committed", "read_committed"),
    ("share.record.lock.duration.ms", "15000", "15000"),
    ("share.record.lock.duration.ms", "60000", "60000"),
    ("share.delivery.count.limit", "2", "2"),
    ("share.delivery.count.limit", "10", "10"),
    ("share.partition.max.record.locks", "100", "100"),
    ("share.session.timeout.ms", "60000", "60000"),
    ("share.heartbeat.interval.ms", "15000", "15000"),
    ("errors.deadletterqueue.topic.name", "dlq.orders", "dlq.orders"),
    ("errors.deadletterqueue.topic.name", "", ""),
    ("errors.deadletterqueue.copy.record.enable", "TRUE", "true"),
]

BAD = [
    ("no.such.config", "1", "Unknown group config name"),
    ("share.record.lock.duration.ms", "14999", "15000..60000"),
    ("share.record.lock.duration.ms", "60001", "share_max_record_lock_duration_ms"),
    ("share.record.lock.duration.ms", "1e4", "not an integer"),
    ("share.delivery.count.limit", "1", "2..10"),
    ("share.delivery.count.limit", "11", "2..10"),
    ("share.partition.max.record.locks", "99", "100..4000"),
    ("share.partition.max.record.locks", "4001", "100..4000"),
    ("share.session.timeout.ms", "44999", "45000..60000"),
    ("share.heartbeat.interval.ms", "4999", "5000..15000"),
    ("consumer.session.timeout.ms", "60001", "45000..60000"),
    ("consumer.heartbeat.interval.ms", "15001", "5000..15000"),
    ("share.auto.offset.reset", "none", "latest, earliest or by_duration"),
    ("share.auto.offset.reset", "Earliest", "latest, earliest or by_duration"),
    ("share.auto.offset.reset", "by_duration", "latest, earliest or by_duration"),
    ("share.auto.offset.reset", "by_duration:", "ISO-8601"),
    ("share.auto.offset.reset", "by_duration:-PT10S", "ISO-8601"),
    ("share.auto.offset.reset", "by_duration:PT", "ISO-8601"),
    ("share.auto.offset.reset", "by_duration:P1W", "ISO-8601"),
    ("share.auto.offset.reset", "by_duration:10s", "ISO-8601"),
    ("share.isolation.level", "read_commit", "read_uncommitted, read_committed"),
    ("errors.deadletterqueue.topic.name", "orders-dlq", "'dlq.'"),
    ("errors.deadletterqueue.topic.name", "dlq.a b", "legal topic name"),
    ("errors.deadletterqueue.copy.record.enable", "1", "true or false"),
    ("share.delivery.count.limit", None, "null"),
]


@pytest.mark.parametrize(("name", "value", "stored"), GOOD)
def test_good_values_are_stored_in_their_canonical_form(name: str, value: str, stored: str) -> None:
    assert defs.check_value(name, value, STOCK) == stored


@pytest.mark.parametrize(("name", "value", "why"), BAD)
def test_bad_names_and_values_are_refused_with_a_message_naming_them(
    name: str, value: str | None, why: str
) -> None:
    with pytest.raises(InvalidConfig) as refused:
        defs.check_value(name, value, STOCK)
    assert name in str(refused.value) and why in str(refused.value)


def test_bounds_come_from_the_broker_settings() -> None:
    wide = dataclasses.replace(STOCK, share_max_delivery_count_limit=20, dlq_topic_name_prefix="")
    assert defs.check_value("share.delivery.count.limit", "20", wide) == "20"
    assert defs.check_value("errors.deadletterqueue.topic.name", "orders-dlq", wide) == "orders-dlq"
    with pytest.raises(InvalidConfig):
        defs.check_value("share.delivery.count.limit", "20", STOCK)


def test_the_session_must_outlast_the_heartbeat_when_the_group_sets_either() -> None:
    with pytest.raises(InvalidConfig, match="share.session.timeout.ms .* greater than share.heartbeat"):
        defs.validate({"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "45000"},
                      dataclasses.replace(STOCK, share_max_heartbeat_interval_ms=50_000))  # fmt: skip
    odd = dataclasses.replace(STOCK, consumer_group_session_ms=1500)  # as a test broker runs
    with pytest.raises(InvalidConfig, match="consumer.session.timeout.ms"):
        defs.validate({"consumer.heartbeat.interval.ms": "5000"}, odd)
    # A broker default that breaks the rule is the operator's: another config may still be set.
    assert defs.validate({"share.delivery.count.limit": "3"}, odd) == {"share.delivery.count.limit": "3"}


def test_durations() -> None:
    assert defs.duration_ms("PT1H") == 3_600_000
    assert defs.duration_ms("P2DT3M4.25S") == ((2 * 24 * 60 + 3) * 60 + 4) * 1000 + 250
    assert defs.duration_ms("pt0s") == 0
    assert defs.duration_ms("P") is None and defs.duration_ms("PT1H2") is None
    assert defs.by_duration_ms("by_duration:PT10M") == 600_000
    assert defs.by_duration_ms("earliest") is None and defs.by_duration_ms("latest") is None


def test_described_values_sources_and_synonyms() -> None:
    tuned = dataclasses.replace(STOCK, share_delivery_count_limit=7)
    values = {v.name: v for v in defs.described({"share.auto.offset.reset": "earliest"}, tuned)}
    assert set(values) == set(defs.GROUP_CONFIG_DEFS)
    reset = values["share.auto.offset.reset"]
    assert (reset.value, reset.source, reset.config_type) == ("earliest", 8, ConfigType.STRING)
    assert reset.synonyms == (
        ("share.auto.offset.reset", "earliest", ConfigSource.DYNAMIC_GROUP_CONFIG),
        ("share.auto.offset.reset", "latest", ConfigSource.DEFAULT_CONFIG),
    )
    limit = values["share.delivery.count.limit"]
    assert (limit.value, limit.source, limit.config_type) == ("7", 4, ConfigType.INT)
    assert limit.synonyms == (
        ("group.share.delivery.count.limit", "7", ConfigSource.STATIC_BROKER_CONFIG),
        ("group.share.delivery.count.limit", "5", ConfigSource.DEFAULT_CONFIG),
    )
    lock = values["share.record.lock.duration.ms"]
    assert (lock.value, lock.source) == ("30000", ConfigSource.DEFAULT_CONFIG)
    copy = values["errors.deadletterqueue.copy.record.enable"]
    assert (copy.value, copy.config_type, copy.read_only) == ("false", ConfigType.BOOLEAN, False)
    assert all(v.documentation for v in values.values())


def test_the_share_group_config_the_data_path_gets() -> None:
    overrides = defs.validate(
        {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "20000",
         "errors.deadletterqueue.copy.record.enable": "True"},
        STOCK,
    )  # fmt: skip
    config = share_group_config(overrides, STOCK)
    assert (config.auto_offset_reset, config.record_lock_duration_ms) == ("earliest", 20000)
    assert config.dlq_copy_record and config.delivery_count_limit == STOCK.share_delivery_count_limit
    assert defs.consumer_timeouts({"consumer.session.timeout.ms": "50000"}, STOCK) == (50000, 5000)
