"""Producers: idempotent ones (confluent-kafka and kafka-python) that record one `produce` op per record
from its delivery report, and a transactional one that commits most transactions and aborts some on
purpose, so that read_committed readers have aborted records to skip."""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from ..history import Status
from .base import Pacer, Workload, kafka_error

COMMIT_RETRIES = 3  # of a commit_transaction that raised a retriable error, as the client allows
TXN_TIMEOUT_S = 10.0  # each blocking transactional call


class Deliveries:
    """The records a producer instance has sent and not yet seen resolved. Each is recorded exactly
    once: by its delivery report, or as unknown when the instance goes away without one."""

    def __init__(self, workload: Workload, producer: str, transactional: bool) -> None:
        self.workload = workload
        self.producer = producer
        self.transactional = transactional
        self.seq = 0  # the instance's own count, in the order produce() was called
        # No lock: kafka-python reports on its own thread, but dict insert, pop and copy are atomic
        # under the GIL, and a lock here once hung a producer thread in a delivery report for good.
        self.pending: dict[int, tuple[float, str, int, str]] = {}

    def next_value(self) -> str:
        return f"{self.producer}-{self.seq}"

    def sent(self, start: float, topic: str, partition: int, value: str) -> int:
        """Registers the record just handed to produce(); returns its seq."""
        seq = self.seq
        self.pending[seq] = (start, topic, partition, value)
        self.seq += 1
        return seq

    def produce(self, producer: Producer, topic: str, partition: int, value: str, start: float) -> list[Any]:
        """Hands one record to a confluent-kafka producer (whose errors, BufferError among them, pass
        through: nothing was sent) and registers it; returns [topic, partition, value]."""
        producer.produce(
            topic, value.encode(), partition=partition, on_delivery=self.confluent_report(self.seq)
        )
        self.sent(start, topic, partition, value)
        return [topic, partition, value]

    def resolve(
        self, seq: int, status: Status, partition: int | None, offset: int | None, error: str | None
    ) -> None:
        entry = self.pending.pop(seq, None)
        if entry is None:  # already settled as unknown when its instance closed
            return
        start, topic, chosen, value = entry
        self.workload.record(
            "produce",
            status,
            start,
            topic=topic,
            partition=chosen if partition is None else partition,
            value=value,
            offset=offset,
            producer=self.producer,
            seq=seq,
            transactional=self.transactional,
            error=error,
        )

    def confluent_report(self, seq: int) -> Any:
        """An on_delivery callback for the record `seq`: ok with its offset, unknown on an error (an
        idempotent producer's error may follow a write that took effect)."""

        def report(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                self.resolve(seq, "ok", msg.partition(), msg.offset(), None)
            else:
                self.resolve(seq, "unknown", None, None, str(err))

        return report

    def settle(self, reason: str) -> None:
        """Every record still pending, as unknown: its instance is gone."""
        for seq in sorted(self.pending.copy()):
            self.resolve(seq, "unknown", None, None, reason)


def close_confluent(producer: Producer, deliveries: Deliveries, drain_s: float) -> None:
    """Waits up to drain_s for the reports of what was sent, then purges the rest (their reports come
    with a purge error) and settles whatever is still unreported as unknown."""
    try:
        if producer.flush(drain_s) > 0:
            producer.purge(in_queue=True, in_flight=True, blocking=False)
            producer.flush(1.0)
    except (KafkaException, RuntimeError) as exc:
        deliveries.workload.error(f"close: {exc}")
    deliveries.settle("closed unresolved")


class IdempotentProducer(Workload):
    """confluent-kafka with enable.idempotence, acks=all, producing `rate` records a second to random
    partitions of `topic` (options: topic, partitions, rate, message_timeout_ms)."""

    def session(self) -> None:
        topic: str = self.options["topic"]
        partitions: list[int] = list(self.options["partitions"])
        producer_id = self.new_instance()
        fatal = threading.Event()

        def on_error(err: KafkaError) -> None:
            if err.fatal():
                fatal.set()
            self.on_client_error(err)

        producer = Producer(
            self.confluent_config(
                error_cb=on_error,
                **{
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 5,
                    "message.timeout.ms": self.options.get("message_timeout_ms", 30000),
                    "request.timeout.ms": 10000,
                    "client.id": producer_id,
                },
            )
        )
        deliveries = Deliveries(self, producer_id, transactional=False)
        pacer = Pacer(float(self.options.get("rate", 200)))
        try:
            while not self.stopping and not fatal.is_set():
                pacer.wait(self.stop_event)
                partition = self.rng.choice(partitions)
                value = deliveries.next_value()
                start = self.history.now()
                try:
                    deliveries.produce(producer, topic, partition, value, start)
                except BufferError:  # the queue is full during an outage: not sent, try again later
                    producer.poll(0.1)
                    continue
                except KafkaException as exc:
                    self.error(f"produce: {exc}")
                    break
                producer.poll(0)
        finally:
            close_confluent(producer, deliveries, self.drain_s)
        if fatal.is_set():
            self.error(f"{producer_id}: fatal error, a new producer takes over")


class KafkaPythonProducer(Workload):
    """kafka-python's KafkaProducer with enable_idempotence, the same records and ops as
    IdempotentProducer, so that a second client library writes (options: topic, partitions, rate)."""

    def session(self) -> None:
        from kafka import KafkaProducer
        from kafka.errors import KafkaTimeoutError

        topic: str = self.options["topic"]
        partitions: list[int] = list(self.options["partitions"])
        producer_id = self.new_instance()
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            client_id=producer_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            request_timeout_ms=10000,
            delivery_timeout_ms=30000,
            max_block_ms=5000,
            reconnect_backoff_ms=100,
            reconnect_backoff_max_ms=1000,
            retry_backoff_ms=100,
        )
        deliveries = Deliveries(self, producer_id, transactional=False)
        pacer = Pacer(float(self.options.get("rate", 50)))
        # A batch that expired leaves kafka-python's idempotent sequence behind the broker's, and every
        # later batch then expires too: after a failed delivery the instance is replaced.
        failed = threading.Event()
        try:
            while not self.stopping and not failed.is_set():
                pacer.wait(self.stop_event)
                partition = self.rng.choice(partitions)
                value = deliveries.next_value()
                start = self.history.now()
                try:
                    future = producer.send(topic, value=value.encode(), partition=partition)
                except KafkaTimeoutError as exc:  # no metadata within max_block_ms: nothing was sent
                    self.error(f"send: {exc}")
                    continue
                seq = deliveries.sent(start, topic, partition, value)
                future.add_callback(self._acked, deliveries, seq)
                future.add_errback(self._failed, deliveries, seq, failed)
        finally:
            try:
                producer.flush(self.drain_s)
            except Exception as exc:  # a flush that timed out: settled as unknown below
                self.error(f"flush: {exc}")
            try:
                producer.close(timeout=1.0)
            finally:
                deliveries.settle("closed unresolved")

    @staticmethod
    def _acked(deliveries: Deliveries, seq: int, metadata: Any) -> None:
        deliveries.resolve(seq, "ok", metadata.partition, metadata.offset, None)

    @staticmethod
    def _failed(deliveries: Deliveries, seq: int, failed: threading.Event, exc: BaseException) -> None:
        failed.set()
        deliveries.resolve(seq, "unknown", None, None, f"{type(exc).__name__}: {exc}")


def end_transaction(workload: Workload, producer: Producer, commit: bool) -> tuple[Status, str | None, bool]:
    """Commits (or aborts) the open transaction: (status, error, whether the producer must be replaced).

    An abort, or a commit the client says must be aborted, is `fail`: no EndTxn(commit) went out, so
    the transaction can never commit. A commit that kept failing otherwise is `unknown`."""
    if not commit:
        return abort_transaction(workload, producer, None)
    attempts = 0
    while True:
        try:
            producer.commit_transaction(TXN_TIMEOUT_S)
            return "ok", None, False
        except Exception as exc:  # KafkaException; anything else leaves the outcome unknown too
            err = kafka_error(exc)
            if err is not None and err.txn_requires_abort():
                return abort_transaction(workload, producer, str(err))
            if err is not None and err.retriable() and attempts < COMMIT_RETRIES:
                attempts += 1
                continue
            return "unknown", str(exc), True


def abort_transaction(
    workload: Workload, producer: Producer, why: str | None
) -> tuple[Status, str | None, bool]:
    try:
        producer.abort_transaction(TXN_TIMEOUT_S)
        return "fail", why, False
    except KafkaException as exc:  # the coordinator aborts it on the timeout, or the next init does
        workload.error(f"abort: {exc}")
        return "fail", why or str(exc), True


def transactional_producer(workload: Workload, transactional_id: str, client_id: str) -> Producer:
    """A transactional producer, initialised: a new instance fences the one before it."""
    producer = Producer(
        workload.confluent_config(
            **{
                "transactional.id": transactional_id,
                "transaction.timeout.ms": 15000,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 14000,
                "request.timeout.ms": 10000,
                "client.id": client_id,
            },
        )
    )
    producer.init_transactions(TXN_TIMEOUT_S * 2)
    return producer


class TransactionalProducer(Workload):
    """Transactions of 1-5 records on random partitions of `topic`, `rate` a second, one in
    `abort_every` aborted on purpose (options: topic, partitions, transactional_id, rate, abort_every)."""

    def session(self) -> None:
        topic: str = self.options["topic"]
        partitions: list[int] = list(self.options["partitions"])
        transactional_id: str = self.options.get("transactional_id", f"chaos-{self.name}")
        abort_every = int(self.options.get("abort_every", 4))
        client_id = self.new_instance()
        producer = transactional_producer(self, transactional_id, client_id)
        deliveries = Deliveries(self, client_id, transactional=True)
        pacer = Pacer(float(self.options.get("rate", 5)))
        replace = False
        try:
            while not self.stopping and not replace:
                pacer.wait(self.stop_event)
                commit = self.rng.randrange(abort_every) != 0
                start = self.history.now()
                outputs: list[list[Any]] = []
                error: str | None = None
                try:
                    producer.begin_transaction()
                    for _ in range(self.rng.randint(1, 5)):
                        partition = self.rng.choice(partitions)
                        value = deliveries.next_value()
                        outputs.append(
                            deliveries.produce(producer, topic, partition, value, self.history.now())
                        )
                    if not commit:  # an abort purges what is still queued: send it, so readers must skip it
                        producer.flush(TXN_TIMEOUT_S)
                    status, error, replace = end_transaction(self, producer, commit)
                except (
                    KafkaException,
                    BufferError,
                ) as exc:  # before any commit was asked for: it never commits
                    err = kafka_error(exc)
                    status, error, replace = "fail", str(exc), True
                    if err is not None and err.txn_requires_abort():
                        status, error, replace = abort_transaction(self, producer, str(exc))
                self.record(
                    "txn",
                    status,
                    start,
                    producer=transactional_id,
                    group=None,
                    inputs=[],
                    outputs=outputs,
                    offsets={},
                    deliberate_abort=not commit,
                    error=error,
                )
                producer.poll(0)
        finally:
            close_confluent(producer, deliveries, self.drain_s)
