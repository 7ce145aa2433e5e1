"""Debian's kcat (librdkafka 2.0.2), an old client that must keep working."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from tests.clients import Rec, confluent_consume, confluent_produce, kcat

pytestmark = pytest.mark.both_encodings


def test_keys_headers_and_null_values_through_kcat(broker) -> None:
    kcat("-b", broker.bootstrap, "-P", "-t", "kc", "-K:", "-H", "a=1", "-H", "a=2", "-H", "bin=\x01x",
         stdin=b"k1:v1\n")  # fmt: skip
    kcat("-b", broker.bootstrap, "-P", "-t", "kc", "-K:", "-Z", stdin=b"k2:\n")  # -Z: empty value is null
    got = confluent_consume(broker.bootstrap, "kc", 2)
    assert got[0].key() == b"k1" and got[0].value() == b"v1"
    assert got[0].headers() == [("a", b"1"), ("a", b"2"), ("bin", b"\x01x")]
    assert got[1].key() == b"k2" and got[1].value() is None
    out = kcat("-b", broker.bootstrap, "-C", "-t", "kc", "-e", "-f", "%k|%s|%h|%S\n")
    lines = out.splitlines()
    assert lines[0].startswith("k1|v1|a=1,a=2,bin=")
    assert lines[1] == "k2|||-1"  # no headers; kcat prints a null value's size as -1


def test_kcat_reads_what_other_clients_wrote_from_an_offset_and_a_time(broker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    base = int(time.time() * 1000) - 60_000  # recent: retention keeps the records
    for i in range(6):
        producer.produce("kc-seek", value=b"%d" % i, key=b"k", timestamp=base + i * 1000)
        producer.flush(10)
    offsets = [m.offset() for m in confluent_consume(broker.bootstrap, "kc-seek", 6)]
    assert len(offsets) == 6
    from_offset = kcat(
        "-b", broker.bootstrap, "-C", "-t", "kc-seek", "-p", "0", "-o", str(offsets[3]), "-e", "-f", "%s\n"
    )
    assert from_offset.splitlines() == ["3", "4", "5"]
    by_time = kcat(
        "-b", broker.bootstrap, "-C", "-t", "kc-seek", "-p", "0", "-o", f"s@{base + 4000}", "-e", "-f", "%s\n"
    )
    assert by_time.splitlines() == ["4", "5"]


def test_kcat_metadata_and_consumer_group(broker) -> None:
    confluent_produce(broker.bootstrap, "kc-meta", [Rec(None, b"x")])
    listing = kcat("-b", broker.bootstrap, "-L", "-t", "kc-meta")
    assert 'topic "kc-meta" with 1 partitions' in listing and "leader" in listing
    out = kcat(
        "-b",
        broker.bootstrap,
        "-G",
        "kcat-group",
        "kc-meta",
        "-c",
        "1",
        "-f",
        "%s\n",
        "-X",
        "auto.offset.reset=earliest",
    )
    assert out.splitlines() == ["x"]
