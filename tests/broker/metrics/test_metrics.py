"""The broker's /metrics, scraped around real client traffic (confluent-kafka and kcat): the counters
move by exactly the records sent and read, errors are counted by Kafka name, connections by listener,
and the gauges read at scrape time (end offsets, group lag) say what the CLI and storage say."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from click.testing import CliRunner
from confluent_kafka import Consumer, TopicPartition
from kio.schema.errors import ErrorCode

from schooner.ops.cli import main
from schooner.storage.keys import Keyspace
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.redis.client import connect_sync
from schooner.storage.share import partition as share
from schooner.storage.topics import metadata
from tests.broker.helpers import fill, wait
from tests.broker.metrics_rig import Scrape, scrape, with_metrics
from tests.broker.share_rig import ShareRunner, create_topic, produce, set_group_configs
from tests.clients import Rec, confluent_produce, consume, from_beginning, kcat
from tests.wire import call, connect, produce_request

T = 10


def _delta(after: Scrape, before: Scrape, name: str, **labels: str) -> float:
    return after.value(name, **labels) - before.value(name, **labels)


def _requests(s: Scrape, api: str) -> float:
    return sum(v for labels, v in s.series("schooner_requests_total").items() if ("api", api) in labels)


def test_counters_move_by_exactly_the_records_produced_and_consumed(broker_factory: Any) -> None:
    broker, port = with_metrics(broker_factory)
    create_topic(broker.bootstrap, "metered", 2)
    before = scrape(port)

    confluent_produce(broker.bootstrap, "metered", [Rec(b"k%d" % i, b"v" * i) for i in range(30)])
    kcat(
        "-b",
        broker.bootstrap,
        "-P",
        "-t",
        "metered",
        "-p",
        "1",
        stdin=b"\n".join(b"line %d" % i for i in range(20)),
    )
    produced = scrape(port)
    assert _delta(produced, before, "schooner_records_in_total", topic="metered") == 50
    assert _delta(produced, before, "schooner_bytes_in_total", topic="metered") > 30 * 12  # headers and data
    assert _delta(produced, before, "schooner_records_out_total", topic="metered") == 0
    assert _requests(produced, "Produce") - _requests(before, "Produce") >= 2  # one client each at least
    latency = _delta(produced, before, "schooner_request_seconds_count", api="Produce")
    assert latency == _requests(produced, "Produce") - _requests(before, "Produce")

    assert len(consume(broker.bootstrap, from_beginning("metered", 2), 50)) == 50
    lines = kcat("-b", broker.bootstrap, "-C", "-t", "metered", "-p", "1", "-o", "beginning", "-e")
    assert len(lines.splitlines()) == 20
    consumed = scrape(port)
    assert _delta(consumed, produced, "schooner_records_out_total", topic="metered") == 70
    assert _delta(consumed, produced, "schooner_bytes_out_total", topic="metered") > 0
    assert _delta(consumed, produced, "schooner_records_in_total", topic="metered") == 0
    assert _requests(consumed, "Fetch") > _requests(produced, "Fetch")
    # every request and partition went through Redis, each round trip timed
    assert _delta(consumed, before, "schooner_redis_seconds_count") > 0
    assert consumed.value("schooner_redis_errors_total") == 0
    assert consumed.value("schooner_metrics_storage_up") == 1


def test_an_error_is_counted_by_api_and_kafka_name(broker_factory: Any) -> None:
    broker, port = with_metrics(broker_factory, auto_create_topics=False)
    before = scrape(port)
    answer = call(broker.port, produce_request("nowhere", [b"lost"]))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.unknown_topic_or_partition
    after = scrape(port)
    errors = "schooner_request_errors_total"
    assert _delta(after, before, errors, api="Produce", error="UNKNOWN_TOPIC_OR_PARTITION") == 1
    assert _delta(after, before, "schooner_requests_total", api="Produce", version="9") == 1
    assert _delta(after, before, "schooner_records_in_total", topic="nowhere") == 0


def test_connections_are_counted_per_listener(broker_factory: Any) -> None:
    listeners = ["PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]
    broker, port = with_metrics(broker_factory, listeners=listeners)

    def open_now() -> dict[tuple[str, ...], float]:
        return scrape(port).by("schooner_connections", "listener")

    assert open_now() == {("PLAINTEXT",): 0, ("SASL_PLAINTEXT",): 0}
    plain = [connect(broker.broker.port_of("PLAINTEXT")) for _ in range(2)]
    sasl = [connect(broker.broker.port_of("SASL_PLAINTEXT"))]
    wait(lambda: open_now() == {("PLAINTEXT",): 2, ("SASL_PLAINTEXT",): 1}, T, "three connections counted")
    for sock in [*plain, *sasl]:
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    wait(lambda: open_now() == {("PLAINTEXT",): 0, ("SASL_PLAINTEXT",): 0}, T, "the closes counted")


def test_end_offsets_are_the_high_watermarks(broker_factory: Any) -> None:
    broker, port = with_metrics(broker_factory)
    fill(broker.bootstrap, "ends", 3, 0)
    for p, n in ((0, 4), (1, 9)):
        confluent_produce(broker.bootstrap, "ends", [Rec(None, b"x")] * n, partition=p)
    probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    try:
        marks = {
            (str(p),): probe.get_watermark_offsets(TopicPartition("ends", p), timeout=T)[1] for p in range(3)
        }
    finally:
        probe.close()
    found = scrape(port).by("schooner_partition_end_offset", "topic", "partition")
    ends = {k[1:]: v for k, v in found.items() if k[0] == "ends"}
    assert ends == marks and marks[("1",)] - marks[("0",)] == 5 and marks[("2",)] == 0


def _consume_and_commit(bootstrap: str, group: str, topic: str, count: int, **conf: Any) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", **conf})  # fmt: skip
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        got += [m for m in consumer.consume(count - len(got), 0.5) if not m.error()]
    assert len(got) == count
    consumer.commit(asynchronous=False)  # the positions reached on every assigned partition
    consumer.close()


def _cli_lag(broker: Any, group: str) -> dict[tuple[str, str], int]:
    args = ["groups", "lag", group, "--redis-url", broker.redis_url, "--keyspace", broker.settings.keyspace]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.strip()]
    return {(r["topic"], str(r["partition"])): r["lag_records"] for r in rows}


def _metric_lag(s: Scrape, group: str) -> dict[tuple[str, str], float]:
    return {
        k[1:]: v
        for k, v in s.by("schooner_group_lag", "group", "topic", "partition").items()
        if k[0] == group
    }


def test_group_lag_matches_the_cli_for_classic_and_consumer_groups(broker_factory: Any) -> None:
    broker, port = with_metrics(broker_factory, consumer_group_heartbeat_ms=500)
    fill(broker.bootstrap, "lagged", 2, 10)
    _consume_and_commit(broker.bootstrap, "lag-classic", "lagged", 6)
    _consume_and_commit(broker.bootstrap, "lag-848", "lagged", 13, **{"group.protocol": "consumer"})
    s = scrape(port)
    for group, consumed in (("lag-classic", 6), ("lag-848", 13)):
        expected = _cli_lag(broker, group)
        # the partitions read from are committed: each holds 10 records
        assert expected and sum(expected.values()) == 10 * len(expected) - consumed
        assert _metric_lag(s, group) == expected
        seconds = {
            k for k in s.by("schooner_group_lag_seconds", "group", "topic", "partition") if k[0] == group
        }
        assert {k[1:] for k in seconds} == set(expected)


def test_share_group_lag_is_the_share_partitions(broker_factory: Any) -> None:
    broker, port = with_metrics(broker_factory)
    create_topic(broker.bootstrap, "shared")
    set_group_configs(broker.bootstrap, "lag-share", share_auto_offset_reset="earliest")
    produce(broker.bootstrap, "shared", [b"v%d" % i for i in range(10)])
    runner = ShareRunner("c", broker.bootstrap, "lag-share", ["shared"]).start()
    wait(lambda: len(runner.deliveries) == 10, 30, "ten records delivered and accepted")
    runner.stop()
    assert runner.errors == []
    produce(broker.bootstrap, "shared", [b"later-%d" % i for i in range(5)])

    redis = connect_sync(broker.redis_url)
    ks = Keyspace(broker.settings.keyspace)
    (topic,) = [t for t in drive_sync(redis, metadata.load_all(ks, {})) if t.name == "shared"]
    stored = run_sync(redis, share.state(ks, topic, 0, "lag-share"))
    redis.close()
    assert stored is not None and stored.lag == 5
    assert _metric_lag(scrape(port), "lag-share") == {("shared", "0"): 5}


def test_brokers_sharing_redis_report_each_partition_and_group_once(broker_factory: Any) -> None:
    first, first_port = with_metrics(broker_factory)
    second, second_port = with_metrics(broker_factory)
    fill(first.bootstrap, "split", 6, 2)
    for g in ("split-a", "split-b", "split-c", "split-d"):
        _consume_and_commit(first.bootstrap, g, "split", 12)
    scrapes = [scrape(first_port), scrape(second_port)]
    ends = [{k for k in s.by("schooner_partition_end_offset", "topic", "partition") if k[0] == "split"}
            for s in scrapes]  # fmt: skip
    assert ends[0] and ends[1] and not ends[0] & ends[1]  # split between them, no series twice
    assert ends[0] | ends[1] == {("split", str(p)) for p in range(6)}
    groups = [{k[0] for k in s.by("schooner_group_lag", "group", "topic", "partition")} for s in scrapes]
    assert not groups[0] & groups[1]
    assert groups[0] | groups[1] == {"split-a", "split-b", "split-c", "split-d"}
