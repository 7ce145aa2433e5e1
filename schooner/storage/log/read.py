"""Reads of the partition log: XRANGE from an offset's ID, and the partition's bounds from XINFO STREAM.

Ranges are in Kafka offsets, start inclusive and end exclusive, as Kafka's and Spark's are. Offsets of a
timestamp-encoded topic have gaps, and retention or DeleteRecords leave gaps on dense ones too, so a
count of records comes from the entries themselves, never from subtracting offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..offsets import LAST_DENSE_ID, OffsetCodec
from ..redis.calls import Call, Steps, command, parallel, raw_command, script
from ..topics.metadata import Topic
from . import entry, transactions
from .raw_entries import RAW_READS, entries_of, last_entry_id
from .transactions import AbortedTransaction

# The compression.type under which Fetch compresses each batch as its producer did (codec runs).
PRODUCER_CODECS = "producer"


@dataclass(frozen=True, slots=True)
class PartitionBounds:
    log_start_offset: int
    high_watermark: int
    # Lowest offset a reader may ask for: above every deleted entry, so an offset in the gap
    # before the first entry is still valid when nothing at or after it was removed.
    first_valid_offset: int = 0


@dataclass(frozen=True, slots=True)
class PartitionRead:
    # The XRANGE reply, [[id, [field, value, ...]], ...]: hiredis's list, or RawEntries (its RESP bytes).
    entries: Sequence[Any]
    log_start_offset: int
    high_watermark: int
    first_valid_offset: int
    last_stable_offset: int = -1  # -1: not asked for
    # Read committed: the aborted transactions with records among the entries (Kafka's Fetch list).
    aborted: tuple[AbortedTransaction, ...] = ()
    # (first offset, codec) of each run of batches one codec compressed, from the run covering the first
    # entry (keys.py's codec_runs): for a topic with compression.type=producer; () otherwise.
    codec_runs: tuple[tuple[int, int], ...] = ()


def _info_fields(info: Any) -> dict[bytes, Any]:
    """An XINFO STREAM reply as a dict (RESP3 gives one, RESP2 a flat list)."""
    return info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=False))


def bounds_from_info(info: Any, offsets: OffsetCodec, state: Any = None) -> PartitionBounds:
    """Log start and high watermark from an XINFO STREAM reply (None for a missing stream).

    state is the state hash's [valid_from, last_seq]: valid_from records the lowest ID not yet
    removed by retention or DeleteRecords (XTRIM leaves no trace in the stream itself); last_seq is
    the last dense sequence (see _dense_state), which bounds a dense topic whose last ID came from a
    plain `XADD key *` (see log/append.FOREIGN_ID).
    """
    if not info:
        return PartitionBounds(0, 0)
    valid_from, last_seq = state if state else (None, None)
    fields = _info_fields(info)
    last_id = fields.get(b"last-generated-id") or b"0-0"
    if not int(fields.get(b"entries-added", 1)) and last_id == b"0-0":
        return PartitionBounds(0, 0)
    high = offsets.offset_of_id(last_id) + 1 if offsets.numbered(last_id) else int(last_seq or 0)
    first = fields.get(b"first-entry")
    start = offsets.offset_of_id(first[0]) if first and offsets.numbered(first[0]) else high
    valid = min(offsets.offset_of_id(valid_from), start) if valid_from else 0
    return PartitionBounds(start, high, valid)


def _none(_: Exception) -> None:
    return None


def _bounds_calls(ks: Keyspace, topic: Topic, partition: int) -> list[Call[Any]]:
    """XINFO STREAM (first entry, last generated ID; an error for a missing stream), the state's marks."""
    return [
        command("XINFO STREAM", ks.stream(topic.name, partition), on_error=_none),
        command("HMGET", ks.partition_state(topic.name, partition), "valid_from", "last_seq"),
    ]


def _needs_dense_state(topic: Topic, info: Any) -> bool:
    """A dense stream whose last ID is not one of the broker's numbered ones (a plain `XADD key *`)."""
    if not info or not topic.offsets.dense:
        return False
    return not topic.offsets.numbered(_info_fields(info).get(b"last-generated-id") or b"0-0")


def _dense_state(ks: Keyspace, topic: Topic, partition: int, info: Any, state: Any) -> Steps[Any]:
    """The state's marks, with last_seq raised to the stream's last dense entry when a `*` entry ends a
    dense stream: `0-*` entries a plain writer added before it are not in last_seq. One more round
    trip, for such a stream only."""
    if not _needs_dense_state(topic, info):
        return state
    stream = ks.stream(topic.name, partition)
    (last,) = yield [command("XREVRANGE", stream, LAST_DENSE_ID, "-", "COUNT", 1)]
    valid_from, last_seq = state if state else (None, None)
    if last:
        last_seq = max(int(last_seq or 0), int(last[0][0].split(b"-")[1]))
    return [valid_from, last_seq]


def bounds(ks: Keyspace, topic: Topic, partition: int) -> Steps[PartitionBounds]:
    """One round trip (and _dense_state's)."""
    info, state = yield _bounds_calls(ks, topic, partition)
    state = yield from _dense_state(ks, topic, partition, info, state)
    return bounds_from_info(info, topic.offsets, state)


def bounds_of(ks: Keyspace, partitions: Sequence[tuple[Topic, int]]) -> Steps[list[PartitionBounds]]:
    """The bounds of many partitions in one round trip (and _dense_state's)."""
    if not partitions:
        return []
    replies = yield [c for topic, p in partitions for c in _bounds_calls(ks, topic, p)]
    out = []
    for i, (topic, p) in enumerate(partitions):
        info = replies[2 * i]
        state = yield from _dense_state(ks, topic, p, info, replies[2 * i + 1])
        out.append(bounds_from_info(info, topic.offsets, state))
    return out


def tip(ks: Keyspace, topic: str, partition: int) -> Call[bytes | None]:
    """The stream's last generated ID (None for a missing stream): a change means it was appended to,
    by a broker or by a plain Redis writer. One small reply, for checks of partitions fetches wait on."""
    return script("log_tip", [ks.stream(topic, partition)], [], parse=lambda reply: reply or None)


def read_calls(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    offset: int,
    max_entries: int,
    committed: bool = False,
    raw: bool = False,
) -> list[Call[Any]]:
    """read()'s two commands: XRANGE from the offset's ID, then the bounds and the open transactions
    (the LSO) in log_read_marks.lua, read after the entries so that a trim which removed entries the
    read missed shows in them. A Fetch of many partitions sends these for each partition, so two
    commands rather than four or five keep its cost per partition down. raw: the entries may come as
    RawEntries (their RESP bytes, on the read lane), for the fetch encoder, which reads them unparsed."""
    keys = [
        ks.stream(topic.name, partition),
        ks.partition_state(topic.name, partition),
        ks.txn_open(topic.name, partition),
        ks.aborted(topic.name, partition),
        ks.codec_runs(topic.name, partition),
    ]
    marks = [
        transactions.aborted_min_score(offset) if committed else "",
        transactions.ABORTED_READ_LIMIT,
        topic.offsets.id_text(offset) if topic.compression_type == PRODUCER_CODECS else "",
    ]
    xrange = ("XRANGE", keys[0], topic.offsets.id_text(offset), topic.offsets.last_id, "COUNT", max_entries)
    return [
        raw_command(*xrange, parse=entries_of) if raw and RAW_READS else command(*xrange),
        script("log_read_marks", keys, marks),
    ]


def read_from_replies(
    topic: Topic, offset: int, committed: bool, entries: Any, marks: Any
) -> PartitionRead | None:
    """The read from read_calls' two replies, or None when the stream needs _dense_state's extra round
    trip (a dense stream whose last entry came from a plain `XADD key *`): then read() does it."""
    info, state, open_txns, members, runs = marks
    info = _info_fields(info) if info else info  # once, for both uses
    if _needs_dense_state(topic, info):
        return None
    return _partition_read(topic, offset, committed, entries, info, state, open_txns, members, runs)


def read_many(
    ks: Keyspace, reads: Sequence[tuple[Topic, int, int, int]], committed: bool = False
) -> Steps[list[PartitionRead]]:
    """read() of many (topic, partition, offset, max_entries) side by side: one round trip for all (and
    _dense_state's). The replies are read without a procedure per partition (read()'s generator costs
    as much as its parsing), for a Fetch of many partitions on the read lane."""
    replies = yield [c for t, p, offset, n in reads for c in read_calls(ks, t, p, offset, n, committed, True)]
    found = [
        read_from_replies(t, offset, committed, replies[2 * i], replies[2 * i + 1])
        for i, (t, _, offset, _) in enumerate(reads)
    ]
    again = [i for i, f in enumerate(found) if f is None]
    if again:  # a stream that needs one more round trip: read again with it (rare)
        steps = parallel([read(ks, *reads[i][:3], reads[i][3], committed) for i in again])
        for i, r in zip(again, (yield from steps), strict=True):
            found[i] = r
    return [f for f in found if f is not None]  # every None was replaced just above


def read(
    ks: Keyspace, topic: Topic, partition: int, offset: int, max_entries: int, committed: bool = False
) -> Steps[PartitionRead]:
    """One round trip (and _dense_state's) of read_calls. committed (read_committed): entries stop at
    the LSO and the aborted transactions among them come too."""
    entries, (info, state, open_txns, members, runs) = yield read_calls(
        ks, topic, partition, offset, max_entries, committed
    )
    state = yield from _dense_state(ks, topic, partition, info, state)
    return _partition_read(topic, offset, committed, entries, info, state, open_txns, members, runs)


def _partition_read(
    topic: Topic,
    offset: int,
    committed: bool,
    entries: Any,
    info: Any,
    state: Any,
    open_txns: Any,
    members: Any,
    runs: Any,
) -> PartitionRead:
    b = bounds_from_info(info, topic.offsets, state)
    stable = transactions.last_stable_offset(open_txns, topic.offsets, b.high_watermark)
    entries = entries or []
    aborted: tuple[AbortedTransaction, ...] = ()
    if committed:
        offsets = topic.offsets
        # Every entry is below the high watermark: with no open transaction below it, none is cut (and a
        # raw reply's last ID need not be read).
        if entries and stable < b.high_watermark and offsets.offset_of_id(last_entry_id(entries)) >= stable:
            entries = [e for e in entries if offsets.offset_of_id(e[0]) < stable]
        if entries and members:
            end = offsets.offset_of_id(last_entry_id(entries)) + 1
            aborted = tuple(transactions.aborted_overlapping(members, offsets, offset, end))
    codecs = tuple((topic.offsets.offset_of_id(runs[i]), int(runs[i + 1])) for i in range(0, len(runs), 2))
    return PartitionRead(
        entries, b.log_start_offset, b.high_watermark, b.first_valid_offset, stable, aborted, codecs
    )


def stable_bounds(ks: Keyspace, topic: Topic, partition: int) -> Steps[tuple[PartitionBounds, int]]:
    """The bounds and the last stable offset, in one round trip (and _dense_state's)."""
    (found,) = yield from stable_bounds_of(ks, [(topic, partition)])
    return found


def entry_timestamp(fields: list[bytes], entry_id: bytes) -> int:
    """The record's timestamp field, or the entry ID's milliseconds for an entry without one (0 on a
    dense topic, whose IDs carry no time: plain writers should add a timestamp field)."""
    for i in range(0, len(fields) - 1, 2):
        if fields[i] == entry.TIMESTAMP:
            try:
                return int(fields[i + 1])
            except ValueError:
                break
    return int(entry_id.split(b"-", 1)[0])


def range_start(topic: Topic, start: int, exclusive: bool = False) -> bytes:
    """The XRANGE start argument for an offset (or for just after it)."""
    text = topic.offsets.id_text(max(start, 0))
    return b"(" + text if exclusive else text


def _range_end(topic: Topic, end: int) -> bytes:
    return b"(" + topic.offsets.id_text(max(end, 0))


def read_range(
    ks: Keyspace, topic: Topic, partition: int, start: bytes, end: int, count: int
) -> Call[list[Any]]:
    """Up to `count` raw entries from the start argument (see range_start) below offset `end`."""
    return command(
        "XRANGE",
        ks.stream(topic.name, partition),
        start,
        _range_end(topic, end),
        "COUNT",
        count,
        parse=lambda reply: (reply or []) if end > 0 else [],
    )


def read_range_and_bounds(
    ks: Keyspace, topic: Topic, partition: int, start: int, end: int, count: int
) -> Steps[tuple[list[Any], PartitionBounds]]:
    """read_range from an offset plus the partition's bounds (read after the entries), in one round trip."""
    entries, info, state = yield [
        read_range(ks, topic, partition, range_start(topic, start), end, count),
        *_bounds_calls(ks, topic, partition),
    ]
    state = yield from _dense_state(ks, topic, partition, info, state)
    return entries, bounds_from_info(info, topic.offsets, state)


def next_ends(
    ks: Keyspace, wanted: Sequence[tuple[Topic, int, int, int, int]]
) -> Steps[list[tuple[int, int]]]:
    """For each (topic, partition, start, end, n): how many records lie in [start, end), up to n, and the
    offset just after the last of them (start when there are none). One round trip.

    The entries themselves are fetched: Redis cannot count stream entries between two IDs without
    walking them, and a server-side walk measured no cheaper than the transfer.
    """
    replies = yield [
        command(
            "XRANGE",
            ks.stream(topic.name, p),
            range_start(topic, start),
            _range_end(topic, end),
            "COUNT",
            max(n, 1),
            on_error=_none,
        )
        for topic, p, start, end, n in wanted
    ]
    out = []
    for (topic, _, start, end, n), reply in zip(wanted, replies, strict=True):
        if not reply or end <= start or n <= 0:
            out.append((0, start))
        else:
            out.append((len(reply), topic.offsets.offset_of_id(reply[-1][0]) + 1))
    return out


def entries_in_ms(
    ks: Keyspace, topic: Topic, partition: int, probes: Sequence[int], below: int
) -> Steps[list[int]]:
    """For each millisecond in probes: how many entries the log holds in it below offset `below`.

    The count is the last entry's sequence + 1: the broker and Redis's own `*` number the entries of
    a millisecond from 0. Entries never change once written, so for a fixed range this answer is the
    same every time it is asked, unlike XLEN. One round trip of XREVRANGE COUNT 1 per probe.
    Timestamp-encoded topics only: a dense topic's offsets count its records already.
    """
    offsets = topic.offsets
    bits = offsets.bits
    mask = (1 << bits) - 1
    last = max(below - 1, 0)
    stream = ks.stream(topic.name, partition)
    replies = yield [
        command(
            "XREVRANGE", stream, offsets.id_text(min((ms << bits) | mask, last)), b"%d-0" % ms, "COUNT", 1,
            on_error=_none,
        )
        for ms in probes
    ]  # fmt: skip
    return [(offsets.offset_of_id(r[0][0]) & mask) + 1 if r else 0 for r in replies]


def stable_bounds_of(
    ks: Keyspace, partitions: Sequence[tuple[Topic, int]]
) -> Steps[list[tuple[PartitionBounds, int]]]:
    """bounds_of plus each partition's last stable offset, in one round trip (and _dense_state's)."""
    if not partitions:
        return []
    replies = yield [
        c
        for topic, p in partitions
        for c in (*_bounds_calls(ks, topic, p), transactions.open_call(ks, topic, p))
    ]
    out = []
    for i, (topic, p) in enumerate(partitions):
        info, state, open_txns = replies[3 * i : 3 * i + 3]
        state = yield from _dense_state(ks, topic, p, info, state)
        b = bounds_from_info(info, topic.offsets, state)
        out.append((b, transactions.last_stable_offset(open_txns, topic.offsets, b.high_watermark)))
    return out


def read_committed_range(
    ks: Keyspace, topic: Topic, partition: int, start: int, end: int, count: int, exclusive: bool = False
) -> Steps[tuple[list[Any], list[AbortedTransaction]]]:
    """read_range from an offset (or just after it) below `end`, and the aborted transactions that may
    have records there (for transactions.committed_entries), in one round trip. The range must end at
    or below the last stable offset, as every transaction with records in it has then ended."""
    entries, members = yield [
        read_range(ks, topic, partition, range_start(topic, start, exclusive), end, count),
        transactions.aborted_call(ks, topic, partition, start),
    ]
    return entries, transactions.aborted_overlapping(members, topic.offsets, start, end)


def read_committed_range_and_bounds(
    ks: Keyspace, topic: Topic, partition: int, start: int, end: int, count: int
) -> Steps[tuple[list[Any], PartitionBounds, list[AbortedTransaction]]]:
    """read_range_and_bounds plus the aborted transactions that may have records in the range (see
    read_committed_range), in one round trip."""
    entries, info, state, members = yield [
        read_range(ks, topic, partition, range_start(topic, start), end, count),
        *_bounds_calls(ks, topic, partition),
        transactions.aborted_call(ks, topic, partition, start),
    ]
    state = yield from _dense_state(ks, topic, partition, info, state)
    aborted = transactions.aborted_overlapping(members, topic.offsets, start, end)
    return entries, bounds_from_info(info, topic.offsets, state), aborted
