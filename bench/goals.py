"""The performance goals in one block: each figure of the run beside its target, with a verdict.

The table in report.py holds every figure with its baseline; this block picks the ones the performance goals
name, so one `python -m bench` run says which goals hold on this machine today.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Goal:
    name: str
    figure: Callable[[dict[str, Any]], float]  # raises KeyError/TypeError when the run lacks the figure
    target: float | None  # None: the issue asks for the figure, with no bound
    higher_is_better: bool = True
    note: str = ""

    def verdict(self, value: float) -> str:
        if self.target is None:
            return "reported"
        met = value >= self.target if self.higher_is_better else value <= self.target
        return "ok" if met else "MISSED"


GOALS: tuple[Goal, ...] = (
    Goal(
        "produce ratio",
        lambda r: r["produce"]["ratio"],
        0.5,
        note="confluent-kafka vs redis-benchmark XADD -P64",
    ),
    Goal(
        "produce ratio (wire producer)",
        lambda r: r["produce"]["wire_ratio"],
        0.8,
        note="prebuilt Produce requests (no client work per record) vs redis-benchmark XADD -P64",
    ),
    Goal(
        "fetch ratio (wire client)",
        lambda r: r["fetch"]["wire_ratio"],
        0.9,  # issue 30
        note="Fetch v12 client in bench/fetch.py vs XRANGE; not decoding, so not the bottleneck",
    ),
    Goal("fetch ratio (kcat)", lambda r: r["fetch"]["ratio"], 0.5, note="kcat start..exit vs XRANGE"),
    Goal("e2e p99 ms at 5k msg/s", lambda r: r["latency"]["p99_ms"], 2.0, higher_is_better=False),
    Goal(
        "e2e p99 ms at 50k msg/s",
        lambda r: r["latency_high_rate"]["p99_ms"],
        5.0,
        higher_is_better=False,
        note="linger.ms 1",
    ),
    Goal("MQ consume ratio", lambda r: r["mq"]["mq_consume_ratio"], 0.5, note="vs XREADGROUP+XACK"),
    Goal(
        "1,000 / 10 partitions",
        lambda r: r["partitions"]["produce_ratio"],
        0.8,
        note="produce, the same requests (10 partitions x 10 records) over 1,000 vs 10; a consumer reads all",
    ),
    Goal(
        "bytes per record / raw entry, same fields",
        lambda r: r["memory"]["same_fields_ratio"],
        1.05,
        higher_is_better=False,
    ),
    Goal(
        "tiering: archival records/s",
        lambda r: r["tiering"]["tiering_archive_records_per_s"],
        100_000,
        note="100 B records, through the broker's archiver",
    ),
    Goal(
        "tiering: archival records/s, typed columns",
        lambda r: r["tiering"]["tiering_typed_archive_records_per_s"],
        100_000,
        note="100 B Avro records decoded by their schema ids into a Delta table",
    ),
    Goal(
        "tiering: archival records/s, Iceberg",
        lambda r: r["tiering"]["tiering_iceberg_archive_records_per_s"],
        100_000,
        note="100 B records, through the broker's archiver to an Iceberg table",
    ),
    Goal(
        "tiering: kcat fetch cold / hot",
        lambda r: r["tiering"]["tiering_cold_vs_hot_fetch"],
        0.5,
        note="the same topic read from the Delta table and from Redis",
    ),
    Goal(
        "tiering: kcat fetch cold / hot, Iceberg",
        lambda r: r["tiering"]["tiering_iceberg_cold_vs_hot_fetch"],
        0.5,
        note="the same records read from the Iceberg table and from Redis",
    ),
    Goal(
        "tiering: Redis bytes archived / untiered",
        lambda r: r["tiering"]["tiering_redis_bytes_ratio"],
        0.05,
        higher_is_better=False,
    ),
    Goal(
        "schema validation: produce validated / unvalidated",
        lambda r: r["schemas"]["produce_ratio"],
        0.9,
        note="confluent.value.schema.validation=true vs none, the same Avro records; paired",
    ),
    Goal(
        "schema lookups by id per s",
        lambda r: r["schemas"]["lookups_per_s"],
        None,
        note="GET /schemas/ids/{id}, one httpx client over keep-alive",
    ),
    Goal(
        "2 broker processes / 1, produce",
        lambda r: r["multiproc"]["produce_ratio"],
        None,
        note="3 producers, 8 partitions; on 2 cores Redis and the clients hold the other core",
    ),
    Goal(
        "2 broker processes / 1, fetch",
        lambda r: r["multiproc"]["fetch_ratio"],
        None,
        note="kcat per partition",
    ),
)


def rows(results: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    out: list[tuple[str, str, str, str, str]] = []
    for goal in GOALS:
        try:
            value = float(goal.figure(results))
        except (KeyError, TypeError):
            out.append((goal.name, "not measured", "", "", goal.note))
            continue
        sign = ">=" if goal.higher_is_better else "<="
        bound = "" if goal.target is None else f"{sign} {goal.target:g}"
        out.append((goal.name, f"{value:.3f}", bound, goal.verdict(value), goal.note))
    return out


def block(results: dict[str, Any]) -> str:
    table = [("goal", "measured", "target", "", "how"), *rows(results)]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = ["Performance goals (issues 17, 28 and 30), this run:"]
    for n, row in enumerate(table):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
