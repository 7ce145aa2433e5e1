"""Producing records with confluent-kafka for `schooner produce`: a Sender checks the topic first, counts
what the broker acknowledged, and keeps the first failure to report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from ..client_options import ClientSettings
from . import KafkaFailure, build, describe, quiet
from .topics import partitions_of

Headers = list[tuple[str, bytes | None]]


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: Headers = field(default_factory=list)


@dataclass
class Tally:
    """What the broker acknowledged, and what it did not."""

    sent: int = 0
    delivered: int = 0
    bytes: int = 0
    partitions: set[int] = field(default_factory=set)
    failed: int = 0
    first_error: str | None = None

    def fail(self, why: str) -> None:
        self.failed += 1
        self.first_error = self.first_error or why


class Sender:
    """One producer for one topic (and optionally one partition)."""

    def __init__(
        self,
        settings: ClientSettings,
        topic: str,
        partition: int | None = None,
        acks: str | None = None,
        compression: str | None = None,
    ) -> None:
        # Not librdkafka's 5 minutes: a record the broker never takes fails within a few timeouts.
        conf: dict[str, Any] = {"message.timeout.ms": int(settings.timeout_s * 3000), "linger.ms": 5}
        conf.update(settings.librdkafka())
        if acks is not None:
            conf["acks"] = acks
        if compression is not None:
            conf["compression.type"] = compression
        self.settings = settings
        self.topic = topic
        self.producer: Producer = build(Producer, quiet(conf))
        self.partitions = partitions_of(self.producer, topic, settings)
        if partition is not None and partition not in self.partitions:
            raise KafkaFailure(f"{topic} has partitions 0..{len(self.partitions) - 1}, not {partition}")
        self.partition = partition
        self.tally = Tally()

    def _delivered(self, error: KafkaError | None, msg: Message) -> None:
        if error is not None:
            self.tally.fail(describe(error, self.settings))
            return
        self.tally.delivered += 1
        self.tally.bytes += len(msg.key() or b"") + len(msg.value() or b"")
        self.tally.partitions.add(msg.partition() or 0)

    def send(self, record: Record) -> None:
        extra: dict[str, Any] = {} if self.partition is None else {"partition": self.partition}
        headers: list[tuple[str, str | bytes | None]] = list(record.headers)
        self.tally.sent += 1
        while True:
            try:
                self.producer.produce(
                    self.topic,
                    value=record.value,
                    key=record.key,
                    headers=headers or None,
                    on_delivery=self._delivered,
                    **extra,
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                self.producer.poll(0.1)
            except KafkaException as exc:  # refused before sending (too large, ...)
                self.tally.fail(describe(exc, self.settings))
                break
        self.producer.poll(0)

    def reject(self, why: str) -> None:
        """A record that could not even be made (a line that is not of its schema): counted as sent and
        failed, so the summary reports it with the others."""
        self.tally.sent += 1
        self.tally.fail(why)

    def finish(self) -> Tally:
        """Waits for the outstanding acknowledgements; what never came counts as failed."""
        left = self.producer.flush(self.settings.timeout_s * 3 + 5)
        for _ in range(left):
            self.tally.fail(f"not acknowledged by {self.settings.bootstrap_servers} in time")
        return self.tally
