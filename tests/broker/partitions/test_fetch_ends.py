"""A Fetch at a partition's end reuses the read that found it (broker/partitions/partition_ends.py) until an
append notice: it must still see every append, from this broker, another broker, or a plain Redis writer."""

from __future__ import annotations

import time

import pytest
import redis

from schooner.broker.partitions import waiters
from schooner.storage.keys import Keyspace
from tests.clients import Rec, confluent_produce
from tests.wire import call, fetch_request


def _subscribed(client: redis.Redis, keyspace: str, brokers: int = 1) -> None:
    """Waits until `brokers` brokers listen for append notices (PUBSUB NUMSUB of the channel)."""
    channel = Keyspace(keyspace).appended_channel
    for _ in range(200):
        if dict(client.pubsub_numsub(channel)).get(channel.encode(), 0) >= brokers:
            return
        time.sleep(0.05)
    raise AssertionError("the brokers never subscribed to their append notices")


def _xranges(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_xrange", {}).get("calls", 0))


def test_a_fetch_at_the_remembered_end_reads_at_most_once(broker, redis_client: redis.Redis) -> None:
    _subscribed(redis_client, broker.settings.keyspace)
    end = confluent_produce(broker.bootstrap, "ends", [Rec(None, b"a")])[0].offset() + 1
    got = call(broker.port, fetch_request("ends", end - 1, max_wait_ms=100))
    assert got.responses[0].partitions[0].high_watermark == end  # this read remembered the end
    before = _xranges(redis_client)
    empty = call(broker.port, fetch_request("ends", end, max_wait_ms=300))
    assert empty.responses[0].partitions[0].records in (b"", None)
    assert empty.responses[0].partitions[0].high_watermark == end
    assert _xranges(redis_client) - before <= 1  # the kept read stands in for the first, at least


def test_another_brokers_append_wakes_a_fetch_at_the_remembered_end(
    broker_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(waiters, "RECHECK_SECONDS", 60.0)  # only a notice can end the wait early
    here, there = broker_factory(), broker_factory()
    with redis.Redis.from_url(here.redis_url) as client:
        _subscribed(client, here.settings.keyspace, brokers=2)
    end = confluent_produce(here.bootstrap, "far-append", [Rec(None, b"a")])[0].offset() + 1
    call(here.port, fetch_request("far-append", end - 1, max_wait_ms=100))  # remembers the end
    confluent_produce(there.bootstrap, "far-append", [Rec(None, b"b")])  # heard by `here` as a notice
    got = call(here.port, fetch_request("far-append", end, max_wait_ms=30000))
    assert got.responses[0].partitions[0].high_watermark == end + 1
    assert got.responses[0].partitions[0].records


def test_a_plain_redis_append_is_fetched_at_the_next_look(broker, redis_client: redis.Redis) -> None:
    """A plain writer publishes no notice: the waiting fetch finds its entry when it looks again."""
    _subscribed(redis_client, broker.settings.keyspace)
    end = confluent_produce(broker.bootstrap, "plain-end", [Rec(None, b"a")])[0].offset() + 1
    call(broker.port, fetch_request("plain-end", end - 1, max_wait_ms=100))  # remembers the end
    stream = Keyspace(broker.settings.keyspace).stream("plain-end", 0)
    encoding = broker.settings.topic_defaults["schooner.offset.encoding"]
    redis_client.xadd(stream, {"value": b"plain"}, id="0-*" if encoding == "dense" else "*")
    got = call(broker.port, fetch_request("plain-end", end, max_wait_ms=5000))
    assert got.responses[0].partitions[0].records
    assert got.responses[0].partitions[0].high_watermark > end


def test_a_brokers_own_append_notice_leaves_its_kept_end_standing(
    broker_factory, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker wakes its fetches at each append's reply; its own notice, heard after, is skipped (it
    carries the broker's origin token), so the next fetch at the end still needs no read."""
    monkeypatch.setattr(waiters, "RECHECK_SECONDS", 60.0)  # no look at the partition's tip meanwhile
    broker = broker_factory()
    _subscribed(redis_client, broker.settings.keyspace)
    channel = Keyspace(broker.settings.keyspace).appended_channel
    end = confluent_produce(broker.bootstrap, "own-notice", [Rec(None, b"a")])[0].offset() + 1
    got = call(broker.port, fetch_request("own-notice", end - 1, max_wait_ms=100))
    assert got.responses[0].partitions[0].records  # the batch this broker kept; the end remembered
    origin = broker.broker.ctx.data.waiters.origin
    with redis.Redis.from_url(broker.redis_url) as client, client.pubsub() as heard:
        heard.subscribe(channel)
        heard.get_message(timeout=5)  # the confirmation
        confluent_produce(broker.bootstrap, "own-notice", [Rec(None, b"b")])
        notice = heard.get_message(timeout=5)
        assert notice is not None and notice["data"] == f"own-notice:0 {origin}".encode()
    end += 1
    call(broker.port, fetch_request("own-notice", end - 1, max_wait_ms=100))
    time.sleep(0.3)  # the append's own notice has come back to the broker by now
    before = _xranges(redis_client)
    empty = call(broker.port, fetch_request("own-notice", end, max_wait_ms=300))
    assert empty.responses[0].partitions[0].high_watermark == end
    assert _xranges(redis_client) == before
