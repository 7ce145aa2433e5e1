"""Three consumer processes share six partitions and 10,000 messages: exactly once while all of them live;
at least once, with nothing lost, when one is killed with SIGKILL in the middle of a batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from schooner.mq import Admin, OutgoingMessage, Producer
from schooner.storage.keys import Keyspace
from schooner.storage.log import entry

from .conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 10_000
LEASE_MS = 1500


@pytest.fixture
def workers(url: str, ks: Keyspace) -> Iterator[Any]:
    started: list[subprocess.Popen[bytes]] = []

    def spawn(member: str, *extra: str) -> subprocess.Popen[bytes]:
        # extra options come last, so they win over these (argparse keeps the last value)
        cmd = [sys.executable, "-m", "tests.mq.worker", url, ks.prefix, "orders", member,
               "--lease-ms", str(LEASE_MS), *extra]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        started.append(proc)
        return proc

    yield spawn
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def produce(url: str, ks: Keyspace) -> None:
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    producer.send_batch("orders", [OutgoingMessage(b"m%d" % i, key=b"m%d" % i) for i in range(MESSAGES)])
    producer.close()


def value_of(redis: Any, ks: Keyspace, partition: int, entry_id: str) -> bytes:
    ((_, fields),) = redis.execute_command("XRANGE", ks.stream("orders", partition), entry_id, entry_id)
    return entry.parse_fields(fields)[2] or b""


def counts(redis: Any, ks: Keyspace, suffix: str = "") -> dict[bytes, int]:
    return {k: int(v) for k, v in redis.hgetall(f"{ks.prefix}:HANDLED{suffix}").items()}


def test_three_processes_handle_each_message_exactly_once(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, workers: Any
) -> None:
    make_topic("orders", 6)
    admin = Admin(url, keyspace=ks)
    procs = [workers(name, "--sleep-ms", "0.2") for name in ("w0", "w1", "w2")]
    wait_until(lambda: sorted(o.member or "" for o in admin.owners("orders", "workers")) ==
               ["w0", "w0", "w1", "w1", "w2", "w2"], timeout=30)  # fmt: skip
    produce(url, ks)
    wait_until(lambda: redis.hlen(f"{ks.prefix}:HANDLED") >= MESSAGES, timeout=60)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    assert [proc.wait(60) for proc in procs] == [0, 0, 0]  # a graceful stop; slow only on a loaded machine
    handled = counts(redis, ks)
    assert len(handled) == MESSAGES and set(handled.values()) == {1}
    assert all(len(counts(redis, ks, f":w{i}")) > 1000 for i in range(3))  # all three did a share
    assert sum(lag.messages for lag in admin.lag("orders", "workers")) == 0
    assert admin.members("orders", "workers") == []  # each left on SIGTERM


def test_a_killed_process_loses_nothing(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, workers: Any
) -> None:
    make_topic("orders", 6)
    admin = Admin(url, keyspace=ks)
    # The victim's lease outlives its stall by far, so what it holds is still its own when it is killed.
    victim = workers("w0", "--sleep-ms", "0.2", "--stall-after", "700", "--lease-ms", "4000")
    survivors = [workers(name, "--sleep-ms", "0.2") for name in ("w1", "w2")]
    wait_until(lambda: len({o.member for o in admin.owners("orders", "workers")} - {None}) == 3, timeout=30)
    produce(url, ks)
    wait_until(lambda: redis.exists(f"{ks.prefix}:STALLED:w0"), timeout=60)
    held = [o.partition for o in admin.owners("orders", "workers") if o.member == "w0"]
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    stranded = [p for p in admin.pending("orders", "workers", limit=10**6) if p.consumer == "w0"]
    assert held and stranded, (held, stranded)  # it died holding partitions and a fetched batch
    stranded_values = {value_of(redis, ks, p.partition, p.entry_id) for p in stranded}
    wait_until(lambda: redis.hlen(f"{ks.prefix}:HANDLED") >= MESSAGES, timeout=60)
    handled = counts(redis, ks)
    assert len(handled) == MESSAGES  # every message handled at least once: none lost
    wait_until(lambda: sum(lag.messages for lag in admin.lag("orders", "workers")) == 0, timeout=10)
    assert {o.member for o in admin.owners("orders", "workers")} <= {"w1", "w2"}
    assert not any(p.consumer == "w0" for p in admin.pending("orders", "workers", limit=10**6))
    by_survivors = {**counts(redis, ks, ":w1"), **counts(redis, ks, ":w2")}
    assert stranded_values <= set(by_survivors)  # its pending entries were taken over
    twice = {k for k, n in handled.items() if n > 1}
    assert twice <= stranded_values, twice - stranded_values  # only what the victim handled, not acked
    for proc in survivors:
        proc.send_signal(signal.SIGTERM)
    assert [proc.wait(15) for proc in survivors] == [0, 0]
