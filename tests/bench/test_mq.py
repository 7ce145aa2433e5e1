"""bench/mq.py: the MQ figures and their raw baselines, read from the same entries, with CPU per message."""

from __future__ import annotations

from bench import mq, report
from schooner.storage.redis.embedded import EmbeddedRedis


def test_mq_bench_measures_consume_against_both_raw_loops(redis_server: EmbeddedRedis) -> None:
    figures = mq.run(redis_server.url, messages=600, runs=2)
    for name in ("mq_consume", "raw_xreadgroup", "raw_pipelined", "mq_produce", "raw_xadd"):
        assert figures[f"{name}_msgs_per_s"] > 0
    ratio = figures["mq_consume_msgs_per_s"] / figures["raw_xreadgroup_msgs_per_s"]
    assert abs(figures["mq_consume_ratio"] - ratio) < 0.01  # of the rounded medians
    assert figures["mq_consume_client_us_per_msg"] > 0 and figures["raw_consume_client_us_per_msg"] > 0
    row = [r for r in report._extra_rows({"mq": figures}) if r[0] == "MQ consume msgs/s"]
    assert row and row[0][4].startswith(f">= {report.MQ_CONSUME_TARGET} ")
    assert "CPU us/msg consumer" in row[0][4]
