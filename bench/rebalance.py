"""Rebalance figure: time from a third member joining a 12-partition group to every partition being
consumed again, with the timeouts that bound it printed beside it."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 12
SESSION_MS = 6000
HEARTBEAT_MS = 1000
MAX_POLL_MS = 30000  # librdkafka's rebalance timeout


class _Member(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "latest",
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "max.poll.interval.ms": MAX_POLL_MS,
            "partition.assignment.strategy": "range",
        }
        self.topic = topic
        self.stop = threading.Event()
        self.assigned_at = 0.0
        self.assignment: list[int] = []
        self.first_after_assign: dict[int, float] = {}

    def run(self) -> None:
        c = Consumer(self.conf)

        def on_assign(consumer: Any, partitions: list[Any]) -> None:
            self.assigned_at = time.monotonic()
            self.assignment = [p.partition for p in partitions]
            self.first_after_assign = {}

        c.subscribe([self.topic], on_assign=on_assign)
        try:
            while not self.stop.is_set():
                m = c.poll(0.1)
                if m is not None and not m.error():
                    self.first_after_assign.setdefault(m.partition() or 0, time.monotonic())
        finally:
            c.close()


def run(bootstrap: str, topic: str = "bench-rebalance") -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    producing = threading.Event()
    producing.set()

    def produce() -> None:
        while producing.is_set():
            for p in range(PARTITIONS):
                producer.produce(topic, b"x" * 100, partition=p)
            producer.poll(0)
            time.sleep(0.01)  # about 1,200 records/s over the 12 partitions
        producer.flush(10)

    threading.Thread(target=produce, daemon=True).start()
    members = [_Member(bootstrap, topic, "bench-rebalance") for _ in range(2)]
    for m in members:
        m.start()
    deadline = time.monotonic() + 60
    while sum(len(m.first_after_assign) for m in members) < PARTITIONS:
        if time.monotonic() > deadline:
            raise RuntimeError("the first two members never consumed every partition")
        time.sleep(0.05)
    joined_at = time.monotonic()
    newcomer = _Member(bootstrap, topic, "bench-rebalance")
    newcomer.start()
    members.append(newcomer)
    deadline = time.monotonic() + 120
    while True:
        settled = all(m.assigned_at > joined_at for m in members) and sorted(
            p for m in members for p in m.assignment
        ) == list(range(PARTITIONS))
        if settled and all(set(m.assignment) <= set(m.first_after_assign) for m in members):
            break
        if time.monotonic() > deadline:
            raise RuntimeError("the group did not settle after the third member joined")
        time.sleep(0.02)
    consumed_again = max(t for m in members for t in m.first_after_assign.values()) - joined_at
    assigned = max(m.assigned_at for m in members) - joined_at
    for m in members:
        m.stop.set()
    producing.clear()
    for m in members:
        m.join(30)
    return {
        "members": 3,
        "partitions": PARTITIONS,
        "join_to_all_consuming_s": round(consumed_again, 3),
        "join_to_assigned_s": round(assigned, 3),
        "session_timeout_ms": SESSION_MS,
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "rebalance_timeout_ms": MAX_POLL_MS,
        "client": "confluent-kafka, eager range assignor",
    }
