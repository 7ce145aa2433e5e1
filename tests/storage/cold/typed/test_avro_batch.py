"""Avro payloads decoded in batch (cold/typed/avro_batch.py): the same Arrow values as one by one, and the
per-record path whenever a record is not soundly read."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pyarrow as pa
import pytest

from schooner.schemas import wire
from schooner.storage.cold.typed import Decoded, avro_batch, decode_column
from schooner.storage.cold.typed.codecs import codec
from schooner.storage.schemas.registry import StoredSchema
from schooner.storage.topics.config import SCHEMA_ID_PREFIX, SCHEMA_LATEST

from .conftest import USER_V1, USER_V2, avro

KIND = {"type": "enum", "name": "Kind", "symbols": [f"S{i}" for i in range(70)]}  # indexes of 2 bytes
INNER = {
    "type": "record",
    "name": "Inner",
    "fields": [
        {"name": "x", "type": "long"},
        {
            "name": "deep",
            "type": ["null", {"type": "record", "name": "Deep", "fields": [{"name": "s", "type": "string"}]}],
        },
    ],
}
ALL = {
    "type": "record",
    "name": "All",
    "namespace": "test.batch",
    "fields": [
        {"name": "flag", "type": "boolean"},
        {"name": "small", "type": "int"},
        {"name": "big", "type": "long"},
        {"name": "ratio", "type": "float"},
        {"name": "exact", "type": "double"},
        {"name": "text", "type": "string"},
        {"name": "blob", "type": "bytes"},
        {"name": "kind", "type": KIND},
        {"name": "maybe", "type": ["null", "string"]},
        {"name": "later", "type": ["long", "null"]},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "inner", "type": INNER},
        {"name": "opt", "type": ["null", INNER | {"name": "Opt", "fields": [{"name": "y", "type": "int"}]}]},
    ],
}
UTC = datetime.UTC
EDGES = [0, 1, -1, 63, 64, -64, -65]
EDGES += [s * (1 << (7 * k - 1)) + d for k in range(2, 10) for s in (1, -1) for d in (-1, 0)]
EDGES += [2**63 - 1, -(2**63)]  # zigzag varints of 1 to 10 bytes


def datum(i: int) -> dict[str, Any]:
    return {
        "flag": i % 2 == 0,
        "small": [0, -1, 2**31 - 1, -(2**31), 2**27 - 1, -(2**27), 300][i % 7],
        "big": EDGES[i % len(EDGES)],
        "ratio": i * 0.25,
        "exact": -i / 3,
        "text": ["", "é", "日本語 ✓", "a" * 200, f"t{i}"][i % 5],
        "blob": bytes(range(i % 7)),
        "kind": f"S{i % 70}",
        "maybe": None if i % 3 else f"m{i}",
        "later": None if i % 4 == 1 else EDGES[(i * 7) % len(EDGES)],
        "day": [-719_162, 2_932_896, 0, -1, 19_000][i % 5],
        "at": [
            datetime.datetime(1, 1, 1, tzinfo=UTC),
            datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
            datetime.datetime(2024, 2, 29, 12, 0, 0, 123000, tzinfo=UTC),
        ][i % 3],
        "at_us": None if i % 5 == 0 else datetime.datetime(1969, 12, 31, 23, 59, 59, i, tzinfo=UTC),
        "inner": {"x": -i, "deep": None if i % 2 else {"s": "ü" * (i % 4)}},
        "opt": None if i % 3 == 1 else {"y": -i},
    }


def stored(schema: Any) -> StoredSchema:
    return StoredSchema("AVRO", json.dumps(schema))


def one_by_one(monkeypatch: pytest.MonkeyPatch, *args: Any) -> Decoded:
    with monkeypatch.context() as patched:
        patched.setattr(avro_batch, "MIN_BATCH", 10**9)
        return decode_column(*args)


def same(a: Decoded, b: Decoded) -> None:
    assert (a.typed is None) == (b.typed is None)
    if a.typed is not None and b.typed is not None:
        assert a.typed.type.equals(b.typed.type)
        assert a.typed.to_pylist() == b.typed.to_pylist()
        assert a.typed.equals(b.typed)
    assert a.schema_ids.equals(b.schema_ids)
    assert a.errors.to_pylist() == b.errors.to_pylist()


def test_batch_decode_equals_the_per_record_decode() -> None:
    found = codec(stored(ALL))
    assert found.avro is not None and avro_batch.supported(found.avro)
    payloads = [avro(ALL, datum(i)) for i in range(300)]
    batch = avro_batch.batch_decode(found.avro, payloads)
    assert batch is not None
    expected = pa.array([found.decode(p) for p in payloads], found.arrow_type)
    assert batch.type.equals(expected.type)
    assert batch.to_pylist() == expected.to_pylist()
    assert batch.equals(expected)


def test_decode_column_in_batch_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    values: list[bytes | None] = [avro(ALL, datum(i), 7) for i in range(200)]
    values[5] = None
    values[9] = b"not avro"
    args = (values, SCHEMA_ID_PREFIX, {7: stored(ALL)}, {})
    batch = decode_column(*args)
    same(batch, one_by_one(monkeypatch, *args))
    assert batch.typed is not None and batch.typed.null_count == 2


def _zigzag(n: int) -> bytes:
    return avro_batch._zigzag(n)


SMALL = {
    "type": "record",
    "name": "Small",
    "fields": [
        {"name": "n", "type": "long"},
        {"name": "i", "type": "int"},
        {"name": "b", "type": "boolean"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "u", "type": ["null", "string"]},
    ],
}


def small(
    n: bytes = b"\x02", i: bytes = b"\x04", b: bytes = b"\x01", e: bytes = b"\x02", d: bytes = b"\x00"
) -> bytes:
    return n + i + b + e + d + b"\x02\x04ok"


BAD = {
    "truncated": small()[:-1],
    "trailing bytes": small() + b"\x00",
    "non-minimal varint": small(n=b"\x82\x00"),
    "boolean byte 2": small(b=b"\x02"),
    "union branch 2": small()[:-4] + b"\x04\x04ok",
    "int past 32 bits": small(i=_zigzag(2**31)),
    "int wrapping to 5 bytes": small(i=_zigzag(-(2**31) - 1)),
    "enum index out of range": small(e=b"\x04"),
    "enum index -1": small(e=b"\x01"),
    "date past year 9999": small(d=_zigzag(2_932_897)),
    "bad utf-8": small()[:-4] + b"\x02\x04\xff\xfe",
    "empty": b"",
}


@pytest.mark.parametrize("bad", list(BAD))
def test_a_bad_record_falls_back(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    found = codec(stored(SMALL))
    assert found.avro is not None
    payloads = [small(n=_zigzag(i)) for i in range(100)]
    assert avro_batch.batch_decode(found.avro, payloads) is not None
    payloads.insert(40, BAD[bad])
    assert avro_batch.batch_decode(found.avro, payloads) is None
    args = ([wire.header(3) + p for p in payloads], SCHEMA_ID_PREFIX, {3: stored(SMALL)}, {})
    batch = decode_column(*args)
    same(batch, one_by_one(monkeypatch, *args))


def test_an_unsupported_schema_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = {
        "type": "record",
        "name": "L",
        "fields": [{"name": "xs", "type": {"type": "array", "items": "long"}}],
    }
    found = codec(stored(schema))
    assert not avro_batch.supported(found.avro)
    payloads = [avro(schema, {"xs": list(range(i % 4))}) for i in range(100)]
    assert avro_batch.batch_decode(found.avro, payloads) is None  # type: ignore[arg-type]
    args = ([wire.header(2) + p for p in payloads], SCHEMA_ID_PREFIX, {2: stored(schema)}, {})
    same(decode_column(*args), one_by_one(monkeypatch, *args))


def test_versions_merge_as_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    values: list[bytes | None] = []
    for i in range(300):
        if i % 3 == 0:
            values.append(avro(USER_V1, {"id": i, "name": f"n{i}"}, 1))
        elif i % 3 == 1:
            values.append(avro(USER_V2, {"id": i, "name": "é", "email": None if i % 2 else "x@y"}, 2))
        else:
            values.append(avro(USER_V2, {"id": i, "name": "", "email": "z"}, 2)[:-1])  # truncated: errors
    values += [None, b"\x00\x00\x00\x00\x09junk"]
    args = (values, SCHEMA_ID_PREFIX, {1: stored(USER_V1), 2: stored(USER_V2)}, {})
    same(decode_column(*args), one_by_one(monkeypatch, *args))


def test_conflicting_versions_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    as_text = {"type": "record", "name": "C", "fields": [{"name": "x", "type": "string"}]}
    as_long = {
        "type": "record",
        "name": "C",
        "fields": [{"name": "x", "type": "long"}, {"name": "f", "type": "float"}],
    }
    values = [avro(as_text, {"x": str(i)}, 1) for i in range(80)] + [
        avro(as_long, {"x": i, "f": 0.5}, 2) for i in range(80)
    ]
    args = (values, SCHEMA_ID_PREFIX, {1: stored(as_text), 2: stored(as_long)}, {})
    found = decode_column(*args)
    same(found, one_by_one(monkeypatch, *args))
    assert found.errors.null_count == 80  # the longs do not fit the first version's string


def test_schema_latest_batches_only_its_own_records(monkeypatch: pytest.MonkeyPatch) -> None:
    values = [avro(USER_V2, {"id": i, "name": "n", "email": "e"}, 2) for i in range(100)]
    values += [avro(USER_V1, {"id": i, "name": "old"}, 1) for i in range(100)]
    values += [avro(USER_V2, {"id": i, "name": "bare", "email": None}) for i in range(100)]  # no header
    args = (values, SCHEMA_LATEST, {1: stored(USER_V1), 2: stored(USER_V2)}, {}, 2)
    same(decode_column(*args), one_by_one(monkeypatch, *args))


def test_a_misread_neighbour_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """One record a byte short, the next a byte long: the block reads without an error, shifted."""
    pair = {
        "type": "record",
        "name": "P",
        "fields": [{"name": "n", "type": "long"}, {"name": "m", "type": "long"}],
    }
    found = codec(stored(pair))
    assert found.avro is not None
    payloads = [b"\x02\x02"] * 100
    payloads[40:42] = [b"\x02", b"\x02\x02\x02"]
    assert avro_batch.batch_decode(found.avro, payloads) is None
    args = ([wire.header(4) + p for p in payloads], SCHEMA_ID_PREFIX, {4: stored(pair)}, {})
    batch = decode_column(*args)
    same(batch, one_by_one(monkeypatch, *args))
    assert batch.errors.null_count == 98
