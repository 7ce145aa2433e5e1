"""An XRANGE reply kept as the RESP bytes it came in, for the fetch path to encode without objects.

The read lane hands a call marked raw its reply unparsed (storage/redis/lane.py). Making hiredis's
objects of a fetch's XRANGE reply (a list and bytes per entry, a list and bytes per field) and freeing
them cost the broker 0.47 µs per 100-byte record, three times encoding the records into batches, which
the compiled encoder does straight from the bytes (protocol/_batch.c encode_resp). Everything else
reads a RawEntries as the list hiredis would have made: it is parsed on first use.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import hiredis
from redis.exceptions import ResponseError

from ..redis import resp

# Whether reads ask the lane for raw replies: only where the bytes can be read without parsing them.
RAW_READS = resp.xrange_summary is not None


class RawEntries(Sequence[Any]):
    """An XRANGE reply's RESP bytes and its entry count. Its last ID is read when first asked for,
    unless the encoder that read every entry told it (note_last_id): one pass over the bytes fewer."""

    __slots__ = ("_last_id", "_parsed", "body", "length", "raw")

    def __init__(self, raw: bytes | bytearray, length: int, body: int) -> None:
        self.raw = raw
        self.length = length
        self.body = body  # where the first entry starts, after "*<count>\r\n"
        self._last_id: bytes | None = None
        self._parsed: list[Any] | None = None

    @property
    def last_id(self) -> bytes:
        if self._last_id is None:
            summary = resp.xrange_summary(self.raw) if resp.xrange_summary is not None else None
            self._last_id = summary[1] if summary is not None and summary[1] else self.parsed()[-1][0]
        return self._last_id

    def note_last_id(self, entry_id: bytes) -> None:
        """The last entry's ID, from a reader that went through all of them."""
        self._last_id = entry_id

    def parsed(self) -> list[Any]:
        """The reply as hiredis parses it: [[id, [field, value, ...]], ...]."""
        if self._parsed is None:
            self._parsed = _hiredis_parse(self.raw)
        return self._parsed

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        return self.parsed()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.parsed())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawEntries):
            other = other.parsed()
        return isinstance(other, list) and self.parsed() == other

    __hash__ = None  # type: ignore[assignment]  # compared as the list it stands for


def entries_of(reply: Any) -> Any:
    """An XRANGE call's parser: a raw reply (bytes, a whole reply as the lane cut it) becomes
    RawEntries, or when it holds no entries the empty list; a reply parsed already (redis-py, or a lane
    that had begun parsing) stays as it is."""
    if not isinstance(reply, bytes | bytearray):
        return reply
    body = reply.find(b"\r\n")
    head = reply[1:body]
    if reply[:1] != b"*" or not head.isdigit() or not head.isascii():
        return _hiredis_parse(reply)  # not an array: as hiredis reads it
    count = int(head)
    return RawEntries(reply, count, body + 2) if count else []


def listed(entries: Sequence[Any]) -> list[Any]:
    """A read's entries as hiredis's list, for code that works on the list (a raw one is parsed)."""
    if type(entries) is RawEntries:
        return entries.parsed()
    return entries if isinstance(entries, list) else list(entries)


def _hiredis_parse(reply: bytes | bytearray) -> Any:
    reader = hiredis.Reader(replyError=ResponseError)
    reader.feed(reply)  # type: ignore[arg-type]  # any buffer, though its stub names bytes
    return reader.gets()


def last_entry_id(entries: Sequence[Any]) -> bytes:
    """The ID of the last entry of a non-empty read, without parsing a raw one."""
    if type(entries) is RawEntries:
        return entries.last_id
    return entries[-1][0]  # type: ignore[no-any-return]
