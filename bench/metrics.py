"""What the broker's metrics cost: produce (and fetch) throughput with metrics on divided by metrics off.

Two broker processes on one redis-server, each in a keyspace of its own: one with `--metrics-port` (every
request counted and timed, its error codes read, records and bytes counted per batch and per partition,
each Redis round trip timed), one without. Each run produces N 100-byte records to a new one-partition
topic on each broker with confluent-kafka (the suite's producer settings), then reads them back with kcat;
the two brokers take turns at going first. After each run on the metered broker its /metrics is scraped
(as Prometheus would, end offsets and lag included) and must count exactly the N records in and out.
The ratios are on / off within a run, and the figures are medians of the runs; the target is >= 0.95.
The broker's CPU time per record, on / off, is given too: on a machine shared with other work it is the
steadier sign of what the metrics cost.
`python -m bench.metrics` runs it alone; the suite calls run() (`--skip metrics` leaves it out).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from schooner.storage.redis.embedded import EmbeddedRedis, free_port

from . import fetch, produce
from .servers import broker_command, process_cpu_seconds, stop_process, wait_for_port

MESSAGES = 200_000
RUNS = 5
TARGET = 0.95
SETUPS = ("off", "on")


def _start(stack: ExitStack) -> tuple[dict[str, str], dict[str, int], int]:
    """Redis and the two brokers: each setup's bootstrap and broker pid, and the metered broker's metrics
    port."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-metrics-")))
    server = EmbeddedRedis(folder / "redis", persistent=False)
    server.start()
    stack.callback(server.stop)
    metrics_port = free_port()
    bootstraps, pids = {}, {}
    for setup in SETUPS:
        port = free_port()
        args = [*broker_command(), "broker", "--redis-url", server.url, "--port", str(port),
                "--keyspace", f"bench-metrics-{setup}", "--log-level", "WARNING"]  # fmt: skip
        if setup == "on":
            args += ["--metrics-port", str(metrics_port)]
        log = stack.enter_context((folder / f"broker-{setup}.log").open("wb"))
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        stack.callback(stop_process, process)
        wait_for_port(port, process, timeout=30)
        bootstraps[setup] = f"127.0.0.1:{port}"
        pids[setup] = process.pid
    return bootstraps, pids, metrics_port


def _produce(bootstrap: str, topic: str, messages: int) -> float:
    producer = produce.make_producer(bootstrap)
    failed = True
    try:
        produce.warm_up(producer, topic)  # the topic is auto-created and the connection open before the clock
        done = produce.produce_topic(producer, topic, messages, produce.bench_value())
        failed = False
    finally:
        produce.close_producer(producer, failed)
    return done.msgs_per_s


def counted(metrics_port: int, topic: str) -> tuple[float, float]:
    """(records in, records out) of the topic, from a scrape of /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    found = {"schooner_records_in_total": 0.0, "schooner_records_out_total": 0.0}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in found and s.labels.get("topic") == topic:
                found[s.name] = s.value
    return found["schooner_records_in_total"], found["schooner_records_out_total"]


def run(messages: int = MESSAGES, runs: int = RUNS) -> dict[str, Any]:
    kinds = ("produce", "fetch")
    rates: dict[str, dict[str, list[float]]] = {k: {s: [] for s in SETUPS} for k in kinds}
    # The broker's CPU microseconds per record: steadier than throughput on a busy machine.
    cpu: dict[str, dict[str, list[float]]] = {k: {s: [] for s in SETUPS} for k in kinds}
    scrape_seconds: list[float] = []
    with ExitStack() as stack:
        bootstraps, pids, metrics_port = _start(stack)
        for run_number in range(runs):
            order = SETUPS if run_number % 2 == 0 else SETUPS[::-1]
            for setup in order:
                topic = f"metrics-{setup}-{run_number}-{time.monotonic_ns()}"
                for kind in kinds:
                    before = process_cpu_seconds(pids[setup])
                    if kind == "produce":
                        rate = _produce(bootstraps[setup], topic, messages)
                    else:
                        rate = fetch.kcat_consume(bootstraps[setup], topic, messages).msgs_per_s
                    cpu[kind][setup].append((process_cpu_seconds(pids[setup]) - before) / messages * 1e6)
                    rates[kind][setup].append(rate)
                if setup == "on":
                    started = time.perf_counter()
                    seen = counted(metrics_port, topic)
                    scrape_seconds.append(time.perf_counter() - started)
                    if seen != (messages, messages):
                        raise RuntimeError(
                            f"{topic}: /metrics counted {seen} records in and out, not {messages}"
                        )
    out: dict[str, Any] = {"messages": messages, "runs": runs, "target_ratio": TARGET, "rates": rates,
                           "broker_cpu_us_per_record": cpu,
                           "scrape_ms": round(statistics.median(scrape_seconds) * 1000, 1)}  # fmt: skip
    for kind in kinds:
        off, on = rates[kind]["off"], rates[kind]["on"]
        out[f"{kind}_off_msgs_per_s"] = round(statistics.median(off))
        out[f"{kind}_on_msgs_per_s"] = round(statistics.median(on))
        out[f"{kind}_ratio"] = _paired(on, off)
        # Over all runs rather than paired: a short run may take less than the clock's tick (10 ms).
        off_cpu = sum(cpu[kind]["off"])
        out[f"{kind}_cpu_ratio"] = round(sum(cpu[kind]["on"]) / off_cpu, 3) if off_cpu else None
    return out


def _paired(on: list[float], off: list[float]) -> float:
    """The median of each run's on/off: the two ran back to back, so noise hits both."""
    return round(statistics.median(n / f for n, f in zip(on, off, strict=True)), 3)


def main() -> int:
    out = run()
    for kind in ("produce", "fetch"):
        print(
            f"{kind}: metrics on {out[f'{kind}_on_msgs_per_s']:,} msgs/s, "
            f"off {out[f'{kind}_off_msgs_per_s']:,} msgs/s, "
            f"ratio {out[f'{kind}_ratio']:.3f} (target >= {TARGET})"
        )
        print(f"  broker CPU per record, on / off: {out[f'{kind}_cpu_ratio']}")
    print(f"a scrape of /metrics took {out['scrape_ms']} ms (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
