"""`schooner consume` against a real broker: where it starts (beginning, offsets, times, a group's
commits), when it stops (--max-messages, --timeout, --exit, Ctrl-C), how it prints; and a round trip
with `schooner produce` of keys, headers and binary values, read back by kcat as well."""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients import Rec, confluent_produce
from tests.ops.cli_rig import QUICK, refused, schooner, text, unreachable


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer came
    (future,) = admin.create_topics([NewTopic(topic, partitions)]).values()
    future.result(10)


def _values(done: Any) -> list[str]:
    assert done.returncode == 0, text(done.stderr)
    return text(done.stdout).splitlines()


def test_round_trip_of_keys_headers_and_binary_values(broker: Any, tmp_path: Path) -> None:
    b = ("-b", broker.bootstrap)
    _create(broker.bootstrap, "trip")
    blob = bytes(range(256))
    (tmp_path / "blob").write_bytes(blob)
    assert (
        schooner(
            "produce", "trip", "-K", ":", "-H", "a=1", "-H", "a=2", *b, stdin=b"k1:v1\nk2:v2\n"
        ).returncode
        == 0
    )
    assert (
        schooner("produce", "trip", "--value-file", str(tmp_path / "blob"), "-k", "bin", *b).returncode == 0
    )

    records = [json.loads(line) for line in _values(schooner("consume", "trip", "--from-beginning", "--exit",
                                                             "-f", "json", *b))]  # fmt: skip
    assert [(r["offset"], r["key"], r["value"]) for r in records[:2]] == [(0, "k1", "v1"), (1, "k2", "v2")]
    assert records[0]["headers"] == [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]
    assert records[0]["topic"] == "trip" and records[0]["partition"] == 0
    assert records[0]["timestamp_type"] == "CreateTime" and records[0]["timestamp"] > 1_600_000_000_000
    binary = records[2]
    assert binary["key"] == "bin" and binary["value_encoding"] == "base64" and "key_encoding" not in binary
    assert base64.b64decode(binary["value"]) == blob and binary["headers"] == []
    hexed = json.loads(_values(schooner("consume", "trip", "-o", "2", "-p", "0", "--exit", "-f", "json",
                                        "--binary", "hex", *b))[0])  # fmt: skip
    assert hexed["value_encoding"] == "hex" and bytes.fromhex(hexed["value"]) == blob

    # A format string writes the bytes as they are.
    raw = schooner("consume", "trip", "--from-beginning", "-e", "-f", "%t|%p|%o|%k|%h|%K|%S|%s\\n", *b)
    assert (
        raw.stdout
        == b"trip|0|0|k1|a=1,a=2|2|2|v1\ntrip|0|1|k2|a=1,a=2|2|2|v2\ntrip|0|2|bin||3|256|" + blob + b"\n"
    )
    assert text(raw.stderr).strip() == "consumed 3 records from trip"
    assert _values(schooner("consume", "trip", "--from-beginning", "-e", "-c", "2", "-f", "kv", *b)) == [
        "k1\tv1", "k2\tv2",
    ]  # fmt: skip
    # kcat reads what `schooner produce` wrote.
    kcat = subprocess.run(["kcat", "-b", broker.bootstrap, "-C", "-t", "trip", "-e", "-q", "-f", "%k=%s %h\n",
                           "-c", "2"], capture_output=True, timeout=60)  # fmt: skip
    assert kcat.stdout == b"k1=v1 a=1,a=2\nk2=v2 a=1,a=2\n", kcat.stderr


def test_where_reading_starts(broker: Any) -> None:
    b = ("-b", broker.bootstrap)
    _create(broker.bootstrap, "ten")
    base = (int(time.time()) - 3600) * 1000  # an hour ago: well within retention
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("ten", value=b"v%d" % i, partition=0, timestamp=base + 1000 * i)
    assert producer.flush(10) == 0
    assert _values(schooner("consume", "ten", "--from-beginning", "-c", "3", *b)) == ["v0", "v1", "v2"]
    assert _values(schooner("consume", "ten", "--offset", "7", "-p", "0", "--exit", *b)) == ["v7", "v8", "v9"]
    assert _values(schooner("consume", "ten", "--offset", "-2", "--exit", *b)) == ["v8", "v9"]
    assert _values(schooner("consume", "ten", "--offset", "-50", "--exit", "-c", "1", *b)) == ["v0"]
    assert _values(schooner("consume", "ten", "--timestamp", str(base + 6500), "--exit", *b)) == [
        "v7",
        "v8",
        "v9",
    ]
    iso = datetime.fromtimestamp((base + 8000) / 1000, UTC).isoformat()
    assert _values(schooner("consume", "ten", "--timestamp", iso, "--exit", *b)) == ["v8", "v9"]
    assert _values(schooner("consume", "ten", "--timestamp", str(base + 60_000), "--exit", *b)) == []
    # The default is the end: nothing old comes, and --timeout stops the wait.
    waited = schooner("consume", "ten", "--timeout", "1", *b)
    assert _values(waited) == [] and text(waited.stderr).strip() == "consumed 0 records from ten"


def test_exit_at_the_end_of_every_partition(broker: Any) -> None:
    _create(broker.bootstrap, "spread", 3)
    confluent_produce(broker.bootstrap, "spread", [Rec(None, b"p0-%d" % i) for i in range(2)], partition=0)
    confluent_produce(broker.bootstrap, "spread", [Rec(None, b"p2-%d" % i) for i in range(3)], partition=2)
    got = _values(schooner("consume", "spread", "--from-beginning", "--exit", "-b", broker.bootstrap))
    assert sorted(got) == ["p0-0", "p0-1", "p2-0", "p2-1", "p2-2"]  # partition 1 is empty, and ends too
    only = _values(
        schooner("consume", "spread", "--from-beginning", "-e", "-p", "2", "-p", "1", "-b", broker.bootstrap)
    )
    assert only == ["p2-0", "p2-1", "p2-2"]


def test_a_group_commits_and_resumes(broker: Any) -> None:
    b = ("-b", broker.bootstrap)
    _create(broker.bootstrap, "shared")
    confluent_produce(broker.bootstrap, "shared", [Rec(None, b"r%d" % i) for i in range(6)])
    assert _values(schooner("consume", "shared", "-g", "billing", "--from-beginning", "-c", "4", *b)) == [
        "r0", "r1", "r2", "r3",
    ]  # fmt: skip
    probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing"})
    (committed,) = probe.committed([TopicPartition("shared", 0)], timeout=10)
    probe.close()
    assert committed.offset == 4
    # The next run resumes at the commit (--from-beginning only applies where the group has none).
    assert _values(schooner("consume", "shared", "-g", "billing", "--from-beginning", "--exit", *b)) == [
        "r4",
        "r5",
    ]
    # Without --group nothing is committed anywhere.
    assert _values(schooner("consume", "shared", "--from-beginning", "-c", "1", *b)) == ["r0"]


def _follow(bootstrap: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "schooner.ops.entry", "consume", *args, "-b", bootstrap],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def _produce_until(
    process: subprocess.Popen[bytes], bootstrap: str, topic: str, *, first_line: bool
) -> bytes:
    """Produces a record every 0.2 s (the consumer only sees records produced after it started) until
    the process exits, or until it printed a line when `first_line`; returns what it printed."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    assert process.stdout is not None
    out = b""
    deadline = time.monotonic() + 60
    i = 0
    while time.monotonic() < deadline:
        producer.produce(topic, value=b"new %d" % i)
        producer.flush(10)
        i += 1
        if first_line:
            ready, _, _ = select.select([process.stdout], [], [], 0.2)
            if ready:
                return os.read(process.stdout.fileno(), 65536)
        elif process.poll() is not None:
            return out
        else:
            time.sleep(0.2)
    raise AssertionError("the consumer did not see the new records")


def test_follows_new_records_and_stops_cleanly_on_ctrl_c(broker: Any) -> None:
    _create(broker.bootstrap, "live")
    confluent_produce(broker.bootstrap, "live", [Rec(None, b"old")])
    counted = _follow(broker.bootstrap, "live", "-c", "2")
    _produce_until(counted, broker.bootstrap, "live", first_line=False)
    out, err = counted.communicate(timeout=30)
    lines = out.decode().splitlines()
    assert counted.returncode == 0 and len(lines) == 2 and all(v.startswith("new ") for v in lines), err
    assert int(lines[1].split()[1]) == int(lines[0].split()[1]) + 1

    following = _follow(broker.bootstrap, "live", "-g", "watchers")
    first = _produce_until(following, broker.bootstrap, "live", first_line=True)
    assert first.startswith(b"new ")
    following.send_signal(signal.SIGINT)
    out, err = following.communicate(timeout=30)
    assert following.returncode == 0, err
    assert err.decode().strip().startswith("consumed ") and b"Traceback" not in err


def test_bad_input_is_one_line(broker: Any) -> None:
    b = ("-b", broker.bootstrap)
    _create(broker.bootstrap, "three", 3)
    confluent_produce(broker.bootstrap, "three", [Rec(None, b"x")] * 4, partition=1)
    refused(schooner("consume", "nosuch", "--exit", *b), "no topic 'nosuch'")
    refused(
        schooner("consume", "three", "-p", "1", "--offset", "9", *b), "offset 9 is not in three-1", "latest 4"
    )
    refused(schooner("consume", "three", "--offset", "2", *b), "--offset 2 needs --partition")
    refused(schooner("consume", "three", "--offset", "soon", *b), "--offset")
    refused(schooner("consume", "three", "-p", "7", *b), "not 7")
    refused(schooner("consume", "three", "--timestamp", "yesterday", *b), "--timestamp")
    refused(schooner("consume", "three", "-f", "%q", *b), "--format", "%q")
    refused(schooner("consume", "three", "--from-beginning", "-o", "1", *b), "one of --from-beginning")
    refused(schooner("consume", "three", "-X", "fetch.wait.max.ms", *b), "-X", "not key=value")
    refused(schooner("consume", "three", "-X", "fetch.wait.max.ms=forever", *b), "bad client setting")
    address = unreachable()
    refused(schooner("consume", "three", "-b", address, *QUICK), f"no broker answered at {address}")
