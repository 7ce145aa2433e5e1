"""A Fetch at a partition's remembered end waits before reading (broker/waiters.py): it must still see
every append, from this broker, another broker, or a plain Redis writer."""

from __future__ import annotations

import time

import pytest
import redis

from schooner.broker.handlers import fetch
from schooner.broker.waiters import AppendWaiters
from schooner.storage.keys import Keyspace
from schooner.storage.topic_partition import TopicPartition
from tests.clients import Rec, confluent_produce
from tests.wire import call, fetch_request

TP = TopicPartition("t", 0)


def test_an_end_is_remembered_only_while_every_notice_is_heard() -> None:
    waiters = AppendWaiters()
    waiters.read_end(TP, waiters.reading([TP]), 5)
    assert not waiters.at_end([(TP, 5)])  # not subscribed yet: an append may go unheard
    waiters.trust_ends(True)
    assert not waiters.at_end([(TP, 5)])  # ends read before the subscription are forgotten
    waiters.read_end(TP, waiters.reading([TP]), 5)
    assert waiters.at_end([(TP, 5)])
    assert not waiters.at_end([(TP, 4)])  # records below the end: read them
    assert not waiters.at_end([(TP, 5), (TopicPartition("t", 1), 0)])  # one partition never read
    waiters.notify("t", 0)  # an append: the end has moved
    assert not waiters.at_end([(TP, 5)])
    waiters.read_end(TP, waiters.reading([TP]), 6)
    waiters.trust_ends(False)  # the subscription failed: appends may go unheard
    assert not waiters.at_end([(TP, 6)])


def test_a_notice_during_a_read_keeps_its_end_from_being_remembered() -> None:
    waiters = AppendWaiters()
    waiters.trust_ends(True)
    token = waiters.reading([TP])
    waiters.notify_text(b"t:0")  # an append after the read ran in Redis, heard before its reply
    waiters.read_end(TP, token, 5)
    assert not waiters.at_end([(TP, 5)])
    first, second = waiters.reading([TP]), waiters.reading([TP])  # two fetches of one partition
    waiters.read_end(TP, first, 5)
    assert not waiters.at_end([(TP, 5)])
    waiters.read_end(TP, second, 5)
    assert waiters.at_end([(TP, 5)])


def _trusted(broker) -> None:
    for _ in range(200):
        if broker.broker.ctx.waiters.ends_trusted:
            return
        time.sleep(0.05)
    raise AssertionError("the broker never subscribed to its append notices")


def _xranges(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_xrange", {}).get("calls", 0))


def test_a_fetch_at_the_remembered_end_reads_once(broker, redis_client: redis.Redis) -> None:
    _trusted(broker)
    end = confluent_produce(broker.bootstrap, "ends", [Rec(None, b"a")])[0].offset() + 1
    got = call(broker.port, fetch_request("ends", end - 1, max_wait_ms=100))
    assert got.responses[0].partitions[0].high_watermark == end  # this read remembered the end
    before = _xranges(redis_client)
    empty = call(broker.port, fetch_request("ends", end, max_wait_ms=300))
    assert empty.responses[0].partitions[0].records in (b"", None)
    assert empty.responses[0].partitions[0].high_watermark == end
    assert _xranges(redis_client) - before == 1  # the closing read only, none before the wait


def test_another_brokers_append_wakes_a_fetch_at_the_remembered_end(
    broker_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "POLL_SECONDS", 60.0)  # only a notice can end the wait early
    here, there = broker_factory(), broker_factory()
    _trusted(here)
    end = confluent_produce(here.bootstrap, "far-append", [Rec(None, b"a")])[0].offset() + 1
    call(here.port, fetch_request("far-append", end - 1, max_wait_ms=100))  # remembers the end
    confluent_produce(there.bootstrap, "far-append", [Rec(None, b"b")])  # heard by `here` as a notice
    got = call(here.port, fetch_request("far-append", end, max_wait_ms=30000))
    assert got.responses[0].partitions[0].high_watermark == end + 1
    assert got.responses[0].partitions[0].records


def test_a_plain_redis_append_is_fetched_at_the_next_look(broker, redis_client: redis.Redis) -> None:
    """A plain writer publishes no notice: the waiting fetch finds its entry when it looks again."""
    _trusted(broker)
    end = confluent_produce(broker.bootstrap, "plain-end", [Rec(None, b"a")])[0].offset() + 1
    call(broker.port, fetch_request("plain-end", end - 1, max_wait_ms=100))  # remembers the end
    stream = Keyspace(broker.settings.keyspace).stream("plain-end", 0)
    encoding = broker.settings.topic_defaults["schooner.offset.encoding"]
    redis_client.xadd(stream, {"value": b"plain"}, id="0-*" if encoding == "dense" else "*")
    got = call(broker.port, fetch_request("plain-end", end, max_wait_ms=5000))
    assert got.responses[0].partitions[0].records
    assert got.responses[0].partitions[0].high_watermark > end
