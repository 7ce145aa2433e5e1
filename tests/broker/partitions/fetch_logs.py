"""Generated stream entries for the fetch encoder's tests (test_fetch_codec.py, test_fetch_codec_raw.py):
logs in every shape the log holds, hostile logs, and kafka-python's reading of the batches built."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from schooner.storage.log.entry import encode_headers
from schooner.storage.offsets import DENSE_OFFSETS, OffsetCodec, timestamp_offsets
from tests.strategies import mostly

CI = settings(derandomize=True, deadline=None, max_examples=300)


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


def outcome(encode: Any) -> Any:
    """What an encoder returns, or the class of what it raises."""
    try:
        return encode()
    except Exception as exc:
        return type(exc)
