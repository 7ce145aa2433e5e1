"""Produce v0, by hand in kio's form (see __init__.py for why and for the layout)."""

# No `from __future__ import annotations`: kio's reader, lengths.py and the tests read field types as
# objects, as kio's own generated modules hold them.
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import TopicName
from kio.static.constants import EntityType
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

_VERSION = i16(0)
_API_KEY = i16(0)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceData:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    index: i32 = field(metadata={"kafka_type": "int32"})
    records: Records | None = field(metadata={"kafka_type": "records"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceData:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_data: tuple[PartitionProduceData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    acks: i16 = field(metadata={"kafka_type": "int16"})
    timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    topic_data: tuple[TopicProduceData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    base_offset: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_responses: tuple[PartitionProduceResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    responses: tuple[TopicProduceResponse, ...]
