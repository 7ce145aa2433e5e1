"""A stateful Kafka Streams application (tests/java/streams/OrderTotals.java, the pinned release's
kafka-streams) on a Schooner broker with exactly_once_v2: a repartition, an aggregation with its state
store and changelog, a stream-table join and a windowed count. The application is SIGKILLed in the middle
of its input and started again on the same state folder; what read_committed sees in its outputs must be
exactly what one clean run would have written: each order counted once, none joined twice or lost."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

import apache_kafka
from tests.java.topics import T, create, read_all

pytestmark = pytest.mark.application

SOURCE = Path(__file__).parent / "streams" / "OrderTotals.java"
ORDERS, CUSTOMERS, BASE = 400, 10, 1_700_000_000_000


class Topology:
    """One running OrderTotals; `lines` collects what it prints."""

    def __init__(self, bootstrap: str, state_dir: Path, protocol: str) -> None:
        classes = apache_kafka.compiled_classes(SOURCE)
        command = apache_kafka.java_command(
            "OrderTotals", bootstrap, "order-totals", str(state_dir), protocol, heap="384m", classes=classes
        )
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def wait_for(self, line: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while line not in self.lines:
            assert self.process.poll() is None, "\n".join(self.lines[-60:])
            assert time.monotonic() < deadline, f"no {line!r} within {timeout} s:\n" + "\n".join(
                self.lines[-60:]
            )
            time.sleep(0.2)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(T)


def order(i: int) -> tuple[str, str, int]:
    """Order i: its id, "customer,amount", and its timestamp (one a second, so 60 to a window)."""
    return f"o{i}", f"c{i % CUSTOMERS},{i % 50 + 1}", BASE + i * 1000


def run_and_kill_midway(
    bootstrap: str, state_dir: Path, protocol: str, while_running: Callable[[], None] = lambda: None
) -> None:
    """The application on its input, SIGKILLed halfway and started again; `while_running` is called
    once the restarted one has caught up."""
    for topic in ("orders", "customers", "totals", "regions", "windows"):
        create(bootstrap, topic, 3)
    # Kafka's partitioner (murmur2), as the repartition's: the table must be co-partitioned with it.
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "partitioner": "murmur2_random"}
    )
    for c in range(CUSTOMERS):  # the table's rows come before any order, in time too
        producer.produce("customers", f"r{c}".encode(), key=f"c{c}".encode(), timestamp=BASE - 60_000)
    producer.flush(T)

    def produce(orders: range) -> None:
        for i in orders:
            key, value, ts = order(i)
            producer.produce("orders", value.encode(), key=key.encode(), timestamp=ts)
            if i % 50 == 49:
                producer.flush(T)
                time.sleep(0.3)  # the application commits in the middle of the input
        assert producer.flush(T) == 0

    first = Topology(bootstrap, state_dir, protocol)
    try:
        first.wait_for("state RUNNING")
        produce(range(ORDERS // 2))
        deadline = time.monotonic() + 120
        while len(read_all(bootstrap, "regions", 3, "read_committed")) < ORDERS // 4:
            assert time.monotonic() < deadline, "the application wrote too little before the kill"
            time.sleep(0.2)
    finally:
        first.kill()  # in the middle of its input: its open transaction must be aborted on restart
    produce(range(ORDERS // 2, ORDERS))

    second = Topology(bootstrap, state_dir, protocol)
    try:
        deadline = time.monotonic() + 240
        while len(read_all(bootstrap, "regions", 3, "read_committed")) < ORDERS:
            assert second.process.poll() is None, "\n".join(second.lines[-60:])
            assert time.monotonic() < deadline, "the restarted application did not catch up"
            time.sleep(1)
        time.sleep(2)  # anything written twice would show up by now
        while_running()
    finally:
        second.kill()


def check_outputs(bootstrap: str) -> None:
    orders = [order(i) for i in range(ORDERS)]
    by_customer: dict[str, list[int]] = defaultdict(list)
    per_window: dict[str, int] = defaultdict(int)
    for _, value, ts in orders:
        customer, amount = value.split(",")
        by_customer[customer].append(int(amount))
        per_window[f"{customer}@{ts - ts % 60_000}"] += 1

    totals: dict[str, list[int]] = defaultdict(list)
    for _, _, key, value in read_all(bootstrap, "totals", 3, "read_committed"):
        totals[key].append(int(value))
    # Every order moves its customer's total once: one update per order, the last one the sum.
    assert {c: (len(t), t[-1]) for c, t in totals.items()} == {
        c: (len(a), sum(a)) for c, a in by_customer.items()
    }

    joined = [value for _, _, _, value in read_all(bootstrap, "regions", 3, "read_committed")]
    assert sorted(joined) == sorted(f"{o}:r{v.split(',')[0][1:]}" for o, v, _ in orders)

    counts: dict[str, list[int]] = defaultdict(list)
    for _, _, key, value in read_all(bootstrap, "windows", 3, "read_committed"):
        counts[key].append(int(value))
    assert {w: c[-1] for w, c in counts.items()} == per_window
    assert all(c == list(range(1, len(c) + 1)) for c in counts.values())


def test_a_stateful_exactly_once_topology_survives_a_sigkill(broker: Any, tmp_path: Path) -> None:
    run_and_kill_midway(broker.bootstrap, tmp_path / "state", "classic")
    check_outputs(broker.bootstrap)


def test_the_same_topology_on_the_streams_rebalance_protocol(broker: Any, tmp_path: Path) -> None:
    """KIP-1071 (group.protocol=streams): the broker creates the internal topics and assigns the tasks;
    kafka-streams-groups sees the group and its member."""
    seen: dict[str, str] = {}

    def tools() -> None:
        for what, args in {
            "list": ["--list"],
            "members": ["--describe", "--group", "order-totals", "--members", "--verbose"],
            "state": ["--describe", "--group", "order-totals", "--state"],
        }.items():
            done = apache_kafka.run_tool(
                "kafka-streams-groups", "--bootstrap-server", broker.bootstrap, *args
            )
            assert done.returncode == 0, done.stderr[-2000:]
            seen[what] = done.stdout

    run_and_kill_midway(broker.bootstrap, tmp_path / "state", "streams", tools)
    check_outputs(broker.bootstrap)
    assert "order-totals" in seen["list"].split()
    (member,) = [line for line in seen["members"].splitlines() if line.startswith("order-totals ")]
    # Both subtopologies' three tasks on the one member left, its epoch at the target's.
    assert " streams " in member and "ACTIVE: 0:[0,1,2]; 1:[0,1,2];" in member
    assert seen["state"].split()[-2:] == ["Stable", "1"]
