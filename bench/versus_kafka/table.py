"""The rows as a plain-text table: each setup's median, then each Schooner setup's ÷ Kafka's."""

from __future__ import annotations

import math
from typing import Any

from .brokers import KAFKA, LABELS
from .compare import OTHER_LOAD_WARNING

RATIO_LABELS = {"schooner": "Schooner ÷ Kafka", "schooner_redis7": "Redis 7 ÷ Kafka"}


def value_text(value: float) -> str:
    """Whole numbers where the figures are large, a few digits where they are small."""
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.2f}"
    return f"{value:.3f}"


def lines(results: dict[str, Any]) -> list[str]:
    rows = results["rows"]
    setups = list(rows[0]["values"]) if rows else []
    schooners = [name for name in setups if name != KAFKA]
    header = ["figure", "unit", "better", *(LABELS[n] for n in setups), *(RATIO_LABELS[n] for n in schooners)]
    table = [header]
    for r in rows:
        table.append(
            [
                r["figure"],
                r["unit"],
                r["better"],
                *(value_text(r["values"][n]) for n in setups),
                *(f"{r['ratios'][n]:.2f}" for n in schooners),
            ]
        )
    widths = [max(len(cells[i]) for cells in table) for i in range(len(header))]
    out = []
    for n, cells in enumerate(table):
        out.append(
            "  ".join(
                c.ljust(widths[i]) if i < 3 else c.rjust(widths[i]) for i, c in enumerate(cells)
            ).rstrip()
        )
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def suite_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """The rows for the suite's table (bench/report.py): figure, Schooner as shipped, Kafka, Schooner ÷
    Kafka, and the other Schooner setups' ratios with which way is better."""
    out = []
    for r in results["rows"]:
        others = [f"{RATIO_LABELS[n]} {r['ratios'][n]:.2f}" for n in r["ratios"] if n != "schooner"]
        out.append(
            (
                f"vs Kafka: {r['figure']}, {r['unit']}",
                value_text(r["values"]["schooner"]),
                f"{value_text(r['values'][KAFKA])} (Kafka)",
                f"{r['ratios']['schooner']:.2f}",
                "; ".join([f"{r['better']} is better", *others]),
            )
        )
    return out


def text(results: dict[str, Any]) -> str:
    env, cfg = results["environment"], results["config"]
    head = [
        f"Schooner beside Apache Kafka {env['kafka']}, {results['date']}: {env['cpus']} CPUs, "
        f"{cfg['records']:,} x 100-byte records per throughput run, median of {cfg['runs']} "
        f"run{'s' if cfg['runs'] != 1 else ''} per setup, taking turns",
        *(f"  {LABELS[name]}: {server}" for name, server in env["servers"].items()),
        f"  clients: confluent-kafka {env['confluent_kafka']} (librdkafka {env['librdkafka']}), "
        f"kcat {env['kcat']}, Kafka's tools on {env['java']}",
        "",
    ]
    busy = f"other processes kept up to {results['other_cores_max']:.2f} cores busy during a run"
    if results["other_cores_max"] > OTHER_LOAD_WARNING:
        busy = f"WARNING: {busy} (the machine was shared: the figures are disturbed)"
    tail = ["ratio > 1: Schooner ahead where higher is better, behind where lower is better", busy]
    return "\n".join(head + lines(results) + tail)
