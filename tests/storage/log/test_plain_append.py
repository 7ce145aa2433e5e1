"""A plain produced batch (the compiled reader's columns) is appended exactly as the same batch decoded record
by record: the same script arguments, and the same entries in Redis."""

from __future__ import annotations

import dataclasses
from typing import Any

from schooner.protocol.records import CODEC_NONE, BatchBuilder, ProducedBatch, read_batches
from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import read as log_read
from schooner.storage.log.notices import notice_args
from schooner.storage.redis import calls
from schooner.storage.topics import metadata
from tests.compiled import needs_compiled

pytestmark = needs_compiled  # the columns come from the compiled reader

BASE_TS = 1_700_000_000_000


def produced(rows: list[tuple[int, bytes | None, bytes]], transactional: bool = False) -> ProducedBatch:
    builder = BatchBuilder(0, CODEC_NONE, producer_id=5 if transactional else -1, transactional=transactional)
    for offset, (step, key, value) in enumerate(rows):
        builder.append(offset, BASE_TS + step, key, value, [])
    (batch,) = read_batches(builder.build())
    assert batch.plain is not None
    return batch


CASES = {
    "unkeyed, one timestamp": [(0, None, b"a"), (0, None, b""), (0, None, b"c")],
    "keyed, runs and a step back": [(0, b"k1", b"a"), (0, b"k2", b"b"), (4, b"", b"c"), (2, b"k1", b"d")],
    "one record": [(9, b"k", b"v")],
}


def test_the_script_arguments_are_the_same_as_the_record_by_record_ones(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        topic = await calls.drive(redis, metadata.create(ks, "p", 1, {"retention.ms": "-1"}, {}))
        notice = notice_args(ks, topic.name, 0, True, False)
        for name, rows in CASES.items():
            plain = produced(rows)
            general = dataclasses.replace(plain, records=list(plain.records), plain=None)
            assert log_append.append_args(topic, 0, plain, notice) == log_append.append_args(
                topic, 0, general, notice
            ), name

    run(body)


def test_plain_and_general_batches_store_the_same_entries(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        entries = []
        for name in ("plain", "general"):
            topic = await calls.drive(redis, metadata.create(ks, name, 1, {"retention.ms": "-1"}, {}))
            for rows in CASES.values():
                batch = produced(rows)
                if name == "general":
                    batch = dataclasses.replace(batch, records=list(batch.records), plain=None)
                result = await calls.run(redis, log_append.append(ks, topic, 0, batch))
                assert result.status == log_append.APPENDED
            read = await calls.drive(redis, log_read.read(ks, topic, 0, 0, 100))
            entries.append(read.entries)
        assert len(entries[0]) == sum(map(len, CASES.values()))
        assert entries[0] == entries[1]

    run(body)
