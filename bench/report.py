"""The results of one run: medians and ratios, a compact table, and the JSON file."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

# Issue 17's targets (bench/goals.py lists every goal of the issue).
PRODUCE_TARGET = 0.5
FETCH_TARGET = 0.5
MEMORY_TARGET = 1.05  # broker stream bytes per record / a plain entry's with the same fields, at most
# 2 broker processes / 1 (bench/multiproc.py): a second process can only help when the first one is the
# bound (about a core busy); on 2 cores shared with redis-server and the clients it rarely is, and the
# verdict says so rather than "BELOW" (docs/benchmarks.md, "Multi-core").
MULTIPROC_TARGET = 1.0
MULTIPROC_BOUND_CORES = 0.8


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def ratio(broker: float, raw: float) -> float:
    return broker / raw if raw else float("nan")


def _num(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


_CPU_NOTE = "broker/redis/client/other"
# Other processes using more than this share of a core during the runs make the figures unreliable.
OTHER_LOAD_WARNING = 0.15


def _cpu(shares: dict[str, float], names: int = 4) -> str:
    order = ("broker", "redis", "client", "other")[:names]
    return "/".join(f"{shares.get(name, 0.0):.2f}" for name in order)


def other_load(results: dict[str, Any]) -> float:
    """The highest mean CPU share that processes outside the benchmark used during one phase."""
    phases = [
        results[name][phase]
        for name in ("produce", "fetch")
        for phase in ("broker_cpu", "timestamp_cpu", "raw_cpu")
    ]
    if "latency" in results:
        phases.append(results["latency"]["cpu"])
    tx = results.get("transactions") or {}  # the transactional produce figure, where it ran
    phases += [tx[key] for key in ("transactional_cpu", "flushed_cpu", "idempotent_cpu") if key in tx]
    return max(phase.get("other", 0.0) for phase in phases)


# Issue 17's MQ goal: the consume path at half of a bare XREADGROUP + XACK loop (bench/mq.py).
MQ_CONSUME_TARGET = 0.5


def _mq_cpu_note(mq: dict[str, Any]) -> str:
    if "mq_consume_client_us_per_msg" not in mq:
        return ""
    return (
        f"; CPU us/msg consumer {mq['mq_consume_client_us_per_msg']:.2f} vs "
        f"{mq['raw_consume_client_us_per_msg']:.2f}, redis {mq['mq_consume_redis_us_per_msg']:.2f} vs "
        f"{mq['raw_consume_redis_us_per_msg']:.2f}"
    )


def _verdict(value: float, target: float) -> str:
    return "ok" if value >= target else "BELOW"


def _timestamp_row(
    broker: float, raw: float, ratio: float, dense_vs: float
) -> tuple[str, str, str, str, str]:
    """The row under a dense figure with the same figure on a timestamp-encoded topic."""
    return (
        "  timestamp topic",
        _num(broker),
        _num(raw),
        f"{ratio:.3f}",
        f"dense/timestamp {dense_vs:.3f} (paired)",
    )


def latency_rows(lat: dict[str, Any] | None) -> list[tuple[str, str, str, str, str]]:
    """One row per producer linger.ms (medians of the runs); the target applies to the first."""
    if not lat or "rows" not in lat:
        return []
    out = []
    tuned = " (idle CPUs polling)" if lat.get("host_tuning") else ""
    for i, row in enumerate(lat["rows"]):
        target = lat["p99_target_ms"]
        verdict = f"p99 <= {target:g} ms {'ok' if row['p99_ms'] <= target else 'ABOVE'}" if i == 0 else ""
        out.append(
            (
                f"e2e latency @{_num(lat['target_msgs_per_s'])}/s{tuned}, {row['label']}, p50/p99/max",
                f"{row['p50_ms']:.1f}/{row['p99_ms']:.1f}/{row['max_ms']:.1f} ms",
                "",
                "",
                f"{verdict}{'; ' if verdict else ''}{row['received']:,}/{row['sent']:,} received",
            )
        )
        if i == 0 and not math.isnan(row.get("client_queue_p99_ms", math.nan)):
            out.append(
                (
                    "  the producer's own account: record held / Produce round trip, p50/p99",
                    f"{row['client_queue_p50_ms']:.2f}/{row['client_queue_p99_ms']:.2f} ms",
                    f"{row['produce_rtt_p50_ms']:.2f}/{row['produce_rtt_p99_ms']:.2f} ms",
                    "",
                    "librdkafka's statistics: int_latency (produce() to its request, linger included), rtt",
                )
            )
    trip = lat.get("host_round_trip")
    if trip and "cross_cpu_us" in trip:
        out.append(
            (
                "  host: wake-up round trip, 2 CPUs / 1 CPU",
                f"{trip['cross_cpu_us']:.1f}/{trip['same_cpu_us']:.1f} us",
                "",
                "",
                "one byte to another process and back (bench/latency.py): each hop's floor",
            )
        )
    python_us = lat.get("host_python_us")
    if python_us:
        out.append(
            (
                "  host: a fixed piece of plain Python",
                f"{python_us:.1f} us",
                "",
                "",
                "the interpreter's speed today: most broker CPU per request is the interpreter",
            )
        )
    stalls = lat.get("host_hiccups")
    if stalls:
        out.append(
            (
                "  host: idle loop's stalls >1/>2/>5 ms per 10 s",
                f"{stalls['over_1ms_per_10s']:g}/{stalls['over_2ms_per_10s']:g}/{stalls['over_5ms_per_10s']:g}",
                "",
                "",
                f"worst {stalls['worst_ms']:.1f} ms: late whatever the broker does (bench/latency.py)",
            )
        )
    return out


def table(results: dict[str, Any]) -> str:
    cfg = results["config"]
    env = results["environment"]
    p = results["produce"]
    f = results["fetch"]
    runs = cfg["runs"]
    rows: list[tuple[str, str, str, str, str]] = [
        ("figure", "broker", "raw Redis", "ratio", "target"),
        (
            "produce msgs/s (dense topic)",
            _num(p["broker_msgs_per_s"]),
            _num(p["raw_xadd_per_s"]),
            f"{p['ratio']:.3f}",
            f">= {PRODUCE_TARGET} {_verdict(p['ratio'], PRODUCE_TARGET)}",
        ),
        _timestamp_row(
            p["timestamp_msgs_per_s"], p["raw_xadd_per_s"], p["timestamp_ratio"], p["dense_vs_timestamp"]
        ),
        (
            "produce msgs/s (wire producer, Produce v9)",
            _num(p.get("wire_msgs_per_s", 0.0)),
            _num(p["raw_xadd_per_s"]),
            f"{p.get('wire_ratio', 0.0):.3f}",
            f"prebuilt batches of {p.get('wire_batch_records', 0):,}, {p.get('wire_in_flight', 0)} in flight",
        ),
        (
            "fetch msgs/s (kcat start..exit)",
            _num(f["broker_msgs_per_s"]),
            _num(f["raw_xrange_per_s"]),
            f"{f['ratio']:.3f}",
            f">= {FETCH_TARGET} {_verdict(f['ratio'], FETCH_TARGET)}",
        ),
        _timestamp_row(
            f["timestamp_msgs_per_s"], f["raw_xrange_per_s"], f["timestamp_ratio"], f["dense_vs_timestamp"]
        ),
        (
            "fetch msgs/s (wire client, Fetch v12)",
            _num(f.get("wire_msgs_per_s", 0.0)),
            _num(f["raw_xrange_per_s"]),
            f"{f.get('wire_ratio', 0.0):.3f}",
            "dense topic; records counted, not decoded",
        ),
        (
            "fetch msgs/s (first record..exit)",
            _num(f["broker_steady_msgs_per_s"]),
            _num(f["raw_xrange_per_s"]),
            f"{f['steady_ratio']:.3f}",
            "",
        ),
        _timestamp_row(
            f["timestamp_steady_msgs_per_s"],
            f["raw_xrange_per_s"],
            f["timestamp_steady_ratio"],
            f["steady_dense_vs_timestamp"],
        ),
        *latency_rows(results.get("latency")),
        *latency_rows(results.get("latency_high_rate")),
        *latency_rows(results.get("latency_tuned")),
        *latency_rows(results.get("latency_high_rate_tuned")),
    ]
    rows += _memory_rows(results)
    for name, fig in (("produce", p), ("fetch", f)):
        rows.append((f"{name}: cores busy", _cpu(fig["broker_cpu"]), _cpu(fig["raw_cpu"]), "", _CPU_NOTE))
        us_broker, us_raw = _cpu(fig["broker_cpu_us_per_record"], 3), _cpu(fig["raw_cpu_us_per_record"], 3)
        rows.append((f"{name}: CPU us per record", us_broker, us_raw, "", "broker/redis/client"))
        rows.append(("  timestamp topic: cores busy", _cpu(fig["timestamp_cpu"]), "", "", _CPU_NOTE))
        us_stamped = _cpu(fig["timestamp_cpu_us_per_record"], 3)
        rows.append(("  timestamp topic: CPU us per record", us_stamped, "", "", "broker/redis/client"))
        if "wire_cpu_us_per_record" in fig:
            us_wire = _cpu(fig["wire_cpu_us_per_record"], 3)
            rows.append((f"  wire {'producer' if name == 'produce' else 'client'}: CPU us per record",
                         us_wire, "", "", "broker/redis/client"))  # fmt: skip
    rows += _extra_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [
        f"Schooner benchmark {results['date']}: {env['cpus']} CPUs, {cfg['messages']:,} x "
        f"{cfg['value_bytes']}-byte records, median of {runs} run{'s' if runs != 1 else ''}; "
        "broker rows on a dense topic, then the same on a timestamp-encoded one",
    ]
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.ljust(widths[i]) if i in (0, 4) else cell.rjust(widths[i]) for i, cell in enumerate(row)
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    spreads = [
        ("produce dense", [r["msgs_per_s"] for r in p["broker_runs"]]),
        ("timestamp", [r["msgs_per_s"] for r in p["timestamp_runs"]]),
        ("wire produce", [r["msgs_per_s"] for r in p.get("wire_runs", [])]),
        ("raw XADD", [r["per_s"] for r in p["raw_runs"]]),
        ("fetch dense", [r["msgs_per_s"] for r in f["kcat_runs"]]),
        ("timestamp", [r["msgs_per_s"] for r in f["timestamp_kcat_runs"]]),
        ("raw XRANGE", [r["msgs_per_s"] for r in f["raw_runs"]]),
    ]
    lines.append(
        "run-to-run range: "
        + "; ".join(f"{name} {min(v) / 1000:,.0f}k-{max(v) / 1000:,.0f}k" for name, v in spreads if v)
    )
    other = other_load(results)
    if other > OTHER_LOAD_WARNING:
        lines.append(f"WARNING: other processes used up to {other:.2f} cores during the runs (disturbed)")
    if results.get("broker_log_problems"):
        lines.append(f"broker log: {len(results['broker_log_problems'])} warning/error lines (see JSON)")
    return "\n".join(lines)


def rounded(value: Any, digits: int = 4) -> Any:
    """The same structure with every float rounded, so that the committed file diffs readably."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rounded(results), indent=2) + "\n")


_MEMORY_CASES = (
    ("plain", "Redis bytes per record (stream)"),
    ("keyed", "  key and header"),
    ("timestamp", "  timestamp topic"),
    ("small_batches", "  batches of 1-2 records"),
)


def _memory_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """The broker's stream against a plain XADD of the same fields (the target), per case; the target
    column also gives the bare `XADD * f VALUE` entry and the partition's other keys per record."""
    mem = results.get("memory")
    if not mem:
        return []
    if "error" in mem:
        return [("Redis bytes per record (stream)", "", "", "", f"failed: {mem['error']}")]
    rows: list[tuple[str, str, str, str, str]] = []
    for name, label in _MEMORY_CASES:
        case = mem[name]
        bare = case["bare_f_stream"]["bytes_per_record"]
        rows.append(
            (
                label,
                f"{case['broker_stream']['bytes_per_record']:.2f}",
                f"{case['same_fields_stream']['bytes_per_record']:.2f} (same fields)",
                f"{case['ratio']:.3f}",
                f"<= {MEMORY_TARGET} {_at_most(case['ratio'], MEMORY_TARGET)}; bare `f` {bare:.2f}; "
                f"+{case['other_keys_bytes_per_record']:.2f} other keys",
            )
        )
    return rows


def _at_most(value: float, target: float) -> str:
    return "ok" if value <= target else "ABOVE"


def _extra_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    rows: list[tuple[str, str, str, str, str]] = []
    fm = results.get("first_message")
    if fm and "error" not in fm:
        # The baseline column holds librdkafka's in-process mock cluster: the client's own figure.
        rows.append(
            (
                "first message ms, new producer: idempotent/plain",
                f"{fm['idempotent_ms']:.0f}/{fm['plain_ms']:.1f}",
                f"{fm['mock_idempotent_ms']:.0f}/{fm['mock_plain_ms']:.1f} (librdkafka mock)",
                f"{fm['ratio']:.1f}",
                f"producer id after {fm['idempotent_pid_ms']} ms (client's 500 ms retry timer)",
            )
        )
    rb = results.get("rebalance")
    if rb and "error" not in rb:
        rows.append(
            (
                "rebalance: join -> all 12 consumed",
                f"{rb['join_to_all_consuming_s']:.2f} s",
                "",
                "",
                f"session {rb['session_timeout_ms']} ms, heartbeat {rb['heartbeat_interval_ms']} ms",
            )
        )
    mq = results.get("mq")
    if mq and "error" not in mq:
        rows.append(
            (
                "MQ produce msgs/s",
                _num(mq["mq_produce_msgs_per_s"]),
                _num(mq["raw_xadd_msgs_per_s"]),
                f"{mq['mq_produce_ratio']:.3f}",
                "vs pipelined XADD",
            )
        )
        rows.append(
            (
                "MQ consume msgs/s",
                _num(mq["mq_consume_msgs_per_s"]),
                _num(mq["raw_xreadgroup_msgs_per_s"]),
                f"{mq['mq_consume_ratio']:.3f}",
                f">= {MQ_CONSUME_TARGET} {_verdict(mq['mq_consume_ratio'], MQ_CONSUME_TARGET)} "
                f"vs XREADGROUP+XACK{_mq_cpu_note(mq)}",
            )
        )
    sp = results.get("spark")
    if sp and "error" not in sp:
        rows.append(
            (
                "Spark source rows/s",
                _num(sp["spark_source_rows_per_s"]),
                _num(sp["raw_xrange_rows_per_s"]),
                f"{sp['spark_source_vs_raw_xrange']:.3f}",
                ">= 0.5",
            )
        )
        rows.append(
            ("Spark micro-batch overhead", f"{sp['spark_microbatch_overhead_ms']:.0f} ms", "", "", "")
        )
    tx = results.get("transactions")
    if tx and "error" not in tx:
        rows += transactions_rows(tx)
    co = results.get("compaction")
    if co and "error" not in co:
        rows.append(
            (
                "compaction: records examined/s",
                _num(co["compaction_examined_per_s"]),
                "",
                "",
                f"step of {co['compaction_step_entries']}: median {co['compaction_median_step_ms']:.2f} ms, "
                f"slowest {co['compaction_slowest_step_ms']:.2f} ms",
            )
        )
        rows.append(
            (
                "compaction: changelog partition bytes",
                f"{co['compaction_memory_before_bytes']:,} -> {co['compaction_memory_after_bytes']:,}",
                "",
                "",
                f"{co['compaction_records']:,} records over {co['compaction_keys']:,} keys",
            )
        )
    sh = results.get("share")
    if sh and "error" not in sh:
        for n in (1, 4):
            rows.append(
                (
                    f"share group consume msgs/s, {n} consumer{'s' if n > 1 else ''}, 1 partition",
                    _num(sh[f"share_{n}_msgs_per_s"]),
                    f"{_num(sh['mq_msgs_per_s'])} (MQ library)",
                    f"{sh[f'share_{n}_ratio']:.3f}",
                    "ShareConsumer, implicit acks; paired",
                )
            )
    cl = results.get("cluster")
    if cl and "error" not in cl:
        rows += cluster_rows(cl)
    sec = results.get("security")
    if sec and "error" not in sec:
        rows += security_rows(sec)
    met = results.get("metrics")
    if met and "error" not in met:
        rows += metrics_rows(met)
    mp = results.get("multiproc")
    if mp and "error" not in mp:
        rows += multiproc_rows(mp)
    pa = results.get("partitions")
    if pa and "error" not in pa:
        rows += partitions_rows(pa)
    ti = results.get("tiering")
    if ti and "error" not in ti:
        rows += tiering_rows(ti)
    co = results.get("compression")
    if co and "error" not in co:
        rows += compression_rows(co)
    bp = results.get("backpressure")
    if bp and "error" not in bp:
        rows += backpressure_rows(bp)
    sc = results.get("schemas")
    if sc and "error" not in sc:
        rows += schemas_rows(sc)
    vk = results.get("versus_kafka")
    if vk and "error" not in vk:
        from .versus_kafka import table as versus_kafka_table  # here: versus_kafka imports this module

        rows += versus_kafka_table.suite_rows(vk)
    for name in (
        "first_message",
        "rebalance",
        "mq",
        "spark",
        "transactions",
        "compaction",
        "share",
        "cluster",
        "security",
        "metrics",
        "multiproc",
        "partitions",
        "tiering",
        "compression",
        "backpressure",
        "schemas",
        "versus_kafka",
    ):
        figure = results.get(name)
        if figure and "error" in figure:
            rows.append((f"{name}: failed", figure["error"][:60], "", "", ""))
    return rows


def transactions_rows(tx: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Transactional produce against idempotent produce, and the fetch of what each wrote."""
    per = f"{tx['txn_records']:,}"
    return [
        (
            f"transactional produce msgs/s, {per}-record txns",
            _num(tx["transactional_msgs_per_s"]),
            f"{_num(tx['idempotent_msgs_per_s'])} (idempotent)",
            f"{tx['ratio']:.3f}",
            f"paired; {tx['transactions_per_s']:,.0f} txns/s",
        ),
        (
            f"  idempotent, flush() every {per}",
            _num(tx["flushed_msgs_per_s"]),
            "",
            f"{tx['flushed_ratio']:.3f}",
            f"transactional/flushed {tx['transactional_vs_flushed']:.3f} (paired)",
        ),
        (
            "  same client, librdkafka mock cluster",
            _num(tx["mock_transactional_msgs_per_s"]),
            f"{_num(tx['mock_idempotent_msgs_per_s'])} (idempotent)",
            f"{tx['mock_ratio']:.3f}",
            "the client's own floor, no broker",
        ),
        (
            "fetch msgs/s, txn topic read_committed",
            _num(tx["txn_read_committed_steady_msgs_per_s"]),
            f"{_num(tx['idempotent_read_uncommitted_steady_msgs_per_s'])} (read_uncommitted)",
            f"{tx['fetch_ratio']:.3f}",
            f"first record..exit, paired; plain records read_committed {tx['read_committed_ratio']:.3f}",
        ),
    ]


def cluster_rows(cl: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Redis Cluster: 3 primaries against 1, one and two broker processes; and the failover time."""
    rows = []
    for kind in ("produce", "fetch"):
        base = f"{_num(cl[f'{kind}_p1_msgs_per_s'])} (1 primary)"
        busy = cl[f"{kind}_cores"]
        for slug, label in (
            ("p3", "3 primaries"),
            ("p3_b2", "3 primaries, 2 brokers"),
            ("server", "no cluster"),
        ):
            cores = busy[slug]
            rows.append(
                (
                    f"cluster {kind} msgs/s, 12 partitions, {label}",
                    _num(cl[f"{kind}_{slug}_msgs_per_s"]),
                    base,
                    f"{cl[f'{kind}_{slug}_ratio']:.3f}",
                    f"cores: broker {cores['broker']:.2f}, machine {cores['machine']:.2f}; paired",
                )
            )
    rows.append(
        (
            "cluster failover: SIGKILL to first acknowledged produce",
            f"{cl['failover_s']:.2f} s",
            "",
            "",
            f"replica promoted after {cl['promoted_s']:.2f} s (node timeout 2 s); median",
        )
    )
    return rows


def security_rows(sec: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """SASL_SSL (SCRAM on TLS) against PLAINTEXT, one broker serving both listeners."""
    return [
        (
            f"{kind} msgs/s over SASL_SSL ({sec['mechanism']})",
            _num(sec[f"{kind}_sasl_ssl_msgs_per_s"]),
            f"{_num(sec[f'{kind}_plaintext_msgs_per_s'])} (PLAINTEXT)",
            f"{sec[f'{kind}_ratio']:.3f}",
            f"{'confluent-kafka' if kind == 'produce' else 'kcat'}, same broker; paired",
        )
        for kind in ("produce", "fetch")
    ]


def metrics_rows(met: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Metrics on (--metrics-port) against off, two brokers on one redis-server."""
    return [
        (
            f"{kind} msgs/s, broker metrics on",
            _num(met[f"{kind}_on_msgs_per_s"]),
            f"{_num(met[f'{kind}_off_msgs_per_s'])} (off)",
            f"{met[f'{kind}_ratio']:.3f}",
            f"paired, target >= {met['target_ratio']}; broker CPU/record {met[f'{kind}_cpu_ratio']}",
        )
        for kind in ("produce", "fetch")
    ]


def multiproc_rows(mp: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """`schooner broker --processes 2` against one process, one redis-server (bench/multiproc.py)."""
    rows = []
    for kind, clients in (
        ("produce", f"{mp['clients']} producer processes"),
        ("fetch", "a kcat per partition"),
    ):
        two, one = mp[f"{kind}_2p_cores"], mp[f"{kind}_1p_cores"]
        per_process = "+".join(f"{c:.2f}" for c in two["brokers"])
        verdict = _verdict(mp[f"{kind}_ratio"], MULTIPROC_TARGET)
        if verdict != "ok" and one["broker"] < MULTIPROC_BOUND_CORES:
            verdict = f"n/a: 1 process used {one['broker']:.2f} cores, not the bound"
        rows.append(
            (
                f"{kind} msgs/s, 2 broker processes, {mp['partitions']} partitions",
                _num(mp[f"{kind}_2p_msgs_per_s"]),
                f"{_num(mp[f'{kind}_1p_msgs_per_s'])} (1 process)",
                f"{mp[f'{kind}_ratio']:.3f}",
                f">= {MULTIPROC_TARGET} {verdict}; {clients}; paired; "
                f"cores: brokers {per_process} vs {one['broker']:.2f}, redis {two['redis']:.2f} vs "
                f"{one['redis']:.2f}, machine {two['machine']:.2f}",
            )
        )
    return rows


def tiering_rows(ti: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Tiered storage through the broker (bench/tiering.py): archival, cold fetch, Redis bytes, Parquet."""
    n = f"{ti['tiering_messages']:,} records of 100 B"
    return [
        (
            "tiering: archival records/s",
            _num(ti["tiering_archive_records_per_s"]),
            "",
            "",
            f">= 100,000; {n}",
        ),
        (
            "tiering: archival records/s, typed columns (Avro)",
            _num(ti["tiering_typed_archive_records_per_s"]),
            "",
            "",
            f">= 100,000; {n}, schema_id_prefix",
        ),
        (
            "tiering: archival records/s, Iceberg",
            _num(ti["tiering_iceberg_archive_records_per_s"]),
            "",
            "",
            f">= 100,000; {n}",
        ),
        (
            "tiering: kcat fetch from the cold tier msgs/s",
            _num(ti["tiering_cold_fetch_msgs_per_s"]),
            f"{_num(ti['tiering_hot_fetch_msgs_per_s'])} (from Redis)",
            f"{ti['tiering_cold_vs_hot_fetch']:.3f}",
            ">= 0.5; paired",
        ),
        (
            "tiering: kcat fetch from an Iceberg cold tier msgs/s",
            _num(ti["tiering_iceberg_cold_fetch_msgs_per_s"]),
            f"{_num(ti['tiering_iceberg_hot_fetch_msgs_per_s'])} (from Redis)",
            f"{ti['tiering_iceberg_cold_vs_hot_fetch']:.3f}",
            ">= 0.5; paired",
        ),
        (
            "tiering: Redis bytes, archived / untiered",
            f"{ti['tiering_redis_bytes_archived']:,}",
            f"{ti['tiering_redis_bytes_untiered']:,}",
            f"{ti['tiering_redis_bytes_ratio']:.4f}",
            "<= 0.05",
        ),
        ("tiering: Parquet bytes per record", f"{ti['tiering_parquet_bytes_per_record']:.2f}", "", "", n),
        (
            "tiering: Parquet bytes per record, typed / Iceberg",
            f"{ti['tiering_typed_parquet_bytes_per_record']:.2f}",
            f"{ti['tiering_iceberg_parquet_bytes_per_record']:.2f}",
            "",
            n,
        ),
    ]


def backpressure_rows(bp: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """A tiered topic through a Redis a tenth of its data against an untiered one with room
    (bench/backpressure.py)."""
    n = f"{bp['backpressure_messages']:,} records of 250 B, maxmemory {bp['backpressure_maxmemory']:,} B"
    return [
        (
            "backpressure: produce msgs/s, tiered through a small Redis",
            _num(bp["backpressure_tiered_msgs_per_s"]),
            f"{_num(bp['backpressure_room_msgs_per_s'])} (untiered, room)",
            f"{bp['backpressure_tiered_vs_room']:.3f}",
            f">= 0.8; paired; {n}",
        ),
        (
            "backpressure: archival records/s meanwhile",
            _num(bp["backpressure_archive_records_per_s"]),
            "",
            "",
            f"failed deliveries {bp['backpressure_failed_deliveries']}, "
            f"peak fill {bp['backpressure_peak_fill']:.3f}",
        ),
    ]


def compression_rows(co: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Compression end to end: fetch bytes per record of producer-compressed JSON records, served with
    the producer's codec (compression.type=producer) against a topic set to uncompressed."""
    rows = []
    for name, c in co["codecs"].items():
        rows.append(
            (
                f"fetch bytes/record, {name} JSON ({co['value_bytes']:.0f} B values)",
                f"{c['fetch_bytes_per_record']:.1f}",
                f"{c['uncompressed_fetch_bytes_per_record']:.1f} uncompressed",
                f"{c['bytes_ratio']:.2f}",
                f"producer sent {c['producer_bytes_per_record']:.1f} B/record; ratio: uncompressed / e2e",
            )
        )
        rows.append(
            (
                f"  fetch msgs/s, {name} end to end",
                _num(c["fetch_msgs_per_s"]),
                f"{_num(c['uncompressed_fetch_msgs_per_s'])} uncompressed",
                f"{c['fetch_msgs_per_s'] / c['uncompressed_fetch_msgs_per_s']:.3f}",
                "wire client; compressing costs broker CPU",
            )
        )
    return rows


def partitions_rows(pa: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Many partitions: the same Produce requests (10 partitions of 10 records each) spread over 1,000
    partitions against 10, with one fetch-session consumer reading all of them meanwhile."""
    few, many = pa["partitions"]
    target = pa["target_ratio"]
    rows = []
    for kind in ("produce", "fetch"):
        verdict = f">= {target} {_verdict(pa[f'{kind}_ratio'], target)}; " if kind == "produce" else ""
        rows.append(
            (
                f"{kind} msgs/s, {many:,} partitions",
                _num(pa[f"many_{kind}_msgs_per_s"]),
                f"{_num(pa[f'few_{kind}_msgs_per_s'])} ({few} partitions)",
                f"{pa[f'{kind}_ratio']:.3f}",
                f"{verdict}paired; produce and fetch at once",
            )
        )
    rows.append(
        (
            f"  CPU us per record, {many:,} partitions: broker/redis",
            f"{pa['many_broker_us_per_record']:.2f}/{pa['many_redis_us_per_record']:.2f}",
            f"{pa['few_broker_us_per_record']:.2f}/{pa['few_redis_us_per_record']:.2f}",
            f"{pa['broker_cpu_ratio']:.3f}",
            "broker's ratio (paired); lower is better",
        )
    )
    return rows


def schemas_rows(sc: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Produce to a topic with schema validation against one without, and registry lookups by id
    (bench/schemas.py)."""
    target = sc["target_ratio"]
    return [
        (
            "schemas: produce msgs/s, validated topic",
            _num(sc["validated_msgs_per_s"]),
            f"{_num(sc['unvalidated_msgs_per_s'])} (unvalidated)",
            f"{sc['produce_ratio']:.3f}",
            f">= {target} {_verdict(sc['produce_ratio'], target)}; paired; {sc['value_bytes']} B Avro "
            f"records; broker us/record {sc['validated_broker_us_per_record']:.2f} vs "
            f"{sc['unvalidated_broker_us_per_record']:.2f}",
        ),
        (
            "schemas: GET /schemas/ids/{id} per s",
            _num(sc["lookups_per_s"]),
            "",
            "",
            f"one httpx client, keep-alive; broker {sc['lookup_broker_us']:.0f} us per lookup; no goal",
        ),
    ]
