"""Properties of the protocol layer, checked on generated messages (hypothesis).

- Every request API and version the broker advertises decodes to exactly what a client encoded.
- Every response type the broker may send reads back, through its header, as what was encoded.
- Truncated, flipped, resized or otherwise mutated frames raise ProtocolError and nothing else.
- A declared array count larger than the frame never reaches kio, which would reserve memory for it.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import resource
import struct
import subprocess
import sys
import textwrap
import types
import typing
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from aiokafka.record._crecords.cutil import crc32c_cython
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from schooner.protocol.apis import (
    SUPPORTED_VERSIONS,
    ApiKey,
    is_flexible,
    request_type,
    response_type,
)
from schooner.protocol.errors import MalformedRequest, ProtocolError, UnsupportedRequest
from schooner.protocol.framing import FrameDecoder, frame
from schooner.protocol.messages import RequestHeader, decode_request, encode_response, is_decodable
from schooner.protocol.records import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
    BatchBuilder,
    InvalidRecords,
    read_batches,
)
from tests.wire import HUGE_COUNTS, NULL_MARKERS

# Deterministic, so a CI run is repeatable; no deadline, as the shared CI cores are slow at times.
CI = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=8,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

VERSIONS = [(k, v) for k, (low, high) in sorted(SUPPORTED_VERSIONS.items()) for v in range(low, high + 1)]
VERSION_IDS = [f"{ApiKey(k).name.lower()}-v{v}" for k, v in VERSIONS]

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


# --- strategies over kio's generated dataclasses, driven by each field's kafka_type ---


def _strip_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0], True
    return hint, False


def _primitive(kafka_type: str) -> st.SearchStrategy[Any]:
    if kafka_type in _INT_RANGES:
        low, high = _INT_RANGES[kafka_type]
        return st.integers(low, high)
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kafka_type == "string":
        return st.text(max_size=8)
    if kafka_type in ("bytes", "records"):
        return st.binary(max_size=16)
    if kafka_type == "uuid":
        return st.uuids().filter(lambda u: u.int != 0)  # all zeros is how kio writes None
    if kafka_type == "error_code":
        return st.sampled_from(list(ErrorCode))
    if kafka_type == "timedelta_i32":
        return st.integers(-(2**31), 2**31 - 1).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if kafka_type == "timedelta_i64":
        return st.integers(-(2**40), 2**40).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if kafka_type == "datetime_i64":
        return st.integers(0, 2**41).map(lambda ms: _EPOCH + datetime.timedelta(milliseconds=ms))
    raise AssertionError(f"no strategy for kafka type {kafka_type}")


def _is_entity(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _field(field: dataclasses.Field[Any]) -> st.SearchStrategy[Any]:
    tagged = "tag" in field.metadata
    hint, nullable = _strip_optional(field.type)
    strategy: st.SearchStrategy[Any]
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        items = entities(item) if _is_entity(item) else _primitive(field.metadata["kafka_type"])
        strategy = st.lists(items, max_size=3).map(tuple)
    elif _is_entity(hint):
        strategy = entities(hint)
    else:
        strategy = _primitive(field.metadata["kafka_type"])
    # kio writes a tagged field only when it differs from its default, and never as null.
    if nullable and (not tagged or field.default is None):
        strategy = st.none() | strategy
    return strategy


@cache
def entities(cls: type) -> st.SearchStrategy[Any]:
    return st.builds(cls, **{f.name: _field(f) for f in dataclasses.fields(cls)})


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_header(
    api_key: int, version: int, correlation_id: int, client_id: str | None, tags: list[tuple[int, bytes]]
) -> bytes:
    """A request header (v1, or v2 when flexible) written by hand, independent of the decoder."""
    out = struct.pack(">hhi", api_key, version, correlation_id)
    if client_id is None:
        out += struct.pack(">h", -1)
    else:
        raw = client_id.encode()
        out += struct.pack(">h", len(raw)) + raw
    if is_decodable(api_key, version) and is_flexible(api_key, version):
        out += _uvarint(len(tags)) + b"".join(_uvarint(t) + _uvarint(len(d)) + d for t, d in tags)
    return out


def encode_body(body: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(body))(buf, body)
    return buf.getvalue()


client_ids = st.none() | st.text(max_size=12)
# Unknown tags in the header: a broker must step over them.
header_tags = st.lists(st.tuples(st.integers(0, 2**20), st.binary(max_size=6)), max_size=2)


@st.composite
def request_frames(draw: st.DrawFn, api_key: int, version: int) -> tuple[bytes, int, str | None, Any]:
    body = draw(entities(request_type(api_key, version)))
    correlation_id = draw(st.integers(-(2**31), 2**31 - 1))
    client_id = draw(client_ids)
    head = encode_header(api_key, version, correlation_id, client_id, draw(header_tags))
    return head + encode_body(body), correlation_id, client_id, body


# --- 1. round trips ---


@pytest.mark.parametrize(("api_key", "version"), VERSIONS, ids=VERSION_IDS)
@CI
@given(data=st.data())
def test_every_advertised_request_round_trips(api_key: int, version: int, data: st.DataObject) -> None:
    raw, correlation_id, client_id, body = data.draw(request_frames(api_key, version))
    request = decode_request(raw)
    assert request.header == RequestHeader(api_key, version, correlation_id, client_id)
    assert request.body == body


@pytest.mark.parametrize(("api_key", "version"), VERSIONS, ids=VERSION_IDS)
@CI
@given(data=st.data())
def test_every_advertised_response_round_trips(api_key: int, version: int, data: st.DataObject) -> None:
    body = data.draw(entities(response_type(api_key, version)))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    out = encode_response(RequestHeader(api_key, version, correlation_id, "c"), body)
    size, got_correlation_id = struct.unpack_from(">ii", out)
    assert size == len(out) - 4 and got_correlation_id == correlation_id
    pos = 8
    if api_key != ApiKey.API_VERSIONS and is_flexible(api_key, version):
        assert out[pos] == 0  # an empty header tagged-field section
        pos += 1
    decoded, size = entity_reader(response_type(api_key, version))(out, pos)
    assert decoded == body
    assert pos + size == len(out)


# --- 2. mutated frames ---


@st.composite
def mutate(draw: st.DrawFn, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "huge", "null", "header"]))
        at = draw(st.integers(0, len(data)))
        if kind == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind in ("huge", "null"):
            pattern = draw(st.sampled_from(HUGE_COUNTS if kind == "huge" else NULL_MARKERS))
            data[at : at + len(pattern)] = pattern
        elif kind == "header" and len(data) >= 4:
            data[0:4] = struct.pack(">hh", draw(st.integers(-5, 80)), draw(st.integers(-2, 25)))
    return bytes(data)


def _decode_or_protocol_error(raw: bytes) -> None:
    """Decodes a frame that may be corrupt; anything but success or ProtocolError fails the test."""
    try:
        request = decode_request(raw)
    except UnsupportedRequest as exc:
        api_key, version, correlation_id = struct.unpack_from(">hhi", raw)
        assert not is_decodable(api_key, version)
        assert (exc.api_key, exc.api_version, exc.correlation_id) == (api_key, version, correlation_id)
        return
    except MalformedRequest:
        return
    api_key, version, correlation_id = struct.unpack_from(">hhi", raw)
    assert is_decodable(api_key, version)  # served, or an API kio knows that we answer as unsupported
    assert request.header.correlation_id == correlation_id
    assert type(request.body) is request_type(api_key, version)
    _assert_no_null_where_the_schema_has_none(request.body)


def _assert_no_null_where_the_schema_has_none(entity: Any) -> None:
    """Handlers trust the types: a None in a field that cannot be null would crash one."""
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        hint, nullable = _strip_optional(field.type)
        if value is None:
            assert nullable, f"{type(entity).__qualname__}.{field.name} is None"
        elif typing.get_origin(hint) is tuple and _is_entity(typing.get_args(hint)[0]):
            for item in value:
                _assert_no_null_where_the_schema_has_none(item)
        elif _is_entity(hint):
            _assert_no_null_where_the_schema_has_none(value)


@pytest.mark.parametrize(("api_key", "version"), VERSIONS, ids=VERSION_IDS)
@CI
@given(data=st.data())
def test_mutated_requests_raise_only_protocol_errors(api_key: int, version: int, data: st.DataObject) -> None:
    raw, *_ = data.draw(request_frames(api_key, version))
    _decode_or_protocol_error(data.draw(mutate(raw)))


@CI
@given(raw=st.binary(max_size=64))
def test_random_bytes_raise_only_protocol_errors(raw: bytes) -> None:
    _decode_or_protocol_error(raw)


@settings(CI, max_examples=200)
@given(
    head=st.sampled_from(VERSIONS).map(lambda kv: struct.pack(">hhih", kv[0], kv[1], 5, -1)),
    tail=st.binary(max_size=48),
)
def test_garbage_after_a_valid_header_raises_only_protocol_errors(head: bytes, tail: bytes) -> None:
    _decode_or_protocol_error(head + tail)


@settings(CI, max_examples=100)
@given(payloads=st.lists(st.binary(max_size=40), max_size=6), cuts=st.lists(st.integers(0, 300), max_size=8))
def test_frames_come_out_whole_however_the_stream_is_cut(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in payloads)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    decoder = FrameDecoder(40)
    got: list[bytes] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        got += decoder.feed(stream[start:end])
    assert got == payloads
    assert decoder.buffered == 0


@settings(CI, max_examples=200)
@given(chunks=st.lists(st.binary(max_size=64), max_size=10), limit=st.integers(0, 64))
def test_frame_decoder_raises_only_protocol_errors_and_buffers_at_most_one_frame(
    chunks: list[bytes], limit: int
) -> None:
    decoder = FrameDecoder(limit)
    try:
        for chunk in chunks:
            for got in decoder.feed(chunk):
                assert len(got) <= limit
            assert decoder.buffered < 4 + limit
    except ProtocolError:
        pass


@settings(CI, max_examples=60)
@given(data=st.data())
def test_mutated_streams_through_framing_and_decoding(data: st.DataObject) -> None:
    """Whole streams (size prefixes included) mutated, as a connection would receive them."""
    frames = [data.draw(request_frames(*data.draw(st.sampled_from(VERSIONS))))[0] for _ in range(2)]
    stream = data.draw(mutate(b"".join(frame(f) for f in frames)))
    decoder = FrameDecoder(1 << 16)
    try:
        for raw in decoder.feed(stream):
            _decode_or_protocol_error(raw)
    except ProtocolError:
        pass


# --- huge declared counts, under a memory limit ---


def _sample_primitive(kafka_type: str) -> Any:
    if kafka_type in _INT_RANGES:
        return 7
    samples: dict[str, Any] = {
        "bool": True,
        "float64": 1.5,
        "string": "ab",
        "bytes": b"xy",
        "records": b"xy",
        "uuid": uuid.UUID(int=7),
        "error_code": ErrorCode.none,
        "timedelta_i32": datetime.timedelta(milliseconds=7),
        "timedelta_i64": datetime.timedelta(milliseconds=7),
        "datetime_i64": _EPOCH + datetime.timedelta(seconds=7),
    }
    return samples[kafka_type]


def sample(cls: type) -> Any:
    """One fixed entity with two items in every array and every tagged field set, so each is written."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        hint, _ = _strip_optional(field.type)
        if typing.get_origin(hint) is tuple:
            item = typing.get_args(hint)[0]
            one = sample(item) if _is_entity(item) else _sample_primitive(field.metadata["kafka_type"])
            values[field.name] = (one, one)
        elif _is_entity(hint):
            values[field.name] = sample(hint)
        else:
            values[field.name] = _sample_primitive(field.metadata["kafka_type"])
    return cls(**values)


def test_samples_with_every_tagged_field_set_round_trip() -> None:
    # Generated bodies often leave tagged fields at their defaults, which are not written.
    for api_key, version in VERSIONS:
        body = sample(request_type(api_key, version))
        request = decode_request(encode_header(api_key, version, 1, "c", [(0, b"")]) + encode_body(body))
        assert request.body == body, (api_key, version)


def huge_count_sweep() -> int:
    """Writes each HUGE_COUNTS or NULL_MARKERS pattern over every position of a sample of every request.

    Returns how many frames it decoded."""
    done = 0
    for api_key, version in VERSIONS:
        head = encode_header(api_key, version, 1, "c", [])
        raw = head + encode_body(sample(request_type(api_key, version)))
        for at in range(len(head), len(raw)):
            for pattern in HUGE_COUNTS + NULL_MARKERS:
                _decode_or_protocol_error(raw[:at] + pattern + raw[at + len(pattern) :])
                done += 1
    return done


_ROOT = Path(__file__).resolve().parents[2]
_MEMORY_LIMIT = 2 << 30  # far below the 16 or 32 GiB a huge count asks kio for


def _run_limited(code: str) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT, _MEMORY_LIMIT))

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=_ROOT,
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_huge_counts_fail_fast_within_a_memory_limit() -> None:
    # In a child process: a regression would abort the process, not raise.
    done = _run_limited("""
        from tests.protocol.test_properties import huge_count_sweep
        print(huge_count_sweep())
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 50_000


def test_kio_alone_would_abort_on_a_huge_count() -> None:
    """Why the length check exists: this is what a 20-byte frame does to kio without it."""
    done = _run_limited("""
        from kio.serial import entity_reader
        from schooner.protocol.apis import request_type
        body = b"\\xff\\xff\\xff\\xff\\x0f" + b"\\x02a\\x00"  # Metadata v9: 2**32 - 2 topics
        try:
            entity_reader(request_type(3, 9))(body, 0)
        except Exception:
            print("raised")
    """)
    assert done.returncode != 0 and "raised" not in done.stdout, (done.returncode, done.stdout)
    assert "memory allocation" in done.stderr


def test_a_huge_count_is_refused_without_reading_on() -> None:
    raw = encode_header(3, 9, 1, None, []) + b"\xff\xff\xff\xff\x0f" + b"\x02a\x00"
    with pytest.raises(MalformedRequest, match="array of 4294967294 items"):
        decode_request(raw)


# --- record batches inside Produce ---

_CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
_CRC_AT, _ATTRIBUTES_AT, _RECORDS_AT = 17, 21, 61
records = st.lists(
    st.tuples(
        st.none() | st.binary(max_size=8),
        st.none() | st.binary(max_size=24),
        st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)), max_size=2),
    ),
    min_size=1,
    max_size=4,
)


Item = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def _batch(codec: int, items: list[Item]) -> bytes:
    builder = BatchBuilder(0, codec)
    for offset, (key, value, headers) in enumerate(items):
        builder.append(offset, 1_700_000_000_000 + offset, key, value, headers)
    return builder.build()


def _reseal(batch: bytes) -> bytes:
    """Fixes a mutated batch's length and CRC, so the mutation reaches the record parser."""
    out = bytearray(batch)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, _CRC_AT, crc32c_cython(bytes(out[_ATTRIBUTES_AT:])))
    return bytes(out)


@settings(CI, max_examples=60)
@given(codec=st.sampled_from(_CODECS), items=records)
def test_record_batches_round_trip(codec: int, items: list[Item]) -> None:
    (batch,) = read_batches(_batch(codec, items))
    got = [
        (r.key, r.value, [(k, None if v is None else bytes(v)) for k, v in r.headers]) for r in batch.records
    ]
    assert got == items


@settings(CI, max_examples=300)
@given(codec=st.sampled_from(_CODECS), items=records, data=st.data())
def test_mutated_record_batches_raise_only_invalid_records(
    codec: int, items: list[Item], data: st.DataObject
) -> None:
    batch = _batch(codec, items)
    body = data.draw(mutate(batch[_RECORDS_AT:]))
    try:
        read_batches(_reseal(batch[:_RECORDS_AT] + body))
    except InvalidRecords as exc:
        assert exc.error_code in (CORRUPT_MESSAGE, UNSUPPORTED_FOR_MESSAGE_FORMAT, INVALID_RECORD)


def test_a_null_array_the_schema_does_not_allow_is_refused() -> None:
    # kio writes None as a null array whatever the schema says, and would read it back as None.
    body = dataclasses.replace(sample(request_type(ApiKey.PRODUCE, 9)), topic_data=None)
    raw = encode_header(ApiKey.PRODUCE, 9, 1, "c", []) + encode_body(body)
    with pytest.raises(MalformedRequest, match="non-nullable array topic_data"):
        decode_request(raw)
