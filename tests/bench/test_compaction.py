"""The compaction benchmark's figures, on a small changelog, and its rows in `python -m bench`'s table."""

from __future__ import annotations

from bench import compaction, report
from bench.suite import Options


def test_compaction_bench_measures_rate_and_memory(redis_server) -> None:
    out = compaction.run(redis_server.url, records=5000, keys=50, step_entries=500, server_times=True)
    assert out["compaction_entries_left"] == 50
    assert out["compaction_removed"] == 4950
    assert out["compaction_steps"] == 11  # 10 full steps of 500, and one that finds nothing more
    assert out["compaction_examined_per_s"] > 0
    assert 0 < out["compaction_median_step_ms"] <= out["compaction_slowest_step_ms"]
    # Inside Redis a step takes less than its round trip; a full step of 500 is above SLOWLOG_US.
    assert (
        compaction.SLOWLOG_US / 1000 <= out["compaction_server_max_ms"] <= out["compaction_slowest_step_ms"]
    )
    assert (
        out["compaction_server_p50_ms"] <= out["compaction_server_p99_ms"] <= out["compaction_server_max_ms"]
    )
    assert out["compaction_memory_after_bytes"] < out["compaction_memory_before_bytes"] / 10

    assert "compaction" in Options().extras  # part of `python -m bench`
    rows = {row[0]: row for row in report._extra_rows({"compaction": out})}
    examined = rows["compaction: records examined/s"]
    assert examined[1] == f"{out['compaction_examined_per_s']:,}" and "step of 500" in examined[4]
    memory = rows["compaction: changelog partition bytes"]
    before, after = out["compaction_memory_before_bytes"], out["compaction_memory_after_bytes"]
    assert memory[1] == f"{before:,} -> {after:,}" and memory[4] == "5,000 records over 50 keys"
