"""Each example in examples/ runs on the test session, and its output topic is checked against a
result computed here, in plain Python, from the records the test produced."""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path
from typing import Any

from schooner.spark.pipeline import load
from tests.spark.conftest import BASE_MS, Log, Rec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
T0 = BASE_MS  # a minute boundary, in ms, recent enough that retention keeps every record


def _run_example(name: str, spark: Any, log: Log, tmp_path: Path, **options: str) -> None:
    build = load(EXAMPLES / f"{name}.py")
    query = build(
        spark, {**log.options, "checkpointLocation": str(tmp_path), "trigger": "availableNow", **options}
    )
    query.awaitTermination(180)
    assert query.exception() is None


def test_window_count_with_watermark_matches_an_independent_count(
    spark: Any, log: Log, tmp_path: Path
) -> None:
    log.topic("page-views", 2)
    rng = random.Random(7)
    pages = ["home", "cart", "search", "help"]
    # Views in time order, about one a second for five minutes, alternating partitions: no view is
    # late except the three old ones at the end, which come after the watermark passed their window.
    views = [(T0 + i * 1000 + rng.randrange(900), rng.choice(pages)) for i in range(300)]
    for first in range(0, len(views), 20):
        for p in (0, 1):
            chunk = [v for i, v in enumerate(views[first : first + 20]) if i % 2 == p]
            log.append("page-views", p, [Rec(ts, page.encode(), b"view") for ts, page in chunk])
    late = [(T0 + 5_000, "home"), (T0 + 6_000, "cart"), (T0 + 7_000, "home")]
    log.append("page-views", 0, [Rec(ts, page.encode(), b"view") for ts, page in late])

    _run_example("window_count", spark, log, tmp_path, batch="60", watermark="30 seconds", window="1 minute")

    watermark = max(ts for ts, _ in views) - 30_000
    expected = collections.Counter((page, ts - ts % 60_000) for ts, page in views)
    closed = {(page, start): n for (page, start), n in expected.items() if start + 60_000 <= watermark}
    got = [json.loads(s.value) for s in log.read("page-view-counts")]
    assert {(g["page"], g["start"]): g["count"] for g in got} == closed
    assert len(got) == len(closed) and all(g["end"] - g["start"] == 60_000 for g in got)
    assert len(closed) >= 12  # four pages, at least three closed minutes


def test_stream_join_matches_an_independent_join(spark: Any, log: Log, tmp_path: Path) -> None:
    log.topic("orders", 2)
    log.topic("payments", 2)
    log.topic("paid-orders", 2)
    rng = random.Random(11)
    orders = {f"o{i}": (T0 + i * 7_000, round(rng.uniform(5, 500), 2)) for i in range(80)}
    payments = []
    for oid, (ts, _) in orders.items():
        if rng.random() < 0.8:  # some orders are never paid, some are paid too late to match
            payments.append(
                (oid, ts + rng.choice([1_000, 30_000, 240_000, 900_000]), rng.choice(["card", "cash"]))
            )
    for i, (oid, (ts, amount)) in enumerate(orders.items()):
        log.append("orders", i % 2, [Rec(ts, oid.encode(), json.dumps({"amount": amount}).encode())])
    for i, (oid, ts, method) in enumerate(sorted(payments, key=lambda x: x[1])):
        log.append("payments", i % 2, [Rec(ts, oid.encode(), json.dumps({"method": method}).encode())])

    _run_example("stream_join", spark, log, tmp_path, within="10 minutes")

    expected = {
        oid: (orders[oid][1], method, ts - orders[oid][0])
        for oid, ts, method in payments
        if 0 <= ts - orders[oid][0] <= 600_000
    }
    got = [json.loads(s.value) for s in log.read("paid-orders")]
    assert {g["order_id"]: (g["amount"], g["method"], g["paid_after_ms"]) for g in got} == expected
    assert len(got) == len(expected) and 0 < len(expected) < len(payments)


def test_dedup_matches_an_independent_dedup(spark: Any, log: Log, tmp_path: Path) -> None:
    log.topic("raw-events", 3)
    log.topic("events", 3)
    rng = random.Random(3)
    events = [(f"e{i}", T0 + i * 2_000, f"payload {i}".encode()) for i in range(150)]
    delivered = list(events) + [e for e in events if rng.random() < 0.3] * 2  # redeliveries, some twice
    rng.shuffle(delivered)
    for i, (eid, ts, payload) in enumerate(delivered):
        log.append("raw-events", i % 3, [Rec(ts, eid.encode(), payload, [("source", b"sensor")])])

    _run_example("dedup", spark, log, tmp_path, batch="100")

    got = log.read("events")
    assert sorted((s.key, s.value) for s in got) == sorted((e.encode(), p) for e, _, p in events)
    assert all(s.headers == [("source", b"sensor")] for s in got)
