"""One member of an MQ group, as a state machine that does no I/O (in the manner of h11).

Its methods are generators that yield effects: Batch (storage calls to run in one pipeline, answered
with their results), Handle (call the handler on messages in turn, answered with what became of them)
and Wait. consumer.py drives them from blocking code and from asyncio alike, and tests can stop a member
between any two round trips.

Per partition it keeps order: entries left pending by a previous owner are claimed and handled first,
then new ones, one at a time. A partition is released only once its fetched entries are settled.

Acks wait for the member's next round trip and go first in it (an XACK per partition with every entry
whose handler succeeded since): a fetched batch costs one round trip, its acks riding on the next
fetch. An entry is acked only after its handler succeeded; a crash before that round trip leaves it
pending, and it is delivered again (at least once).
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from schooner.storage.keys import Keyspace
from schooner.storage.log.entry import Record
from schooner.storage.mq import admin as queue_admin
from schooner.storage.mq import dead_letters, leases, queue, retries
from schooner.storage.mq.dead_letters import DeadLetter
from schooner.storage.redis.calls import Call, Steps, command, parallel, text
from schooner.storage.topics.metadata import Topic, UnknownTopic

from . import membership
from .handlers import Fail, Outcome, RetryPolicy, ScheduleRetry, ToDeadLetters, resolve
from .message import Message, decode, retry_headers
from .metrics import Metrics, PartitionMetrics, observe_all

T = TypeVar("T")

STARTS = {"latest": queue.LATEST, "earliest": queue.EARLIEST}
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    start: str = "latest"  # where a group starts when it is created: "latest" or "earliest"
    batch_size: int = 100  # entries fetched per partition per read
    lease_ms: int = 10_000  # lease and heartbeat lifetime: a dead member's partitions move after this
    renew_ms: int = 0  # renew (and rebalance) period; 0: lease_ms / 3
    poll_ms: int = 50  # wait when nothing was fetched
    max_deliveries: int = 5  # deliveries of one entry without a handler result before it is dead-lettered
    retry_poll_ms: int = 200  # how often due retries are moved back to their partitions
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # As Kafka's consumer setting: read_committed hands over no record of an aborted transaction and
    # none of an open one until it ends; read_uncommitted hands over every record. Never markers.
    isolation: str = READ_COMMITTED

    def __post_init__(self) -> None:
        if self.start not in STARTS:
            raise ValueError(f"start must be one of {sorted(STARTS)}")
        if self.isolation not in (READ_COMMITTED, READ_UNCOMMITTED):
            raise ValueError(f"isolation must be {READ_COMMITTED} or {READ_UNCOMMITTED}")

    @property
    def committed(self) -> bool:
        return self.isolation == READ_COMMITTED

    @property
    def renew_period_ms(self) -> int:
        return self.renew_ms or max(self.lease_ms // 3, 1)


@dataclass(frozen=True, slots=True)
class Batch:
    calls: list[Call[Any]]


@dataclass(frozen=True, slots=True)
class Handle:
    """Call the handler on each message in order. Stop after the first outcome that is not a Success,
    and before any message once clock() >= until (the member's maintenance is due)."""

    messages: list[Message]
    until: float
    clock: Callable[[], float]


@dataclass(frozen=True, slots=True)
class Handled:
    """The answer to Handle: messages[:len(seconds)] were handled, seconds[i] in the handler each; all
    succeeded but the last when failure is set (its outcome)."""

    seconds: list[float]
    failure: Outcome | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    seconds: float


Effect = Batch | Handle | Wait
Work = Generator[Effect, Any, T]


@dataclass
class _Slot:
    partition: int
    buffer: deque[Message] = field(default_factory=deque)  # fetched, not yet settled
    claim_cursor: bytes | None = b"0-0"  # None once the previous owners' pending entries are claimed
    releasing: bool = False


class GroupMember:
    def __init__(
        self,
        ks: Keyspace,
        topic: Topic,
        group: str,
        member_id: str,
        config: ConsumerConfig,
        metrics: Metrics,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        rng: random.Random | None = None,
    ) -> None:
        self.ks, self.topic, self.group, self.member_id = ks, topic, group, member_id
        self.config, self.metrics = config, metrics
        self.clock, self.wall_ms = clock, wall_ms
        self.rng = rng or random.Random()
        self.owned: dict[int, _Slot] = {}
        self.live: list[str] = []
        self.next_maintenance = 0.0
        self.next_retry_move = 0.0
        self.acks: dict[int, list[bytes]] = {}  # partition -> entries to ack in the next round trip

    @property
    def partitions(self) -> list[int]:
        return sorted(self.owned)

    # -- life cycle ---------------------------------------------------------------------------------
    def start(self) -> Work[None]:
        yield from self._create_groups(range(self.topic.partitions))
        yield from self.maintain()

    def step(self) -> Work[None]:
        """One round: maintenance and retry moves when due, one fetch, and handling what it brought."""
        if self.clock() >= self.next_maintenance:
            yield from self.maintain()
        if self.clock() >= self.next_retry_move:
            yield from self.move_retries()
        if not any(slot.buffer for slot in self.owned.values()) and not (yield from self.fetch()):
            yield Wait(self.config.poll_ms / 1000)
            return
        for slot in list(self.owned.values()):
            if slot.buffer:
                yield from self.drain(slot)

    def stop(self) -> Work[None]:
        """Hands everything off: releases every lease and leaves the group (fetched entries are settled)."""
        owned = list(self.owned)
        calls: list[Call[Any]] = [self._release_call(p) for p in owned]
        calls.append(leases.leave(self.ks, self.topic.name, self.group, self.member_id))
        for p in owned:
            self._forget(p)
        yield from self._batch(calls)

    def recover(self) -> None:
        """After a Redis error: drop what was fetched (it stays pending) and claim it again."""
        for slot in self.owned.values():
            slot.buffer.clear()
            slot.claim_cursor = b"0-0"
            self._pm(slot.partition).in_flight.set(0)
        self.next_maintenance = 0.0

    # -- ownership ----------------------------------------------------------------------------------
    def maintain(self) -> Work[None]:
        """Heartbeat, renew, rebalance to the fair share, and refresh the lag gauges."""
        renewed = list(self.owned)
        ttl = self.config.lease_ms
        calls: list[Call[Any]] = [
            leases.heartbeat(self.ks, self.topic.name, self.group, self.member_id, ttl),
            command("HGET", self.ks.topic(self.topic.name), "partitions"),
            *(leases.renew(self.ks, self.topic.name, p, self.group, self.member_id, ttl) for p in renewed),
        ]
        replies = yield from self._batch(calls)
        self.live = replies[0]
        yield from self._grow(int(replies[1] or 0))
        for p, kept in zip(renewed, replies[2:], strict=True):
            if not kept:
                self._forget(p)
        count = self.topic.partitions
        limit = membership.share(count, len(self.live))
        prefer = membership.preferred(count, self.live, self.member_id)
        for p in membership.to_release(self.owned, limit, prefer):
            self.owned[p].releasing = True
        ready = [p for p, slot in self.owned.items() if slot.releasing and not slot.buffer]
        if ready:
            yield from self._batch([self._release_call(p) for p in ready])
            for p in ready:
                self._forget(p)
        yield from self._acquire(limit, prefer)
        yield from self._refresh_lag()
        held = len(self.owned)
        period = self.config.renew_period_ms / 1000
        # Under its share a member looks again soon: a freed partition is taken within a tenth of a period.
        self.next_maintenance = self.clock() + (period if held >= limit else period / 10)

    def _acquire(self, limit: int, prefer: list[int]) -> Work[None]:
        candidates = membership.to_acquire(self.topic.partitions, self.owned, prefer)
        while candidates:
            need = limit - sum(1 for slot in self.owned.values() if not slot.releasing)
            if need <= 0:
                return
            trying, candidates = candidates[:need], candidates[need:]
            ttl = self.config.lease_ms
            won = yield from self._batch(
                [leases.acquire(self.ks, self.topic.name, p, self.group, self.member_id, ttl) for p in trying]
            )
            for p, ok in zip(trying, won, strict=True):
                if ok:
                    self.owned[p] = _Slot(p)
                    self._pm(p).leased.set(1)

    def _grow(self, partitions: int) -> Work[None]:
        if partitions > self.topic.partitions:
            new = range(self.topic.partitions, partitions)
            self.topic = Topic(
                self.topic.name, self.topic.id, partitions, self.topic.offsets,
                self.topic.overrides, self.topic.configs,
            )  # fmt: skip
            yield from self._create_groups(new)

    def _create_groups(self, partitions: range | list[int]) -> Work[None]:
        start, committed = STARTS[self.config.start], self.config.committed
        calls = [queue.create_group(self.ks, self.topic, p, self.group, start, committed) for p in partitions]
        made = yield from self._batch(list(calls))
        if any(r == queue.NOT_THIS_TOPIC for r in made):
            raise UnknownTopic(self.topic.name)

    def _refresh_lag(self) -> Work[None]:
        owned = list(self.owned)
        if not owned:
            return
        lags = yield from self._batch(
            [queue_admin.lag(self.ks, self.topic.name, p, self.group, 10_000) for p in owned]
        )
        now = self.wall_ms()
        for p, lag in zip(owned, lags, strict=True):
            if lag is not None:
                pm = self._pm(p)
                pm.lag_messages.set(lag.messages)
                age = (now - lag.oldest_unconsumed_ms) / 1000 if lag.oldest_unconsumed_ms else 0.0
                pm.lag_seconds.set(max(age, 0.0))

    def _release_call(self, p: int) -> Call[bool]:
        return leases.release(self.ks, self.topic.name, p, self.group, self.member_id)

    def _forget(self, p: int) -> None:
        """Stops tracking a partition; entries still buffered stay pending for the next owner to claim."""
        slot = self.owned.pop(p, None)
        if slot is not None:
            slot.buffer.clear()
        pm = self._pm(p)
        pm.leased.set(0)
        pm.in_flight.set(0)

    # -- delivery -----------------------------------------------------------------------------------
    def fetch(self) -> Work[bool]:
        """Claims (first) or reads entries for every held partition; True when there is work."""
        slots = [slot for slot in self.owned.values() if not slot.releasing]
        if not slots:
            return False
        topic, group, me = self.topic, self.group, self.member_id
        size, committed = self.config.batch_size, self.config.committed
        calls: list[Call[Any]] = [
            queue.claim(self.ks, topic, s.partition, group, me, s.claim_cursor, size, committed)
            if s.claim_cursor is not None
            else queue.read(self.ks, topic, s.partition, group, me, size, committed)
            for s in slots
        ]
        replies = yield from self._batch(calls)
        busy, missing = False, []
        poison: list[Message] = []
        name, offsets, limit = topic.name, topic.offsets, self.config.max_deliveries
        for slot, reply in zip(slots, replies, strict=True):
            if reply.status == queue.LEASE_LOST:
                self._forget(slot.partition)
                continue
            if reply.status == queue.NO_GROUP:
                missing.append(slot.partition)
                continue
            if isinstance(reply, queue.ClaimReply):
                slot.claim_cursor = None if reply.cursor == b"0-0" else reply.cursor
                busy = busy or slot.claim_cursor is not None
            else:
                busy = busy or reply.skipped > 0  # only markers or aborted records: read on at once
            if not reply.entries:
                continue
            busy = True
            p = slot.partition
            messages = [decode(name, p, offsets, d) for d in reply.entries]
            if any(m.target_group is not None and m.target_group != group for m in messages):
                self._ack_later(p, [m.entry_id for m in messages if not self._mine(m)])  # not ours to handle
                messages = [m for m in messages if self._mine(m)]
            if any(m.deliveries > limit for m in messages):
                poison += [m for m in messages if m.deliveries > limit]
                messages = [m for m in messages if m.deliveries <= limit]
            slot.buffer.extend(messages)
            self._pm(p).consumed.inc(len(reply.entries))
        if missing:
            yield from self._create_groups(missing)
        if poison:
            yield from self._dead_letter_poison(poison)
        return busy

    def drain(self, slot: _Slot) -> Work[None]:
        """Handles a partition's fetched entries in order; the successes are acked in the next round trip."""
        p, buffer = slot.partition, slot.buffer
        pm = self._pm(p)
        pm.in_flight.set(len(buffer))  # per batch: a gauge scraped now and then needs no more
        while buffer:
            if self.clock() >= self.next_maintenance:
                yield from self.maintain()
            if self.owned.get(p) is not slot:
                break  # the lease was lost: the rest stays pending for the new owner
            handled: Handled = yield Handle(list(buffer), self.next_maintenance, self.clock)
            observe_all(pm.handle_seconds, handled.seconds)
            successes = len(handled.seconds) - (handled.failure is not None)
            if successes == len(buffer):  # the common case: the whole batch succeeded
                self._ack_later(p, [m.entry_id for m in buffer])
                buffer.clear()
            else:
                self._ack_later(p, [buffer.popleft().entry_id for _ in range(successes)])
            if handled.failure is not None:
                yield from self._settle_failure(buffer.popleft(), handled.failure, pm)
        pm.in_flight.set(len(buffer))
        if slot.releasing and not buffer and self.owned.get(p) is slot:
            yield from self._batch([self._release_call(p)])
            self._forget(p)

    def _mine(self, msg: Message) -> bool:
        """False for a retry or a replay meant for another group (acked unhandled)."""
        return msg.target_group is None or msg.target_group == self.group

    def _ack_later(self, partition: int, entry_ids: list[bytes]) -> None:
        if entry_ids:
            self.acks.setdefault(partition, []).extend(entry_ids)

    def _settle_failure(self, msg: Message, outcome: Outcome, pm: PartitionMetrics) -> Work[None]:
        """A handler's outcome other than Success: a retry or a dead letter (each acks the entry)."""
        action = resolve(outcome, msg.attempt, self.config.retry, self.rng)
        if isinstance(action, ScheduleRetry):
            if action.error is not None:
                pm.failed.inc()
            yield from self._schedule_retry(msg, action)
        elif isinstance(action, ToDeadLetters):
            if isinstance(outcome, Fail):
                pm.failed.inc()
            yield from self._dead_letter([(msg, action)])
        else:  # Ack: resolve() gives it only for a Success
            self._ack_later(msg.partition, [msg.entry_id])

    def _batch(self, calls: list[Call[Any]]) -> Work[list[Any]]:
        """One round trip of `calls`, with the acks that are waiting sent first in it."""
        waiting = {p: ids for p, ids in self.acks.items() if ids}
        self.acks = {}
        if not waiting:
            replies: list[Any] = yield Batch(calls)
            return replies
        name, group = self.topic.name, self.group
        acks = [queue.ack(self.ks, name, p, group, ids) for p, ids in waiting.items()]
        try:
            replies = yield Batch(acks + calls)
        except BaseException:
            # Perhaps not applied: sent again with the next round trip (an XACK twice acks nothing more).
            for p, ids in waiting.items():
                self.acks[p] = ids + self.acks.get(p, [])
            raise
        for p, count in zip(waiting, replies, strict=False):
            self._pm(p).acked.inc(count)
        return replies[len(acks) :]

    # -- retries and dead letters -------------------------------------------------------------------
    def _schedule_retry(self, msg: Message, action: ScheduleRetry) -> Work[None]:
        first = msg.first_failure_ms or self.wall_ms()
        headers = retry_headers(msg, self.group, msg.attempt + 1, first, action.error)
        record = Record(msg.timestamp, msg.key, msg.value, headers)
        (due,) = yield from self._batch(
            [retries.schedule(self.ks, self.topic.name, msg.partition, self.group, msg.entry_id,
                              action.delay_ms, record)]
        )  # fmt: skip
        if due:
            self._pm(msg.partition).retried.inc()

    def _dead_letter(self, items: list[tuple[Message, ToDeadLetters]]) -> Work[None]:
        now = self.wall_ms()
        calls = []
        for msg, action in items:
            letter = DeadLetter(
                origin_topic=self.topic.name,
                origin_partition=msg.partition,
                origin_offset=msg.origin_offset,
                group=self.group,
                attempts=msg.attempt,
                deliveries=msg.deliveries,
                first_failure_ms=msg.first_failure_ms or now,
                last_failure_ms=now,
                error_type=action.error_type,
                error_message=action.message,
                timestamp=msg.timestamp,
                key=msg.key,
                value=msg.value,
                headers=msg.headers,
                origin_id=text(msg.entry_id),
            )
            calls.append(dead_letters.add(self.ks, self.group, msg.entry_id, letter))
        added = yield from self._batch(calls)
        for (msg, _), letter_id in zip(items, added, strict=True):
            if letter_id is not None:
                self._pm(msg.partition).dead_lettered.inc()

    def _dead_letter_poison(self, poison: list[Message]) -> Work[None]:
        """Entries delivered more than max_deliveries times without a result (each delivery crashed)."""
        items = []
        for msg in poison:
            reason = f"delivered {msg.deliveries} times without a handler result"
            items.append((msg, ToDeadLetters("DeliveryLimitExceeded", reason)))
        yield from self._dead_letter(items)

    def move_retries(self) -> Work[None]:
        """Appends the due retries of held partitions back to them (one round trip when none are due)."""
        self.next_retry_move = self.clock() + self.config.retry_poll_ms / 1000
        held = [p for p, slot in self.owned.items() if not slot.releasing]
        if held:
            yield from self._steps(parallel([retries.move_due(self.ks, self.topic, p) for p in held]))

    def _steps(self, procedure: Steps[T]) -> Work[T]:
        replies: Any = None
        while True:
            try:
                calls = procedure.send(replies)
            except StopIteration as done:
                result: T = done.value
                return result
            replies = yield from self._batch(calls)

    def _pm(self, partition: int) -> PartitionMetrics:
        return self.metrics.partition(self.topic.name, partition, self.group)
