"""The memory figure: the broker's streams against plain-client copies, and its rows in the table."""

from __future__ import annotations

import redis

from bench import goals, memory, report
from bench.__main__ import parse_args
from bench.servers import Endpoints
from bench.suite import Options, run_memory
from schooner.storage.log.entry import parse_fields

N = 300


def test_broker_entries_cost_what_a_plain_client_writing_the_same_fields_pays(
    endpoints: Endpoints, redis_client: redis.Redis
) -> None:
    out = run_memory(endpoints, redis_client, Options(messages=N))
    ks = endpoints.keyspace
    assert out["target_ratio"] == report.MEMORY_TARGET
    for case in memory.CASES:
        figures = out[case.name]
        broker, same = figures["broker_stream"], figures["same_fields_stream"]
        assert broker["key"] == ks.stream(case.topic, 0)
        assert broker["entries"] == same["entries"] == figures["bare_f_stream"]["entries"] == N
        assert figures["ratio"] == broker["bytes_per_record"] / same["bytes_per_record"]
        # The broker writes exactly the entries a plain XADD of the same fields would.
        assert broker["bytes"] == same["bytes"] and figures["ratio"] <= report.MEMORY_TARGET
        # The bare `f` entry carries no timestamp (nor key), so it is smaller.
        assert figures["bare_f_ratio"] > 1
        assert figures["partition"]["time_index_members"] >= 1
        assert figures["other_keys_bytes_per_record"] > 0
        assert not redis_client.exists(f"{memory.SCRATCH}:same:{case.topic}")  # the copies are gone
    assert out["same_fields_ratio"] == max(out[case.name]["ratio"] for case in memory.CASES)
    # The keyed case's entries carry a key and the header.
    _, fields = redis_client.xrange(ks.stream("bench-memory-keyed", 0), count=1)[0]
    _, key, value, headers = parse_fields([part for pair in fields.items() for part in pair])
    assert key == b"key-000000000000" and value == memory.produce.bench_value()
    assert headers == [memory.HEADER]
    # Batches of a record or two each raise the highest timestamp, but they share the time index's
    # members (up to 500 records and 1 s each): 300 records sent in 60 ms need one, two at a boundary.
    assert 1 <= out["small_batches"]["partition"]["time_index_members"] <= 2

    rows = {row[0]: row for row in report._memory_rows({"memory": out})}
    row = rows["Redis bytes per record (stream)"]
    assert row[1] == f"{out['plain']['broker_stream']['bytes_per_record']:.2f}"
    assert row[3] == f"{out['plain']['ratio']:.3f}" and row[4].startswith(f"<= {report.MEMORY_TARGET} ok")
    assert len(rows) == len(memory.CASES)
    goal = {row[0]: row for row in goals.rows({"memory": out})}["bytes per record / raw entry, same fields"]
    assert goal[1] == f"{out['same_fields_ratio']:.3f}" and goal[3] == "ok"


def test_copies_keep_fields_order_and_ids(redis_client: redis.Redis, keyspace: str) -> None:
    source, dense, same, bare = (f"{keyspace}:{name}" for name in ("src", "dense", "same", "bare"))
    redis_client.xadd(source, {"timestamp": 5, "key": b"k", "value": b"v1"}, id="7-1")
    redis_client.xadd(source, {"timestamp": 6, "value": b"v2"}, id="9-0")
    assert memory.copy_stream(redis_client, source, dense, same_ids=False) == 2
    assert memory.copy_stream(redis_client, source, same, same_ids=True) == 2
    assert memory.copy_bare(redis_client, source, bare) == 2
    original = redis_client.xrange(source)
    assert redis_client.xrange(same) == original
    copied = redis_client.xrange(dense)
    assert [entry_id for entry_id, _ in copied] == [b"0-1", b"0-2"]
    assert [list(fields.items()) for _, fields in copied] == [list(f.items()) for _, f in original]
    assert [fields for _, fields in redis_client.xrange(bare)] == [{b"f": b"v1"}, {b"f": b"v2"}]


def test_memory_is_a_figure_that_skip_leaves_out() -> None:
    assert "memory" in Options().extras
    opts, _ = parse_args(["--skip", "memory", "--no-save"])
    assert "memory" not in opts.extras
    assert report._memory_rows({}) == []
    failed = report._memory_rows({"memory": {"error": "RuntimeError: x"}})
    assert failed[0][4] == "failed: RuntimeError: x"
