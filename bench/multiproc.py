"""Several broker processes on one host: `schooner broker --processes 2` against one process.

One redis-server, two deployments on it, each with a keyspace of its own: one broker process, and
`--processes 2` (two brokers of their own on consecutive ports; Metadata spreads the partition leaders
over both, so every client sends to and reads from both). They take turns at going first within each
run. A run produces N 100-byte records to a new 8-partition topic from several client processes at
once (confluent-kafka, acks=1, 500 records in a row per partition so batches fill), each connected
before the clock starts; then reads them back with one kcat per partition, all at once (timed from the
first record printed to the last kcat's exit). The ratios are 2 processes / 1 within a run (paired), and
the figures medians of the runs.

The CPU of each broker process, of redis-server, of the clients and of the whole machine over each
interval says what bounds the figure: on 2 cores, redis-server and the clients share the cores with
the brokers, so a second broker process can only take what the first one left idle (docs/benchmarks.md).
`python -m bench.multiproc` runs it alone; the suite calls run() (`--skip multiproc` leaves it out).
"""

from __future__ import annotations

import multiprocessing
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import redis
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.ops.processes import free_ports
from schooner.storage.keys import Keyspace
from schooner.storage.redis.embedded import EmbeddedRedis

from . import fetch, produce
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
PARTITIONS = 8
CLIENTS = 3  # producer processes
STRIDE = 500  # records in a row to one partition
SETUPS = (1, 2)  # broker processes


@dataclass
class Deployment:
    """Broker processes (`--processes n`) on one keyspace of the bench's redis-server."""

    processes: int
    keyspace: str
    port: int
    supervisor: subprocess.Popen[bytes]
    broker_pids: list[int]
    redis_url: str
    redis_pid: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cpu(self) -> tuple[list[float], float, float, float]:
        """CPU so far of each broker process, redis-server, this process and its finished children (kcat),
        and the whole machine."""
        brokers = [process_cpu_seconds(pid) for pid in self.broker_pids]
        return brokers, process_cpu_seconds(self.redis_pid), client_cpu_seconds(), machine_busy_seconds()


def _broker_pids(supervisor: int) -> list[int]:
    """The processes a `--processes n` supervisor spawned to serve (not multiprocessing's helper)."""
    kids = [int(p) for p in Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()]
    return sorted(p for p in kids if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes())


class MultiprocBench:
    """Context manager: a redis-server and the deployments, all stopped at the end (also after an error)."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._dir = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-mp-")))
        server = EmbeddedRedis(self._dir / "redis", persistent=False)
        self._stack.callback(server.stop)
        server.start()
        assert server.pid is not None
        self.redis_url, self.redis_pid = server.url, server.pid

    def deploy(self, processes: int) -> Deployment:
        port, keyspace = free_ports(2), f"mp{processes}"
        log = self._stack.enter_context((self._dir / f"{keyspace}.log").open("wb"))
        args = [*broker_command(), "broker", "--redis-url", self.redis_url, "--port", str(port),
                "--keyspace", keyspace, "--log-level", "WARNING", "--processes", str(processes)]  # fmt: skip
        supervisor = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self._stack.callback(stop_process, supervisor)
        for n in range(processes):
            wait_for_port(port + n, supervisor, timeout=60)
        pids = [supervisor.pid] if processes == 1 else _broker_pids(supervisor.pid)
        if len(pids) != processes:
            raise RuntimeError(f"found {len(pids)} broker processes, not {processes}")
        return Deployment(processes, keyspace, port, supervisor, pids, self.redis_url, self.redis_pid)

    def __enter__(self) -> MultiprocBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def _own_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _produce_client(bootstrap: str, topic: str, first: int, count: int, go: Event, out: Any) -> None:
    """One producer process: connects, waits for `go`, sends records first..first+count-1 (record n to
    partition (n // STRIDE) % PARTITIONS), flushes; reports (end time, CPU used, unacknowledged)."""
    producer = produce.make_producer(bootstrap)
    producer.list_topics(topic, timeout=15)  # connected before the clock starts
    value = produce.bench_value()
    go.wait()
    cpu = _own_cpu()
    for n in range(first, first + count):
        while True:
            try:
                producer.produce(topic, value, partition=(n // STRIDE) % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.005)
    left = producer.flush(120)
    out.put((time.monotonic(), _own_cpu() - cpu, left))
    produce.close_producer(producer, failed=bool(left))


def _cores(
    before: tuple[Any, ...], after: tuple[Any, ...], seconds: float, clients: float, records: int
) -> dict[str, Any]:
    """Cores busy over the interval: each broker process, all of them, redis-server, the clients, the
    whole machine, and the rest of it ("other": processes outside the bench, which disturb it)."""
    brokers = [round((b - a) / seconds, 2) for a, b in zip(before[0], after[0], strict=True)]
    out = {
        "brokers": brokers,
        "broker": round(sum(brokers), 2),
        "redis": round((after[1] - before[1]) / seconds, 2),
        "client": round(clients / seconds, 2),
        "machine": round((after[3] - before[3]) / seconds, 2),
    }
    out["other"] = round(max(0.0, out["machine"] - out["broker"] - out["redis"] - out["client"]), 2)
    # The broker processes' CPU per record (all of them): steadier than the rate on a busy machine.
    out["broker_us_per_record"] = round((sum(after[0]) - sum(before[0])) / records * 1e6, 3)
    return out


def _produce(d: Deployment, topic: str, messages: int) -> tuple[float, dict[str, Any]]:
    admin = AdminClient({"bootstrap.servers": d.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    spawn = multiprocessing.get_context("spawn")
    go, out = spawn.Event(), spawn.Queue()
    share = -(-messages // CLIENTS)
    slices = [(c * share, min(share, messages - c * share)) for c in range(CLIENTS)]
    # Daemons: an interrupted bench does not wait for them at exit.
    clients = [
        spawn.Process(target=_produce_client, args=(d.bootstrap, topic, first, count, go, out), daemon=True)
        for first, count in slices
    ]
    try:
        for client in clients:
            client.start()
        time.sleep(2.0)  # every client connected (list_topics returns within this on an idle machine)
        before = d.cpu()
        started = time.monotonic()
        go.set()
        reports = [out.get(timeout=180) for _ in clients]
        ended = max(r[0] for r in reports)
        after = d.cpu()
    finally:
        done = go.is_set()  # else they wait for it forever: stopped at once
        for client in clients:
            client.join(30 if done else 0)
            if client.is_alive():
                client.kill()
    seconds = ended - started
    stored = _stored(d, topic)
    if any(r[2] for r in reports) or sum(stored) != messages:
        raise RuntimeError(f"{topic}: {sum(r[2] for r in reports)} unacknowledged, {sum(stored)} stored")
    return messages / seconds, _cores(before, after, seconds, sum(r[1] for r in reports), messages)


def _stored(d: Deployment, topic: str) -> list[int]:
    """Entries in each partition's stream."""
    client = redis.Redis.from_url(d.redis_url)
    try:
        return [int(client.xlen(Keyspace(d.keyspace).stream(topic, p))) for p in range(PARTITIONS)]
    finally:
        client.close()


def _leaders(d: Deployment, topic: str) -> int:
    """How many brokers lead the topic's partitions (Metadata): 2 when both processes serve it."""
    metadata = AdminClient({"bootstrap.servers": d.bootstrap}).list_topics(topic, timeout=15)
    return len({p.leader for p in metadata.topics[topic].partitions.values()})


def _fetch(d: Deployment, topic: str, messages: int) -> tuple[float, dict[str, Any]]:
    """One kcat per partition, all at once, from the beginning to the end. The rate counts from the
    first record any of them printed to the last exit: kcat's start-up (metadata, connections, offset
    lookup) is a fixed cost of each run, not the brokers' speed, and would weigh on runs this short."""
    per_partition = _stored(d, topic)

    def read(p: int) -> tuple[float, fetch.KcatRun]:
        started = time.monotonic()
        return started, fetch.kcat_consume(d.bootstrap, topic, per_partition[p], partition=p)

    before = d.cpu()
    with ThreadPoolExecutor(PARTITIONS) as pool:
        runs = list(pool.map(read, range(PARTITIONS)))
    after = d.cpu()
    first = min(t + r.first_record_seconds for t, r in runs)
    seconds = max(t + r.seconds for t, r in runs) - first
    total = sum(r.messages for _, r in runs)
    if total != messages:
        raise RuntimeError(f"{topic}: kcat read {total} of {messages}")
    whole = max(t + r.seconds for t, r in runs) - min(t for t, _ in runs)
    return messages / seconds, _cores(before, after, whole, after[2] - before[2], messages)


def run(messages: int = MESSAGES, runs: int = RUNS) -> dict[str, Any]:
    rates: dict[str, dict[int, list[float]]] = {k: {n: [] for n in SETUPS} for k in ("produce", "fetch")}
    cores: dict[str, dict[int, list[dict[str, Any]]]] = {k: {n: [] for n in SETUPS} for k in rates}
    with MultiprocBench() as bench:
        deployed = {n: bench.deploy(n) for n in SETUPS}
        for run_no in range(runs):
            order = SETUPS if run_no % 2 == 0 else SETUPS[::-1]  # each takes its turn at going first
            topic = f"bench-multiproc-{run_no}"
            for kind, measure in (("produce", _produce), ("fetch", _fetch)):
                for n in order:
                    rate, busy = measure(deployed[n], topic, messages)
                    rates[kind][n].append(rate)
                    cores[kind][n].append(busy)
        leaders = {f"{n}p": _leaders(deployed[n], "bench-multiproc-0") for n in SETUPS}
    out: dict[str, Any] = {"messages": messages, "runs": runs, "partitions": PARTITIONS, "clients": CLIENTS}
    out["leaders"] = leaders
    for kind in rates:
        for n in SETUPS:
            out[f"{kind}_{n}p_msgs_per_s"] = round(statistics.median(rates[kind][n]))
            out[f"{kind}_{n}p_cores"] = _mean_cores(cores[kind][n])
            per_record = [c["broker_us_per_record"] for c in cores[kind][n]]
            out[f"{kind}_{n}p_broker_us_per_record"] = round(statistics.median(per_record), 2)
        paired = [two / one for two, one in zip(rates[kind][2], rates[kind][1], strict=True)]
        out[f"{kind}_ratio"] = round(statistics.median(paired), 3)
    out["rates"] = {kind: {f"{n}p": r for n, r in by.items()} for kind, by in rates.items()}
    return out


def _mean_cores(samples: list[dict[str, Any]]) -> dict[str, Any]:
    names = ("broker", "redis", "client", "machine", "other")
    mean = {k: round(statistics.mean(s[k] for s in samples), 2) for k in names}
    columns = zip(*(s["brokers"] for s in samples), strict=True)
    return {**mean, "brokers": [round(statistics.mean(c), 2) for c in columns]}


def main() -> int:
    results = run()
    for name, value in results.items():
        print(f"{name:30} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
