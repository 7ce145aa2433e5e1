"""The fetch encoder: the compiled path (schooner/protocol/_batch.c) builds what the Python path builds.

Entries are generated in every shape the log holds (keys, null keys and values, headers with null
values and non-ASCII names, entries without a timestamp, unknown fields, transactional records and
markers, malformed headers) and encoded both ways; kafka-python decodes the batches to compare them.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from schooner.broker.partitions import fetch_codec
from schooner.broker.partitions.fetch_codec import BATCH_TARGET_BYTES, _encode_python, _State, encode_entries
from schooner.protocol import batch_c
from schooner.protocol.records import CODEC_GZIP, CODEC_NONE
from schooner.storage.log.entry import encode_headers
from schooner.storage.offsets import DENSE_OFFSETS, OffsetCodec, timestamp_offsets

CI = settings(derandomize=True, deadline=None, max_examples=300)


def test_the_compiled_encoder_is_built() -> None:
    # `make install` builds it; the broker falls back to Python without it, but the tests run it.
    assert batch_c.encode_plain is not None
    assert batch_c.crc32c is not None and batch_c.crc32c(b"123456789") == 0xE3069283


def python_encode(entries: list[Any], offsets: OffsetCodec, codec: int, lat: bool, max_bytes: int) -> Any:
    state = _encode_python(entries, 0, offsets, codec, lat, max_bytes, _State(), False)
    return b"".join(state.out), state.count, state.payload


def decode(data: bytes) -> list[tuple[Any, ...]]:
    """Every batch's header fields that matter and its records, through kafka-python's reader."""
    out: list[tuple[Any, ...]] = []
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        batch = DefaultRecordBatch(data[pos : pos + 12 + length])
        assert batch.validate_crc()
        records = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]
        out.append(
            (batch.producer_id, batch.producer_epoch, batch.is_transactional, batch.is_control_batch,
             batch.timestamp_type, records)
        )  # fmt: skip
        pos += 12 + length
    return out


def flat(batches: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The records with their batch's producer and flags: what a consumer sees, whatever the batching."""
    return [(*b[:5], *r) for b in batches for r in b[5]]


header_names = st.sampled_from(["h", "trace-id", "", "ünï", "h", "\u20ac\U0001f600"])
MALFORMED_HEADERS = b"\x00\x00\x00\x09ab"
BAD_NAME_HEADERS = b"\x00\x00\x00\x02\xed\xa0\xff\xff\xff\xff"  # a surrogate: not UTF-8 to Python
headers = st.lists(st.tuples(header_names, st.none() | st.binary(max_size=8)), max_size=3)


@st.composite
def entry_fields(draw: st.DrawFn) -> list[bytes]:
    kind = draw(st.sampled_from(["plain"] * 6 + ["txn", "marker", "odd"]))
    fields: list[bytes] = []
    if draw(st.booleans()) or kind != "odd":
        fields += [b"timestamp", b"%d" % draw(st.integers(0, 2**41))]
    if draw(st.booleans()):
        fields += [b"key", draw(st.binary(max_size=12))]
    if kind == "marker":
        fields += [b"txn", b"7:2", b"control", draw(st.sampled_from([b"commit", b"abort"]))]
        return fields
    if draw(st.integers(0, 5)):
        fields += [b"value", draw(st.binary(max_size=40))]
    found = draw(headers)
    if found:
        fields += [b"headers", encode_headers(found)]
    if kind == "txn":
        fields += [b"txn", b"%d:1" % draw(st.integers(0, 3))]
    if kind == "odd":
        fields += draw(
            st.sampled_from(
                [
                    [b"other", b"x"],  # an unknown field: skipped
                    [b"headers", MALFORMED_HEADERS],  # malformed headers: none
                    [b"headers", BAD_NAME_HEADERS],  # the name is decoded with replacement characters
                    [b"timestamp", b"-5"],  # negative: the ID's ms
                    [b"timestamp", b"soon"],  # not a number: the ID's ms
                    [b"timestamp", b" 12"],  # Python's int() reads it
                ]
            )
        )
    return fields


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[Any], OffsetCodec]:
    offsets = draw(st.sampled_from([DENSE_OFFSETS, timestamp_offsets(10)]))
    fields = draw(st.lists(entry_fields(), min_size=1, max_size=40))
    entries = []
    offset = draw(st.integers(0, 5000))
    for f in fields:
        offset += draw(st.sampled_from([1, 1, 1, 2, 1500]))
        ms, seq = offsets.id_of(offset)
        entries.append([b"%d-%d" % (ms, seq), f])
    return entries, offsets


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
