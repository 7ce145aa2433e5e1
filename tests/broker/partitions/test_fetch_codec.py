"""The fetch encoder: the compiled path (schooner/protocol/_batch.c) builds what the Python path builds.

Entries are generated in every shape the log holds (keys, null keys and values, headers with null
values and non-ASCII names, entries without a timestamp, unknown fields, transactional records and
markers, malformed headers) and encoded both ways; kafka-python decodes the batches to compare them.
Hostile logs too (IDs and timestamps at and past the ends of int64, out of order, headers whose lengths
overflow, values of other types): both encoders give the same records, or both refuse them.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from schooner.broker.partitions import fetch_codec
from schooner.broker.partitions.fetch_codec import BATCH_TARGET_BYTES, _encode_python, _State, encode_entries
from schooner.protocol import batch_c
from schooner.protocol.records import CODEC_GZIP, CODEC_NONE
from schooner.storage.log.entry import encode_headers
from schooner.storage.offsets import DENSE_OFFSETS, OffsetCodec, timestamp_offsets
from tests.compiled import ON

CI = settings(derandomize=True, deadline=None, max_examples=300)


def test_the_compiled_encoder_is_built() -> None:
    # `make install` builds it; the broker falls back to Python without it, but the tests run it,
    # unless SCHOONER_COMPILED=0 turns it off (then every batch below is the Python encoder's).
    assert (batch_c.encode_plain is not None) == ON
    assert batch_c.crc32c is None or batch_c.crc32c(b"123456789") == 0xE3069283


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


# Hostile logs: IDs past int64, at 0-0, out of order or not IDs at all, timestamps at and past the ends
# of int64, headers whose lengths overflow or point past the end, fields of other types, entries of the
# wrong shape, and offset codecs of any bits and shift. The compiled encoder takes what it can and
# leaves the rest to Python, so encode_entries answers as the Python encoder alone: the same records
# (the same bytes where the compiled encoder took every entry itself), or a refusal.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MAX, U64 = 2**63 - 1, 2**64 - 1
HOSTILE = settings(CI, max_examples=400)
# Some logs hold an entry that the Python encoder refuses (FATAL_*): then both must refuse.
ODD_IDS = [b"0-0", b"00-01", b"0-%d" % INT64_MAX]
FATAL_IDS = [b"0-%d" % U64, b"0-%d" % 2**63, b"%d-0" % U64, b"%d-1" % INT64_MAX, b"1-x", b"-", b"7", b""]
FATAL_IDS += [b"1-" + b"9" * 21]
ODD_TIMESTAMPS = [b"0", b"%d" % INT64_MAX, b"-1", b"%d" % -(2**63), b"007", b" 12", b"1_0"]
FATAL_TIMESTAMPS = [b"%d" % 2**63, b"%d" % U64, b"", b"x"]
_H = b"\x00\x00\x00\x01h"  # a header name of one byte
HOSTILE_HEADERS = [
    struct.pack(">I", 0xFFFFFFFF) + b"ab",  # a name length past the end (and past a 32-bit size_t)
    struct.pack(">I", 2**31) + b"ab",
    _H + struct.pack(">i", INT32_MIN),  # a null value, spelled oddly
    _H + struct.pack(">i", -2),
    _H + struct.pack(">i", 5) + b"abc",  # a value past the end
    _H + struct.pack(">i", INT32_MAX),
    _H + b"\x00\x00",  # cut inside the value length
    b"\x00\x00",
    encode_headers([("h", b"x"), ("", None)]),
]


RARELY = st.integers(0, 19).map(lambda n: n == 0)  # true one time in twenty


@st.composite
def _either(draw: st.DrawFn, usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> Any:
    return draw(other) if draw(RARELY) else draw(usual)


def mostly(usual: st.SearchStrategy[Any], *others: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`usual` 19 times in 20, else one of `others`."""
    return _either(usual, st.one_of(*others))


STAMPS = st.integers(0, 2**41).map(lambda n: b"%d" % n)
TIMESTAMP_FIELDS = mostly(STAMPS, st.sampled_from(ODD_TIMESTAMPS))
FATAL_TIMESTAMP_FIELDS = mostly(STAMPS, st.sampled_from(ODD_TIMESTAMPS + FATAL_TIMESTAMPS))
HEADER_FIELDS = mostly(headers.map(encode_headers), st.sampled_from(HOSTILE_HEADERS))
ODDITIES = mostly(st.none(), st.sampled_from(["odd", "tuple", "dup"]))
FATAL_ODDITIES = mostly(st.none(), st.sampled_from(["str", "int", "none", "odd", "tuple", "dup"]))
SHAPES = mostly(st.none(), st.just("tuple"))
FATAL_SHAPES = mostly(st.none(), st.sampled_from(["tuple", "three", "one", "str id", "dict"]))
BAD_IDS = mostly(st.none(), st.sampled_from(ODD_IDS))
FATAL_BAD_IDS = mostly(st.none(), st.sampled_from(ODD_IDS + FATAL_IDS))
STEPS = mostly(st.sampled_from([1, 1, 1, 2, 1500]), st.sampled_from([0, -1, -50, 2**31]))
STARTS = mostly(st.integers(0, 5000), st.sampled_from([2**31 - 3, 2**63 - 30]))
FATAL_STARTS = mostly(st.integers(0, 5000), st.sampled_from([2**31 - 3, 2**63 - 30, 2**63 - 3, 2**64 - 3]))
SHIFTS = mostly(st.sampled_from([1, 0]), st.sampled_from([-1, 2]))
FATAL_SHIFTS = mostly(st.sampled_from([1, 0]), st.sampled_from([-1, 2, 2**62, -(2**63), INT64_MAX]))


@st.composite
def hostile_fields(draw: st.DrawFn, fatal: bool) -> Any:
    pairs: list[list[Any]] = []
    if draw(st.integers(0, 19)):
        pairs.append([b"timestamp", draw(FATAL_TIMESTAMP_FIELDS if fatal else TIMESTAMP_FIELDS)])
    if draw(st.booleans()):
        pairs.append([b"key", draw(st.binary(max_size=6))])
    pairs.append([b"value", draw(st.binary(max_size=12))])
    if draw(st.integers(0, 4)) == 0:
        pairs.append([b"headers", draw(HEADER_FIELDS)])
    turn = draw(st.integers(0, len(pairs) - 1))  # any field may come first
    fields: list[Any] = [part for pair in pairs[turn:] + pairs[:turn] for part in pair]
    oddity = draw(FATAL_ODDITIES if fatal else ODDITIES)
    if oddity == "str":
        fields[-1] = "text"  # a value that is not bytes
    elif oddity == "int":
        fields[-1] = 12
    elif oddity == "none":
        fields[-1] = None
    elif oddity == "odd":
        fields.append(b"dangling")  # a name without a value
    elif oddity == "dup":
        fields += [b"value", b"again"]  # a second value field: XADD keeps both, the last one counts
    return tuple(fields) if oddity == "tuple" else fields


@st.composite
def hostile_logs(draw: st.DrawFn) -> tuple[list[Any], OffsetCodec]:
    fatal = draw(st.integers(0, 3)) == 0  # a log that may hold entries the Python encoder refuses
    bits = draw(st.sampled_from([64, 64, 10, 10, 0, 1, 12, 62, 63, 65]))
    offsets = OffsetCodec(
        "dense" if bits >= 64 else "timestamp", bits, draw(FATAL_SHIFTS if fatal else SHIFTS)
    )
    n = draw(FATAL_STARTS if fatal else STARTS)
    entries: list[Any] = []
    for _ in range(draw(st.integers(1, 12))):
        n = max(n + draw(STEPS), 0)
        entry_id = draw(FATAL_BAD_IDS if fatal else BAD_IDS)
        entry_id = entry_id or (b"0-%d" % n if bits >= 64 else b"%d-%d" % (n >> bits, n & ((1 << bits) - 1)))
        entry: Any = [entry_id, draw(hostile_fields(fatal))]
        shape = draw(FATAL_SHAPES if fatal else SHAPES)
        if shape == "tuple":
            entry = tuple(entry)
        elif shape == "three":
            entry.append(b"extra")
        elif shape == "one":
            entry = entry[:1]
        elif shape == "str id":
            entry[0] = entry_id.decode()
        elif shape == "dict":
            entry[1] = dict(zip(entry[1][::2], entry[1][1::2], strict=False))
        entries.append(entry)
    return entries, offsets


def _outcome(encode: Any) -> Any:
    """What an encoder returns, or the class of what it raises."""
    try:
        return encode()
    except Exception as exc:
        return type(exc)


@HOSTILE
@given(
    hostile_logs(), st.booleans(), mostly(st.just(1 << 30), st.integers(1, 3000), st.sampled_from([0, -1]))
)
def test_hostile_logs_are_encoded_as_the_python_encoder_encodes_them(
    log: tuple[list[Any], OffsetCodec], lat: bool, max_bytes: int
) -> None:
    entries, offsets = log
    got = _outcome(lambda: encode_entries(entries, offsets, CODEC_NONE, lat, max_bytes))
    want = _outcome(lambda: python_encode(entries, offsets, CODEC_NONE, lat, max_bytes))
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
