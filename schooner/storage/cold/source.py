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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..log import read
from ..log.raw_entries import listed
from ..log.transactions import ABORT, CONTROL, TXN, AbortedTransaction
from ..offsets import OffsetCodec
from ..redis.calls import Steps
from ..topics.metadata import Topic


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
    return ArchiveSlice(start, at, entries, tuple(aborted), first.log_start_offset, *ended)


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
