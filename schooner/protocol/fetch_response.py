"""A faster writer of flexible Fetch responses (v12 on), byte for byte what kio's writer produces.

A Fetch of a consumer of many partitions answers with an entry per partition that moved, hundreds in
one response, and kio's generic writer spends several microseconds on each (a writer call and a type
check per field, a buffer for the tagged fields). Here an entry's fixed fields are one struct.pack.
Only the layouts checked below take this path (every Fetch response version from 12 to 18 has them);
an entry or a response with a tagged field set (Schooner sets none today) is written by kio, so the
bytes are always kio's.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import sys
from collections.abc import Callable
from typing import Any

from kio.serial import entity_writer

# partition_index, error_code, high_watermark, last_stable_offset, log_start_offset
_HEAD = struct.Struct(">ihqqq")
# producer_id, first_offset, then the aborted transaction's empty tagged fields
_ABORTED = struct.Struct(">qqx")
_I32 = struct.Struct(">i")
# throttle_time, error_code, session_id
_TOP = struct.Struct(">ihi")

_RESPONSE_FIELDS = ("throttle_time", "error_code", "session_id", "responses")
_RESPONSE_TAGS: tuple[tuple[int, str], ...] = ((0, "node_endpoints"),)
_PARTITION_FIELDS = (
    "partition_index", "error_code", "high_watermark", "last_stable_offset", "log_start_offset",
    "aborted_transactions", "preferred_read_replica", "records",
)  # fmt: skip
_PARTITION_TAGS = ((0, "diverging_epoch"), (1, "current_leader"), (2, "snapshot_id"))

Writer = Callable[[Any, Any], None]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Compact lengths (length + 1) are unsigned varints: small ones looked up rather than computed.
_SMALL = [_uvarint(n) for n in range(1024)]


def varint(n: int) -> bytes:
    return _SMALL[n] if n < 1024 else _uvarint(n)


def layout(cls: type) -> tuple[tuple[str, ...], tuple[tuple[int, str], ...]]:
    """(untagged field names in order, (tag, name) of the tagged ones)."""
    plain, tagged = [], []
    for f in dataclasses.fields(cls):
        tag = f.metadata.get("tag")
        if tag is None:
            plain.append(f.name)
        else:
            tagged.append((tag, f.name))
    return tuple(plain), tuple(sorted(tagged))


def tag_defaults(cls: type, tags: tuple[tuple[int, str], ...]) -> list[tuple[str, Any]]:
    by_name = {f.name: f.default for f in dataclasses.fields(cls)}
    return [(name, by_name[name]) for _, name in tags]


def writer_for(response_type: type) -> Writer | None:
    """The fast writer for this FetchResponse type, or None when its layout is not the one known here. Built
    anew on each call: encode_response (messages.py) keeps the writers it uses."""
    if response_type.__name__ != "FetchResponse" or not getattr(response_type, "__flexible__", False):
        return None
    module = sys.modules[response_type.__module__]
    topic_type = getattr(module, "FetchableTopicResponse", None)
    partition_type = getattr(module, "PartitionData", None)
    aborted_type = getattr(module, "AbortedTransaction", None)
    if topic_type is None or partition_type is None or aborted_type is None:
        return None
    response_fields, response_tags = layout(response_type)
    topic_fields, topic_tags = layout(topic_type)
    if (
        response_fields != _RESPONSE_FIELDS
        or response_tags not in ((), _RESPONSE_TAGS)
        or topic_fields not in (("topic", "partitions"), ("topic_id", "partitions"))
        or topic_tags
        or layout(partition_type) != (_PARTITION_FIELDS, _PARTITION_TAGS)
        or layout(aborted_type) != (("producer_id", "first_offset"), ())
    ):
        return None
    response_defaults = tag_defaults(response_type, response_tags)
    partition_defaults = tuple(d for _, d in tag_defaults(partition_type, _PARTITION_TAGS))
    by_id = topic_fields[0] == "topic_id"
    kio_partition: Writer = entity_writer(partition_type)
    kio_response: Writer = entity_writer(response_type)

    def partition_bytes(p: Any) -> bytes:
        if (p.diverging_epoch, p.current_leader, p.snapshot_id) != partition_defaults:
            buf = io.BytesIO()
            kio_partition(buf, p)
            return buf.getvalue()
        aborted = p.aborted_transactions
        records = p.records
        parts = [
            _HEAD.pack(p.partition_index, p.error_code.value, p.high_watermark, p.last_stable_offset,
                       p.log_start_offset),
            b"\x00" if aborted is None else varint(len(aborted) + 1),
            *(_ABORTED.pack(a.producer_id, a.first_offset) for a in aborted or ()),
            _I32.pack(p.preferred_read_replica),
            b"\x00" if records is None else varint(len(records) + 1),
            records or b"",
            b"\x00",  # no tagged fields
        ]  # fmt: skip
        return b"".join(parts)

    def write(buffer: Any, response: Any) -> None:
        if any(getattr(response, name) != default for name, default in response_defaults):
            kio_response(buffer, response)
            return
        parts = [
            _TOP.pack(round(response.throttle_time.total_seconds() * 1000), response.error_code.value,
                      response.session_id),
            varint(len(response.responses) + 1),
        ]  # fmt: skip
        for topic in response.responses:
            if by_id:
                parts.append(topic.topic_id.bytes if topic.topic_id is not None else bytes(16))
            else:
                name = topic.topic.encode()
                parts.append(varint(len(name) + 1))
                parts.append(name)
            parts.append(varint(len(topic.partitions) + 1))
            parts.extend(partition_bytes(p) for p in topic.partitions)
            parts.append(b"\x00")  # the topic's tagged fields
        parts.append(b"\x00")  # the response's tagged fields
        buffer.write(b"".join(parts))

    return write
