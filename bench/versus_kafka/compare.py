"""Runs every figure on every broker in turns and makes the rows: each setup's median over the runs, and
each Schooner setup's median divided by Kafka's."""

from __future__ import annotations

import datetime
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import confluent_kafka

import apache_kafka

from .. import report
from ..servers import client_cpu_seconds, cpu_count, machine_busy_seconds
from . import applications, figures
from .brokers import KAFKA, LABELS, SETUPS, Broker, started
from .figures import Measured

HIGHER, LOWER = "higher", "lower"
LATENCY_TOPIC = "vk-latency"
# settle(): each broker below this share of a core over a window, for at most this long.
SETTLE_CORES = 0.1
SETTLE_WINDOW_SECONDS = 0.5
SETTLE_MAX_SECONDS = 30.0
# Other processes busier than this during the runs disturbed the figures (bench/report.py's threshold).
OTHER_LOAD_WARNING = report.OTHER_LOAD_WARNING
WARM_UP_LATENCY_SECONDS = 1.0
MB = 1 << 20
RECORDS = 50_000
RUNS = 3


@dataclass(frozen=True, slots=True)
class Options:
    records: int = RECORDS  # per throughput run (100-byte values)
    runs: int = RUNS  # per figure and setup; the rows are medians
    partitions: int = 1000
    latency_rates: tuple[int, ...] = (5_000, 50_000)
    lingers: tuple[int, ...] = (1, 5)
    latency_seconds: float = 2.0  # how long each latency run sends
    idle_seconds: float = 5.0  # the at-rest CPU window
    quiet_wait_seconds: float = 0.0  # before each run, wait up to this long for other processes to calm
    applications: bool = True  # the Kafka Streams topology and the Spark read (minutes)
    streams_records: int = 20_000  # orders through the Streams topology per run
    setups: tuple[str, ...] = SETUPS


# What each figure's numbers are: (unit, which way is better).
MEASURES = {
    "msgs_per_s": ("msgs/s", HIGHER),
    "seconds": ("s", LOWER),
    "p50_ms": ("p50 ms", LOWER),
    "p99_ms": ("p99 ms", LOWER),
    "max_ms": ("max ms", LOWER),
}


@dataclass(slots=True)
class Figure:
    """One figure: its runs on each setup, in the order they ran."""

    key: str
    label: str
    runs: dict[str, list[Measured]] = field(default_factory=dict)
    other_cores: list[float] = field(default_factory=list)  # per run on any setup, in the order they ran


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def in_turns(
    brokers: dict[str, Broker], opts: Options, figure: Figure, once: Callable[[Broker, int], Measured]
) -> Figure:
    """Each run on every setup before the next run, the setup that goes first rotating from run to run, so
    drift on the machine (and the order within a run) hits each setup alike."""
    names = list(brokers)
    settle(brokers)
    for run in range(opts.runs):
        order = names[run % len(names) :] + names[: run % len(names)]
        for name in order:
            wait_for_quiet(brokers, opts.quiet_wait_seconds)
            others, start = _others_seconds(brokers), time.perf_counter()
            done = once(brokers[name], run)
            # Never below 0: /proc/stat and a reaped child's rusage count their ticks a little apart.
            other = max(0.0, _others_seconds(brokers) - others) / (time.perf_counter() - start)
            figure.other_cores.append(other)
            figure.runs.setdefault(name, []).append(done)
            shown = ", ".join(f"{k} {v:,.2f}" for k, v in done.figures.items())
            _say(f"  {figure.label}, run {run + 1}, {LABELS[name]}: {shown}")
    return figure


def _others_seconds(brokers: dict[str, Broker]) -> float:
    """CPU seconds the machine has spent so far outside the brokers, this process and its children."""
    return machine_busy_seconds() - client_cpu_seconds() - sum(b.cpu_seconds() for b in brokers.values())


def wait_for_quiet(brokers: dict[str, Broker], seconds: float) -> None:
    """For up to `seconds`, until the rest of the machine keeps fewer than OTHER_LOAD_WARNING cores busy
    over a window: on a machine shared with bursts of other work, runs then fall between the bursts."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        before, start = _others_seconds(brokers), time.perf_counter()
        time.sleep(SETTLE_WINDOW_SECONDS)
        if (_others_seconds(brokers) - before) / (time.perf_counter() - start) < OTHER_LOAD_WARNING:
            return


def settle(brokers: dict[str, Broker]) -> None:
    """Waits until no broker is still busy with the last figure's aftermath (Kafka makes a new topic's
    logs after it has answered), so that it does not slow the next figure's runs on the others."""
    deadline = time.monotonic() + SETTLE_MAX_SECONDS
    while time.monotonic() < deadline:
        busy = {n: share[0] for n, share in _idle_cpu(brokers, SETTLE_WINDOW_SECONDS).items()}
        if max(busy.values()) < SETTLE_CORES:
            return
    _say(f"  still busy after {SETTLE_MAX_SECONDS:g} s: {busy}")


def row(label: str, unit: str, better: str, runs: dict[str, list[float]]) -> dict[str, Any]:
    """A row: each setup's median, and each Schooner setup's median ÷ Kafka's (so the printed ratio is the
    printed values' quotient)."""
    values = {name: report.median(v) for name, v in runs.items()}
    return {
        "figure": label,
        "unit": unit,
        "better": better,
        "values": values,
        "ratios": {name: report.ratio(v, values[KAFKA]) for name, v in values.items() if name != KAFKA},
        "runs": runs,
    }


def figure_rows(figure: Figure) -> list[dict[str, Any]]:
    """A row per measure of the figure, then its broker CPU per record where it moved records."""
    first = next(iter(figure.runs.values()))[0]
    out = [
        row(
            figure.label,
            *MEASURES[key],
            {n: [m.figures[key] for m in ms] for n, ms in figure.runs.items()},
        )
        for key in first.figures
        if key in MEASURES
    ]
    if first.records:
        cpu = {n: [m.cpu_us_per_record for m in ms] for n, ms in figure.runs.items()}
        out.append(row(f"  {figure.label}: broker CPU", "µs/record", LOWER, cpu))
    return out


def _throughput(brokers: dict[str, Broker], opts: Options) -> list[Figure]:
    n, p = opts.records, opts.partitions
    jobs: list[tuple[str, str, Callable[[Broker, int], Measured]]] = [
        ("produce_confluent", "produce, confluent-kafka",
         lambda b, r: figures.produce_confluent(b, f"vk-produce-{r}", n)),
        ("fetch_kcat", "fetch, kcat", lambda b, r: figures.fetch_kcat(b, f"vk-produce-{r}", n)),
        ("fetch_confluent", "fetch, confluent-kafka",
         lambda b, r: figures.fetch_confluent(b, f"vk-produce-{r}", n)),
        ("produce_perf", "produce, kafka-producer-perf-test",
         lambda b, r: figures.produce_perf_tool(b, f"vk-perf-{r}", n)),
        ("fetch_perf", "fetch, kafka-consumer-perf-test",
         lambda b, r: figures.fetch_perf_tool(b, f"vk-perf-{r}", n, f"vk-perf-group-{r}")),
        ("create_many", f"create a {p:,}-partition topic",
         lambda b, r: figures.create_many(b, f"vk-many-{r}", p)),
        ("produce_many", f"produce to {p:,} new partitions, confluent-kafka",
         lambda b, r: figures.produce_many(b, f"vk-many-{r}", p, n, stored=p)),
        # The same again: a partition's first records cost Kafka more than the next (docs/benchmarks.md).
        ("produce_many_again", f"produce to the {p:,} partitions again",
         lambda b, r: figures.produce_many(b, f"vk-many-{r}", p, n, stored=p + n)),
        ("fetch_many", f"fetch {p:,} partitions, kcat",
         lambda b, r: figures.fetch_kcat(b, f"vk-many-{r}", p + 2 * n, partition=None)),
    ]  # fmt: skip
    done = []
    for key, label, once in jobs:
        _say(f"{label} ...")
        done.append(in_turns(brokers, opts, Figure(key, label), once))
    return done


def _applications(brokers: dict[str, Broker], opts: Options) -> list[Figure]:
    """Whole applications: a Kafka Streams topology, and Spark's Kafka connector reading what the
    produce figure wrote."""
    if not opts.applications:
        return []
    n, orders = opts.records, opts.streams_records
    jobs: list[tuple[str, str, Callable[[Broker, int], Measured]]] = [
        ("streams_topology", "Kafka Streams topology (exactly_once_v2)",
         lambda b, r: applications.streams_topology(b, r, orders)),
        ("spark_read", 'Spark read, format("kafka")',
         lambda b, r: applications.spark_read(b, f"vk-produce-{r}", n)),
    ]  # fmt: skip
    done = []
    try:
        for broker in brokers.values():  # untimed: Spark's first job on a session loads and compiles much
            applications.spark_read(broker, "vk-warm-up", n)
        for key, label, once in jobs:
            _say(f"{label} ...")
            done.append(in_turns(brokers, opts, Figure(key, label), once))
    finally:
        applications.stop()
    return done


def _warm_up(brokers: dict[str, Broker], opts: Options) -> None:
    """Untimed: each broker's produce, fetch and long-poll paths run once before the figures (Kafka's
    JIT compiles them; Schooner's Redis loads its scripts)."""
    _say("warm-up ...")
    for broker in brokers.values():
        figures.produce_confluent(broker, "vk-warm-up", opts.records)
        figures.fetch_kcat(broker, "vk-warm-up", opts.records)
        figures.create_topic(broker, LATENCY_TOPIC)
        figures.end_to_end(
            broker,
            LATENCY_TOPIC,
            opts.latency_rates[0],
            min(WARM_UP_LATENCY_SECONDS, opts.latency_seconds),
            opts.lingers[0],
        )


def _latency(brokers: dict[str, Broker], opts: Options) -> list[Figure]:
    done = []
    for rate in opts.latency_rates:
        for linger in opts.lingers:
            label = f"e2e latency @{rate:,}/s, linger.ms {linger}"
            _say(f"{label} ...")

            def once(b: Broker, _run: int, rate: int = rate, linger: int = linger) -> Measured:
                return figures.end_to_end(b, LATENCY_TOPIC, rate, opts.latency_seconds, linger)

            done.append(in_turns(brokers, opts, Figure(f"latency_{rate}_{linger}", label), once))
    return done


def _idle_cpu(brokers: dict[str, Broker], seconds: float) -> dict[str, list[float]]:
    """Each broker's share of a core over the same idle window."""
    before = {n: b.cpu_seconds() for n, b in brokers.items()}
    start = time.perf_counter()
    time.sleep(seconds)
    wall = time.perf_counter() - start
    return {n: [(b.cpu_seconds() - before[n]) / wall] for n, b in brokers.items()}


def _rss_mb(brokers: dict[str, Broker], peak: bool = False) -> dict[str, list[float]]:
    return {n: [(b.peak_rss_bytes() if peak else b.rss_bytes()) / MB] for n, b in brokers.items()}


_KCAT_VERSION = re.compile(r"^Version (\S+)", re.MULTILINE)
_LIBRDKAFKA_VERSION = re.compile(r"librdkafka \S+")


def _environment(brokers: dict[str, Broker]) -> dict[str, Any]:
    kcat = subprocess.run(["kcat", "-V"], capture_output=True, text=True, check=False).stdout
    java = subprocess.run([apache_kafka.java(), "-version"], capture_output=True, text=True, check=False)
    version = confluent_kafka.version()
    return {
        "cpus": cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "confluent_kafka": str(version[0] if isinstance(version, tuple) else version),
        "librdkafka": confluent_kafka.libversion()[0],
        "kcat": " ".join(_KCAT_VERSION.findall(kcat)[:1] + _LIBRDKAFKA_VERSION.findall(kcat)[:1]),
        "java": (java.stderr.splitlines() or [""])[0],
        "kafka": apache_kafka.version(),
        "servers": {n: b.server for n, b in brokers.items()},
    }


def run(opts: Options) -> dict[str, Any]:
    """Every figure on every setup; the brokers start once and stop at the end."""
    if KAFKA not in opts.setups:
        raise ValueError("every ratio is to Kafka: the kafka setup is needed")
    started_at = datetime.datetime.now(datetime.UTC)
    with started(opts.setups) as brokers:
        env = _environment(brokers)
        settle(brokers)  # the start's last work (Kafka's JIT compiling its start-up) is over
        _say(f"at rest, {opts.idle_seconds:g} s ...")
        rest_cpu = _idle_cpu(brokers, opts.idle_seconds)
        rest_rss = _rss_mb(brokers)
        _warm_up(brokers, opts)
        done = _throughput(brokers, opts) + _latency(brokers, opts) + _applications(brokers, opts)
        peak_rss = _rss_mb(brokers, peak=True)
        after_rss = _rss_mb(brokers)
    rows = [
        row("CPU at rest", "cores", LOWER, rest_cpu),
        row("resident memory at rest", "MiB", LOWER, rest_rss),
        row("resident memory, peak under load", "MiB", LOWER, peak_rss),
        row("resident memory after the load", "MiB", LOWER, after_rss),
    ]
    for figure in done:
        rows += figure_rows(figure)
    return {
        "date": started_at.isoformat(timespec="seconds"),
        "duration_s": round((datetime.datetime.now(datetime.UTC) - started_at).total_seconds(), 1),
        "environment": env,
        "config": asdict(opts),
        "rows": rows,
        "figures": {f.key: {n: [asdict(m) for m in ms] for n, ms in f.runs.items()} for f in done},
        "other_cores": {f.key: f.other_cores for f in done},
        "other_cores_max": max((c for f in done for c in f.other_cores), default=0.0),
    }
