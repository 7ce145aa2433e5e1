"""Several brokers on one Redis, and plain Redis clients on the same streams."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
import redis
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.broker.server import StartupRefused
from schooner.storage.keys import Keyspace
from schooner.storage.offsets import codec_for
from tests.clients import Rec, confluent_consume, confluent_produce, kcat
from tests.conftest import start_broker


def test_two_brokers_share_one_redis(broker_factory) -> None:
    a = broker_factory()
    b = broker_factory()
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    meta = admin.list_topics(timeout=10)
    assert {n.id for n in meta.brokers.values()} == {a.broker_id, b.broker_id}
    admin.create_topics([NewTopic("shared", 8, 1)])["shared"].result(10)
    leaders = {p.leader for p in admin.list_topics("shared", timeout=10).topics["shared"].partitions.values()}
    assert leaders == {a.broker_id, b.broker_id}  # leaders spread over both
    confluent_produce(a.bootstrap, "shared", [Rec(b"k", b"via a")], partition=3)
    # A consumer bootstrapped on b reads what a wrote, whichever broker leads partition 3.
    got = confluent_consume(b.bootstrap, "shared", 1, partition=3)
    assert got[0].value() == b"via a"


def test_long_poll_is_woken_by_another_brokers_append(broker_factory) -> None:
    a = broker_factory()
    b = broker_factory()
    confluent_produce(a.bootstrap, "wake", [Rec(None, b"first")])
    start = time.monotonic()
    # kcat against b waits at the end of the log; a's append must wake it well before max wait.
    import threading

    def later() -> None:
        time.sleep(1.0)
        confluent_produce(a.bootstrap, "wake", [Rec(None, b"second")])

    threading.Thread(target=later).start()
    out = kcat(
        "-b",
        b.bootstrap,
        "-C",
        "-t",
        "wake",
        "-o",
        "beginning",
        "-c",
        "2",
        "-f",
        "%s\n",
        "-X",
        "fetch.wait.max.ms=10000",
    )
    assert out.splitlines() == ["first", "second"]
    assert time.monotonic() - start < 8


def test_stopped_broker_leaves_metadata(broker_factory) -> None:
    a = broker_factory()
    b = broker_factory()
    b.stop()
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        ids = {n.id for n in admin.list_topics(timeout=10).brokers.values()}
        if ids == {a.broker_id}:
            break
        time.sleep(0.2)
    assert ids == {a.broker_id}


def test_redis_client_reads_what_kafka_wrote(broker, redis_client: redis.Redis) -> None:
    confluent_produce(broker.bootstrap, "interop", [Rec(b"key", b"value", (("h", b"1"),)), Rec(None, None)])
    stream = Keyspace(broker.settings.keyspace).stream("interop", 0)
    entries = redis_client.xrange(stream)
    assert len(entries) == 2
    first, second = entries[0][1], entries[1][1]
    assert first[b"key"] == b"key" and first[b"value"] == b"value" and b"timestamp" in first
    assert first[b"headers"] == b"\x00\x00\x00\x01h\x00\x00\x00\x011"
    assert b"key" not in second and b"value" not in second  # nulls are left out


@pytest.mark.both_encodings
def test_kafka_consumer_reads_what_redis_appended(broker, redis_client: redis.Redis, offset_encoding) -> None:
    confluent_produce(broker.bootstrap, "native", [Rec(None, b"from kafka")])
    stream = Keyspace(broker.settings.keyspace).stream("native", 0)
    # The plain-Redis recipe of each encoding (docs/key-layout.md): 0-* on dense topics, * on the other.
    entry_id = redis_client.xadd(
        stream, {"key": b"rk", "value": b"from redis"}, id="0-*" if offset_encoding == "dense" else "*"
    )
    got = confluent_consume(broker.bootstrap, "native", 2)
    assert [m.value() for m in got] == [b"from kafka", b"from redis"]
    assert got[1].key() == b"rk"
    assert got[1].offset() == codec_for(offset_encoding).offset_of_id(entry_id)
    if offset_encoding == "dense":
        assert got[1].offset() == 1 and entry_id == b"0-2"
    # The broker's next append goes after the native entry.
    confluent_produce(broker.bootstrap, "native", [Rec(None, b"after")])
    assert [m.value() for m in confluent_consume(broker.bootstrap, "native", 3)][2] == b"after"


@pytest.mark.parametrize(
    ("defaults", "refusal"),
    [
        ({"retention.ms": "soon"}, "retention.ms = 'soon'"),
        ({"no.such.config": "1"}, "unknown topic config 'no.such.config'"),
    ],
)
def test_broker_refuses_bad_topic_defaults(
    redis_server: Any, keyspace: str, defaults: dict[str, str], refusal: str
) -> None:
    """A bad default would be stamped on every new topic and fail its appends later: refuse at start."""
    with pytest.raises(StartupRefused, match=re.escape(refusal)):
        start_broker(redis_server.url, keyspace, topic_defaults=defaults)
