"""Typed requests from frames, and typed responses to frames."""

from __future__ import annotations

import dataclasses
import enum
import functools
import io
import re
import struct
import sys
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, TypeVar

from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.protocol import Entity, RequestPayload, ResponsePayload

from .apis import api_name, has_schema, is_flexible, is_served, is_supported, request_type, response_type
from .errors import MalformedRequest, UnsupportedRequest
from .fetch_response import Writer
from .fetch_response import writer_for as fetch_writer_for
from .framing import frame
from .lengths import check_lengths, skip_tagged_fields
from .produce_response import writer_for as produce_writer_for

_HEADER = struct.Struct(">hhi")
_API_VERSIONS = 18


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    # The kio request entity of the header's API and version: one member of that API's union in
    # request_types.py, which is what the API's handler takes.
    body: RequestPayload
    size: int = 0  # bytes of the frame (header and body): what a producer_byte_rate quota counts


class NoResponse(enum.Enum):
    """The answer to a request that gets no response frame: Produce with acks=0."""

    NO_RESPONSE = "no response"


NO_RESPONSE: Final = NoResponse.NO_RESPONSE
# What a handler gives back for one request.
Answer: TypeAlias = ResponsePayload | NoResponse


def read_header(data: bytes) -> tuple[RequestHeader, int]:
    """Reads the request header (v1 or v2) and returns it with the offset of the body.

    Read by hand: the header decides which kio schema applies, so it is parsed before any schema.
    """
    if len(data) < _HEADER.size + 2:
        raise MalformedRequest("truncated request header")
    api_key, api_version, correlation_id = _HEADER.unpack_from(data, 0)
    pos = _HEADER.size
    (client_len,) = struct.unpack_from(">h", data, pos)
    pos += 2
    client_id: str | None = None
    if client_len >= 0:
        if pos + client_len > len(data):
            raise MalformedRequest("truncated client id")
        client_id = data[pos : pos + client_len].decode("utf-8", "replace")
        pos += client_len
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    if not is_decodable(api_key, api_version):
        raise UnsupportedRequest(api_key, api_version, correlation_id, client_id)
    if is_flexible(api_key, api_version):
        pos = skip_tagged_fields(data, pos, len(data))
    return header, pos


def is_decodable(api_key: int, api_version: int) -> bool:
    """A served version, or any version kio knows of an API this broker does not serve (which is then
    answered with UNSUPPORTED_VERSION in its own schema: protocol/unsupported.py). A served API at a
    version out of its range is not: Kafka closes the connection on it (ApiVersions aside, KIP-511)."""
    if is_served(api_key):
        return is_supported(api_key, api_version)
    return has_schema(api_key, api_version)


def decode_request(data: bytes) -> Request:
    """Decodes one frame. Raises UnsupportedRequest or MalformedRequest."""
    header, pos = read_header(data)
    body_type = request_type(header.api_key, header.api_version)
    try:
        # kio reserves memory for each declared array count, and reads a null array the schema
        # forbids as None: check the frame before kio reads it.
        check_lengths(body_type, data, pos)
        body, _ = entity_reader(body_type)(data, pos)
    except Exception as exc:  # kio raises several types for bad bytes; all mean the same here
        raise MalformedRequest(
            f"cannot decode {api_name(header.api_key)} v{header.api_version}: {exc}"
        ) from exc
    # Trailing bytes are ignored, as Kafka's own parser does: librdkafka sends some after Metadata v13.
    return Request(header, body, len(data))


def encode_response(header: RequestHeader, body: ResponsePayload | Entity) -> bytes:
    """Frames a response: correlation id, header tagged fields when flexible, then the body.

    ApiVersions responses always use header v0, whatever their version, so that a client that
    does not yet know the broker's versions can read them.
    """
    buf = io.BytesIO()
    buf.write(header.correlation_id.to_bytes(4, "big", signed=True))
    if header.api_key != _API_VERSIONS and is_flexible(header.api_key, header.api_version):
        buf.write(b"\x00")
    _writer(type(body))(buf, body)
    return frame(buf.getvalue())


_WRITERS: dict[type, Writer] = {}


def _writer(body_type: type) -> Writer:
    """kio's writer, or a faster one of the same bytes for Fetch (fetch_response.py) and Produce
    (produce_response.py) responses."""
    found = _WRITERS.get(body_type)
    if found is None:
        found = _WRITERS[body_type] = (
            fetch_writer_for(body_type) or produce_writer_for(body_type) or entity_writer(body_type)
        )
    return found


E = TypeVar("E")


def make(cls: type[E], **values: Any) -> E:
    """Builds a kio entity from the values its version has; values of other versions are dropped.

    Handlers serve many versions of one API with one code path: they pass every value they know,
    and each version's generated dataclass keeps the fields it defines. A name that no version of
    the entity defines is a typo, and raises TypeError instead of vanishing (as h11's events do).
    """
    names = _field_names(cls)
    if not names.issuperset(values):
        unknown = sorted(set(values) - _names_in_any_version(cls))
        if unknown:
            raise TypeError(
                f"unrecognized kwarg(s) {', '.join(unknown)}: no version of {_qualified(cls)} has them"
            )
    return cls(**{k: v for k, v in values.items() if k in names})


_FIELD_NAMES: dict[type, frozenset[str]] = {}
_ANY_VERSION_NAMES: dict[type, frozenset[str]] = {}
# Where kio generates each version's classes: kio.schema.<api>.v<version>.<request|response>.
_KIO_MODULE = re.compile(r"kio\.schema\.(\w+)\.v\d+\.(\w+)")


def _field_names(cls: type) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = frozenset(f.name for f in dataclasses.fields(cls))
        _FIELD_NAMES[cls] = names
    return names


def _names_in_any_version(cls: type) -> frozenset[str]:
    """The fields of every version of the entity: the class of that name in each version's module
    (kio's, and the hand-written legacy_produce ones, which carry the same markers)."""
    names = _ANY_VERSION_NAMES.get(cls)
    if names is None:
        names = _field_names(cls)
        api_key = getattr(cls, "__api_key__", None)
        header = getattr(cls, "__header_schema__", None)
        api = api_key_map.get(api_key) if api_key is not None else None
        if api is not None and header is not None:
            is_request = header.__name__ == "RequestHeader"
            for version in schema_name_map.get(api, {}):
                top = request_type(api_key, version) if is_request else response_type(api_key, version)
                other = getattr(sys.modules[top.__module__], cls.__name__, None)
                if isinstance(other, type):
                    names |= _field_names(other)
        _ANY_VERSION_NAMES[cls] = names
    return names


def _qualified(cls: type) -> str:
    found = _KIO_MODULE.fullmatch(cls.__module__)
    return f"{found.group(1)} {found.group(2)} {cls.__name__}" if found else cls.__name__


def has_field(cls: type, name: str) -> bool:
    return name in _field_names(cls)


def sibling(entity_or_type: object, name: str) -> type[Any]:
    """Another class from the same generated kio module (the nested types of one version): a
    response's topics and partitions are `sibling(response_for(request), "<Name>")`."""
    found = optional_sibling(entity_or_type, name)
    if found is None:
        raise AttributeError(f"{_module_of(entity_or_type).__name__} has no {name}")
    return found


def optional_sibling(entity_or_type: object, name: str) -> type[Any] | None:
    """The sibling class of that name, or None in a version that has none."""
    cls = entity_or_type if isinstance(entity_or_type, type) else type(entity_or_type)
    return _sibling_of(cls, name)


@functools.cache
def _sibling_of(cls: type, name: str) -> type[Any] | None:
    found = getattr(sys.modules[cls.__module__], name, None)
    return found if isinstance(found, type) else None


def _module_of(entity_or_type: object) -> Any:
    cls = entity_or_type if isinstance(entity_or_type, type) else type(entity_or_type)
    return sys.modules[cls.__module__]
