"""Runs every figure against one redis-server and one broker process, and collects the results."""

from __future__ import annotations

import datetime
import platform
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, TypeVar

import confluent_kafka
import redis
from confluent_kafka import Producer

from schooner.storage.offsets import DENSE, TIMESTAMP
from schooner.storage.topics.config import OFFSET_ENCODING

from . import fetch, latency, memory, produce, report
from .servers import BenchServers, CpuMeter, Endpoints, cpu_count

WARMUP_TOPIC = "bench-warmup"
# Bench topics are auto-created, so dense (the default); these are created with the other encoding.
TIMESTAMP_CONFIG = {OFFSET_ENCODING: TIMESTAMP}

R = TypeVar("R", produce.ProduceRun, fetch.KcatRun, fetch.XrangeRun, fetch.WireRun)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Options:
    messages: int = 300_000
    runs: int = 7
    raw_requests: int = 1_000_000
    pipeline: int = 64
    latency_rate: int = 5000
    latency_seconds: float = 5.0
    # Figures besides throughput and latency; `--skip NAME` leaves one out.
    extras: tuple[str, ...] = (
        "latency", "memory", "first_message", "rebalance", "mq", "spark", "transactions", "compaction",
        "share", "cluster", "security", "metrics", "multiproc", "partitions", "tiering", "compression",
        "backpressure", "schemas", "versus_kafka",
    )  # fmt: skip
    latency_rounds: int = latency.ROUNDS


def produce_topic_name(run: int) -> str:
    return f"bench-produce-{run}"


def timestamp_topic_name(run: int) -> str:
    return f"bench-produce-timestamp-{run}"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def mean_cpu(samples: list[dict[str, float]]) -> dict[str, float]:
    """The mean share of a core of each process over several runs."""
    names = samples[0].keys() if samples else ()
    return {name: round(sum(s[name] for s in samples) / len(samples), 3) for name in names}


def cpu_us_per_record(samples: list[dict[str, float]], rates: list[float]) -> dict[str, float]:
    """CPU microseconds each process spent per record (share of a core / records per s); median of runs."""
    names = [name for name in samples[0] if name != "other"] if samples else []
    return {
        name: round(report.median([s[name] / rate * 1e6 for s, rate in zip(samples, rates, strict=True)]), 2)
        for name in names
    }


@dataclass(slots=True)
class Series(Generic[R]):
    """One kind of run (broker on dense topics, broker on timestamp topics, raw Redis), in run order."""

    name: str
    runs: list[R] = field(default_factory=list)
    cpu: list[dict[str, float]] = field(default_factory=list)

    def add(self, run: R, cpu: dict[str, float]) -> None:
        self.runs.append(run)
        self.cpu.append(cpu)

    @property
    def rates(self) -> list[float]:
        return [r.msgs_per_s for r in self.runs]

    @property
    def median(self) -> float:
        return report.median(self.rates)

    def cpu_figures(self, prefix: str) -> dict[str, Any]:
        return {
            f"{prefix}_cpu": mean_cpu(self.cpu),
            f"{prefix}_cpu_us_per_record": cpu_us_per_record(self.cpu, self.rates),
        }

    def listed(self) -> list[dict[str, Any]]:
        return [{**asdict(r), "cpu": c} for r, c in zip(self.runs, self.cpu, strict=True)]


def paired_ratio(dense: list[float], stamped: list[float]) -> float:
    """The median of each round's dense/timestamp ratio: the two ran back to back, so noise hits both."""
    return report.median([d / t for d, t in zip(dense, stamped, strict=True)])


def check_encoding(client: redis.Redis, ep: Endpoints, topic: str, expected: str) -> None:
    """A figure labelled dense or timestamp must come from a topic with that encoding."""
    found = client.hget(ep.keyspace.topic(topic), "offset_encoding")
    if found != expected.encode():
        raise RuntimeError(f"{topic} has the offset encoding {found!r}, not {expected}")


def _in_turn(pair: list[T], run: int) -> list[T]:
    """Dense and timestamp take turns at going first, so neither always runs right after raw Redis."""
    return pair if run % 2 == 0 else pair[::-1]


def _produce_once(
    producer: Producer, client: redis.Redis, ep: Endpoints, meter: CpuMeter, topic: str, value: bytes, n: int
) -> tuple[produce.ProduceRun, dict[str, float]]:
    meter.start()
    result = produce.produce_topic(producer, topic, n, value)
    cpu = meter.stop()
    stored = int(client.xlen(ep.keyspace.stream(topic, 0)))
    if stored != n:
        raise RuntimeError(f"{topic}: its stream holds {stored} entries; {n} were sent")
    return result, cpu


def run_produce(ep: Endpoints, client: redis.Redis, opts: Options) -> dict[str, Any]:
    value = produce.bench_value()
    stamped_topics = [timestamp_topic_name(run) for run in range(opts.runs)]
    produce.create_topics(ep.bootstrap, stamped_topics, TIMESTAMP_CONFIG)
    producer = produce.make_producer(ep.bootstrap)
    failed = True
    dense: Series[produce.ProduceRun] = Series(DENSE)
    stamped: Series[produce.ProduceRun] = Series(TIMESTAMP)
    wire: Series[produce.ProduceRun] = Series("wire")
    raw_runs: list[float] = []
    raw_cpu: list[dict[str, float]] = []
    try:
        produce.warm_up(producer, WARMUP_TOPIC)
        producer.produce(WARMUP_TOPIC, value, partition=0)
        producer.flush(15)
        meter = CpuMeter(ep)
        for run in range(opts.runs):
            pair = [(dense, produce_topic_name(run)), (stamped, timestamp_topic_name(run))]
            for series, topic in pair:
                produce.warm_up(producer, topic)  # the dense topic is auto-created here
                check_encoding(client, ep, topic, series.name)
            for series, topic in _in_turn(pair, run):
                result, cpu = _produce_once(producer, client, ep, meter, topic, value, opts.messages)
                series.add(result, cpu)
                _say(f"  produce run {run + 1}: broker, {series.name} {result.msgs_per_s:,.0f} msgs/s")
            # The same records from a producer with no work per record (prebuilt batches, bench/produce.py).
            topic = f"bench-produce-wire-{run}"
            produce.warm_up(producer, topic)
            frames = produce.wire_frames(topic, opts.messages, value)
            meter.start()
            w = produce.wire_produce(ep.bootstrap, frames, opts.messages)
            wire.add(w, meter.stop())
            stored = int(client.xlen(ep.keyspace.stream(topic, 0)))
            if stored != opts.messages:
                raise RuntimeError(f"{topic}: its stream holds {stored} entries; {opts.messages} were sent")
            _say(f"  produce run {run + 1}: wire producer {w.msgs_per_s:,.0f} msgs/s")
            client.delete(produce.RAW_STREAM_KEY)  # each raw run starts from an empty stream
            meter.start()
            raw = produce.redis_benchmark_xadd(ep.redis_url, opts.raw_requests, value, opts.pipeline)
            raw_cpu.append(meter.stop())
            raw_runs.append(raw)
            _say(f"  produce run {run + 1}: raw XADD {raw:,.0f} /s")
        failed = False
    finally:
        produce.close_producer(producer, failed)
    raw = report.median(raw_runs)
    return {
        "broker_msgs_per_s": dense.median,
        "raw_xadd_per_s": raw,
        "ratio": report.ratio(dense.median, raw),
        "wire_msgs_per_s": wire.median,
        "wire_ratio": report.ratio(wire.median, raw),
        "wire_batch_records": produce.WIRE_BATCH_RECORDS,
        "wire_in_flight": produce.WIRE_IN_FLIGHT,
        "timestamp_msgs_per_s": stamped.median,
        "timestamp_ratio": report.ratio(stamped.median, raw),
        "dense_vs_timestamp": paired_ratio(dense.rates, stamped.rates),
        "target_ratio": report.PRODUCE_TARGET,
        "producer_config": produce.PRODUCER_CONFIG,
        "timestamp_topic_config": TIMESTAMP_CONFIG,
        "raw_command": f"redis-benchmark -P {opts.pipeline} -n {opts.raw_requests} -q XADD "
        f"{produce.RAW_STREAM_KEY} '*' f <{len(value)}-byte value>",
        "broker_runs": dense.listed(),
        "timestamp_runs": stamped.listed(),
        "wire_runs": wire.listed(),
        "raw_runs": [{"per_s": r, "cpu": c} for r, c in zip(raw_runs, raw_cpu, strict=True)],
        **dense.cpu_figures("broker"),
        **stamped.cpu_figures("timestamp"),
        **wire.cpu_figures("wire"),
        "raw_cpu": mean_cpu(raw_cpu),
        "raw_cpu_us_per_record": cpu_us_per_record(raw_cpu, raw_runs),
    }


def run_fetch(ep: Endpoints, opts: Options) -> dict[str, Any]:
    topic, stamped_topic = produce_topic_name(0), timestamp_topic_name(0)
    key = ep.keyspace.stream(topic, 0)
    dense: Series[fetch.KcatRun] = Series(DENSE)
    stamped: Series[fetch.KcatRun] = Series(TIMESTAMP)
    raw: Series[fetch.XrangeRun] = Series("raw")
    wire: Series[fetch.WireRun] = Series("wire")
    meter = CpuMeter(ep)
    for run in range(opts.runs):
        said = []
        for series, name in _in_turn([(dense, topic), (stamped, stamped_topic)], run):
            meter.start()
            k = fetch.kcat_consume(ep.bootstrap, name, opts.messages)
            series.add(k, meter.stop())
            said.append(f"kcat {series.name} {k.msgs_per_s:,.0f}")
        # The same dense topic through a client that does almost nothing per record (bench/fetch.py).
        meter.start()
        w = fetch.wire_consume(ep.bootstrap, topic, opts.messages)
        wire.add(w, meter.stop())
        said.append(f"wire {w.msgs_per_s:,.0f}")
        meter.start()
        r = fetch.raw_xrange(ep.redis_url, key, opts.messages)
        raw.add(r, meter.stop())
        _say(f"  fetch run {run + 1}: {', '.join(sorted(said))} msgs/s, raw XRANGE {r.msgs_per_s:,.0f} /s")
    steady = report.median([r.steady_msgs_per_s for r in dense.runs])
    stamped_steady = report.median([r.steady_msgs_per_s for r in stamped.runs])
    return {
        "broker_msgs_per_s": dense.median,
        "broker_steady_msgs_per_s": steady,
        "raw_xrange_per_s": raw.median,
        "ratio": report.ratio(dense.median, raw.median),
        "steady_ratio": report.ratio(steady, raw.median),
        "timestamp_msgs_per_s": stamped.median,
        "timestamp_steady_msgs_per_s": stamped_steady,
        "timestamp_ratio": report.ratio(stamped.median, raw.median),
        "timestamp_steady_ratio": report.ratio(stamped_steady, raw.median),
        "dense_vs_timestamp": paired_ratio(dense.rates, stamped.rates),
        "steady_dense_vs_timestamp": paired_ratio(
            [r.steady_msgs_per_s for r in dense.runs], [r.steady_msgs_per_s for r in stamped.runs]
        ),
        "wire_msgs_per_s": wire.median,
        "wire_ratio": report.ratio(wire.median, raw.median),
        "wire_runs": wire.listed(),
        **wire.cpu_figures("wire"),
        "target_ratio": report.FETCH_TARGET,
        "topic": topic,
        "timestamp_topic": stamped_topic,
        "stream_key": key,
        "xrange_count": fetch.XRANGE_COUNT,
        "kcat_runs": dense.listed(),
        "timestamp_kcat_runs": stamped.listed(),
        "raw_runs": raw.listed(),
        **dense.cpu_figures("broker"),
        **stamped.cpu_figures("timestamp"),
        **raw.cpu_figures("raw"),
    }


def run_memory(ep: Endpoints, client: redis.Redis, opts: Options) -> dict[str, Any]:
    """Bytes per record of the broker's streams against plain-client entries with the same fields
    (bench/memory.py), in this Redis; its own topics, so `--skip memory` leaves it out."""
    return memory.run(client, ep.keyspace, ep.bootstrap, opts.messages)


def _first(version: Any) -> str:
    """confluent-kafka's version() is a (text, number) pair in some releases and a text in others."""
    return str(version[0] if isinstance(version, tuple) else version)


def _environment(client: redis.Redis) -> dict[str, Any]:
    kcat = subprocess.run(["kcat", "-V"], capture_output=True, text=True, check=False).stdout
    kcat_line = next((line.strip() for line in kcat.splitlines() if line.startswith("Version")), "")
    bench_version = subprocess.run(
        ["redis-benchmark", "--version"], capture_output=True, text=True, check=False
    )
    return {
        "cpus": cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "redis_server": client.info("server").get("redis_version"),
        "redis_benchmark": bench_version.stdout.strip(),
        "confluent_kafka": _first(confluent_kafka.version()),
        "librdkafka_python": confluent_kafka.libversion()[0],
        "kcat": kcat_line,
    }


def run_extras(ep: Endpoints, opts: Options) -> dict[str, Any]:
    """New producers' first message, group rebalance, MQ library, Spark source, transactional produce and
    compaction figures, each measured against the same Redis."""
    out: dict[str, Any] = {}
    for name in opts.extras:
        if name == "latency":  # run beside produce and fetch (run_all)
            continue
        _say(f"{name} ...")
        try:
            if name == "memory":
                out[name] = _run_memory(ep, opts)
            elif name == "first_message":
                from . import first_message

                out[name] = first_message.run(ep.bootstrap)
            elif name == "rebalance":
                from . import rebalance

                out[name] = rebalance.run(ep.bootstrap)
            elif name == "mq":
                from . import mq

                out[name] = mq.run(ep.redis_url)
            elif name == "spark":
                from . import spark

                out[name] = spark.run(ep.redis_url)
            elif name == "transactions":
                from . import transactions

                out[name] = transactions.run(ep, min(opts.messages, transactions.MESSAGES), opts.runs)
            elif name == "compaction":
                from . import compaction

                out[name] = compaction.run(ep.redis_url)
            elif name == "share":
                from . import share

                out[name] = share.run(ep, min(opts.messages, share.MESSAGES), min(opts.runs, share.RUNS))
            elif name == "cluster":  # its own clusters and brokers, not ep's
                from . import cluster

                out[name] = cluster.run(min(opts.messages, cluster.MESSAGES), min(opts.runs, cluster.RUNS))
            elif name == "security":  # its own broker, with a SASL_SSL listener beside the plaintext one
                from . import security

                out[name] = security.run(min(opts.messages, security.MESSAGES), min(opts.runs, security.RUNS))
            elif name == "metrics":  # its own two brokers, one with --metrics-port
                from . import metrics

                out[name] = metrics.run(min(opts.messages, metrics.MESSAGES), min(opts.runs, metrics.RUNS))
            elif name == "multiproc":  # its own redis-server, one broker process and two
                from . import multiproc

                out[name] = multiproc.run(
                    min(opts.messages, multiproc.MESSAGES), min(opts.runs, multiproc.RUNS)
                )
            elif name == "tiering":  # its own redis-server and broker, with a cold store in a folder
                from . import tiering

                out[name] = tiering.run(min(opts.messages, tiering.MESSAGES), min(opts.runs, tiering.RUNS))
            elif name == "backpressure":  # its own redis-server (maxmemory a tenth of the data) and broker
                from . import backpressure

                out[name] = backpressure.run(
                    min(opts.messages * 3, backpressure.MESSAGES), min(opts.runs, backpressure.RUNS)
                )
            elif name == "compression":  # producer-compressed JSON, fetched with and without its codec
                from . import compression

                out[name] = compression.run(ep, min(opts.messages, compression.MESSAGES), opts.runs)
            elif name == "schemas":  # on ep's broker: validated vs unvalidated produce, lookups by id
                from . import schemas

                out[name] = schemas.run(
                    ep, min(opts.messages, schemas.MESSAGES), min(opts.runs, schemas.RUNS)
                )
            elif name == "versus_kafka":  # its own brokers: Schooner on two Redis servers, and Apache Kafka
                from . import versus_kafka

                out[name] = versus_kafka.run(
                    versus_kafka.Options(
                        records=min(opts.messages, versus_kafka.RECORDS),
                        runs=min(opts.runs, versus_kafka.RUNS),
                    )
                )
            elif name == "partitions":  # 1,000 partitions against 10, on ep's broker
                from . import partitions

                out[name] = partitions.run(
                    ep, min(opts.messages, partitions.MESSAGES), min(opts.runs, partitions.RUNS)
                )
        except Exception as exc:  # one figure failing must not lose the others
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def _run_memory(ep: Endpoints, opts: Options) -> dict[str, Any]:
    client = ep.redis_client()
    try:
        return run_memory(ep, client, opts)
    finally:
        client.close()


def check_tools() -> None:
    missing = [tool for tool in ("kcat", "redis-benchmark") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run `make system-deps` (kcat and redis-tools)")


def run_all(opts: Options) -> dict[str, Any]:
    check_tools()
    started = datetime.datetime.now(datetime.UTC)
    servers = BenchServers()
    with servers as ep:
        client = ep.redis_client()
        try:
            env = _environment(client)
            _say(f"redis-server {env['redis_server']} at {ep.redis_url}, broker at {ep.bootstrap}")
            _say("produce ...")
            produce_results = run_produce(ep, client, opts)
            _say("fetch ...")
            fetch_results = run_fetch(ep, opts)
            lat: dict[str, Any] = {}
            lat_high: dict[str, Any] = {}
            lat_tuned: dict[str, Any] | None = None
            lat_high_tuned: dict[str, Any] | None = None
            if "latency" in opts.extras:  # each linger.ms row in turns (bench/latency.py)
                _say(f"latency at {opts.latency_rate} msg/s, {opts.latency_seconds} s per run ...")
                lat = latency.run(ep, opts.latency_rate, opts.latency_seconds, opts.latency_rounds)
                _say(f"latency at {latency.HIGH_RATE} msg/s, linger.ms {latency.TARGET_LINGER_MS} ...")
                lat_high = latency.run(
                    ep, latency.HIGH_RATE, opts.latency_seconds, opts.latency_rounds,
                    (latency.TARGET_LINGER_MS,), latency.HIGH_RATE_P99_TARGET_MS,
                )  # fmt: skip
                # The same two, with the host's idle CPUs polling (where it allows: root), to tell the
                # host's wake-up costs from the broker's.
                _say("latency again, idle CPUs polling (host tuned for latency) ...")
                lat_tuned = latency.run_tuned(
                    ep, opts.latency_rate, opts.latency_seconds, opts.latency_rounds,
                    (latency.TARGET_LINGER_MS,),
                )  # fmt: skip
                if lat_tuned is not None:
                    lat_high_tuned = latency.run_tuned(
                        ep, latency.HIGH_RATE, opts.latency_seconds, opts.latency_rounds,
                        (latency.TARGET_LINGER_MS,), latency.HIGH_RATE_P99_TARGET_MS,
                    )  # fmt: skip
            extras = run_extras(ep, opts)
            if not servers.broker_alive():
                raise RuntimeError("the broker process died during the benchmark")
        except KeyboardInterrupt:
            if servers.broker_exit_code is not None:
                raise RuntimeError(f"the broker exited with code {servers.broker_exit_code}") from None
            raise
        finally:
            client.close()
        problems = servers.broker_log_problems()
    results: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "duration_s": round((datetime.datetime.now(datetime.UTC) - started).total_seconds(), 1),
        "environment": env,
        "config": {
            "messages": opts.messages,
            "value_bytes": produce.VALUE_SIZE,
            "runs": opts.runs,
            "raw_requests": opts.raw_requests,
            "latency_rate": opts.latency_rate,
            "latency_seconds": opts.latency_seconds,
        },
        "produce": produce_results,
        "fetch": fetch_results,
        **({"latency": lat} if lat else {}),
        **({"latency_high_rate": lat_high} if lat_high else {}),
        **({"latency_tuned": lat_tuned} if lat_tuned else {}),
        **({"latency_high_rate_tuned": lat_high_tuned} if lat_high_tuned else {}),
        **extras,
        "broker_log_problems": problems,
    }
    results["other_load_cores"] = report.other_load(results)
    return results
