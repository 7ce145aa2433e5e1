"""The many-partitions figure, run small: the same requests over many partitions against few, with a
fetch-session consumer reading them all meanwhile, and its rows in `python -m bench`'s table."""

from __future__ import annotations

from bench import partitions, report
from bench.servers import Endpoints
from bench.suite import Options


def test_requests_cover_every_partition_once() -> None:
    requests = partitions.produce_requests("t", 25, per_request=10)
    assert len(requests) == 3  # 10 + 10 + 5 partitions
    # Framed: size, then api key 0 (Produce) and version 9, then the correlation id (patched when sent).
    for framed in requests:
        assert int.from_bytes(framed[:4], "big") == len(framed) - 4
        assert framed[4:8] == b"\x00\x00\x00\x09"
        assert framed[partitions._CORRELATION] == b"\x00\x00\x00\x00"


def test_partitions_figure_produces_and_reads_every_record(endpoints: Endpoints) -> None:
    # run_once checks that every record was acknowledged and every one read back by the consumer.
    out = partitions.run(endpoints, messages=2000, runs=2, counts=(10, 40))
    assert out["partitions"] == [10, 40]
    for label in ("few", "many"):
        runs = out[f"{label}_runs"]
        assert [r["messages"] for r in runs] == [2000, 2000]
        assert all(r["produce_msgs_per_s"] > 0 and r["fetch_msgs_per_s"] > 0 for r in runs)
        # The consumer's first fetch opens a session and names every partition; it needs at least one.
        assert all(r["fetches"] >= 1 for r in runs)
        assert out[f"{label}_broker_us_per_record"] > 0
    assert out["produce_ratio"] > 0 and out["fetch_ratio"] > 0

    assert "partitions" in Options().extras  # part of `python -m bench`, and `--skip partitions` exists
    rows = {row[0]: row for row in report._extra_rows({"partitions": out})}
    produce = rows["produce msgs/s, 40 partitions"]
    assert produce[1] == f"{out['many_produce_msgs_per_s']:,}"
    assert produce[2] == f"{out['few_produce_msgs_per_s']:,} (10 partitions)"
    assert produce[4].startswith(f">= {partitions.TARGET} ")
    assert "fetch msgs/s, 40 partitions" in rows
    failed = report._extra_rows({"partitions": {"error": "RuntimeError: boom"}})
    assert failed == [("partitions: failed", "RuntimeError: boom", "", "", "")]
