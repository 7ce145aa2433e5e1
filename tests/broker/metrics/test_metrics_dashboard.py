"""docs/grafana/schooner-dashboard.json is built on names the broker exports: every metric its queries
use is in a live broker's /metrics, and it covers throughput, requests, errors, connections, lag and
Redis latency. docs/operations.md's table of series is the list the broker exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.broker.metrics_rig import scrape, with_metrics
from tests.clients import Rec, confluent_consume, confluent_produce

DOCS = Path(__file__).resolve().parents[3] / "docs"
DASHBOARD = DOCS / "grafana" / "schooner-dashboard.json"
METRIC = re.compile(r"\bschooner_[a-z0-9_]+")
COVERED = {
    "schooner_records_in_total", "schooner_records_out_total", "schooner_bytes_in_total",
    "schooner_bytes_out_total", "schooner_requests_total", "schooner_request_seconds_bucket",
    "schooner_request_errors_total", "schooner_connections", "schooner_group_lag",
    "schooner_redis_seconds_bucket", "schooner_redis_errors_total",
}  # fmt: skip


def _queries(dashboard: dict[str, Any]) -> list[str]:
    panels = [p for top in dashboard["panels"] for p in [top, *top.get("panels", [])]]
    found = [t["expr"] for p in panels for t in p.get("targets", [])]
    found += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return found


def test_every_metric_the_dashboard_queries_is_exported(broker_factory: Any) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    used = {name for q in _queries(dashboard) for name in METRIC.findall(q)}
    assert COVERED - used == set()
    broker, port = with_metrics(broker_factory)
    confluent_produce(broker.bootstrap, "dashboard", [Rec(None, b"v")])
    assert len(confluent_consume(broker.bootstrap, "dashboard", 1)) == 1
    exported = scrape(port).exported_names
    assert used - exported == set()


def test_the_operations_guide_lists_every_series(broker_factory: Any) -> None:
    text = (DOCS / "operations.md").read_text()
    section = text[text.index("## Metrics") :]
    section = section[: section.index("\n## ", 1)]
    documented = set(re.findall(r"^\| `(schooner_[a-z_]+)` \|", section, re.M))
    _, port = with_metrics(broker_factory)
    found = scrape(port)
    exported = {f + ("_total" if kind == "counter" else "") for f, kind in found.types.items()}
    # prometheus_client gives each counter and histogram a `_created` gauge of its own: not a series to list
    ours = {name for name in exported if name.startswith("schooner_") and not name.endswith("_created")}
    assert documented == ours
