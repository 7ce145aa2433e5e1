"""The answer to an API this broker does not implement: UNSUPPORTED_VERSION in that API's own response.

A client that sends an API the broker did not advertise (an admin tool probing, a newer client, a
request for a feature Schooner lacks) gets a response it can read, at the version it asked for, that
says UNSUPPORTED_VERSION where it looks for errors, and keeps its connection. The rule, for any API
that kio has a schema for:

1. A response with a top-level `error_code` gets UNSUPPORTED_VERSION there (and in `error_message`,
   where the version has one, a sentence naming the API); its collections are empty.
2. A response without one echoes the request's collections, each entry carrying UNSUPPORTED_VERSION
   in its `error_code`: a response collection answers the request collection of the same name, entry
   for entry, with the fields of the same name and wire type copied (topic names, partition indexes,
   ids), recursively; or, failing that, a request list of plain values named after a field of the
   response entry (`group_ids` -> one `groups` entry per id, with `group_id` set). A collection that
   matches neither is empty.
3. Every other field is zero, empty, or null where the schema allows it; throttle time is 0.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, RequestPayload, ResponsePayload

from .apis import SUPPORTED_VERSIONS, api_name, response_type
from .messages import make, sibling

_EPOCH = datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
_ZERO: dict[str, Any] = {
    "bool": False,
    "bytes": b"",
    "records": b"",
    "string": "",
    "uuid": uuid.UUID(int=0),
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
    "datetime_i64": _EPOCH,
}


def unsupported_response(request: RequestPayload) -> ResponsePayload:
    """The response to a request of an API this broker does not serve, by the rule above."""
    cls = response_type(request.__api_key__, request.__version__)
    message = f"{api_name(request.__api_key__)} is not supported by this broker"
    top_level = any(_is_error_code(field) for field, _ in _fields(cls).values())
    built: ResponsePayload = _build(cls, None if top_level else request, message, {})
    return built


_FIELDS: dict[type, dict[str, tuple[dataclasses.Field[Any], Any]]] = {}


def _fields(cls: type) -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    """Each field of a kio entity with its type (kio's generated modules hold real types, not strings)."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = {f.name: (f, f.type) for f in dataclasses.fields(cls)}
    return found


def _build(cls: type, source: object | None, message: str, known: dict[str, Any]) -> Any:
    """An entity of `cls`: errors set, `known` values and same-named plain fields of `source` copied."""
    source_fields = _fields(type(source)) if source is not None else {}
    alone = len(_collections(cls)) == 1
    values: dict[str, Any] = {}
    for name, (field, hint) in _fields(cls).items():
        inner, nullable = _strip_optional(hint)
        if _is_error_code(field):
            values[name] = ErrorCode.unsupported_version
        elif name == "error_message":
            values[name] = message
        elif name in known:
            values[name] = known[name]
        elif typing.get_origin(inner) is tuple:
            item_type = _collections(cls).get(name)
            values[name] = () if item_type is None else _echo(name, item_type, source, message, alone)
        elif (nested_type := _entity_class(inner)) is not None:
            nested = getattr(source, name, None) if name in source_fields else None
            values[name] = None if nullable and nested is None else _build(nested_type, nested, message, {})
        elif _same_wire_type(field, source_fields.get(name)):
            values[name] = getattr(source, name)
        elif field.default is not dataclasses.MISSING:
            values[name] = field.default
        else:
            values[name] = None if nullable else _ZERO.get(field.metadata.get("kafka_type", ""), 0)
    return cls(**values)


def _echo(name: str, item_type: type, source: object | None, message: str, alone: bool) -> tuple[Any, ...]:
    """The entries of a response collection that answer the request's (rule 2). `alone`: the response
    entity has no other collection of entries, so it may pair with the request's only one."""
    if source is None:
        return ()
    requested = _collections(type(source))
    if name in requested:
        pair: str | None = name
    elif alone and len(requested) == 1:
        pair = next(iter(requested))
    else:
        pair = None
    if pair is not None:
        return tuple(_build(item_type, entry, message, {}) for entry in getattr(source, pair) or ())
    source_fields = _fields(type(source))
    for key in _fields(item_type):
        for plural in (f"{key}s", f"{key}es"):
            listed = getattr(source, plural, None) if plural in source_fields else None
            if isinstance(listed, tuple) and plural not in requested:
                return tuple(_build(item_type, None, message, {key: value}) for value in listed)
    return ()


_COLLECTIONS: dict[type, dict[str, type]] = {}


def _collections(cls: type) -> dict[str, type]:
    """The fields of an entity that are collections of entities, with the entry class."""
    found = _COLLECTIONS.get(cls)
    if found is None:
        found = {}
        for name, (_, hint) in _fields(cls).items():
            inner, _ = _strip_optional(hint)
            if typing.get_origin(inner) is tuple:
                item = _entity_class(_strip_optional(typing.get_args(inner)[0])[0])
                if item is not None:
                    found[name] = item
        _COLLECTIONS[cls] = found
    return found


def _is_error_code(field: dataclasses.Field[Any]) -> bool:
    # Most are named error_code; some versions name theirs otherwise (partition_error_code).
    return field.metadata.get("kafka_type") == "error_code" and field.metadata.get("tag") is None


def _entity_class(hint: Any) -> type | None:
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _same_wire_type(field: dataclasses.Field[Any], other: tuple[dataclasses.Field[Any], Any] | None) -> bool:
    if other is None:
        return False
    kafka_type = field.metadata.get("kafka_type")
    return kafka_type is not None and other[0].metadata.get("kafka_type") == kafka_type


def _strip_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return hint, False


def api_version_list(resp_cls: type) -> tuple[Entity, ...]:
    """ApiVersions' list of every API and the versions this broker serves, as entries of resp_cls."""
    entry = sibling(resp_cls, "ApiVersion")
    return tuple(
        entry(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())
    )


def unsupported_version_response() -> ResponsePayload:
    """The v0 answer to a version we do not know, listing ours so the client can pick."""
    cls = response_type(18, 0)
    return make(cls, error_code=ErrorCode.unsupported_version, api_keys=api_version_list(cls))
