"""The tiered-storage figure, run small: a topic archived through the broker's archiver and read back by
kcat from the cold tier beside the same topic read from Redis, and its rows in `python -m bench`'s table."""

from __future__ import annotations

from bench import report, tiering
from bench.suite import Options

MESSAGES = 3000


def test_a_tiered_topic_is_archived_read_back_and_measured_beside_an_untiered_one() -> None:
    # run() fails unless every record is archived, Redis keeps none of them, and kcat reads all of
    # both topics back.
    out = tiering.run(messages=MESSAGES, runs=2)
    assert out["tiering_messages"] == MESSAGES
    assert out["tiering_archive_records_per_s"] > 0
    assert out["tiering_typed_archive_records_per_s"] > 0
    assert out["tiering_iceberg_archive_records_per_s"] > 0
    runs = ("tiering_hot_fetch_runs", "tiering_cold_fetch_runs", "tiering_iceberg_cold_fetch_runs")
    assert [len(out[name]) for name in runs] == [2, 2, 2]
    assert out["tiering_cold_vs_hot_fetch"] > 0 and out["tiering_iceberg_cold_vs_hot_fetch"] > 0
    # Each table holds its own topic's files: typed columns add to the raw bytes, never replace them.
    assert 0 < out["tiering_parquet_bytes_per_record"] < out["tiering_typed_parquet_bytes_per_record"]
    assert out["tiering_iceberg_parquet_bytes_per_record"] > 0
    # Redis keeps the partition's small state hash, not its records.
    assert out["tiering_redis_bytes_archived"] < out["tiering_redis_bytes_untiered"] / 20
    assert 0 < out["tiering_parquet_bytes_per_record"] < 100

    assert "tiering" in Options().extras  # part of `python -m bench`, and `--skip tiering` exists
    rows = {row[0]: row for row in report._extra_rows({"tiering": out})}
    cold = rows["tiering: kcat fetch from the cold tier msgs/s"]
    assert cold[3] == f"{out['tiering_cold_vs_hot_fetch']:.3f}"
    assert "tiering: Redis bytes, archived / untiered" in rows
    iceberg = rows["tiering: kcat fetch from an Iceberg cold tier msgs/s"]
    assert iceberg[3] == f"{out['tiering_iceberg_cold_vs_hot_fetch']:.3f}"
    assert "tiering: archival records/s, typed columns (Avro)" in rows
