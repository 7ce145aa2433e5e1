"""Group consumers for group tests: one small interface over the three Python Kafka clients' classic
group consumers, and a KIP-848 member of confluent-kafka."""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

Consumed = tuple[str, int, int]  # topic, partition, offset


class ClientThread(threading.Thread, ABC):
    """A client running on a thread of its own until stop_event is set; an exception it raises is kept
    in `error` for the test to surface."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(daemon=True, name=name)
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    @abstractmethod
    def _run(self) -> None:
        """The client's work, until stop_event is set."""


class GroupMember(ClientThread):
    """Runs a client's consumer in a group: poll a batch, commit after processing, count it only if the
    commit succeeded (a failed commit means another member will get those records)."""

    def __init__(
        self, kind: str, bootstrap: str, group: str, topic: str, pace: float = 0.0, **conf: Any
    ) -> None:
        super().__init__(name=f"{kind}-member")
        self.kind, self.bootstrap, self.group, self.topic, self.conf = kind, bootstrap, group, topic, conf
        self.pace = pace  # seconds of "processing" per batch, so that rebalances happen mid-stream
        self.consumed: list[Consumed] = []
        self.failed_commits = 0
        self.started_consuming = threading.Event()

    def _run(self) -> None:
        {"confluent": self._confluent, "kafka-python": self._kafka_python, "aiokafka": self._aiokafka}[
            self.kind
        ]()

    def _record(self, batch: list[Consumed], commit: Callable[[], None]) -> None:
        if not batch:
            return
        time.sleep(self.pace)
        try:
            commit()
        except Exception:
            self.failed_commits += 1
            return
        self.consumed.extend(batch)
        self.started_consuming.set()

    def _confluent(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 6000,
                **self.conf,
            }
        )
        c.subscribe([self.topic])
        try:
            while not self.stop_event.is_set():
                msgs = [m for m in c.consume(50, 0.3) if not m.error()]
                batch = [(m.topic(), m.partition(), m.offset()) for m in msgs]
                last: dict[int, int] = {}
                for _, p, o in batch:
                    last[p] = max(last.get(p, -1), o)
                offsets = [TopicPartition(self.topic, p, o + 1) for p, o in last.items()]
                self._record(batch, lambda o=offsets: c.commit(offsets=o, asynchronous=False))
        finally:
            c.close()

    def _kafka_python(self) -> None:
        from kafka import KafkaConsumer, OffsetAndMetadata
        from kafka import TopicPartition as KTP
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        c = KafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=50,
            session_timeout_ms=6000,
            partition_assignment_strategy=[RangePartitionAssignor],
            **self.conf,
        )
        try:
            while not self.stop_event.is_set():
                records = [r for rs in c.poll(300).values() for r in rs]
                batch = [(r.topic, r.partition, r.offset) for r in records]
                last: dict[int, int] = {}
                for _, p, o in batch:
                    last[p] = max(last.get(p, -1), o)
                offsets = {KTP(self.topic, p): OffsetAndMetadata(o + 1, "", -1) for p, o in last.items()}
                self._record(batch, lambda o=offsets: c.commit(o))
        finally:
            c.close()

    def _aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka import TopicPartition as ATP
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor

        async def main() -> None:
            c = AIOKafkaConsumer(
                self.topic,
                bootstrap_servers=self.bootstrap,
                group_id=self.group,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                session_timeout_ms=6000,
                partition_assignment_strategy=(RangePartitionAssignor,),
                **self.conf,
            )
            await c.start()
            try:
                while not self.stop_event.is_set():
                    records = [
                        r for rs in (await c.getmany(timeout_ms=300, max_records=50)).values() for r in rs
                    ]
                    batch = [(r.topic, r.partition, r.offset) for r in records]
                    last: dict[int, int] = {}
                    for _, p, o in batch:
                        last[p] = max(last.get(p, -1), o)
                    if not batch:
                        continue
                    await asyncio.sleep(self.pace)
                    try:
                        await c.commit({ATP(self.topic, p): o + 1 for p, o in last.items()})
                    except Exception:
                        self.failed_commits += 1
                        continue
                    self.consumed.extend(batch)
                    self.started_consuming.set()
            finally:
                await c.stop()

        asyncio.run(main())


class ConsumerProtocolMember(ClientThread):
    """A KIP-848 (group.protocol=consumer) member of confluent-kafka: poll a batch, commit after
    processing, count the batch only if the commit succeeded; after a failed commit, go back to the last
    commit so nothing is skipped."""

    def __init__(self, bootstrap: str, group: str, topic: str, pace: float = 0.0, **conf: Any) -> None:
        super().__init__()
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **conf,
        }
        self.topic, self.pace = topic, pace
        self.consumed: list[Consumed] = []
        self.failed_commits = 0
        self.assignments: list[set[int]] = []
        self.started_consuming = threading.Event()

    def _run(self) -> None:
        c = Consumer(self.conf)
        c.subscribe(
            [self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )
        try:
            while not self.stop_event.is_set():
                # A batch may hold records of partitions revoked while consume() ran: the revocation is
                # acknowledged already, another member may be reading them, and a commit under the epoch
                # that followed would be accepted (epochs fence members, not partitions). Drop them.
                msgs = [m for m in c.consume(50, 0.2) if not m.error()]
                owned_now = {tp.partition for tp in c.assignment()}
                msgs = [m for m in msgs if m.partition() in owned_now]
                if not msgs:
                    continue
                time.sleep(self.pace)
                first: dict[int, int] = {}
                last: dict[int, int] = {}
                for m in msgs:
                    first.setdefault(m.partition(), m.offset())
                    last[m.partition()] = m.offset()
                try:
                    done = c.commit(offsets=[TopicPartition(self.topic, p, o + 1) for p, o in last.items()],
                                    asynchronous=False)  # fmt: skip
                    # librdkafka raises only when every partition failed; one partition's error is in its row.
                    if any(tp.error is not None for tp in done or ()):
                        raise KafkaException(next(tp.error for tp in done if tp.error is not None))
                except KafkaException:
                    self.failed_commits += 1
                    owned = {tp.partition for tp in c.assignment()}
                    for p, o in first.items():
                        if p in owned:
                            c.seek(TopicPartition(self.topic, p, o))
                    continue
                self.consumed.extend((m.topic(), m.partition(), m.offset()) for m in msgs)
                self.started_consuming.set()
        finally:
            c.close()

    # Incremental callbacks: what is added or taken away; `assignments` keeps each resulting set.
    def _on_assign(self, _: Consumer, partitions: list[TopicPartition]) -> None:
        self.assignments.append(
            (self.assignments[-1] if self.assignments else set()) | {tp.partition for tp in partitions}
        )

    def _on_revoke(self, _: Consumer, partitions: list[TopicPartition]) -> None:
        self.assignments.append(
            (self.assignments[-1] if self.assignments else set()) - {tp.partition for tp in partitions}
        )

    def finish(self) -> None:
        self.stop_event.set()
        self.join(30)
