"""Schooner on Redis Cluster: produce and fetch with 1 and with 3 primaries, and the failover time.

Four setups run side by side, taking turns at going first within each run, with the same clients:
- one broker process on one redis-server without cluster mode (for reference: the cost of the mode);
- one broker process on a cluster of 1 primary (every slot on one redis-server): the base;
- one broker process on a cluster of 3 primaries;
- two broker processes on that same 3-primary cluster (a keyspace of their own): Metadata spreads the
  partition leaders over both, so the one client sends to and reads from both.
No replicas, and the producer uses acks=1, as in the single-server figures. Each run produces N
100-byte records to a new 12-partition topic (the partitions' slots spread over the 3 primaries) with
one confluent-kafka Producer (500 records in a row per partition, so batches fill), then reads them
back with kcat (every partition, start to exit). Ratios are each setup / 1 primary within a run;
the figures are medians of the runs. Cores busy (brokers, redis-servers, clients, whole machine) say
what bounds each: on a 2-core machine, produce fills both cores (broker, Redis and client about
0.5 / 0.75 / 0.45 of a core) whatever the number of primaries, and fetch is bound by the one broker
process, which a second broker process relieves.

Failover: on a fresh 3-primary cluster with a replica each (node timeout 2 s), an idempotent acks=all
producer writes 2,000 records/s over 12 partitions; the primary of partition 0 is SIGKILLed, and the
figure is the time from the kill to the first acknowledgement of a record produced after it to that
primary's partitions, beside the time until its replica was promoted (medians of the runs). Each run
checks that no acknowledged record was lost or stored twice.
`python -m bench.cluster` runs it alone; the suite calls run() (`--skip cluster` leaves it out).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from redis.cluster import RedisCluster

from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.embedded import EmbeddedRedis, free_port
from schooner.storage.redis.embedded_cluster import EmbeddedCluster

from . import fetch, memory, produce
from .servers import (
    broker_command,
    client_cpu_seconds,
    machine_busy_seconds,
    process_cpu_seconds,
    stop_process,
    wait_for_port,
)

MESSAGES = 240_000
RUNS = 3
FAILOVER_RUNS = 3
PARTITIONS = 12
STRIDE = 500  # records in a row to one partition, so that batches fill as with one partition
NODE_TIMEOUT_MS = 2000
FAILOVER_RATE = 2000  # records per second during the failover runs
SETUPS = ("1 server", "1 primary", "3 primaries", "3 primaries, 2 brokers")
SLUGS = dict(zip(SETUPS, ("server", "p1", "p3", "p3_b2"), strict=True))
BASE = "1 primary"  # the ratios divide by this setup's figure of the same run


@dataclass
class Deployment:
    """Broker processes on one keyspace of a Redis (a cluster, or one server for reference)."""

    url: str
    redis_pids: list[int]
    keyspace: str
    brokers: list[subprocess.Popen[bytes]]
    ports: list[int]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[0]}"

    def cpu_seconds(self) -> tuple[float, float, float, float]:
        """CPU so far of the broker processes, the redis-servers, this process and its finished children
        (kcat), and the whole machine."""
        brokers = sum(process_cpu_seconds(b.pid) for b in self.brokers)
        servers = sum(process_cpu_seconds(pid) for pid in self.redis_pids)
        return brokers, servers, client_cpu_seconds(), machine_busy_seconds()


class ClusterBench:
    """Context manager: Redis servers and broker processes, all stopped at the end (also after an error)."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._dir = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-cluster-")))

    def cluster(self, primaries: int, replicas: int) -> EmbeddedCluster:
        made = EmbeddedCluster(
            self._dir / f"cluster-{time.monotonic_ns()}", primaries, replicas, node_timeout_ms=NODE_TIMEOUT_MS
        )
        self._stack.callback(made.stop)
        made.start()
        return made

    def server(self) -> EmbeddedRedis:
        made = EmbeddedRedis(self._dir / "server", persistent=False)
        self._stack.callback(made.stop)
        made.start()
        return made

    def deploy(self, redis: EmbeddedRedis | EmbeddedCluster, keyspace: str, brokers: int = 1) -> Deployment:
        processes, ports = [], []
        for i in range(brokers):
            port = free_port()
            log = self._stack.enter_context((self._dir / f"{keyspace}-{i}-{port}.log").open("wb"))
            args = [*broker_command(), "broker", "--redis-url", redis.url, "--port", str(port),
                    "--keyspace", keyspace, "--log-level", "WARNING"]  # fmt: skip
            process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            self._stack.callback(stop_process, process)
            wait_for_port(port, process, timeout=30)
            processes.append(process)
            ports.append(port)
        nodes = redis.nodes if isinstance(redis, EmbeddedCluster) else [redis]
        return Deployment(redis.url, [n.pid for n in nodes if n.pid], keyspace, processes, ports)

    def __enter__(self) -> ClusterBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def _create(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def _stored(d: Deployment, topic: str) -> tuple[int, int, int]:
    """Entries in the topic's streams, the streams' bytes, and the bytes of all the partitions' keys
    (MEMORY USAGE ... SAMPLES 0)."""
    redis = client.connect_sync(d.url)
    ks = Keyspace(d.keyspace)
    try:
        entries = sum(int(redis.xlen(ks.stream(topic, p))) for p in range(PARTITIONS))
        streams = sum(memory.keys_memory(redis, [ks.stream(topic, p)]) for p in range(PARTITIONS))
        every = sum(memory.keys_memory(redis, ks.partition_keys(topic, p)) for p in range(PARTITIONS))
    finally:
        redis.close()
    return entries, streams, every


def _cores(before: tuple[float, ...], after: tuple[float, ...], seconds: float) -> dict[str, float]:
    """Cores busy over the interval: brokers, redis-servers, clients, and the machine in all."""
    spent = zip(("broker", "redis", "client", "machine"), before, after, strict=True)
    return {name: round((b - a) / seconds, 2) for name, a, b in spent}


def _produce(d: Deployment, topic: str, messages: int) -> tuple[float, dict[str, float]]:
    _create(d.bootstrap, topic)
    producer = produce.make_producer(d.bootstrap)
    producer.list_topics(topic, timeout=15)  # connected before the clock starts
    value = produce.bench_value()
    before = d.cpu_seconds()
    started = time.perf_counter()
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, value, partition=(i // STRIDE) % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.005)
    left = producer.flush(120)
    seconds = time.perf_counter() - started
    after = d.cpu_seconds()
    produce.close_producer(producer, failed=bool(left))
    stored = _stored(d, topic)[0]
    if left or stored != messages:
        raise RuntimeError(f"{topic}: {left} unacknowledged, {stored} stored of {messages}")
    return messages / seconds, _cores(before, after, seconds)


def _fetch(d: Deployment, topic: str, messages: int) -> tuple[float, dict[str, float]]:
    before = d.cpu_seconds()
    read = fetch.kcat_consume(d.bootstrap, topic, messages, partition=None)
    return read.msgs_per_s, _cores(before, d.cpu_seconds(), read.seconds)


def run(messages: int = MESSAGES, runs: int = RUNS, failover_runs: int = FAILOVER_RUNS) -> dict[str, Any]:
    rates: dict[str, dict[str, list[float]]] = {k: {s: [] for s in SETUPS} for k in ("produce", "fetch")}
    cores: dict[str, dict[str, list[dict[str, float]]]] = {k: {s: [] for s in SETUPS} for k in rates}
    with ClusterBench() as bench:
        three = bench.cluster(3, 0)
        deployed = (
            bench.deploy(bench.server(), "bs"),
            bench.deploy(bench.cluster(1, 0), "b1"),
            bench.deploy(three, "b3"),
            bench.deploy(three, "b3x2", 2),
        )
        setups = dict(zip(SETUPS, deployed, strict=True))
        for run_no in range(runs):
            turn = run_no % len(SETUPS)
            order = SETUPS[turn:] + SETUPS[:turn]  # each setup takes its turn at going first
            topic = f"bench-cluster-{run_no}"
            for kind, measure in (("produce", _produce), ("fetch", _fetch)):
                for name in order:
                    rate, busy = measure(setups[name], topic, messages)
                    rates[kind][name].append(rate)
                    cores[kind][name].append(busy)
        entries, stream_bytes, partition_bytes = _stored(setups[BASE], "bench-cluster-0")
    out: dict[str, Any] = {"messages": messages, "runs": runs, "partitions": PARTITIONS}
    for kind in rates:
        for name in SETUPS:
            out[f"{kind}_{SLUGS[name]}_msgs_per_s"] = round(statistics.median(rates[kind][name]))
            paired = [r / b for r, b in zip(rates[kind][name], rates[kind][BASE], strict=True)]
            out[f"{kind}_{SLUGS[name]}_ratio"] = round(statistics.median(paired), 3)
        out[f"{kind}_cores"] = {
            SLUGS[name]: {
                k: round(statistics.mean(c[k] for c in cores[kind][name]), 2) for k in cores[kind][name][0]
            }
            for name in SETUPS
        }
    out["stream_bytes_per_record"] = round(stream_bytes / entries, 2)
    out["partition_bytes_per_record"] = round(partition_bytes / entries, 2)
    failovers = [_failover(n) for n in range(failover_runs)]
    out["failover_s"] = round(statistics.median(f["acked_s"] for f in failovers), 2)
    out["promoted_s"] = round(statistics.median(f["promoted_s"] for f in failovers), 2)
    out["failover_runs"] = failovers
    out["rates"] = rates
    return out


class _SteadyProducer(threading.Thread):
    """An idempotent acks=all producer writing record n to partition n % PARTITIONS at a steady pace."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.sent_at: list[float] = []
        self.acked: list[tuple[int, int, float]] = []  # partition, number, when
        self.failed = 0
        self.unflushed = -1
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._produce()
        except BaseException as exc:  # a fatal client error: reported by _fail_over
            self.error = exc

    def _produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
        )
        per_tick = FAILOVER_RATE // 100
        while not self.stop.is_set():
            for _ in range(per_tick):
                n = len(self.sent_at)
                self.sent_at.append(time.monotonic())
                producer.produce(self.topic, b"%d" % n, partition=n % PARTITIONS, on_delivery=self._done)
            producer.poll(0)
            time.sleep(0.01)
        self.unflushed = producer.flush(90)

    def _done(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed += 1
        else:
            self.acked.append((msg.partition(), int(msg.value()), time.monotonic()))

    def acked_after(self, moment: float, partitions: set[int]) -> float | None:
        times = [t for p, n, t in list(self.acked) if p in partitions and self.sent_at[n] >= moment]
        return min(times) - moment if times else None


def _failover(run_no: int) -> dict[str, Any]:
    with ClusterBench() as bench:  # stopped before the next run
        return _fail_over(bench, run_no)


def _fail_over(bench: ClusterBench, run_no: int) -> dict[str, Any]:
    cluster = bench.cluster(3, 1)
    d = bench.deploy(cluster, "bf")
    topic = f"bench-failover-{run_no}"
    _create(d.bootstrap, topic)
    ks = Keyspace(d.keyspace)
    rc = RedisCluster.from_url(cluster.url, require_full_coverage=False)
    placed = {p: rc.get_node_from_key(ks.stream(topic, p)).port for p in range(PARTITIONS)}
    victim = placed[0]
    on_victim = {p for p, port in placed.items() if port == victim}
    producer = _SteadyProducer(d.bootstrap, topic)
    producer.start()
    time.sleep(3)
    killed_at = time.monotonic()
    cluster.node_for_port(victim).kill()
    promoted_at = None
    deadline = killed_at + 60
    while (acked := producer.acked_after(killed_at, on_victim)) is None or promoted_at is None:
        if producer.error is not None:
            raise RuntimeError(f"the producer failed: {producer.error}")
        if promoted_at is None:
            primaries = cluster.primary_ports()
            if victim not in primaries and len(primaries) == 3:
                promoted_at = time.monotonic()
        if time.monotonic() > deadline:
            raise RuntimeError("no acknowledgement from the killed primary's partitions within 60 s")
        time.sleep(0.05)
    time.sleep(1)
    producer.stop.set()
    producer.join(120)
    if producer.error or producer.failed or producer.unflushed:
        raise RuntimeError(
            f"failover run: {producer.failed} failed, {producer.unflushed} unflushed, {producer.error}"
        )
    rc.nodes_manager.initialize()
    entries: list[Any] = [e for p in range(PARTITIONS) for e in rc.xrange(ks.stream(topic, p)) or []]
    stored = [int(fields[b"value"]) for _, fields in entries]
    rc.close()
    acked_numbers = {n for _, n, _ in producer.acked}
    lost, duplicated = len(acked_numbers - set(stored)), len(stored) - len(set(stored))
    if lost or duplicated:
        raise RuntimeError(f"failover run: {lost} acknowledged records lost, {duplicated} duplicated")
    return {
        "acked_s": round(acked, 2),
        "promoted_s": round(promoted_at - killed_at, 2),
        "records": len(producer.sent_at),
        "lost": lost,
        "duplicated": duplicated,
    }


def main() -> int:
    results = run()
    for name, value in results.items():
        if name not in ("rates", "failover_runs"):
            print(f"{name:32} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
