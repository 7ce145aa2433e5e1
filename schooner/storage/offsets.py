"""Kafka offsets from Redis stream entry IDs, and back: offset = (ms << bits) | seq. No stored mapping."""

from __future__ import annotations

DEFAULT_SEQUENCE_BITS = 10
# Lua numbers are doubles: ms (41 bits today) << bits must stay below 2**53 inside the append script.
MAX_SEQUENCE_BITS = 12


def offset_of(ms: int, seq: int, bits: int) -> int:
    return (ms << bits) | seq


def id_of(offset: int, bits: int) -> tuple[int, int]:
    return offset >> bits, offset & ((1 << bits) - 1)


def id_text(offset: int, bits: int) -> bytes:
    """The stream entry ID that an offset names, as XRANGE takes it."""
    return b"%d-%d" % (offset >> bits, offset & ((1 << bits) - 1))


def offset_of_id(entry_id: bytes | str, bits: int) -> int:
    if isinstance(entry_id, str):
        entry_id = entry_id.encode()
    ms, _, seq = entry_id.partition(b"-")
    return (int(ms) << bits) | int(seq or 0)
