"""A member killed between any two round trips of the retry path loses nothing and appends no retry twice.

Every step is one script, so stopping a member after each of its round trips in turn (read, schedule the
retry with the ack, claim the due batch, take a producer id, append, confirm, read the retry, ack) shows
each state in between; a second member then takes over and finishes.
"""

from __future__ import annotations

import itertools
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import Consumer, ConsumerConfig, Fail, Message, Producer, RetryPolicy
from schooner.mq.engine import Batch
from schooner.storage.keys import Keyspace
from schooner.storage.mq import admin as queue_admin
from schooner.storage.mq import queue, retries
from schooner.storage.redis import calls
from schooner.storage.topics import metadata

from .conftest import Crash, crash_after, wait_until

CONFIG = ConsumerConfig(
    start="earliest", lease_ms=300, renew_ms=100, poll_ms=5, retry_poll_ms=0,
    retry=RetryPolicy(max_attempts=5, base_delay_ms=0, jitter=0.0),
)  # fmt: skip
SETTLED = {"undelivered": 0, "pending": 0, "scheduled": 0}
RETRY_PATH = {
    "queue_read", "retry_schedule", "retry_move_due", "INCR", "HSETNX", "log_append", "retry_moved", "XACK",
}  # fmt: skip


def where_it_is(redis: Any, ks: Keyspace, topic: str) -> dict[str, int]:
    """Every place the message can be while it is not yet handled successfully."""
    lag = calls.run_sync(redis, queue_admin.lag(ks, topic, 0, "g"))
    return {
        "undelivered": lag.undelivered if lag else 1,
        "pending": lag.pending if lag else 0,
        "scheduled": int(redis.zcard(ks.mq_retries(topic, 0))),
    }


def run_with_crash(url: str, ks: Keyspace, redis: Any, topic: str, budget: int, missed: list[Batch]) -> bool:
    """Runs the path with a member that dies after `budget` round trips, then an heir. False: no crash."""
    registry = CollectorRegistry()
    Producer(url, keyspace=ks, registry=registry).send(topic, b"charge", key=b"k")
    successes: list[Message] = []

    def handler(m: Message) -> Fail | None:
        if m.attempt == 1:
            return Fail("Flaky", "first attempt fails")
        successes.append(m)
        return None

    def settled() -> bool:
        return bool(successes) and where_it_is(redis, ks, topic) == SETTLED

    doomed = Consumer(url, topic, "g", handler, keyspace=ks, config=CONFIG, registry=registry)
    engine = doomed._engine(calls.run_sync(redis, metadata.load(ks, topic, {})))
    left = [budget]
    try:
        doomed.drive(crash_after(engine.start(), left, missed))
        while not settled():
            doomed.drive(crash_after(engine.step(), left, missed))
        doomed.drive(engine.stop())
        crashed = False
    except Crash:
        crashed = True
        state = where_it_is(redis, ks, topic)
        assert successes or sum(state.values()) >= 1, state  # it is somewhere: never lost
        with Consumer(url, topic, "g", handler, keyspace=ks, config=CONFIG, registry=registry):
            wait_until(settled, timeout=10)
    finally:
        doomed.redis.close()
    assert 1 <= len(successes) <= 2  # at least once; twice only when the ack itself was lost
    assert redis.xlen(ks.stream(topic, 0)) == 2  # the original and exactly one retry
    assert redis.hlen(ks.mq_retry_payloads(topic, 0)) == 0
    assert not redis.hexists(ks.mq_retry_mover(topic, 0), "batch")
    assert redis.exists(ks.mq_dead_letters(topic, 0)) == 0
    assert calls.run_sync(redis, queue.pending(ks, topic, 0, "g")) == []
    assert calls.run_sync(redis, retries.scheduled(ks, topic, 0)) == []
    return crashed


def test_a_crash_between_any_two_round_trips_loses_nothing(
    url: str, ks: Keyspace, redis: Any, make_topic: Any
) -> None:
    missed: list[Batch] = []
    for budget in itertools.count(1):
        topic = f"crash-{budget}"
        make_topic(topic, 1)
        if not run_with_crash(url, ks, redis, topic, budget, missed):
            break
        assert budget < 100
    # Every round trip of the path was a crash point.
    crashed_before = {c.script or str(c.args[0]) for batch in missed for c in batch.calls}
    assert crashed_before >= RETRY_PATH, RETRY_PATH - crashed_before
