"""`schooner produce` piped real stdin, against a real broker; what arrived is read back with
confluent-kafka. Failures (an unknown topic, a record the broker refuses, ...) are one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients import confluent_consume
from tests.ops.cli_rig import QUICK, refused, schooner, text, unreachable


def _create(bootstrap: str, topic: str, partitions: int = 1, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.create_topics([NewTopic(topic, partitions, config=config)]).values()
    future.result(10)


def _end(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
    finally:
        consumer.close()


def test_lines_with_keys_headers_and_a_partition(broker: Any) -> None:
    _create(broker.bootstrap, "lines", 3)
    stdin = b"a\tA\nb\tB with\ttab\nno key\n"
    done = schooner("produce", "lines", "-K", "\\t", "-H", "src=cli", "-H", "src=two", "-H", "empty=",
                    "--partition", "2", "-b", broker.bootstrap, stdin=stdin)  # fmt: skip
    assert done.returncode == 0, text(done.stderr)
    assert text(done.stderr).strip() == "produced 3 records (19 bytes) to lines, partitions 2"
    got = confluent_consume(broker.bootstrap, "lines", 3, partition=2)
    assert [(m.key(), m.value()) for m in got] == [(b"a", b"A"), (b"b", b"B with\ttab"), (None, b"no key")]
    assert all(m.headers() == [("src", b"cli"), ("src", b"two"), ("empty", b"")] for m in got)
    assert _end(broker.bootstrap, "lines", 0) == 0 and _end(broker.bootstrap, "lines", 1) == 0


def test_fixed_key_empty_lines_and_a_last_line_without_newline(broker: Any) -> None:
    _create(broker.bootstrap, "plain")
    done = schooner("produce", "plain", "--key", "K", "-b", broker.bootstrap, stdin=b"x\n\ny")
    assert done.returncode == 0, text(done.stderr)
    got = confluent_consume(broker.bootstrap, "plain", 3)
    assert [(m.key(), m.value()) for m in got] == [(b"K", b"x"), (b"K", b""), (b"K", b"y")]


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_a_binary_file_as_one_record(broker: Any, tmp_path: Path, compression: str) -> None:
    _create(broker.bootstrap, "files")
    blob = bytes(range(256)) * 40
    (tmp_path / "blob.bin").write_bytes(blob)
    done = schooner("produce", "files", "--value-file", str(tmp_path / "blob.bin"), "-k", "blob",
                    "--acks", "all", "--compression", compression, "-b", broker.bootstrap)  # fmt: skip
    assert done.returncode == 0, text(done.stderr)
    assert text(done.stderr).strip() == f"produced 1 record ({len(blob) + 4} bytes) to files, partitions 0"
    (got,) = confluent_consume(broker.bootstrap, "files", 1)
    assert (got.key(), got.value()) == (b"blob", blob)


def test_bulk_produce_shows_progress_on_a_terminal(broker: Any, tmp_path: Path) -> None:
    _create(broker.bootstrap, "bulk", 2)
    lines = b"".join(b"record %d\n" % i for i in range(3000))
    # stderr a terminal (as rich is told): the progress bar is drawn, then the summary.
    shown = schooner("produce", "bulk", "-b", broker.bootstrap, stdin=lines, TTY_COMPATIBLE="1")
    assert shown.returncode == 0, text(shown.stderr)
    assert "records sent" in text(shown.stderr) and "acknowledged" in text(shown.stderr)
    summary = f"produced 3000 records ({len(lines) - 3000} bytes) to bulk, partitions "
    assert summary in text(shown.stderr).splitlines()[-1]
    assert text(shown.stderr).index("records sent") < text(shown.stderr).index(summary)
    # stderr not a terminal (a log file): the summary alone.
    quiet = schooner("produce", "bulk", "-b", broker.bootstrap, stdin=lines, TTY_COMPATIBLE="0")
    assert quiet.returncode == 0
    assert text(quiet.stderr).startswith(summary) and len(text(quiet.stderr).splitlines()) == 1
    assert _end(broker.bootstrap, "bulk", 0) + _end(broker.bootstrap, "bulk", 1) == 6000


def test_failures_are_one_line(broker: Any, tmp_path: Path) -> None:
    b = ("-b", broker.bootstrap)
    _create(broker.bootstrap, "strict", 2, **{"max.message.bytes": "1000"})
    refused(schooner("produce", "nosuch", *b, stdin=b"x\n"), "no topic 'nosuch'")
    refused(schooner("produce", "strict", "--partition", "5", *b, stdin=b"x\n"), "not 5")
    refused(schooner("produce", "strict", "-k", "a", "-K", ":", *b, stdin=b"x\n"), "--key or --key-separator")
    refused(schooner("produce", "strict", "-H", "nameonly", *b, stdin=b"x\n"), "--header", "not name=value")
    refused(schooner("produce", "strict", "--acks", "2", *b, stdin=b"x\n"), "--acks")
    refused(schooner("produce", "strict", "-X", "acks=sometimes", *b, stdin=b"x\n"), "bad client setting")
    (tmp_path / "big").write_bytes(b"x" * 5000)
    line = refused(
        schooner("produce", "strict", "--value-file", str(tmp_path / "big"), *b), "1 of 1 records failed"
    )
    assert "MSG_SIZE_TOO_LARGE" in line and "0 produced" in line
    assert _end(broker.bootstrap, "strict", 0) == 0 and _end(broker.bootstrap, "strict", 1) == 0
    address = unreachable()
    no_broker = schooner("produce", "strict", "-b", address, *QUICK, stdin=b"x\n")
    refused(no_broker, f"no broker answered at {address}")
