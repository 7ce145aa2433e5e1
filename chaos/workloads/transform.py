"""The exactly-once transform: consume from an input topic in a group (read_committed), produce
"out:" + value to the same partition of the output topic, and commit the consumed offsets in the same
transaction. Each transaction is one `txn` op, each poll one `poll` op."""

from __future__ import annotations

from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from ..history import TRANSFORM_OUTPUT_PREFIX, tp_key
from .base import Workload, kafka_error, record_of
from .producers import Deliveries, abort_transaction, close_confluent, end_transaction, transactional_producer

POLL_RECORDS = 20  # records per transaction, at most
POLL_S = 0.5


class TransactionalTransform(Workload):
    """options: source, sink, group, transactional_id."""

    def session(self) -> None:
        source: str = self.options["source"]
        sink: str = self.options["sink"]
        group: str = self.options["group"]
        transactional_id: str = self.options["transactional_id"]
        member = self.new_instance()
        self.new_session(member)
        consumer = Consumer(
            self.confluent_config(
                **{
                    "group.id": group,
                    "client.id": member,
                    "isolation.level": "read_committed",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 1000,
                },
            )
        )
        producer: Producer | None = None
        deliveries = Deliveries(self, member, transactional=True)
        try:
            consumer.subscribe(
                [source],
                on_assign=lambda *_: self.new_session(member),
                on_revoke=lambda *_: self.new_session(member),
                on_lost=lambda *_: self.new_session(member),
            )
            producer = transactional_producer(self, transactional_id, member)
            while not self.stopping:
                if not self._step(consumer, producer, deliveries, member, group, sink):
                    break  # the producer must be replaced: so is the consumer, with it
        finally:
            if producer is not None:
                close_confluent(producer, deliveries, self.drain_s)
            try:
                consumer.close()
            except (KafkaException, RuntimeError) as exc:
                self.error(f"consumer close: {exc}")

    def _step(
        self,
        consumer: Consumer,
        producer: Producer,
        deliveries: Deliveries,
        member: str,
        group: str,
        sink: str,
    ) -> bool:
        """One poll and, when it returned records, one transaction; False when the clients must go."""
        start = self.history.now()
        messages = consumer.consume(POLL_RECORDS, POLL_S)
        records = []
        for m in messages:
            if m.error() is not None:
                self.error(f"poll: {m.error()}")
            else:
                records.append(record_of(m))
        if not records:
            return True
        self.record(
            "poll",
            "ok",
            start,
            mode="transform",
            group=group,
            member=member,
            isolation="read_committed",
            session=self.session_id,
            records=records,
        )
        start = self.history.now()
        outputs: list[list[Any]] = []
        offsets: dict[str, int] = {}
        try:
            producer.begin_transaction()
            for _, partition, _, value in records:
                outputs.append(
                    deliveries.produce(
                        producer, sink, partition, f"{TRANSFORM_OUTPUT_PREFIX}{value}", self.history.now()
                    )
                )
            positions = consumer.position(consumer.assignment())
            positions = [tp for tp in positions if tp.offset >= 0]
            offsets = {tp_key(tp.topic, tp.partition): tp.offset for tp in positions}
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 10)
            status, error, replace = end_transaction(self, producer, commit=True)
        except (KafkaException, BufferError) as exc:  # before the commit was asked for: it never commits
            err = kafka_error(exc)
            status, error, replace = "fail", str(exc), True
            if err is not None and err.txn_requires_abort():
                status, error, replace = abort_transaction(self, producer, str(exc))
        self.record(
            "txn",
            status,
            start,
            producer=self.options["transactional_id"],
            group=group,
            inputs=records,
            outputs=outputs,
            offsets=offsets,
            deliberate_abort=False,
            error=error,
        )
        producer.poll(0)
        if status == "fail" and not replace:
            replace = not self._rewind(consumer, member)
        return not replace

    def _rewind(self, consumer: Consumer, member: str) -> bool:
        """After an abort, back to the group's committed offsets, so the aborted inputs are read again;
        False when the committed offsets cannot be read (the clients are replaced instead)."""
        try:
            assignment = consumer.assignment()
            committed = consumer.committed(assignment, timeout=10)
            for tp in committed:
                offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        except KafkaException as exc:
            self.error(f"rewind: {exc}")
            return False
        self.new_session(member)
        return True
