"""The goals block picks each goal's figure out of a run's results and judges it against its target."""

from __future__ import annotations

from bench import goals


def test_each_goal_is_judged_by_its_direction() -> None:
    results = {
        "produce": {"ratio": 0.51, "wire_ratio": 0.79},
        "fetch": {"wire_ratio": 0.95, "ratio": 0.49},
        "latency": {"p99_ms": 1.9},
        "latency_high_rate": {"p99_ms": 5.5},
        "mq": {"mq_consume_ratio": 0.6},
        "partitions": {"produce_ratio": 0.79},
        "memory": {"same_fields_ratio": 1.06},
        "multiproc": {"produce_ratio": 0.9, "fetch_ratio": 1.3},
        "schemas": {"produce_ratio": 0.95, "lookups_per_s": 500},
        "tiering": {
            "tiering_archive_records_per_s": 120_000,
            "tiering_cold_vs_hot_fetch": 0.4,
            "tiering_typed_archive_records_per_s": 99_000,
            "tiering_iceberg_archive_records_per_s": 101_000,
            "tiering_iceberg_cold_vs_hot_fetch": 0.6,
            "tiering_redis_bytes_ratio": 0.01,
        },
    }
    verdicts = {name: verdict for name, _, _, verdict, _ in goals.rows(results)}
    assert verdicts == {
        "produce ratio": "ok",
        "produce ratio (wire producer)": "MISSED",
        "fetch ratio (wire client)": "ok",
        "fetch ratio (kcat)": "MISSED",
        "e2e p99 ms at 5k msg/s": "ok",
        "e2e p99 ms at 50k msg/s": "MISSED",
        "MQ consume ratio": "ok",
        "1,000 / 10 partitions": "MISSED",
        "bytes per record / raw entry, same fields": "MISSED",
        "tiering: archival records/s": "ok",
        "tiering: archival records/s, typed columns": "MISSED",
        "tiering: archival records/s, Iceberg": "ok",
        "tiering: kcat fetch cold / hot": "MISSED",
        "tiering: kcat fetch cold / hot, Iceberg": "ok",
        "tiering: Redis bytes archived / untiered": "ok",
        "2 broker processes / 1, produce": "reported",
        "2 broker processes / 1, fetch": "reported",
        "schema validation: produce validated / unvalidated": "ok",
        "schema lookups by id per s": "reported",
    }


def test_a_figure_the_run_left_out_is_not_measured_rather_than_an_error() -> None:
    text = goals.block({"produce": {"ratio": 0.6}, "mq": {"error": "RuntimeError: boom"}})
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert "ok" in lines["produce ratio"]
    assert "not measured" in lines["MQ consume ratio"]
    assert "not measured" in lines["2 broker processes / 1, produce"]
