"""A tiered topic fed faster than its archiver through a Redis much smaller than the data, as a user runs
it: `schooner broker` on the embedded default with a small --redis-maxmemory. The producer is slowed
and made to wait as Redis nears the broker's high-water mark (broker/memory.py), never failed; the
archiver and the trims run whatever Redis' memory; the broker's own writes are never refused for
memory, so its registration never lapses; and a node SIGKILLed half-way comes back over its data and
carries on. Every record is acknowledged once, and a group reads each once from offset 0."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.storage.redis.embedded import free_port
from tests.ops.helpers import SCHOONER, wait_for_port

pytestmark = pytest.mark.single_redis  # its own embedded redis-server, whatever the suite runs on

RECORDS = 300_000
VALUE = b"v" * 250  # 75 MB of values through a 32 MB Redis
MAXMEMORY = "32mb"
PARTITIONS = 4
# What the broker must never say: its own writes refused, its registration lapsed, the archiver stuck.
NEVER = (
    "heartbeat failed",
    "registration had lapsed",
    "archiver failed",
    "partition sweep",
    "when used memory",
)


class Node:
    """`schooner broker` with its embedded redis-server, in a process group of its own."""

    def __init__(self, data: Path, port: int) -> None:
        self.data, self.port = data, port
        self.log = data.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.maxmemory, self.archive_interval_ms = MAXMEMORY, "1000"

    def start(self) -> None:
        env = {**os.environ, "SCHOONER_ARCHIVE_INTERVAL_MS": self.archive_interval_ms}
        args = [SCHOONER, "broker", "--data-dir", str(self.data), "--port", str(self.port),
                "--redis-maxmemory", self.maxmemory, "--broker-id", "1"]  # fmt: skip
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=out, env=env, start_new_session=True)
        wait_for_port(self.port, self.proc, timeout=60)

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url((self.data / "redis" / "url").read_text().strip())

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)  # the broker and its redis-server
        self.proc.wait()
        subprocess.run(["pkill", "-9", "-f", f"redis-server.*{self.data}"], check=False)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(60)


class MemoryWatch:
    """Samples Redis' memory as it counts it against maxmemory, every 50 ms, across restarts."""

    def __init__(self, node: Node) -> None:
        self.node, self.over_seconds, self.peak = node, 0.0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client = self.node.redis()
        while not self._stop.wait(0.05):
            try:
                info = client.info("memory")
            except redis.RedisError:  # killed, or not back yet
                client = self.node.redis()
                continue
            limit = int(info["maxmemory"])
            fill = (int(info["used_memory"]) - int(info.get("mem_not_counted_for_evict", 0))) / limit
            self.peak = max(self.peak, fill)
            if fill > 1:
                self.over_seconds += 0.05

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("kill", [False, True], ids=["steady", "node-killed-half-way"])
def test_a_tiered_topic_through_a_small_redis_loses_fails_and_repeats_nothing(
    tmp_path: Path, kill: bool
) -> None:
    node = Node(tmp_path / "node", free_port())
    node.start()
    try:
        bootstrap = f"127.0.0.1:{node.port}"
        configs = {"remote.storage.enable": "true", "local.retention.bytes": str(1 << 20)}
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("pressed", PARTITIONS, 1, config=configs)])["pressed"].result(30)
        watch = MemoryWatch(node)
        failed: list[Any] = []
        acked = [0]

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                failed.append(err)
            else:
                acked[0] += 1

        # A producer with default settings but for idempotence, acks=all and a linger (the issue's).
        producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 10}
        )
        for i in range(RECORDS):
            while True:
                try:
                    producer.produce("pressed", VALUE, b"%d" % i, on_delivery=delivered)
                    break
                except BufferError:  # the client's queue is full while the broker slows it
                    producer.poll(0.05)
            if kill and i == RECORDS // 2:
                node.kill()
                node.start()
        assert producer.flush(300) == 0
        watch.stop()
        assert failed == [] and acked[0] == RECORDS
        said = node.log.read_text(errors="replace")
        assert not [line for line in said.splitlines() if any(n in line for n in NEVER)]
        assert watch.over_seconds <= 1.0, (watch.over_seconds, watch.peak)
        # The archiver moved most of it: Redis could never have held it all.
        client = node.redis()
        archived = sum(
            int(client.hget(f"schooner:pstate:{{pressed:{p}}}", "archived_end") or 0) for p in range(4)
        )
        assert archived > RECORDS // 2

        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "reader", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["pressed"])
        seen: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + 120
        while len(seen) < RECORDS and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 1):
                assert message.error() is None, message.error()
                assert (message.partition(), message.offset()) not in seen
                assert message.value() == VALUE
                seen[(message.partition(), message.offset())] = message.key()
        consumer.close()
        assert sorted(int(k) for k in seen.values()) == list(range(RECORDS))  # each record once
        for p in range(PARTITIONS):  # from offset 0, with no gap
            offsets = sorted(o for q, o in seen if q == p)
            assert offsets == list(range(len(offsets)))
    finally:
        node.stop()


def test_a_node_restarted_over_its_memory_limit_archives_first_then_takes_records(tmp_path: Path) -> None:
    """An AOF that loads past maxmemory (here: the node restarted with a smaller --redis-maxmemory): the
    broker registers, the archiver frees memory, and produce resumes once Redis is below the mark."""
    node = Node(tmp_path / "node", free_port())
    node.maxmemory, node.archive_interval_ms = "512mb", "600000"  # nothing archived in the first life
    node.start()
    bootstrap = f"127.0.0.1:{node.port}"
    try:
        configs = {"remote.storage.enable": "true", "local.retention.bytes": str(1 << 20)}
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("restarted", PARTITIONS, 1, config=configs)])["restarted"].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 10})
        for i in range(200_000):  # 50 MB of values
            while True:
                try:
                    producer.produce("restarted", VALUE, b"%d" % i)
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(120) == 0
        node.stop()
        node.maxmemory = "24mb"
        node.start()
        client = node.redis()
        info = client.info("memory")
        assert int(info["used_memory"]) > int(info["maxmemory"])  # it came back over its limit
        # Once the archiver has made room, records are taken again.
        late = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        failed: list[Any] = []
        late.produce("restarted", VALUE, b"200000", on_delivery=lambda e, m: failed.append(e) if e else None)
        assert late.flush(120) == 0 and failed == []
        info = client.info("memory")
        assert int(info["used_memory"]) < int(info["maxmemory"])
        said = node.log.read_text(errors="replace")
        assert not [line for line in said.splitlines() if any(n in line for n in NEVER)]
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "after", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["restarted"])
        keys: set[int] = set()
        deadline = time.monotonic() + 120
        while len(keys) < 200_001 and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 1):
                assert message.error() is None, message.error()
                keys.add(int(message.key()))
        consumer.close()
        assert keys == set(range(200_001))
    finally:
        node.stop()
