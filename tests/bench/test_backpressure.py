"""The backpressure figure, run small: a tiered topic produced through a Redis smaller than its data
beside an untiered one with room, every record acknowledged, and its rows in `python -m bench`'s table."""

from __future__ import annotations

from bench import backpressure, report
from bench.suite import Options

MESSAGES = 150_000  # 37.5 MB of values through 16 MB


def test_a_tiered_topic_through_a_small_redis_is_measured_beside_one_with_room() -> None:
    # run() fails unless every record of both topics is acknowledged.
    out = backpressure.run(messages=MESSAGES, runs=1, maxmemory=backpressure.MIN_MAXMEMORY)
    assert out["backpressure_data_bytes"] > 2 * out["backpressure_maxmemory"]
    assert out["backpressure_failed_deliveries"] == 0
    assert out["backpressure_tiered_msgs_per_s"] > 0 and out["backpressure_room_msgs_per_s"] > 0
    assert out["backpressure_archive_records_per_s"] > 0  # the archiver made the room
    assert 0.5 < out["backpressure_peak_fill"] < 1.2  # it filled up to the mark, and stayed near it

    assert "backpressure" in Options().extras
    rows = {row[0]: row for row in report._extra_rows({"backpressure": out})}
    tiered = rows["backpressure: produce msgs/s, tiered through a small Redis"]
    assert tiered[3] == f"{out['backpressure_tiered_vs_room']:.3f}"
