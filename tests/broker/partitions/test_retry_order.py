"""An idempotent producer's batches after one that failed here wait for its retry
(broker/partitions/retry_order.py): the rule on its own, and over the wire with Redis cut away from the broker
between two batches."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from schooner.broker.partitions.retry_order import MAX_FAILED, SEQUENCE_SPAN, RetryOrder
from schooner.storage.keys import Keyspace
from tests.proxy import FaultProxy
from tests.wire import (
    call,
    create_topics,
    idempotent_batch,
    init_producer_id_request,
    produce_request,
    record_batch,
)


@dataclass(frozen=True)
class Batch:
    base_sequence: int
    producer_epoch: int = 0
    producer_id: int = 7


def test_a_failure_holds_back_later_batches_until_it_comes_again() -> None:
    order = RetryOrder()
    for seq in (0, 1, 2):
        assert order.admit(("t", 0), Batch(seq))
        order.opened(("t", 0), Batch(seq))
    order.closed(("t", 0), Batch(0), ok=True)
    order.closed(("t", 0), Batch(1), ok=False)
    order.closed(("t", 0), Batch(2), ok=False)  # a later failure leaves the mark at the first
    assert not order.admit(("t", 0), Batch(2))
    assert not order.admit(("t", 0), Batch(3))
    assert order.admit(("t", 1), Batch(2))  # another partition
    assert order.admit(("t", 0), Batch(2, producer_id=8))  # another producer
    assert order.admit(("t", 0), Batch(1))  # the retry clears the mark
    assert order.admit(("t", 0), Batch(2))


def test_a_retry_of_an_earlier_batch_or_a_new_epoch_clears_the_mark() -> None:
    order = RetryOrder()
    order.opened(("t", 0), Batch(5))
    order.closed(("t", 0), Batch(5), ok=False)
    assert order.admit(("t", 0), Batch(3))  # earlier than the failed one: sent, and judged by Redis
    assert order.admit(("t", 0), Batch(9))
    order.opened(("t", 0), Batch(5))
    order.closed(("t", 0), Batch(5), ok=False)
    assert not order.admit(("t", 0), Batch(9))
    assert order.admit(("t", 0), Batch(0, producer_epoch=1))  # renumbered under a new epoch
    assert order.admit(("t", 0), Batch(9))


def test_a_failure_after_its_retry_was_appended_holds_nothing_back() -> None:
    """The client gave up on a request (its connection closed), sent the batch again on another, and
    that retry reached Redis first: the first request's failure comes after, and is stale."""
    order = RetryOrder()
    order.opened(("t", 0), Batch(5))  # the first request, stuck behind a stalled Redis
    assert order.admit(("t", 0), Batch(5))  # the retry
    order.opened(("t", 0), Batch(5))
    order.appended(("t", 0), Batch(5))
    order.closed(("t", 0), Batch(5), ok=True)
    order.closed(("t", 0), Batch(5), ok=False)  # the first request times out at last
    assert order.admit(("t", 0), Batch(6))
    order.opened(("t", 0), Batch(6))
    order.closed(("t", 0), Batch(6), ok=False)  # a real failure still marks
    assert not order.admit(("t", 0), Batch(7))


def test_a_copy_of_an_appended_batch_that_never_ran_holds_nothing_back() -> None:
    """A third copy of batch 5, in a request whose connection went away before its turn, settles as
    not sent, after the batch was appended and answered and nothing else is open."""
    order = RetryOrder()
    order.opened(("t", 0), Batch(5))
    order.appended(("t", 0), Batch(5))
    order.closed(("t", 0), Batch(5), ok=True)
    order.closed(("t", 0), Batch(5), ok=False)  # the copy that never ran
    order.closed(("t", 0), Batch(3), ok=False)  # an older one, too
    assert order.admit(("t", 0), Batch(6))


def test_a_mark_goes_once_redis_appends_the_batch_or_a_later_one() -> None:
    order = RetryOrder()
    order.opened(("t", 0), Batch(5))
    assert order.admit(("t", 0), Batch(5))  # the retry, admitted before the first one failed
    order.opened(("t", 0), Batch(5))
    order.closed(("t", 0), Batch(5), ok=False)  # the first one fails: a mark
    assert not order.admit(("t", 0), Batch(6))
    order.appended(("t", 0), Batch(5, producer_epoch=1))  # another epoch proves nothing
    assert not order.admit(("t", 0), Batch(6))
    order.appended(("t", 0), Batch(5))  # the retry is in the log
    order.closed(("t", 0), Batch(5), ok=True)
    assert order.admit(("t", 0), Batch(6))


def test_a_later_failure_holds_once_the_earliest_is_proven_stale() -> None:
    """Batch 5 failed here and its retry went elsewhere (a stale mark); batch 9 is refused behind it.
    Once Redis's producer state proves 5 in the log, 9 still holds the producer back: admitting 10
    would have Redis answer OUT_OF_ORDER_SEQUENCE, lost data to the client."""
    order = RetryOrder()
    order.opened(("t", 0), Batch(5))
    order.closed(("t", 0), Batch(5), ok=False)
    assert not order.admit(("t", 0), Batch(9))
    order.closed(("t", 0), Batch(9), ok=False)  # refused: never opened
    order.logged(("t", 0), 7, 0, 8)  # another broker appended up to 8
    assert not order.admit(("t", 0), Batch(10))
    assert order.behind_failure(("t", 0), Batch(10))
    assert order.admit(("t", 0), Batch(9))  # its retry
    assert order.admit(("t", 0), Batch(10))


def test_sequences_compare_across_the_wrap() -> None:
    order = RetryOrder()
    last = SEQUENCE_SPAN - 1
    order.opened(("t", 0), Batch(last))
    order.closed(("t", 0), Batch(last), ok=False)
    assert not order.admit(("t", 0), Batch(0))  # after 2^31 - 1 comes 0
    assert not order.admit(("t", 0), Batch(5))
    assert order.admit(("t", 0), Batch(last))


def test_an_out_of_order_reply_is_the_brokers_gap_while_an_earlier_batch_is_open() -> None:
    order = RetryOrder()
    order.opened(("t", 0), Batch(10))
    order.opened(("t", 0), Batch(11))
    assert order.behind_failure(("t", 0), Batch(11))  # 10 unanswered: its acks=all wait may fail
    assert not order.behind_failure(("t", 0), Batch(10))  # nothing before it
    order.closed(("t", 0), Batch(10), ok=True)
    assert not order.behind_failure(("t", 0), Batch(11))
    order.closed(("t", 0), Batch(11), ok=False)
    assert order.behind_failure(("t", 0), Batch(12))


def test_marks_of_vanished_producers_are_bounded() -> None:
    order = RetryOrder()
    for pid in range(MAX_FAILED + 10):
        order.opened(("t", 0), Batch(1, producer_id=pid))
        order.closed(("t", 0), Batch(1, producer_id=pid), ok=False)
    assert not order.admit(("t", 0), Batch(2, producer_id=MAX_FAILED + 9))  # the newest are kept
    assert order.admit(("t", 0), Batch(2, producer_id=0))  # the oldest went


def _produce(port: int, topic: str, batch: bytes) -> tuple[ErrorCode, int]:
    response = call(port, produce_request(topic, batch, acks=-1))
    answer = response.responses[0].partition_responses[0]
    return ErrorCode(answer.error_code), answer.base_offset


def _until_answered(port: int, topic: str, batch: bytes) -> tuple[ErrorCode, int]:
    """Sends again while Redis is coming back (the broker reconnects on demand)."""
    deadline = time.monotonic() + 15
    while True:
        code, offset = _produce(port, topic, batch)
        if (
            code not in (ErrorCode.kafka_storage_error, ErrorCode.request_timed_out)
            or time.monotonic() > deadline
        ):
            return code, offset
        time.sleep(0.2)


@pytest.mark.single_redis
def test_a_batch_sent_after_a_failed_one_waits_for_its_retry(
    broker_factory, redis_server, redis_client, keyspace
) -> None:
    """Batch 1 fails while Redis is cut away; batch 2, which the client had already sent, reaches the
    broker once Redis is back. It is refused unsent with a retriable error, not OUT_OF_ORDER_SEQUENCE
    (which has librdkafka renumber its records under a new epoch, writing again any that Redis kept).
    The retries of 1 and then 2 are appended in order."""
    proxy = FaultProxy(redis_server.port, redis_server.password)
    try:
        broker = broker_factory(redis_url=proxy.url)
        create_topics(broker.port, "ordered")
        assert _until_answered(broker.port, "ordered", record_batch([b"first"])) == (ErrorCode.none, 0)
        init = call(broker.port, init_producer_id_request())
        pid, epoch = init.producer_id, init.producer_epoch

        def batch(seq: int) -> bytes:
            return idempotent_batch([b"%d" % seq], pid, epoch, seq)

        assert _produce(broker.port, "ordered", batch(0)) == (ErrorCode.none, 1)
        proxy.cut()
        assert _produce(broker.port, "ordered", batch(1))[0] in (
            ErrorCode.kafka_storage_error,
            ErrorCode.request_timed_out,
        )
        proxy.heal()
        assert _produce(broker.port, "ordered", batch(2))[0] == ErrorCode.kafka_storage_error
        assert _until_answered(broker.port, "ordered", batch(1)) == (ErrorCode.none, 2)
        assert _produce(broker.port, "ordered", batch(2)) == (ErrorCode.none, 3)
        stream = Keyspace(keyspace).stream("ordered", 0)
        values = [fields[b"value"] for _, fields in redis_client.xrange(stream)]
        assert values == [b"first", b"0", b"1", b"2"]
    finally:
        proxy.close()


def _values(redis_client: Any, keyspace: str, topic: str) -> list[bytes]:
    return [fields[b"value"] for _, fields in redis_client.xrange(Keyspace(keyspace).stream(topic, 0))]


def _stale_mark_at_a(a: Any, b: Any, proxy: FaultProxy, topic: str) -> Callable[[int], bytes]:
    """Leaves broker A with a stale mark: batch 1 fails at A while A's Redis is cut away, and broker B
    appends its retry. Returns the producer's batch of a sequence."""
    create_topics(b.port, topic, "elsewhere")
    assert _until_answered(b.port, topic, record_batch([b"first"])) == (ErrorCode.none, 0)
    init = call(b.port, init_producer_id_request())
    pid, epoch = init.producer_id, init.producer_epoch

    def batch(seq: int) -> bytes:
        return idempotent_batch([b"%d" % seq], pid, epoch, seq)

    assert _until_answered(a.port, topic, batch(0)) == (ErrorCode.none, 1)
    proxy.cut()
    assert _produce(a.port, topic, batch(1))[0] in (
        ErrorCode.kafka_storage_error,
        ErrorCode.request_timed_out,
    )
    proxy.heal()
    assert _produce(b.port, topic, batch(1)) == (ErrorCode.none, 2)
    return batch


@pytest.mark.single_redis
def test_a_failure_whose_retry_another_broker_appended_holds_nothing_back(
    broker_factory, redis_server, redis_client, keyspace
) -> None:
    """Batch 1 fails at broker A while A's Redis is cut away; the client sends it again to broker B,
    which appends it. Batch 2 then goes to A: A's mark is stale (Redis's producer state is past it), so
    2 is appended, not held back until the client's records time out (which a chaos run saw: the
    client then bumped its epoch and wrote records again)."""
    proxy = FaultProxy(redis_server.port, redis_server.password)
    try:
        a, b = broker_factory(redis_url=proxy.url), broker_factory()
        batch = _stale_mark_at_a(a, b, proxy, "moved")
        assert _until_answered(a.port, "moved", batch(2)) == (ErrorCode.none, 3)
        assert _values(redis_client, keyspace, "moved") == [b"first", b"0", b"1", b"2"]
    finally:
        proxy.close()


@pytest.mark.single_redis
def test_a_batch_refused_behind_a_stale_mark_holds_once_the_mark_is_proven_stale(
    broker_factory, redis_server, redis_client, keyspace
) -> None:
    """Broker A keeps a stale mark (batch 1 failed at A, B appended its retry and batch 2). Batch 3
    reaches A while A's Redis is cut: the mark cannot be proven stale, so 3 is refused. Batch 4, which
    the client had in flight, reaches A once Redis is back: the old mark is proven stale, but 3 still
    holds 4 back with a retriable error. A chaos run saw 4 admitted instead, Redis answer
    OUT_OF_ORDER_SEQUENCE, and librdkafka's epoch bump write a batch of another partition twice."""
    proxy = FaultProxy(redis_server.port, redis_server.password)
    try:
        a, b = broker_factory(redis_url=proxy.url), broker_factory()
        batch = _stale_mark_at_a(a, b, proxy, "refused")
        assert _produce(b.port, "refused", batch(2)) == (ErrorCode.none, 3)
        proxy.cut()
        assert _produce(a.port, "refused", batch(3))[0] == ErrorCode.kafka_storage_error
        proxy.heal()
        assert _until_answered(a.port, "elsewhere", record_batch([b"x"])) == (ErrorCode.none, 0)  # A is back
        assert _produce(a.port, "refused", batch(4))[0] == ErrorCode.kafka_storage_error
        assert _until_answered(a.port, "refused", batch(3)) == (ErrorCode.none, 4)
        assert _produce(a.port, "refused", batch(4)) == (ErrorCode.none, 5)
        assert _values(redis_client, keyspace, "refused") == [b"first", b"0", b"1", b"2", b"3", b"4"]
    finally:
        proxy.close()
