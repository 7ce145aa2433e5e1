"""The fetch encoder: the compiled path (schooner/protocol/_batch.c) builds what the Python path builds.

Entries are generated in every shape the log holds (keys, null keys and values, headers with null
values and non-ASCII names, entries without a timestamp, unknown fields, transactional records and
markers, malformed headers) and encoded both ways; kafka-python decodes the batches to compare them.
Hostile logs too (IDs and timestamps at and past the ends of int64, out of order, headers whose lengths
overflow, values of other types): both encoders give the same records, or both refuse them.
"""

from __future__ import annotations

from typing import Any

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from schooner.broker.partitions import fetch_codec
from schooner.broker.partitions.fetch_codec import BATCH_TARGET_BYTES, _encode_python, _State, encode_entries
from schooner.protocol import batch_c
from schooner.protocol.records import CODEC_GZIP, CODEC_NONE
from schooner.storage.log.entry import encode_headers
from schooner.storage.offsets import DENSE_OFFSETS, OffsetCodec
from tests.broker.partitions.fetch_logs import (
    BAD_NAME_HEADERS,
    CI,
    HOSTILE,
    MALFORMED_HEADERS,
    decode,
    flat,
    hostile_logs,
    logs,
    mostly,
    outcome,
)
from tests.compiled import ON


def test_the_compiled_encoder_is_built() -> None:
    # `make install` builds it; the broker falls back to Python without it, but the tests run it,
    # unless SCHOONER_COMPILED=0 turns it off (then every batch below is the Python encoder's).
    assert (batch_c.encode_plain is not None) == ON
    assert batch_c.crc32c is None or batch_c.crc32c(b"123456789") == 0xE3069283


def python_encode(entries: list[Any], offsets: OffsetCodec, codec: int, lat: bool, max_bytes: int) -> Any:
    state = _encode_python(entries, 0, offsets, codec, lat, max_bytes, _State(), False)
    return b"".join(state.out), state.count, state.payload


@CI
@given(logs(), st.booleans(), st.integers(1, 3000))
def test_compiled_and_python_encoders_agree(
    log: tuple[list[Any], OffsetCodec], lat: bool, max_bytes: int
) -> None:
    entries, offsets = log
    data, count, payload = encode_entries(entries, offsets, CODEC_NONE, lat, max_bytes)
    expected, expected_count, expected_payload = python_encode(entries, offsets, CODEC_NONE, lat, max_bytes)
    got, want = flat(decode(data)), flat(decode(expected))
    assert len(got) == count >= 1 and len(want) == expected_count
    if any(odd(f) for _, f in entries):
        # The compiled encoder hands such an entry to Python, which starts a new batch for it: the
        # budget counts one more batch header, so one side may stop a little sooner.
        assert got[: len(want)] == want[: len(got)]
        return
    assert (count, payload) == (expected_count, expected_payload)
    assert got == want
    if not any(b"txn" in f[::2] for _, f in entries):
        assert data == expected  # plain entries: the very same batches, byte for byte


def odd(fields: list[bytes]) -> bool:
    """An entry the compiled encoder leaves to Python although it is not transactional."""
    pairs = dict(zip(fields[::2], fields[1::2], strict=False))
    return not pairs.get(b"timestamp", b"0").isdigit() or pairs.get(b"headers") in (
        MALFORMED_HEADERS,
        BAD_NAME_HEADERS,
    )


def test_plain_entries_give_the_same_bytes() -> None:
    entries = [
        [b"0-%d" % (i + 1), [b"timestamp", b"%d" % (1764000000000 + i % 3), b"value", b"v" * (i % 50)]]
        for i in range(3000)
    ]
    entries[5][1] += [b"key", b"k", b"headers", encode_headers([("a", b"1"), ("b", None)])]
    for lat in (False, True):
        for max_bytes in (1, 1000, 50_000, 1 << 30):
            got = encode_entries(entries, DENSE_OFFSETS, CODEC_NONE, lat, max_bytes)
            assert got == python_encode(entries, DENSE_OFFSETS, CODEC_NONE, lat, max_bytes)


def test_batches_split_at_the_target_size() -> None:
    value = b"x" * 100_000
    entries = [[b"0-%d" % (i + 1), [b"timestamp", b"1", b"value", value]] for i in range(25)]
    data, count, _ = encode_entries(entries, DENSE_OFFSETS, CODEC_NONE, False, 1 << 30)
    batches = decode(data)
    assert count == 25 and len(batches) == 3 > 1
    assert [len(b[5]) for b in batches] == [11, 11, 3]  # a batch closes once it passes the target
    assert BATCH_TARGET_BYTES == 1 << 20
    assert data == python_encode(entries, DENSE_OFFSETS, CODEC_NONE, False, 1 << 30)[0]


def test_compressed_topics_take_the_python_encoder() -> None:
    entries = [[b"0-%d" % (i + 1), [b"timestamp", b"1", b"value", b"abc" * 20]] for i in range(50)]
    data, count, _ = encode_entries(entries, DENSE_OFFSETS, CODEC_GZIP, False, 1 << 30)
    assert count == 50
    assert data[21 + 1] & 0x07 == CODEC_GZIP  # the attributes' codec bits
    assert flat(decode(data)) == flat(
        decode(encode_entries(entries, DENSE_OFFSETS, CODEC_NONE, False, 1 << 30)[0])
    )


def test_module_uses_the_compiled_encoder() -> None:
    assert fetch_codec.encode_plain is batch_c.encode_plain


@HOSTILE
@given(
    hostile_logs(), st.booleans(), mostly(st.just(1 << 30), st.integers(1, 3000), st.sampled_from([0, -1]))
)
def test_hostile_logs_are_encoded_as_the_python_encoder_encodes_them(
    log: tuple[list[Any], OffsetCodec], lat: bool, max_bytes: int
) -> None:
    entries, offsets = log
    got = outcome(lambda: encode_entries(entries, offsets, CODEC_NONE, lat, max_bytes))
    want = outcome(lambda: python_encode(entries, offsets, CODEC_NONE, lat, max_bytes))
    if isinstance(got, type) and isinstance(want, type):
        # Both refuse. Not always with the same exception: the Python encoder alone may meet a second
        # bad entry before it builds the batch of a first one that the compiled encoder left to it.
        return
    if isinstance(got, type) or isinstance(want, type):
        # Only where the budget stopped the other side first: an entry Python took in a batch of its
        # own counted one more batch header on one side.
        answered = want if isinstance(got, type) else got
        assert answered[1] < len(entries) and max_bytes < 1 << 30, (got, want)
        return
    (data, count, payload), (expected, expected_count, expected_payload) = got, want
    got_records, want_records = flat(decode(data)), flat(decode(expected))
    assert len(got_records) == count >= 1 and len(want_records) == expected_count
    took_all = False
    if batch_c.encode_plain is not None:
        _, stop, _, _, _, full = batch_c.encode_plain(
            entries, 0, offsets.bits, offsets.shift, lat, max_bytes, 0, 0, BATCH_TARGET_BYTES
        )
        took_all = full or stop == len(entries)
    if took_all:  # the compiled encoder took every entry it was given: it must match byte for byte
        assert (data, count, payload) == (expected, expected_count, expected_payload)
    else:  # Python took some entry, in a batch of its own: the budget may stop one side sooner
        assert got_records[: len(want_records)] == want_records[: len(got_records)]


def test_hostile_arguments_are_refused_as_python_refuses_them() -> None:
    entries = [[b"0-1", [b"timestamp", b"5", b"value", b"v"]]]
    if batch_c.encode_plain is not None:
        with pytest.raises(IndexError):  # read before the list, once
            batch_c.encode_plain(entries, -1, 64, 1, False, 1 << 20, 0, 0, BATCH_TARGET_BYTES)
        with pytest.raises(ValueError, match="negative shift count"):
            batch_c.encode_plain(entries, 0, -1, 0, False, 1 << 20, 0, 0, BATCH_TARGET_BYTES)
        with pytest.raises(OverflowError):  # the bytes used so far, at the end of a long long
            batch_c.encode_plain(entries, 0, 64, 1, False, 1 << 20, 2**63 - 1, 0, BATCH_TARGET_BYTES)
        # Past the budget's range with records counted already: the response is full.
        assert batch_c.encode_plain(entries, 0, 64, 1, False, 1 << 20, 2**63 - 1, 1, BATCH_TARGET_BYTES)[5]
    with pytest.raises(ValueError, match="negative shift count"):
        python_encode(entries, OffsetCodec("timestamp", -1, 0), CODEC_NONE, False, 1 << 20)


def test_the_crc_matches_the_crc32c_package_at_every_alignment() -> None:
    """The compiled CRC reads eight bytes at a time, assembled byte by byte (so on any CPU)."""
    if batch_c.crc32c is None:
        return
    data = bytes(range(256)) * 5
    for start in range(9):
        for length in (0, 1, 7, 8, 9, 63, 64, 65, 1000):
            piece = memoryview(data)[start : start + length]
            assert batch_c.crc32c(piece) == crc32c(piece), (start, length)
