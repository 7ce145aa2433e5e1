"""Stream entries -> Kafka record batches, in one pass (the fetch hot path)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...protocol.batch_c import encode_plain, encode_resp
from ...protocol.compress import compress_batches
from ...protocol.records import (
    CODEC_BY_NAME,
    CODEC_NONE,
    MAX_OFFSET_DELTA,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchBuilder,
    control_batch,
)
from ...storage.log.entry import KEY, TIMESTAMP, VALUE, parse_fields
from ...storage.log.raw_entries import RawEntries, listed
from ...storage.log.transactions import COMMIT, CONTROL, TXN
from ...storage.offsets import OffsetCodec

# Batches are split at this size so that a consumer can start on a large read sooner.
BATCH_TARGET_BYTES = 1 << 20
# The response budget (max_bytes) counts estimates, the same whichever encoder builds the batches: a
# record costs RECORD_OVERHEAD_BYTES plus its key and value, a batch its header, a marker a fixed size.
RECORD_OVERHEAD_BYTES = 24
BATCH_OVERHEAD_BYTES = 61
MARKER_BYTES = BATCH_OVERHEAD_BYTES + RECORD_OVERHEAD_BYTES + 10
_MAX_OFFSET = 2**63 - 1  # a batch's base offset is an int64, and so is every record's offset


def codec_for(compression_type: str) -> int:
    return CODEC_BY_NAME.get(compression_type, 0)


def _transaction_fields(fields: list[Any]) -> tuple[bytes | None, bytes | None]:
    """(txn, control) of an entry: the producer of a transactional record, and a marker's kind."""
    txn = control = None
    for i in range(0, len(fields) - 1, 2):
        name = fields[i]
        if name == TXN:
            txn = fields[i + 1]
        elif name == CONTROL:
            control = fields[i + 1]
    return txn, control


def _producer(txn: bytes) -> tuple[int, int]:
    pid, _, epoch = txn.partition(b":")
    return int(pid), int(epoch)


def encode_entries(
    entries: Sequence[Any],
    offsets: OffsetCodec,
    codec: int,
    log_append_time: bool,
    max_bytes: int,
    codec_runs: Sequence[tuple[int, int]] = (),
) -> tuple[bytes, int, int]:
    """Builds batches from XRANGE entries until max_bytes would be passed (one record always fits).

    Records of a transactional producer go in batches of their own, carrying its id and epoch; a
    marker becomes a control batch. Returns (records bytes, number of records, bytes of payload read).
    codec_runs (compression.type=producer): (first offset, codec) of each run of entries whose producer
    compressed them, from the run covering the first entry; each run's batches are built uncompressed
    and then compressed with its codec, and `codec` goes for entries before the first run.

    Uncompressed runs of plain records go through the compiled encoder (schooner.protocol.batch_c),
    which stops at any entry it does not take; the Python encoder below takes that entry and those
    after it up to the next plain one. Both build the same bytes for the same batches. A raw reply
    (RawEntries) goes to the compiled encoder as its bytes, and is parsed only if it stops early.
    """
    if not any(c for _, c in codec_runs):
        if type(entries) is RawEntries:
            state = _encode_raw(entries, offsets, codec, log_append_time, max_bytes)
        else:
            state = _encode(listed(entries), offsets, codec, log_append_time, max_bytes, _State())
        return b"".join(state.out), state.count, state.payload
    state = _State()
    for part, part_codec in _by_codec(listed(entries), offsets, codec, codec_runs):
        built = len(state.out)
        state = _encode(part, offsets, CODEC_NONE, log_append_time, max_bytes, state)
        if part_codec != CODEC_NONE and len(state.out) > built:
            state.out[built:] = [compress_batches(b"".join(state.out[built:]), part_codec)]
        if state.full:
            break
    return b"".join(state.out), state.count, state.payload


def _by_codec(
    entries: list[Any], offsets: OffsetCodec, codec: int, runs: Sequence[tuple[int, int]]
) -> list[tuple[list[Any], int]]:
    """The entries cut where the codec runs change, each part with its codec (a bisection per run, no
    step per entry)."""
    first = offsets.offset_of_id(entries[0][0]) if entries else 0
    parts: list[tuple[list[Any], int]] = []
    lo = 0
    for start, run_codec in runs:
        if start > first:
            at = bisect_left(entries, start, lo, key=lambda e: offsets.offset_of_id(e[0]))
            if at >= len(entries):
                break
            if at > lo:
                parts.append((entries[lo:at], codec))
                lo = at
        codec = run_codec
    parts.append((entries[lo:], codec))
    return parts


def _encode_raw(
    entries: RawEntries, offsets: OffsetCodec, codec: int, log_append_time: bool, max_bytes: int
) -> _State:
    """encode_entries of a raw reply with no codec runs: the compiled encoder reads its bytes up to the
    first entry it does not take; from there the parsed entries go the list's way."""
    state = _State()
    if encode_resp is None or codec != CODEC_NONE:
        return _encode(entries.parsed(), offsets, codec, log_append_time, max_bytes, state)
    chunk, _, i, count, payload, state.used, full, last_id = encode_resp(
        entries.raw, entries.body, 0, entries.length, offsets.bits, offsets.shift, log_append_time, max_bytes,
        0, 0, BATCH_TARGET_BYTES,
    )  # fmt: skip
    if chunk:
        state.out.append(chunk)
    state.count, state.payload = count, payload
    if i >= entries.length and last_id is not None:
        entries.note_last_id(last_id)  # what the fetch asks next, without another pass
    if full or i >= entries.length:
        state.full = full
        return state
    # As _encode goes on when encode_plain stops: Python up to the next plain entry, then the list's way.
    parsed = entries.parsed()
    state = _encode_python(parsed, i, offsets, codec, log_append_time, max_bytes, state, True)
    if state.full:
        return state
    return _encode(parsed, offsets, codec, log_append_time, max_bytes, state, state.next)


def _encode(
    entries: list[Any],
    offsets: OffsetCodec,
    codec: int,
    log_append_time: bool,
    max_bytes: int,
    state: _State,
    start: int = 0,
) -> _State:
    """encode_entries' work for one codec from entry `start`, added to state (which says what the
    response holds so far)."""
    if encode_plain is None or codec != CODEC_NONE or type(entries) is not list:
        return _encode_python(entries, start, offsets, codec, log_append_time, max_bytes, state, False)
    i, n = start, len(entries)
    while i < n:
        chunk, i, count, payload, state.used, full = encode_plain(
            entries, i, offsets.bits, offsets.shift, log_append_time, max_bytes, state.used, state.count,
            BATCH_TARGET_BYTES,
        )  # fmt: skip
        if chunk:
            state.out.append(chunk)
        state.count += count
        state.payload += payload
        if full or i >= n:
            state.full = full
            break
        state = _encode_python(entries, i, offsets, codec, log_append_time, max_bytes, state, True)
        if state.full:
            break
        i = state.next
    return state


@dataclass(slots=True)
class _State:
    """What the response holds so far, across the compiled and the Python encoder."""

    out: list[bytes] = field(default_factory=list)
    used: int = 0  # of max_bytes, as estimated (see BATCH_OVERHEAD_BYTES)
    count: int = 0
    payload: int = 0
    next: int = 0  # the entry to go on from
    full: bool = False  # stopped because max_bytes would be passed


def _plain(fields: Any) -> bool:
    """Whether the compiled encoder may take this entry: not transactional, not a marker."""
    return TXN not in fields and CONTROL not in fields


def _encode_python(
    entries: list[Any],
    start: int,
    offsets: OffsetCodec,
    codec: int,
    log_append_time: bool,
    max_bytes: int,
    state: _State,
    until_plain: bool,
) -> _State:
    """The Python encoder, from entry `start`: to the end, or (until_plain) up to the next plain entry
    after the first. Appends to state and returns it."""
    ts_type = TIMESTAMP_LOG_APPEND_TIME if log_append_time else TIMESTAMP_CREATE_TIME
    out = state.out
    used = state.used
    count = state.count
    payload = state.payload
    builder: BatchBuilder | None = None
    add: Any = None  # the compiled builder's own append, called directly (this loop is the hot path)
    base = 0
    batch_size = 0
    builder_ts = -1
    no_headers: list[tuple[str, bytes | None]] = []
    builder_txn: bytes | None = None  # the producer ("id:epoch") of the batch being built, if transactional
    bits, shift = offsets.bits, offsets.shift
    index = start
    full = False
    for index in range(start, len(entries)):
        entry_id, fields = entries[index]
        if until_plain and index > start and _plain(fields):
            break
        ms_text, _, seq_text = entry_id.partition(b"-")
        ms = int(ms_text)
        offset = ((ms << bits) | int(seq_text)) - shift
        # The entry the broker writes most: timestamp, key, value. Anything else takes the general path.
        txn = None
        if len(fields) == 6 and fields[2] == KEY and fields[4] == VALUE and fields[0] == TIMESTAMP:
            key, value, headers = fields[3], fields[5], no_headers
            # As parse_fields reads it: a timestamp that is no number, or negative (a plain writer's),
            # is the ID's ms, rather than an error for the whole read or aiokafka's "no timestamp" (-1).
            try:
                timestamp = int(fields[1])
            except ValueError:
                timestamp = -1
            if timestamp < 0:
                timestamp = ms
        else:
            timestamp, key, value, headers = parse_fields(fields)
            if timestamp < 0:
                timestamp = ms
            txn, control = _transaction_fields(fields)
            if control is not None and txn is not None:
                if count and used + MARKER_BYTES > max_bytes:
                    full = True
                    break
                if builder is not None:
                    out.append(builder.build())
                    builder, builder_txn, batch_size = None, None, 0
                pid, epoch = _producer(txn)
                out.append(control_batch(offset, timestamp, pid, epoch, control == COMMIT))
                used += MARKER_BYTES
                count += 1
                continue
        size = RECORD_OVERHEAD_BYTES + (len(key) if key else 0) + (len(value) if value else 0)
        opens = (
            builder is None
            or offset - base > MAX_OFFSET_DELTA
            or offset > _MAX_OFFSET  # not a delta from a base within int64: its own batch, which refuses it
            or batch_size >= BATCH_TARGET_BYTES
            or (log_append_time and timestamp != builder_ts)
            or txn != builder_txn
        )
        cost = size + BATCH_OVERHEAD_BYTES if opens else size
        if count and used + cost > max_bytes:
            full = True
            break
        used += cost
        if opens:
            if builder is not None:
                out.append(builder.build())
            if txn is None:
                builder = BatchBuilder(offset, codec, ts_type)
            else:
                pid, epoch = _producer(txn)
                builder = BatchBuilder(offset, codec, ts_type, pid, epoch, True)
            builder_txn = txn
            add = builder.raw_append
            base = offset
            batch_size = 0
            builder_ts = timestamp
        add(offset - base, timestamp, key, value, headers)
        batch_size += size
        payload += size
        count += 1
    else:
        index = len(entries)  # the loop ran to the end
    if builder is not None:
        out.append(builder.build())
    state.used, state.count, state.payload, state.next, state.full = used, count, payload, index, full
    return state
