"""The fetch encoder from an XRANGE reply's RESP bytes (RawEntries, protocol/_batch.c encode_resp) builds
what it builds from the list hiredis parses of the same bytes: the same logs and hostile logs as
test_fetch_codec.py, written as Redis writes them, and replies cut short or with bytes changed, which the
compiled encoder must read no further than the buffer and stop at."""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from schooner.broker.partitions.fetch_codec import BATCH_TARGET_BYTES, encode_entries
from schooner.protocol import batch_c
from schooner.protocol.records import CODEC_NONE
from schooner.storage.log.raw_entries import RAW_READS, RawEntries, entries_of, last_entry_id
from schooner.storage.offsets import DENSE_OFFSETS, OffsetCodec
from tests.broker.partitions.fetch_logs import CI, HOSTILE, decode, hostile_logs, logs, outcome
from tests.compiled import ON, needs_compiled


def bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def to_resp(entries: list[Any]) -> bytes:
    """An XRANGE reply as Redis writes it."""
    out = [b"*%d\r\n" % len(entries)]
    for entry_id, fields in entries:
        out.append(b"*2\r\n" + bulk(entry_id) + b"*%d\r\n" % len(fields) + b"".join(map(bulk, fields)))
    return b"".join(out)


def parsed(reply: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(reply)
    return reader.gets()


def test_reads_ask_for_raw_replies_exactly_where_they_can_be_read() -> None:
    assert RAW_READS == ON
    assert (batch_c.encode_resp is not None) == ON


@needs_compiled
def test_a_raw_reply_stands_in_for_its_list() -> None:
    entries = [[b"0-%d" % i, [b"timestamp", b"5", b"value", b"v%d" % i]] for i in range(1, 4)]
    raw = entries_of(to_resp(entries))
    assert type(raw) is RawEntries
    assert len(raw) == 3 and raw and raw.last_id == b"0-3" == last_entry_id(raw)
    assert raw[0] == entries[0] and raw[-1] == entries[-1] and raw[1:] == entries[1:]
    assert list(raw) == entries and raw == entries
    assert entries_of(b"*0\r\n") == [] and entries_of(entries) is entries  # parsed already: as it is


@needs_compiled
@CI
@given(logs(), st.booleans(), st.integers(1, 3000))
def test_raw_replies_encode_as_their_lists(
    log: tuple[list[Any], OffsetCodec], lat: bool, max_bytes: int
) -> None:
    entries, offsets = log
    raw = entries_of(to_resp(entries))
    assert type(raw) is RawEntries
    assert encode_entries(raw, offsets, CODEC_NONE, lat, max_bytes) == encode_entries(
        entries, offsets, CODEC_NONE, lat, max_bytes
    )
    assert raw.last_id == entries[-1][0]
    assert entries_of(to_resp(entries)).last_id == entries[-1][0]  # read from the bytes, not told


def _resp_ready(entries: list[Any]) -> list[Any] | None:
    """The hostile log as Redis could hold it (bytes only, pairs of [id, fields]), or None."""
    out = []
    for entry in entries:
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            return None
        entry_id, fields = entry
        if not isinstance(entry_id, bytes) or not isinstance(fields, list | tuple):
            return None
        if not all(isinstance(f, bytes) for f in fields):
            return None
        out.append([entry_id, list(fields)])
    return out


@needs_compiled
@HOSTILE
@given(
    hostile_logs(), st.booleans(), st.one_of(st.just(1 << 30), st.integers(1, 3000), st.sampled_from([0, -1]))
)
def test_hostile_raw_replies_are_encoded_as_their_lists(
    log: tuple[list[Any], OffsetCodec], lat: bool, max_bytes: int
) -> None:
    entries, offsets = log
    ready = _resp_ready(entries)
    assume(ready is not None)
    assert ready is not None
    raw = entries_of(to_resp(ready))
    got = outcome(lambda: encode_entries(raw, offsets, CODEC_NONE, lat, max_bytes))
    want = outcome(lambda: encode_entries(ready, offsets, CODEC_NONE, lat, max_bytes))
    if isinstance(got, type) and isinstance(want, type):
        return  # both refuse (perhaps with other exceptions, as test_fetch_codec.py says)
    assert got == want


PLAIN = [[b"0-%d" % i, [b"timestamp", b"17", b"key", b"k", b"value", b"v" * (i % 7)]] for i in range(1, 30)]
REPLY = to_resp(PLAIN)


@needs_compiled
@settings(CI, max_examples=500)
@given(st.data())
def test_damaged_replies_are_read_within_their_bytes(data: st.DataObject) -> None:
    """Cut short or with bytes changed, a reply is read no further than its end: the encoder takes the
    entries it can read whole and stops, and what it built is valid batches of the log's first records."""
    reply = bytearray(REPLY)
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(reply) - 1))
        reply[at] = data.draw(st.sampled_from([ord("*"), ord("$"), ord("\r"), ord("9"), ord("-"), 0, 255]))
    reply = reply[: data.draw(st.integers(0, len(reply)))]
    count = data.draw(st.sampled_from([len(PLAIN), len(PLAIN) + 5, 2**40]))
    assert batch_c.encode_resp is not None
    out, pos, index, records, _, _, _, last = batch_c.encode_resp(
        bytes(reply), 4 if len(reply) >= 4 else 0, 0, count, 64, 0, False, 1 << 30, 0, 0, BATCH_TARGET_BYTES
    )
    assert 0 <= pos <= len(reply) and index == records <= count
    got = [r for b in decode(out) for r in b[5]]
    assert len(got) == records
    # Changed bytes may still read as entries (another length, another value), but never as more bytes
    # than the reply holds, and offsets still ascend.
    assert all(a[0] < b[0] for a, b in zip(got, got[1:], strict=False))
    assert (last is None) == (records == 0)


@needs_compiled
def test_bad_positions_are_refused() -> None:
    encode = batch_c.encode_resp
    assert encode is not None
    with pytest.raises(IndexError):
        encode(REPLY, -1, 0, 1, 64, 0, False, 1 << 20, 0, 0, BATCH_TARGET_BYTES)
    with pytest.raises(IndexError):
        encode(REPLY, len(REPLY) + 1, 0, 1, 64, 0, False, 1 << 20, 0, 0, BATCH_TARGET_BYTES)
    with pytest.raises(IndexError):
        encode(REPLY, 4, 2, 1, 64, 0, False, 1 << 20, 0, 0, BATCH_TARGET_BYTES)  # past the count
    with pytest.raises(ValueError, match="negative shift count"):
        encode(REPLY, 4, 0, 1, -1, 0, False, 1 << 20, 0, 0, BATCH_TARGET_BYTES)
    # At its end: nothing more, and no error.
    assert encode(REPLY, len(REPLY), 0, 1, 64, 0, False, 1 << 20, 0, 0, BATCH_TARGET_BYTES)[:3] == (
        b"",
        len(REPLY),
        0,
    )


def test_a_reply_that_is_not_an_array_is_parsed() -> None:
    assert entries_of(b":5\r\n") == 5
    assert entries_of(b"*-1\r\n") is None
    assert entries_of(to_resp(PLAIN[:2])) == PLAIN[:2]  # whether raw or not, it reads as the list
    assert encode_entries(entries_of(REPLY), DENSE_OFFSETS, CODEC_NONE, False, 1 << 30) == encode_entries(
        parsed(REPLY), DENSE_OFFSETS, CODEC_NONE, False, 1 << 30
    )
