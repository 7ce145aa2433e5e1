"""The side-by-side figure with Apache Kafka, run tiny: every row there for every setup, each value a
positive number, each ratio the Schooner setup's median over Kafka's. Nothing here is about speed."""

from __future__ import annotations

import math
import shutil
import statistics

import pytest

from bench import report, suite
from bench.versus_kafka import Options, figures, run, table
from bench.versus_kafka.__main__ import parse_args
from bench.versus_kafka.brokers import KAFKA, SCHOONER, SCHOONER_REDIS7, SETUPS

# One latency setting of the four the defaults run (test_options_and_registration), to stay short.
TINY = Options(
    records=300,
    runs=1,
    partitions=20,
    latency_rates=(5_000,),
    lingers=(1,),
    latency_seconds=0.3,
    idle_seconds=0.5,
)


def expected_figures(opts: Options) -> list[str]:
    p = f"{opts.partitions:,}"
    return [
        "produce, confluent-kafka",
        "fetch, kcat",
        "fetch, confluent-kafka",
        "produce, kafka-producer-perf-test",
        "fetch, kafka-consumer-perf-test",
        f"create a {p}-partition topic",
        f"produce to {p} new partitions, confluent-kafka",
        f"produce to the {p} partitions again",
        f"fetch {p} partitions, kcat",
        *(
            f"e2e latency @{rate:,}/s, linger.ms {linger}"
            for rate in opts.latency_rates
            for linger in opts.lingers
        ),
    ]


def test_parses_the_perf_tools_summaries() -> None:
    producer = (
        "12 records sent, 2.4 records/sec (0.00 MB/sec), 3.0 ms avg latency, 9.0 ms max latency.\n"
        "300 records sent, 2127.659574 records/sec (0.20 MB/sec), 40.11 ms avg latency, 120.00 ms max "
        "latency, 38 ms 50th, 110 ms 95th, 118 ms 99th, 120 ms 99.9th.\n"
    )
    assert figures.parse_producer_performance(producer) == (300, 2127.659574)
    consumer = (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
        "2026-01-01 00:00:00:000, 2026-01-01 00:00:04:000, 0.0286, 0.0072, 300, 75.0, 3500, 500, 0.0572, "
        "600.0\n"
    )
    summary = figures.parse_consumer_performance(consumer)
    assert summary["fetch.nMsg.sec"] == "600.0" and summary["rebalance.time.ms"] == "3500"
    with pytest.raises(RuntimeError):
        figures.parse_producer_performance("no summary")
    with pytest.raises(RuntimeError):
        figures.parse_consumer_performance("start.time, end.time\n")


def test_options_and_registration() -> None:
    opts, output = parse_args(
        ["--records", "10", "--runs", "2", "--linger", "5", "--skip-setup", SCHOONER_REDIS7]
    )
    assert (opts.records, opts.runs, opts.lingers, output) == (10, 2, (5,), None)
    assert opts.setups == (SCHOONER, KAFKA)
    defaults = parse_args([])[0]
    assert defaults == Options()
    # Issue 39's rows: latency at 5k and 50k msg/s with linger.ms 1 and 5, a topic of 1,000 partitions.
    assert (defaults.latency_rates, defaults.lingers, defaults.partitions) == ((5_000, 50_000), (1, 5), 1000)
    assert defaults.setups == SETUPS
    with pytest.raises(SystemExit):
        parse_args(["--runs", "0"])
    assert "versus_kafka" in suite.Options().extras  # part of `python -m bench`; `--skip versus_kafka`


@pytest.mark.xdist_group("apache_kafka")  # a JVM broker of its own: one worker at a time
@pytest.mark.skipif(shutil.which("java") is None, reason="Apache Kafka needs Java")
def test_every_row_compares_each_setup_with_kafka() -> None:
    results = run(TINY)
    rows = {r["figure"]: r for r in results["rows"]}
    assert list(rows)[:4] == [
        "CPU at rest",
        "resident memory at rest",
        "resident memory, peak under load",
        "resident memory after the load",
    ]
    for label in expected_figures(TINY):
        assert label in rows
        if not label.startswith("create"):
            assert f"  {label}: broker CPU" in rows  # every figure that moves records has its CPU row
    latency = [r for r in results["rows"] if r["figure"].startswith("e2e")]
    assert {r["unit"] for r in latency} == {"p50 ms", "p99 ms", "max ms"}
    for r in results["rows"]:
        assert set(r["values"]) == set(SETUPS)
        assert r["better"] in ("higher", "lower")
        for name, runs in r["runs"].items():
            assert r["values"][name] == statistics.median(runs)
        kafka = r["values"][KAFKA]
        for name in (SCHOONER, SCHOONER_REDIS7):
            if kafka:
                assert r["ratios"][name] == r["values"][name] / kafka
            else:
                assert math.isnan(r["ratios"][name])
        assert all(math.isfinite(v) for v in r["values"].values()), r
        # CPU comes in ticks of 10 ms: a tiny run may not take one.
        cpu = r["unit"] in ("cores", "µs/record")
        assert all(v >= 0 if cpu else v > 0 for v in r["values"].values()), r
        assert len(next(iter(r["runs"].values()))) == (
            1 if r["figure"].startswith(("CPU at", "resident")) else TINY.runs
        )
    assert set(results["environment"]["servers"]) == set(SETUPS)
    assert "Lua path" in results["environment"]["servers"][SCHOONER_REDIS7]
    text = table.text(results)
    assert "Schooner ÷ Kafka" in text and "Redis 7 ÷ Kafka" in text
    produced = rows["produce, confluent-kafka"]
    assert f"{produced['ratios'][SCHOONER]:.2f}" in next(
        line for line in text.splitlines() if line.startswith("produce, confluent-kafka ")
    )
    # The suite's table has a row per figure too, Schooner's value beside Kafka's and their ratio.
    suite_rows = {r[0]: r for r in report._extra_rows({"versus_kafka": results})}
    row = suite_rows["vs Kafka: produce, confluent-kafka, msgs/s"]
    assert row[3] == f"{produced['ratios'][SCHOONER]:.2f}"
    assert row[2].endswith("(Kafka)") and "Redis 7 ÷ Kafka" in row[4]
    assert len([name for name in suite_rows if name.startswith("vs Kafka: ")]) == len(results["rows"])
