"""Stream entries -> Kafka record batches, in one pass (the fetch hot path)."""

from __future__ import annotations

from typing import Any

from ..protocol.records import (
    CODEC_BY_NAME,
    MAX_OFFSET_DELTA,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchBuilder,
    control_batch,
)
from ..storage.log.entry import KEY, TIMESTAMP, VALUE, parse_fields
from ..storage.log.transactions import COMMIT, CONTROL, TXN
from ..storage.offsets import OffsetCodec

# Batches are split at this size so that a consumer can start on a large read sooner.
BATCH_TARGET_BYTES = 1 << 20
RECORD_OVERHEAD_BYTES = 24


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
    entries: list[Any],
    offsets: OffsetCodec,
    codec: int,
    log_append_time: bool,
    max_bytes: int,
) -> tuple[bytes, int, int]:
    """Builds batches from XRANGE entries until max_bytes would be passed (one record always fits).

    Records of a transactional producer go in batches of their own, carrying its id and epoch; a
    marker becomes a control batch. Returns (records bytes, number of records, bytes of payload read).
    """
    ts_type = TIMESTAMP_LOG_APPEND_TIME if log_append_time else TIMESTAMP_CREATE_TIME
    out: list[bytes] = []
    written = 0
    builder: BatchBuilder | None = None
    add: Any = None  # the compiled builder's own append, called directly (this loop is the hot path)
    base = 0
    batch_size = 0
    builder_ts = -1
    payload = 0
    count = 0
    no_headers: list[tuple[str, bytes | None]] = []
    builder_txn: bytes | None = None  # the producer ("id:epoch") of the batch being built, if transactional
    bits, shift = offsets.bits, offsets.shift
    for entry_id, fields in entries:
        ms_text, _, seq_text = entry_id.partition(b"-")
        ms = int(ms_text)
        offset = ((ms << bits) | int(seq_text)) - shift
        # The entry the broker writes most: timestamp, key, value. Anything else takes the general path.
        txn = None
        if len(fields) == 6 and fields[2] == KEY and fields[4] == VALUE and fields[0] == TIMESTAMP:
            timestamp, key, value, headers = int(fields[1]), fields[3], fields[5], no_headers
        else:
            timestamp, key, value, headers = parse_fields(fields)
            if timestamp < 0:
                timestamp = ms
            txn, control = _transaction_fields(fields)
            if control is not None and txn is not None:
                if builder is not None:
                    batch = builder.build()
                    out.append(batch)
                    written += len(batch)
                    builder, builder_txn, batch_size = None, None, 0
                if count and written + RECORD_OVERHEAD_BYTES > max_bytes:
                    break
                pid, epoch = _producer(txn)
                marker = control_batch(offset, timestamp, pid, epoch, control == COMMIT)
                out.append(marker)
                written += len(marker)
                count += 1
                continue
        size = RECORD_OVERHEAD_BYTES + (len(key) if key else 0) + (len(value) if value else 0)
        if count and written + batch_size + size > max_bytes:
            break
        if (
            builder is None
            or offset - base > MAX_OFFSET_DELTA
            or batch_size >= BATCH_TARGET_BYTES
            or (log_append_time and timestamp != builder_ts)
            or txn != builder_txn
        ):
            if builder is not None:
                batch = builder.build()
                out.append(batch)
                written += len(batch)
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
        builder.last_offset = offset
        batch_size += size
        payload += size
        count += 1
    if builder is not None:
        out.append(builder.build())
    return b"".join(out), count, payload
