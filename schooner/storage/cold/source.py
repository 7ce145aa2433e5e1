"""The hot side of an archive step: a partition's committed entries read out of Redis.

A slice is read with the log's own read (log/read.py, read_committed), so it never passes the last
stable offset: every transaction with records in it has ended, and whether each record was aborted is
known. The slice then ends before the first record of a transaction whose marker lies past it, so that
the markers inside the slice settle every record in it, with no limit on how many transactions it
holds. Only a slice that starts inside such a transaction (one longer than the slice) falls back to the
partition's aborted index, which a read lists up to transactions.ABORTED_READ_LIMIT deep.

A slice is read READ_CHUNK entries per round trip: Redis holds a reply in the client's output buffer,
which counts toward maxmemory, and the archiver reads most when Redis is nearly full (four partitions'
50,000 records of 250 bytes at once took a 128 MB Redis 35 MB past its limit).

A topic whose table decodes keys or values (schooner.table.key.mode / value.mode not raw) gets, with its
slice, the schema registry's documents its records need (slice_schemas): one more round trip for the
schema ids the records name and the subjects' versions, a second for a latest schema not among them, and
one per reference to resolve (rare). Parsing is the table's (cold/typed/), cached per document.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..keys import Keyspace
from ..log import read
from ..log.entry import KEY, VALUE
from ..log.raw_entries import listed
from ..log.transactions import ABORT, CONTROL, TXN, AbortedTransaction
from ..offsets import OffsetCodec
from ..redis.calls import Call, Steps
from ..schemas import registry
from ..schemas.registry import StoredSchema
from ..topics.config import RAW, SCHEMA_LATEST
from ..topics.metadata import Topic


@dataclass(frozen=True, slots=True)
class SliceSchemas:
    """The registry's documents a slice's typed columns decode by (empty for raw tables)."""

    by_id: Mapping[int, StoredSchema] = field(default_factory=dict)  # each id the records name, and latest
    references: Mapping[int, tuple[tuple[str, str], ...]] = field(
        default_factory=dict
    )  # resolved, deps first
    latest: Mapping[str, int] = field(default_factory=dict)  # "key" / "value" -> its subject's latest id


@dataclass(frozen=True, slots=True)
class ArchiveSlice:
    """Entries [start, end) of a partition, ready to archive."""

    start: int  # the offset the slice was read from
    end: int  # after its last entry (start when it has none): the next slice's start
    entries: list[Any]  # raw XRANGE entries, all below the last stable offset
    aborted: tuple[AbortedTransaction, ...]  # every aborted transaction with records among them
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    schemas: SliceSchemas = field(default_factory=SliceSchemas)


READ_CHUNK = 1024  # entries per round trip: about 300 KB of reply for 250-byte records


def archive_slice(
    ks: Keyspace, topic: Topic, partition: int, start: int, max_records: int
) -> Steps[ArchiveSlice]:
    """Up to max_records committed entries from `start`: a round trip (and read()'s rare second) per
    READ_CHUNK entries."""
    entries: list[Any] = []
    aborted: list[AbortedTransaction] = []
    at, first = start, None
    while True:
        want = min(READ_CHUNK, max_records - len(entries))
        found = yield from read.read(ks, topic, partition, at, want, committed=True)
        first = first or found
        got, got_aborted = settle(listed(found.entries), topic.offsets, found.aborted)
        entries += got
        aborted += [a for a in got_aborted if a not in aborted]
        if got:
            at = topic.offsets.offset_of_id(got[-1][0]) + 1
        # A short chunk: the log's (or the LSO's) end, or a cut before an open transaction.
        if len(got) < want or len(entries) >= max_records:
            break
    ended = (found.high_watermark, found.last_stable_offset)
    docs = SliceSchemas()
    if entries and (topic.table_key_mode != RAW or topic.table_value_mode != RAW):
        docs = yield from slice_schemas(ks, topic, entries)
    return ArchiveSlice(start, at, entries, tuple(aborted), first.log_start_offset, *ended, docs)


def decoded_sides(topic: Topic) -> list[tuple[str, str]]:
    """("key" / "value", mode) of each side the topic's table decodes."""
    modes = (("key", topic.table_key_mode), ("value", topic.table_value_mode))
    return [(side, mode) for side, mode in modes if mode != RAW]


def slice_schemas(ks: Keyspace, topic: Topic, entries: Sequence[Any]) -> Steps[SliceSchemas]:
    """The schema documents the entries' decoded sides need: every schema id their records' wire headers
    name (under schema_latest too: a record's writer schema), and for schema_latest the subject's latest."""
    ids: set[int] = set()
    subjects: list[tuple[str, str]] = []
    for side, mode in decoded_sides(topic):
        ids |= schema_ids(entries, KEY if side == "key" else VALUE)
        if mode == SCHEMA_LATEST:
            subjects.append((side, f"{topic.name}-{side}"))  # TopicNameStrategy
    calls: list[Call[Any]] = [registry.versions(ks, subject) for _, subject in subjects]
    if ids:
        calls.append(registry.schemas(ks, sorted(ids)))
    if not calls:
        return SliceSchemas()
    replies = yield calls
    by_id: dict[int, StoredSchema] = dict(replies[-1]) if ids else {}
    latest: dict[str, int] = {}
    for (side, _), held in zip(subjects, replies, strict=False):
        live = [v for v in held if not v.deleted]
        if live:
            latest[side] = live[-1].schema_id
    missing = sorted(set(latest.values()) - set(by_id))
    if missing:
        (more,) = yield [registry.schemas(ks, missing)]
        by_id.update(more)
    references: dict[int, tuple[tuple[str, str], ...]] = {}
    for schema_id, stored in by_id.items():
        if stored.references:
            # A missing one leaves the id's references out: the table records why it did not decode.
            with contextlib.suppress(registry.MissingReference):
                references[schema_id] = tuple((yield from registry.dependencies(ks, stored.references)))
    return SliceSchemas(by_id, references, latest)


def schema_ids(entries: Sequence[Any], name: bytes) -> set[int]:
    """The schema ids in the wire headers (magic byte 0, 4-byte id) of the entries' field `name`."""
    headers: set[bytes] = set()
    for _, fields in entries:
        try:
            i = fields.index(name)
        except ValueError:
            continue
        if i % 2:  # a value equal to the name: look among the names only
            i = next((j for j in range(0, len(fields) - 1, 2) if fields[j] == name), -1)
            if i < 0:
                continue
        value = fields[i + 1]
        if len(value) >= 5 and value[0] == 0:
            headers.add(value[1:5])
    return {int.from_bytes(h, "big") for h in headers}


def settle(
    entries: list[Any], offsets: OffsetCodec, indexed: tuple[AbortedTransaction, ...]
) -> tuple[list[Any], tuple[AbortedTransaction, ...]]:
    """The entries cut before the first record of a transaction whose marker is past them (unless that
    is the first entry), and the aborted transactions among what is left."""
    opened: dict[int, int] = {}  # producer id -> first offset of its records since its last marker
    aborted: list[AbortedTransaction] = []
    for entry_id, fields in entries:
        if TXN not in fields:  # most entries: one scan in C (a value equal to the name costs the loop)
            continue
        txn = control = None
        for i in range(0, len(fields) - 1, 2):
            if fields[i] == TXN:
                txn = fields[i + 1]
            elif fields[i] == CONTROL:
                control = fields[i + 1]
        if txn is None:
            continue
        pid = int(txn.partition(b":")[0])
        offset = offsets.offset_of_id(entry_id)
        if control is None:
            opened.setdefault(pid, offset)
        elif pid in opened:
            first = opened.pop(pid)
            if control == ABORT:
                aborted.append(AbortedTransaction(pid, first, offset))
    if not opened:
        return entries, tuple(aborted)
    cut = min(opened.values())
    if cut > offsets.offset_of_id(entries[0][0]):
        return [e for e in entries if offsets.offset_of_id(e[0]) < cut], tuple(aborted)
    # The slice starts inside a transaction longer than itself: the index says how those ended.
    for pid, first in opened.items():
        aborted.extend(a for a in indexed if a.producer_id == pid and a.first_offset <= first < a.last_offset)
    return entries, tuple(aborted)
