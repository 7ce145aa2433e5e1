"""The compaction benchmark's figures, on a small changelog."""

from __future__ import annotations

from bench import compaction


def test_compaction_bench_measures_rate_and_memory(redis_server) -> None:
    out = compaction.run(redis_server.url, records=5000, keys=50, step_entries=500)
    assert out["compaction_entries_left"] == 50
    assert out["compaction_removed"] == 4950
    assert out["compaction_steps"] == 11  # 10 full steps of 500, and one that finds nothing more
    assert out["compaction_examined_per_s"] > 0
    assert out["compaction_memory_after_bytes"] < out["compaction_memory_before_bytes"] / 10
