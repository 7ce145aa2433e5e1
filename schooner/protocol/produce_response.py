"""A faster writer of Produce responses (v3 on), byte for byte what kio's writer produces.

Every Produce request is answered, and kio's generic writer spent about a tenth of the broker's time on
a small one (a writer call and a type check per field, a buffer per entity's tagged fields). Here a
partition's usual answer (no record errors, no error message, no log append time, no leader hint) is
one struct.pack; any other partition entry, and a response with a tagged field set, is written by kio,
so the bytes are always kio's.
"""

from __future__ import annotations

import io
import struct
import sys
from typing import Any

from kio.serial import entity_writer

from .fetch_response import Writer, layout, tag_defaults, varint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
# index, error_code, base_offset, log_append_time (-1: none)
_V3 = struct.Struct(">ihqq")
# ... and log_start_offset (v5 on)
_V5 = struct.Struct(">ihqqq")
_PARTITION_FIELDS = ("index", "error_code", "base_offset", "log_append_time")
_V5_FIELDS = (*_PARTITION_FIELDS, "log_start_offset")
_V8_FIELDS = (*_V5_FIELDS, "record_errors", "error_message")
_FIRST_VERSION = 3  # v0-v2 (legacy message sets) stay with kio


def writer_for(response_type: type) -> Writer | None:
    """The fast writer for this ProduceResponse type, or None when its layout is not one known here. Built
    anew on each call: encode_response (messages.py) keeps the writers it uses."""
    if response_type.__name__ != "ProduceResponse":
        return None
    if getattr(response_type, "__version__", 0) < _FIRST_VERSION:
        return None
    module = sys.modules[response_type.__module__]
    topic_type = getattr(module, "TopicProduceResponse", None)
    partition_type = getattr(module, "PartitionProduceResponse", None)
    if topic_type is None or partition_type is None:
        return None
    flexible = bool(getattr(response_type, "__flexible__", False))
    response_fields, response_tags = layout(response_type)
    topic_fields, topic_tags = layout(topic_type)
    partition_fields, partition_tags = layout(partition_type)
    if (
        response_fields != ("responses", "throttle_time")
        or response_tags not in ((), ((0, "node_endpoints"),))
        or topic_fields not in (("name", "partition_responses"), ("topic_id", "partition_responses"))
        or topic_tags
        or partition_fields not in (_PARTITION_FIELDS, _V5_FIELDS, _V8_FIELDS)
        or partition_tags not in ((), ((0, "current_leader"),))
        or (flexible and partition_fields != _V8_FIELDS)
    ):
        return None
    response_defaults = tag_defaults(response_type, response_tags)
    partition_defaults = tag_defaults(partition_type, partition_tags)
    by_id = topic_fields[0] == "topic_id"
    head = _V3 if partition_fields == _PARTITION_FIELDS else _V5
    with_start = head is _V5
    # What follows the fixed fields of a usual entry: no record errors, no error message, and in a
    # flexible version no tagged fields.
    if partition_fields != _V8_FIELDS:
        tail = b""
    elif flexible:
        tail = b"\x01\x00\x00"  # empty compact array, null compact string, no tags
    else:
        tail = b"\x00\x00\x00\x00\xff\xff"  # empty array, null string
    kio_partition: Writer = entity_writer(partition_type)
    kio_response: Writer = entity_writer(response_type)
    has_errors = partition_fields == _V8_FIELDS

    def partition_bytes(p: Any) -> bytes:
        if (
            p.log_append_time is not None
            or (has_errors and (p.record_errors or p.error_message is not None))
            or any(getattr(p, name) != default for name, default in partition_defaults)
        ):
            buf = io.BytesIO()
            kio_partition(buf, p)
            return buf.getvalue()
        if with_start:
            fixed = head.pack(p.index, p.error_code.value, p.base_offset, -1, p.log_start_offset)
        else:
            fixed = head.pack(p.index, p.error_code.value, p.base_offset, -1)
        return fixed + tail

    def write(buffer: Any, response: Any) -> None:
        if any(getattr(response, name) != default for name, default in response_defaults):
            kio_response(buffer, response)
            return
        topics = response.responses
        parts = [varint(len(topics) + 1) if flexible else _I32.pack(len(topics))]
        for topic in topics:
            if by_id:
                parts.append(topic.topic_id.bytes if topic.topic_id is not None else bytes(16))
            else:
                name = topic.name.encode()
                parts.append(varint(len(name) + 1) if flexible else _I16.pack(len(name)))
                parts.append(name)
            partitions = topic.partition_responses
            parts.append(varint(len(partitions) + 1) if flexible else _I32.pack(len(partitions)))
            parts.extend(partition_bytes(p) for p in partitions)
            if flexible:
                parts.append(b"\x00")  # the topic's tagged fields
        parts.append(_I32.pack(round(response.throttle_time.total_seconds() * 1000)))
        if flexible:
            parts.append(b"\x00")  # the response's tagged fields
        buffer.write(b"".join(parts))

    return write
