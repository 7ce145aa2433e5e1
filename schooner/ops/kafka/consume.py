"""Reading records with confluent-kafka for `schooner consume`: where to start in each partition, alone
(assigned partitions, nothing committed) or in a consumer group (which commits), and when to stop."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from ..client_options import ClientSettings
from . import KafkaFailure, build, failure, quiet
from .formats import Consumed
from .topics import partitions_of

# Errors after which reading cannot go on; others (a broker restarting) librdkafka retries by itself.
_FATAL = {
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.OFFSET_OUT_OF_RANGE,
    KafkaError._AUTO_OFFSET_RESET,
}
_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


@dataclass(frozen=True)
class Start:
    """Where reading starts: `end` (only new records), `beginning`, `offset` (value >= 0: that offset;
    < 0: that many records before the end) or `timestamp` (value: ms)."""

    kind: str = "end"
    value: int = 0


def parse_timestamp(text: str, naive: tzinfo | None = None) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date and time; one without an offset is in the
    `naive` zone (local time when None). ValueError for anything else."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither milliseconds nor an ISO date and time") from None
    if moment.tzinfo is None and naive is not None:
        moment = moment.replace(tzinfo=naive)
    return int(moment.timestamp() * 1000)  # a naive datetime left naive is taken as local time


def consumed(msg: Message) -> Consumed:
    kind, ts = msg.timestamp()
    return Consumed(
        topic=msg.topic() or "",
        partition=msg.partition() or 0,
        offset=msg.offset() or 0,
        timestamp=ts if kind in _TIMESTAMP_TYPES else None,
        timestamp_type=_TIMESTAMP_TYPES.get(kind),
        key=_bytes(msg.key()),
        value=_bytes(msg.value()),
        headers=[(str(name), _bytes(v)) for name, v in list(msg.headers() or [])],
    )


def _bytes(data: str | bytes | None) -> bytes | None:
    """A consumer without deserializers hands out bytes; the stubs also allow str."""
    return data.encode() if isinstance(data, str) else data


class Reader:
    """A consumer of one topic: its partitions (or the ones given), from `start`."""

    def __init__(
        self,
        settings: ClientSettings,
        topic: str,
        partitions: list[int] | None = None,
        group: str | None = None,
        start: Start = Start(),
        stop_at_end: bool = False,
    ) -> None:
        conf: dict[str, Any] = {
            "group.id": group
            or "schooner-consume",  # librdkafka needs one; nothing is committed without --group
            "enable.auto.commit": group is not None,
            "auto.offset.reset": "earliest" if start.kind == "beginning" else "latest",
            "enable.partition.eof": stop_at_end,
            **settings.librdkafka(),
        }
        self.settings = settings
        self.topic = topic
        self.group = group
        self.stop_at_end = stop_at_end
        self.consumer: Consumer = build(Consumer, quiet(conf))
        try:
            known = partitions_of(self.consumer, topic, settings)
            wanted = partitions if partitions else known
            if unknown := sorted(set(wanted) - set(known)):
                raise KafkaFailure(f"{topic} has partitions 0..{len(known) - 1}, not {unknown[0]}")
            self.positions = self._positions(wanted, start)
        except BaseException:
            self.consumer.close()
            raise
        self.assigned: set[int] = set()
        self.at_end: set[int] = set()
        if group is not None and not partitions:
            self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        else:
            self.consumer.assign([TopicPartition(topic, p, o) for p, o in self.positions.items()])
            self.assigned = set(self.positions)

    def _watermarks(self, partition: int) -> tuple[int, int]:
        try:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=self.settings.timeout_s
            )
        except KafkaException as exc:
            raise failure(exc, self.settings) from None
        return low, high

    def _positions(self, partitions: list[int], start: Start) -> dict[int, int]:
        """The first offset to read per partition (or a logical one: beginning, end, committed)."""
        if start.kind == "timestamp":
            asked = [TopicPartition(self.topic, p, start.value) for p in partitions]
            try:
                found = self.consumer.offsets_for_times(asked, timeout=self.settings.timeout_s)
            except KafkaException as exc:
                raise failure(exc, self.settings) from None
            # -1: no record at or after the time, so start at the end
            return {tp.partition: (OFFSET_END if tp.offset < 0 else tp.offset) for tp in found}
        if start.kind == "offset":
            if start.value >= 0 and len(partitions) > 1:
                raise KafkaFailure(
                    f"--offset {start.value} needs --partition: {self.topic} has {len(partitions)} partitions"
                )
            out = {}
            for p in partitions:
                low, high = self._watermarks(p)
                if start.value < 0:
                    out[p] = max(low, high + start.value)
                elif low <= start.value <= high:
                    out[p] = start.value
                else:
                    where = f"{self.topic}-{p} (earliest {low}, latest {high})"
                    raise KafkaFailure(f"offset {start.value} is not in {where}")
            return out
        if self.group is not None:  # committed offsets; auto.offset.reset where the group has none
            return {p: OFFSET_STORED for p in partitions}
        return {p: OFFSET_BEGINNING if start.kind == "beginning" else OFFSET_END for p in partitions}

    def _on_assign(self, consumer: Consumer, assignment: list[TopicPartition]) -> None:
        for tp in assignment:
            if tp.partition in self.positions:
                tp.offset = self.positions[tp.partition]
        consumer.assign(assignment)
        self.assigned = {tp.partition for tp in assignment}

    def _on_revoke(self, consumer: Consumer, revoked: list[TopicPartition]) -> None:
        self.assigned -= {tp.partition for tp in revoked}
        self.at_end -= {tp.partition for tp in revoked}

    def records(
        self,
        max_messages: int | None = None,
        idle_s: float | None = None,
        stopped: Callable[[], bool] = lambda: False,
    ) -> Iterator[Consumed | None]:
        """Yields records until `max_messages`, `idle_s` seconds without one, (stop_at_end) every
        assigned partition read to its end, or stopped() (checked after each poll, at most 0.5 s
        apart); and None after a poll that found nothing, so that the caller can flush its output
        while it waits."""
        count = 0
        last = time.monotonic()
        while (max_messages is None or count < max_messages) and not stopped():
            msg = self.consumer.poll(0.5 if idle_s is None else max(0.0, min(0.5, idle_s)))
            now = time.monotonic()
            if msg is None:
                if idle_s is not None and now - last >= idle_s:
                    return
                yield None
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    self.at_end.add(msg.partition() or 0)
                    if self.stop_at_end and self.assigned and self.assigned <= self.at_end:
                        return
                    continue
                if error.fatal() or error.code() in _FATAL:
                    raise failure(error, self.settings)
                continue
            self.at_end.discard(msg.partition() or 0)
            count += 1
            last = now
            yield consumed(msg)

    def close(self) -> None:
        """Leaves the group, committing what was read (with --group)."""
        self.consumer.close()
