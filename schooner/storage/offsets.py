"""Kafka offsets from Redis stream entry IDs, and back. No stored mapping: each topic fixes one encoding.

- dense (the default for new topics): offset n is the entry ID 0-(n+1). Offsets count records.
- timestamp (the seeds' encoding): offset = (ms << bits) | seq, so offsets have gaps between batches.

Both are one formula, offset = ((ms << bits) | seq) - shift: dense is bits 64 (ms is always 0) and
shift 1, because 0-0 is not an ID that XADD accepts. An entry of a dense topic with ms > 0 was added
with `*` by a plain Redis writer: it has no offset, and no dense read reaches it (reads end at
LAST_DENSE_ID).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SEQUENCE_BITS = 10
# Lua numbers are doubles: ms (41 bits today) << bits must stay below 2**53 inside the append script.
MAX_SEQUENCE_BITS = 12

DENSE = "dense"
TIMESTAMP = "timestamp"
ENCODINGS = (DENSE, TIMESTAMP)

# The highest ID with ms 0: the end of every range read of a dense topic.
LAST_DENSE_ID = b"0-18446744073709551615"


@dataclass(frozen=True, slots=True)
class OffsetCodec:
    """How one topic's offsets map to entry IDs."""

    encoding: str
    bits: int
    shift: int

    @property
    def dense(self) -> bool:
        return self.shift == 1

    @property
    def last_id(self) -> bytes:
        """The XRANGE end that covers every offset."""
        return LAST_DENSE_ID if self.dense else b"+"

    @property
    def script_arg(self) -> int:
        """What the append script takes: its sequence bits, or -1 for dense."""
        return -1 if self.dense else self.bits

    def offset_of(self, ms: int, seq: int) -> int:
        return ((ms << self.bits) | seq) - self.shift

    def id_of(self, offset: int) -> tuple[int, int]:
        n = offset + self.shift
        return n >> self.bits, n & ((1 << self.bits) - 1)

    def id_text(self, offset: int) -> bytes:
        """The stream entry ID that an offset names, as XRANGE takes it."""
        return b"%d-%d" % self.id_of(offset)

    def offset_of_id(self, entry_id: bytes | str) -> int:
        if isinstance(entry_id, str):
            entry_id = entry_id.encode()
        ms, _, seq = entry_id.partition(b"-")
        return ((int(ms) << self.bits) | int(seq or 0)) - self.shift

    def numbered(self, entry_id: bytes | str) -> bool:
        """False for an entry of a dense topic that a `*` writer added and that has no offset yet."""
        if not self.dense:
            return True
        head = entry_id[:2]
        return head in (b"0-", "0-")


DENSE_OFFSETS = OffsetCodec(DENSE, 64, 1)


def timestamp_offsets(bits: int = DEFAULT_SEQUENCE_BITS) -> OffsetCodec:
    return OffsetCodec(TIMESTAMP, bits, 0)


def codec_for(encoding: str, bits: int = DEFAULT_SEQUENCE_BITS) -> OffsetCodec:
    if encoding == DENSE:
        return DENSE_OFFSETS
    if encoding == TIMESTAMP:
        return timestamp_offsets(bits)
    raise ValueError(f"unknown offset encoding {encoding!r}")
