"""The append-script figures: each XADD variant and log_append.lua measured per record, in one short run."""

from __future__ import annotations

import asyncio

from bench import append_script


def test_every_variant_is_measured_per_record(redis_server) -> None:
    out = asyncio.run(append_script.run_async(redis_server.url, batch=50, calls=4, rounds=1))
    expected = {
        "bare XADD 0-*, pipelined",
        *append_script.LOOPS,
        "log_append.lua",
        "log_append.lua, transactional batch",
    }
    assert set(out) == expected
    for name, figures in out.items():
        assert figures["commandstats_us"] > 0, name
        assert figures["redis_cpu_us"] >= 0, name
