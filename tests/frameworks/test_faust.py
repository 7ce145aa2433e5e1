"""faust-streaming (from PyPI) against the broker, as a new user runs it: `python app.py worker` in a
temp dir, with an agent that counts inputs per key in a Table (tests/frameworks/faust_counter.py).

- Memory stays flat across idle periods. With offsets that have gaps, faust expands every offset of a
  gap into a Python list when it commits: under the seeds' timestamp encoding its peak RSS grew by
  hundreds of MB after 5 s idle stretches. Dense offsets (the default) have no gaps.
- The group's committed offsets reach the end of the input partitions soon after processing.
- Over 20 clean stops and restarts, every input is processed exactly once, the Table's counts go on
  (recovered from its changelog), and after each clean stop the committed offsets are the partitions'
  ends: the broker kept faust's last commit and answers it to the next worker. (Under the timestamp
  encoding faust re-processed one or two inputs per restart: when a partition's last record follows a
  gap, its gap bookkeeping lists that record's offset twice, and it commits that offset rather than the
  next.)

Each cycle produces its inputs only once the worker is ready ("Worker ready": recovered, and seeked to
the committed offsets). Records already waiting while a worker starts meet a race in faust itself
(0.15.3, tables/recovery.py `on_recovery_completed`): it resumes the stream partitions, with the
fetcher running, and then awaits `perform_seek()`. Records fetched in that window are processed, then
fetched and processed again after the seek (duplicates); a record the stream dequeues while flow
control is still paused is skipped and acked, so the next commit passes over it (a loss). The broker's
answers in those runs were right (each OffsetFetch returned the last commit, each Fetch the records
from the offset asked for), and the window does not depend on them.
- With a RocksDB store whose data dir is deleted while the worker is down, the restarted worker
  rebuilds the Table from its changelog, which faust creates itself with cleanup.policy=compact and
  which the broker has compacted meanwhile (recovery reads a log with gaps).
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from schooner.storage.keys import Keyspace
from tests.broker.helpers import wait
from tests.conftest import RunningBroker

APP = Path(__file__).with_name("faust_counter.py")
APP_ID = "counter"
INPUT = "inputs"
PARTITIONS = 2
KEYS = 6  # key k<j> always goes to partition j % PARTITIONS, as the Table needs
MB = 1 << 20


@dataclass
class Line:
    """One processed input, as the app recorded it."""

    key: str
    value: str
    count: int
    partition: int
    offset: int


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path

    def ready(self) -> bool:
        assert self.process.poll() is None, self.tail()
        return "Worker ready" in self.log.read_text(errors="replace")

    def memory(self) -> tuple[int, int]:
        """(resident set size, its peak so far) in bytes, from /proc."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines())
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024

    def stop(self) -> float:
        """A clean stop (SIGTERM, wait for exit); returns how long it took."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(30) == 0, self.tail()
        return time.monotonic() - started

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@dataclass
class Faust:
    """The app's topics on the test broker, and the means to run workers, feed them and watch them."""

    broker: RunningBroker
    home: Path
    producer: Producer
    consumer: Consumer
    sent: list[str] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)

    @property
    def out(self) -> Path:
        return self.home / "processed.txt"

    @property
    def data_dir(self) -> Path:
        return self.home / f"{APP_ID}-data"

    def start(self, store: str = "memory://") -> Worker:
        env = {**os.environ, "APP_ID": APP_ID, "BOOTSTRAP": self.broker.bootstrap, "INPUT": INPUT,
               "PARTITIONS": str(PARTITIONS), "OUT": str(self.out), "STORE": store}  # fmt: skip
        log = self.home / f"worker-{len(self.workers)}.log"
        with open(log, "wb") as sink:
            # --without-web: the CLI overrides web_enabled, and every worker would bind port 6066.
            command = [sys.executable, APP.name, "worker", "-l", "info", "--without-web"]
            process = subprocess.Popen(command, cwd=self.home, env=env, stdout=sink, stderr=subprocess.STDOUT)
        worker = Worker(process, log)
        self.workers.append(worker)
        wait(worker.ready, 30, "the faust worker did not become ready")
        return worker

    def produce(self, count: int) -> None:
        for _ in range(count):
            n = len(self.sent)
            key = n % KEYS
            self.producer.produce(INPUT, key=b"k%d" % key, value=b"v%d" % n, partition=key % PARTITIONS)
            self.sent.append(f"v{n}")
        assert self.producer.flush(10) == 0

    def processed(self) -> list[Line]:
        if not self.out.exists():
            return []
        lines = []
        for text in self.out.read_text().splitlines():
            key, value, count, partition, offset = text.split()
            lines.append(Line(key, value, int(count), int(partition), int(offset)))
        return lines

    def wait_processed(self, timeout: float = 15) -> None:
        worker = self.workers[-1]
        wait(lambda: {line.value for line in self.processed()} >= set(self.sent), timeout,
             f"inputs not processed:\n{worker.tail()}")  # fmt: skip

    def committed(self) -> list[int]:
        tps = [TopicPartition(INPUT, p) for p in range(PARTITIONS)]
        return [tp.offset for tp in self.consumer.committed(tps, timeout=10)]

    def ends(self, topic: str = INPUT) -> list[int]:
        return [self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)]  # fmt: skip

    def counts(self) -> dict[str, list[int]]:
        """Each key's counts after each of its inputs, in processing order."""
        by_key: dict[str, list[int]] = collections.defaultdict(list)
        for line in self.processed():
            by_key[line.key].append(line.count)
        return dict(by_key)


@pytest.fixture
def faust(broker_factory: Callable[..., RunningBroker], tmp_path: Path) -> Iterator[Faust]:
    # A short sweep, so that the Table's changelog is compacted while a test runs.
    broker = broker_factory(retention_check_ms=200)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(INPUT, PARTITIONS, 1)])[INPUT].result(10)
    shutil.copy(APP, tmp_path / APP.name)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1})
    # Reads the app's committed offsets; it never subscribes, so it never joins the app's group.
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": APP_ID})
    rig = Faust(broker, tmp_path, producer, consumer)
    yield rig
    for worker in rig.workers:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait()
    consumer.close()


def wait_committed_to_end(rig: Faust, timeout: float) -> float:
    """Waits until the group's committed offsets are the partitions' ends; returns how long it took."""
    started = time.monotonic()
    ends = rig.ends()
    wait(lambda: rig.committed() == ends, timeout, f"committed {rig.committed()}, ends {ends}")
    return time.monotonic() - started


def test_memory_stays_flat_across_idle_periods(faust: Faust) -> None:
    worker = faust.start()
    faust.produce(20)
    faust.wait_processed()
    wait_committed_to_end(faust, 5)
    rss, peak = worker.memory()
    after_idle = []
    for _ in range(3):
        time.sleep(5)
        faust.produce(4)
        faust.wait_processed()
        wait_committed_to_end(faust, 5)
        after_idle.append(worker.memory())
    stretches = ", ".join(f"{r / MB:.1f} (peak {p / MB:.1f})" for r, p in after_idle)
    figures = f"RSS after warm-up {rss / MB:.1f} MB (peak {peak / MB:.1f}); after each idle {stretches}"
    print(figures)
    assert max(r for r, _ in after_idle) <= rss + 30 * MB, figures
    assert max(p for _, p in after_idle) <= peak + 30 * MB, figures
    worker.stop()


def test_commits_reach_the_last_processed_record(faust: Faust) -> None:
    faust.start()
    faust.produce(60)
    faust.wait_processed()
    took = wait_committed_to_end(faust, 5)
    print(f"committed to the end {took:.2f} s after the last input was processed")
    assert faust.ends() == [30, 30]  # dense offsets: the ends count the records
    assert sorted(line.value for line in faust.processed()) == sorted(faust.sent)


def test_clean_restarts_process_every_input_once(faust: Faust) -> None:
    duplicates, starts, stops = [], [], []
    for _ in range(20):
        before = len(faust.processed())
        started = time.monotonic()
        worker = faust.start()
        starts.append(time.monotonic() - started)
        faust.produce(3)
        faust.wait_processed()
        stops.append(worker.stop())
        assert faust.committed() == faust.ends(), "after a clean stop the commits are short of the ends"
        lines = faust.processed()
        seen = {line.value for line in lines[:before]}
        new = [line.value for line in lines[before:]]
        duplicates.append(len(new) - len(set(new) - seen))
    print(f"duplicates per cycle {duplicates}; longest start {max(starts):.1f} s, stop {max(stops):.1f} s")
    processed = collections.Counter(line.value for line in faust.processed())
    assert duplicates == [0] * 20
    assert processed == collections.Counter(faust.sent)
    # Each worker's counts went on from where the last one left them: recovered from the changelog.
    assert faust.counts() == {key: list(range(1, len(counts) + 1)) for key, counts in faust.counts().items()}


def test_table_is_rebuilt_from_its_compacted_changelog_after_its_data_dir_is_lost(
    faust: Faust, redis_client: redis.Redis
) -> None:
    worker = faust.start(store="rocksdb://")
    faust.produce(30)
    faust.wait_processed()
    worker.stop()
    changelog = f"{APP_ID}-counts-changelog"
    resource = ConfigResource(ConfigResource.Type.TOPIC, changelog)
    admin = AdminClient({"bootstrap.servers": faust.broker.bootstrap})
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["cleanup.policy"].value == "compact"
    assert sum(faust.ends(changelog)) == 30  # one change per input
    streams = [Keyspace(faust.broker.settings.keyspace).stream(changelog, p) for p in range(PARTITIONS)]
    wait(lambda: sum(redis_client.xlen(s) for s in streams) == KEYS, 15, "the changelog was not compacted")

    assert any(faust.data_dir.rglob("*.sst")) or any(faust.data_dir.rglob("*.log")), "no RocksDB files"
    shutil.rmtree(faust.data_dir)
    worker = faust.start(store="rocksdb://")
    faust.produce(KEYS)
    faust.wait_processed()
    worker.stop()
    assert faust.counts() == {f"k{k}": list(range(1, 7)) for k in range(KEYS)}
    assert faust.data_dir.exists(), "the restarted worker kept no table data"
