"""The benchmark suite's produce and fetch figures, on a dense and a timestamp topic side by side."""

from __future__ import annotations

import redis

from bench import produce, report
from bench.servers import Endpoints
from bench.suite import (
    Options,
    paired_ratio,
    produce_topic_name,
    run_fetch,
    run_produce,
    timestamp_topic_name,
)

OPTS = Options(messages=500, runs=2, raw_requests=2000)


def test_produce_and_fetch_measure_both_encodings(endpoints: Endpoints, redis_client: redis.Redis) -> None:
    try:
        produced = run_produce(endpoints, redis_client, OPTS)
        fetched = run_fetch(endpoints, OPTS)
    finally:
        redis_client.delete(produce.RAW_STREAM_KEY)  # not in the test's keyspace
    ks = endpoints.keyspace
    for run in range(OPTS.runs):
        dense, stamped = produce_topic_name(run), timestamp_topic_name(run)
        assert redis_client.hget(ks.topic(dense), "offset_encoding") == b"dense"
        assert redis_client.hget(ks.topic(stamped), "offset_encoding") == b"timestamp"
        # Dense IDs are 0-1 .. 0-n; timestamp IDs carry the append time in milliseconds.
        assert redis_client.xrange(ks.stream(dense, 0), count=1)[0][0] == b"0-1"
        assert int(redis_client.xrange(ks.stream(stamped, 0), count=1)[0][0].split(b"-")[0]) > 0
    for figures, dense_runs, stamped_runs in (
        (produced, "broker_runs", "timestamp_runs"),
        (fetched, "kcat_runs", "timestamp_kcat_runs"),
    ):
        dense_rates = [r["msgs_per_s"] for r in figures[dense_runs]]
        stamped_rates = [r["msgs_per_s"] for r in figures[stamped_runs]]
        assert len(dense_rates) == len(stamped_rates) == OPTS.runs
        assert figures["broker_msgs_per_s"] == report.median(dense_rates) > 0
        assert figures["timestamp_msgs_per_s"] == report.median(stamped_rates) > 0
        assert figures["dense_vs_timestamp"] == paired_ratio(dense_rates, stamped_rates)
        assert set(figures["timestamp_cpu"]) == {"broker", "redis", "client", "other"}
    steady = [
        [r["steady_msgs_per_s"] for r in fetched[runs]] for runs in ("kcat_runs", "timestamp_kcat_runs")
    ]
    assert fetched["steady_dense_vs_timestamp"] == paired_ratio(*steady)
    assert all(r["messages"] == OPTS.messages for r in produced["timestamp_runs"])
    assert produced["timestamp_ratio"] == produced["timestamp_msgs_per_s"] / produced["raw_xadd_per_s"]
    assert fetched["timestamp_ratio"] == fetched["timestamp_msgs_per_s"] / fetched["raw_xrange_per_s"]
    assert fetched["timestamp_topic"] == timestamp_topic_name(0)
    # The wire client read every record of the dense topic in each run, in more than one Fetch.
    assert [r["messages"] for r in fetched["wire_runs"]] == [OPTS.messages] * OPTS.runs
    assert all(r["fetches"] >= 1 for r in fetched["wire_runs"])
    assert fetched["wire_ratio"] == fetched["wire_msgs_per_s"] / fetched["raw_xrange_per_s"] > 0
    # The wire producer sent every record to a dense topic of its own in each run; its stream holds them.
    assert [r["messages"] for r in produced["wire_runs"]] == [OPTS.messages] * OPTS.runs
    for run in range(OPTS.runs):
        assert redis_client.xlen(ks.stream(f"bench-produce-wire-{run}", 0)) == OPTS.messages
    assert produced["wire_ratio"] == produced["wire_msgs_per_s"] / produced["raw_xadd_per_s"] > 0
    assert set(produced["wire_cpu_us_per_record"]) == {"broker", "redis", "client"}
