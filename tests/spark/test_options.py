"""Option parsing, the pure helpers of planning, and the sink's partitioner: no Spark, no Redis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schooner.spark import planning
from schooner.spark.options import (
    EARLIEST,
    LATEST,
    SOURCE_OPTIONS,
    ColdOptions,
    OptionError,
    parse_sink,
    parse_source,
)
from schooner.spark.sink import PRODUCER_ID_BASE, default_partition, murmur2, producer_id


def test_options_arrive_lower_cased_and_follow_kafka_names() -> None:
    o = parse_source(
        {
            "redis.url": "redis://h:1/0",
            "keyspace": "t1",
            "subscribepattern": "orders-.*",
            "startingoffsets": '{"orders-a": {"0": 23, "1": -2}}',
            "maxoffsetspertrigger": "500",
            "minoffsetspertrigger": "10",
            "maxtriggerdelay": "30s",
            "includeheaders": "true",
            "failondataloss": "false",
        },
        streaming=True,
    )
    assert (o.redis_url, o.keyspace) == ("redis://h:1/0", "t1")
    assert o.subscription.matches("orders-a") and not o.subscription.matches("xorders-a")
    assert o.starting.offsets == {("orders-a", 0): 23, ("orders-a", 1): EARLIEST}
    assert (o.max_offsets_per_trigger, o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (500, 10, 30_000)
    assert o.include_headers and not o.fail_on_data_loss
    camel = parse_source({"subscribe": "a, b", "maxOffsetsPerTrigger": "7"}, streaming=True)
    assert camel.subscription.topics == ("a", "b") and camel.max_offsets_per_trigger == 7


def test_defaults_differ_for_batch_and_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHOONER_KEYSPACE", "from-env")
    assert parse_source({"subscribe": "t"}, streaming=True).starting.kind == "latest"
    batch = parse_source({"subscribe": "t"}, streaming=False)
    assert (batch.starting.kind, batch.ending.kind, batch.keyspace) == ("earliest", "latest", "from-env")
    assigned = parse_source({"assign": '{"t": [2, 0]}'}, streaming=False).subscription
    assert assigned.partitions_of("t", 4) == [0, 2] and not assigned.matches("u")


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({}, True, "exactly one of subscribe"),
        ({"subscribe": "a", "assign": '{"a": [0]}'}, True, "exactly one of subscribe"),
        ({"assign": "[1]"}, True, "assign must be JSON"),
        ({"subscribepattern": "("}, True, "not a valid regex"),
        ({"subscribe": "a", "startingoffsets": "latest"}, False, "cannot be latest in a batch"),
        ({"subscribe": "a", "startingoffsets": '{"a": {"0": -1}}'}, False, "cannot use -1"),
        ({"subscribe": "a", "endingoffsets": "earliest"}, False, "cannot be earliest"),
        ({"subscribe": "a", "endingoffsets": '{"a": {"0": -2}}'}, False, "cannot use -2"),
        ({"subscribe": "a", "endingoffsets": "latest"}, True, "batch queries only"),
        ({"subscribe": "a", "maxoffsetspertrigger": "0"}, True, "must be positive"),
        ({"subscribe": "a", "maxoffsetspertrigger": "5", "minoffsetspertrigger": "9"}, True, "above"),
        ({"subscribe": "a", "includeheaders": "yes"}, True, "true or false"),
        ({"subscribe": "a", "maxtriggerdelay": "soon"}, True, "duration"),
        ({"subscribe": "a", "isolation.level": "committed"}, True, "read_committed or read_uncommitted"),
        (
            {
                "subscribe": "a",
                "isolation.level": "read_committed",
                "kafka.isolation.level": "read_uncommitted",
            },
            False,
            "disagree",
        ),
    ],
)
def test_bad_options_are_refused_with_a_reason(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        parse_source(options, streaming)


def test_isolation_is_read_committed_unless_asked_as_kafka_consumers_ask() -> None:
    assert parse_source({"subscribe": "t"}, streaming=False).committed
    for name in ("isolation.level", "kafka.isolation.level"):
        assert not parse_source({"subscribe": "t", name: "READ_UNCOMMITTED"}, streaming=True).committed
        assert parse_source({"subscribe": "t", name: "read_committed"}, streaming=True).committed


def test_offsets_json_is_canonical() -> None:
    offsets = {("b", 10): 5, ("a", 2): LATEST, ("b", 2): 7}
    assert list(planning.to_json(offsets)) == ["a", "b"]
    assert list(planning.to_json(offsets)["b"]) == ["2", "10"]
    assert planning.from_json(planning.to_json(offsets)) == offsets


def test_splits_cover_the_range_once_and_estimates_scale_with_time() -> None:
    cuts = planning.split(1000, 5000, 3)
    assert cuts[0][0] == 1000 and cuts[-1][1] == 5000
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:], strict=False))
    assert planning.split(10, 12, 8) == [(10, 11), (11, 12)]
    bits = 10
    probes = planning.probe_ms(5 << bits, (1005 << bits) + 1, bits)
    assert probes[0] == 5 and probes[-1] == 1005 and len(probes) == planning.PROBES
    assert planning.estimate(5 << bits, (1005 << bits) + 1, bits, [2] * len(probes)) == 2 * 1001


def test_murmur2_is_kafkas() -> None:
    # Values from Kafka's own tests of Utils.murmur2.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(bytes([ord("a"), ord("b"), ord("c")])) == 479470107
    assert default_partition(None, None, 5) == 0
    assert default_partition(None, b"v", 5) == default_partition(b"v", None, 5)


def test_producer_ids_are_stable_and_out_of_the_brokers_range() -> None:
    a, b = producer_id("query:q1", 0), producer_id("query:q1", 1)
    assert a == producer_id("query:q1", 0) and a != b
    assert PRODUCER_ID_BASE <= a < 1 << 63 and PRODUCER_ID_BASE <= b < 1 << 63


def test_cold_store_options(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("URL", "ENDPOINT", "REGION", "ACCESS_KEY_ID", "SECRET_ACCESS_KEY", "ALLOW_HTTP"):
        monkeypatch.delenv(f"SCHOONER_COLD_STORE_{name}", raising=False)
    assert parse_source({"subscribe": "t"}, streaming=False).cold is None
    given = {
        "subscribe": "t",
        "coldstore": "s3://bucket/tiered",
        "coldstore.endpoint": "http://h:9000",
        "coldstore.region": "eu-west-1",
        "coldstore.accesskeyid": "id",
        "coldstore.secretaccesskey": "secret",
        "coldstore.allowhttp": "false",
    }
    o = parse_source(given, streaming=True)
    assert o.cold == ColdOptions("s3://bucket/tiered", "http://h:9000", "eu-west-1", "id", "secret", False)
    assert "secret" not in repr(o)
    assert parse_source({"subscribe": "t", "coldstore": "/data/cold"}, streaming=False).cold == ColdOptions(
        "/data/cold"
    )
    # The broker's settings in the environment are the defaults, resolved on the driver.
    monkeypatch.setenv("SCHOONER_COLD_STORE_URL", "file:///srv/cold")
    monkeypatch.setenv("SCHOONER_COLD_STORE_ALLOW_HTTP", "true")
    assert parse_source({"subscribe": "t"}, streaming=False).cold == ColdOptions(
        "file:///srv/cold", allow_http=True
    )
    monkeypatch.delenv("SCHOONER_COLD_STORE_URL")
    with pytest.raises(OptionError, match="need coldStore"):
        parse_source({"subscribe": "t", "coldstore.region": "x"}, streaming=False)
    with pytest.raises(OptionError, match="coldStore.allowHttp must be true or false"):
        parse_source({"subscribe": "t", "coldstore": "/c", "coldstore.allowhttp": "yes"}, streaming=False)
    with pytest.raises(OptionError, match="coldStore must be a path"):
        parse_source({"subscribe": "t", "coldstore": "gs://b/p"}, streaming=False)


def test_sink_options() -> None:
    assert parse_sink({"topic": "out", "redis.url": "redis://x:1/0"}).topic == "out"
    assert parse_sink({}).topic is None


def test_the_docs_list_every_reader_option() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "spark.md").read_text()
    table = text.split("## Reading: options", 1)[1].split("\n## ", 1)[0]
    documented = {
        name for row in re.findall(r"^\| (.+?) \|", table, re.M) for name in re.findall(r"`([^`]+)`", row)
    }
    assert documented == set(SOURCE_OPTIONS)
