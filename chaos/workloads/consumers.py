"""Consumers: group members (the classic protocol and KIP-848's) that commit as they go, an observer of
the groups' committed offsets, and readers that read partitions from offset 0 again and again, across
the cold and hot tiers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from ..history import Status, tp_key
from .base import REFUSED_COMMIT, Workload, kafka_error, record_of, text

POLL_RECORDS = 100
POLL_S = 0.5


def records_of(workload: Workload, messages: list[Message]) -> list[list[Any]]:
    """[topic, partition, offset, value] of each record; error events are kept as errors."""
    out = []
    for m in messages:
        err = m.error()
        if err is not None:
            workload.error(f"poll: {err}")
        else:
            out.append(record_of(m))
    return out


class GroupConsumer(Workload):
    """A member of `group` subscribed to `topics`, committing synchronously every `commit_every`
    records (options: group, topics, protocol "classic" | "consumer", commit_every)."""

    def session(self) -> None:
        group: str = self.options["group"]
        protocol: str = self.options.get("protocol", "classic")
        every = int(self.options.get("commit_every", 50))
        member = self.new_instance()
        self.new_session(member)
        conf: dict[str, Any] = {
            "group.id": group,
            "client.id": member,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if protocol == "classic":  # KIP-848 members take these from the broker
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
        consumer = Consumer(self.confluent_config(**conf))
        try:
            consumer.subscribe(
                list(self.options["topics"]),
                on_assign=lambda *_: self.new_session(member),
                on_revoke=lambda *_: self.new_session(member),
                on_lost=lambda *_: self.new_session(member),
            )
            uncommitted = 0
            while not self.stopping:
                start = self.history.now()
                records = records_of(self, consumer.consume(POLL_RECORDS, POLL_S))
                if records:
                    self.record(
                        "poll",
                        "ok",
                        start,
                        mode="group",
                        group=group,
                        member=member,
                        isolation="read_uncommitted",
                        session=self.session_id,
                        records=records,
                    )
                    uncommitted += len(records)
                if uncommitted >= every:
                    uncommitted = 0
                    self._commit(consumer, group, member)
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError) as exc:
                self.error(f"close: {exc}")

    def _commit(self, consumer: Consumer, group: str, member: str) -> None:
        """One synchronous commit of the positions: an op per outcome (ok, refused, or not known)."""
        try:
            positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        except KafkaException as exc:
            self.error(f"position: {exc}")
            return
        if not positions:
            return
        start = self.history.now()
        offsets = {tp_key(tp.topic, tp.partition): tp.offset for tp in positions}
        try:
            answered = consumer.commit(offsets=positions, asynchronous=False) or []
        except KafkaException as exc:
            err = kafka_error(exc)
            status: Status = "fail" if err is not None and err.code() in REFUSED_COMMIT else "unknown"
            self.record("commit", status, start, group=group, member=member, offsets=offsets, error=str(exc))
            return
        by_outcome: dict[tuple[Status, str | None], dict[str, int]] = {}
        for tp in answered:
            key = tp_key(tp.topic, tp.partition)
            if tp.error is None:
                outcome: tuple[Status, str | None] = ("ok", None)
            else:
                outcome = ("fail" if tp.error.code() in REFUSED_COMMIT else "unknown", str(tp.error))
            by_outcome.setdefault(outcome, {})[key] = offsets.get(key, tp.offset)
        for (status, error), done in by_outcome.items():
            self.record("commit", status, start, group=group, member=member, offsets=done, error=error)


class OffsetsObserver(Workload):
    """Reads the committed offsets of `groups` every `interval` seconds: one `offsets` op per group per
    successful read (options: groups, interval). kafka-python's admin client, because librdkafka's
    ListConsumerGroupOffsets crashes the process on a NOT_COORDINATOR answer (librdkafka issue 5040),
    which a broker gives while its coordinator moves or its Redis is away."""

    def session(self) -> None:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(
            bootstrap_servers=self.bootstrap,
            client_id=self.new_instance(),
            request_timeout_ms=10000,
            reconnect_backoff_ms=100,
            reconnect_backoff_max_ms=1000,
            retry_backoff_ms=100,
        )
        interval = float(self.options.get("interval", 0.5))
        try:
            while not self.stopping:
                for group in self.options["groups"]:
                    start = self.history.now()
                    try:
                        answer = admin.list_group_offsets({group: None}).get(group, {})
                    except Exception as exc:  # kafka-python raises a broker error class per code
                        self.error(f"offsets of {group}: {type(exc).__name__}: {exc}")
                        continue
                    offsets = {
                        tp_key(tp.topic, tp.partition): m.offset for tp, m in answer.items() if m.offset >= 0
                    }
                    self.record("offsets", "ok", start, group=group, offsets=offsets)
                self.pause(interval)
        finally:
            admin.close()


class Reader(Workload):
    """Reads every partition of `topics` from offset 0 without a group, and again from 0 (a new session)
    every `pass_s` seconds once caught up, so the cold tier is read while records move
    (options: topics, isolation, pass_s, client "confluent" | "kafka-python")."""

    def session(self) -> None:
        if self.options.get("client", "confluent") == "kafka-python":
            self._kafka_python()
        else:
            self._confluent()

    def _partitions(self, consumer: Consumer) -> list[TopicPartition]:
        listed = consumer.list_topics(timeout=10).topics
        return [TopicPartition(t, p, 0) for t in self.options["topics"] for p in sorted(listed[t].partitions)]

    def _passes(
        self, member: str, isolation: str, rewind: Callable[[], None], poll: Callable[[], list[list[Any]]]
    ) -> None:
        """Passes from offset 0 (rewind() puts the client there), each a session of polls, until stopped."""
        while not self.stopping:
            self.new_session(member)
            began = time.monotonic()
            rewind()
            idle = False
            while not self.stopping and not self._due(began, idle):
                start = self.history.now()
                records = poll()
                idle = not records
                if records:
                    self.record(
                        "poll", "ok", start, mode="reader", group=None, member=member, isolation=isolation,
                        session=self.session_id, records=records,
                    )  # fmt: skip

    def _due(self, began: float, idle: bool) -> bool:
        """A new pass once caught up after pass_s, or after three times that when never caught up."""
        age = time.monotonic() - began
        pass_s = float(self.options.get("pass_s", 20))
        return (idle and age >= pass_s) or age >= 3 * pass_s

    def _confluent(self) -> None:
        isolation: str = self.options.get("isolation", "read_uncommitted")
        member = self.new_instance()
        consumer = Consumer(
            self.confluent_config(
                **{
                    "group.id": f"chaos-unused-{self.name}",
                    "client.id": member,
                    "isolation.level": isolation,
                    "enable.auto.commit": False,
                }
            )
        )
        try:
            partitions = self._partitions(consumer)
            self._passes(
                member,
                isolation,
                lambda: consumer.assign(partitions),
                lambda: records_of(self, consumer.consume(POLL_RECORDS, POLL_S)),
            )
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError) as exc:
                self.error(f"close: {exc}")

    def _kafka_python(self) -> None:
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTP

        isolation: str = self.options.get("isolation", "read_uncommitted")
        member = self.new_instance()
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            client_id=member,
            group_id=None,
            isolation_level=isolation,
            enable_auto_commit=False,
            request_timeout_ms=15000,
            reconnect_backoff_ms=100,
            reconnect_backoff_max_ms=1000,
            retry_backoff_ms=100,
        )
        try:
            partitions = [
                KTP(t, p)
                for t in self.options["topics"]
                for p in sorted(consumer.partitions_for_topic(t) or [])
            ]
            if not partitions:
                raise RuntimeError("no metadata for the topics yet")
            consumer.assign(partitions)

            def rewind() -> None:
                for tp in partitions:
                    consumer.seek(tp, 0)

            def poll() -> list[list[Any]]:
                batches = consumer.poll(timeout_ms=int(POLL_S * 1000), max_records=POLL_RECORDS)
                return [
                    [r.topic, r.partition, r.offset, text(r.value)] for rs in batches.values() for r in rs
                ]

            self._passes(member, isolation, rewind, poll)
        finally:
            try:
                consumer.close()
            except Exception as exc:  # a close during an outage: the thread carries on regardless
                self.error(f"close: {exc}")
