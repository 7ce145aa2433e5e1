"""Encodes a command as RESP, faster than hiredis.pack_command for the long ones, and finds where a
reply ends in a buffer without parsing it into objects (reply_scan).

An append sends one argument per record (thousands per command). hiredis.pack_command spent about
160 ns per 100-byte argument. A command of bytes only (an append: the lane sends an EVALSHA's head as
bytes for that) goes to the compiled _resp.c, about 6 ns per argument; without it, or with other
types, the arguments are joined with one length header per distinct length, in list operations that
run in C: about 55 ns per argument when all are bytes, 70 when some must be converted.
SCHOONER_COMPILED=0 (schooner.config.compiled_enabled) leaves _resp.c out, as where it was not built;
tests/storage/redis/test_resp.py compares the two encoders, and hiredis, on random and extreme commands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import hiredis

from ...config import compiled_enabled

PackBytes = Callable[[Sequence[object]], bytes | None]
ReplyScan = Callable[[bytes | bytearray, int, list[int]], int]
XrangeSummary = Callable[[bytes | bytearray], tuple[int, bytes | None] | None]
pack_bytes: PackBytes | None = None
reply_scan_c: ReplyScan | None = None
xrange_summary: XrangeSummary | None = None
if compiled_enabled():
    try:
        from ._resp import pack_bytes, xrange_summary
        from ._resp import reply_scan as reply_scan_c
    except ImportError:  # not built (no C compiler): the join below does it, and replies are parsed
        pack_bytes = reply_scan_c = xrange_summary = None

_LONG = 64  # arguments from which the join pays; shorter commands go to hiredis
_PLAIN = frozenset((bytes, str, int))  # what this encodes itself (not bool, float, memoryview...)


def pack(args: Sequence[Any]) -> bytes:
    """The command `args` in RESP, as hiredis.pack_command would write it."""
    if pack_bytes is not None:  # bytes only, at any length (None at the first other type)
        packed = pack_bytes(args)
        if packed is not None:
            return packed
    return pack_python(args)


def pack_python(args: Sequence[Any]) -> bytes:
    """pack without the compiled encoder: what runs where _resp.c is not built or turned off."""
    if len(args) < _LONG:
        return hiredis.pack_command(tuple(args))
    kinds = set(map(type, args))
    if not kinds <= _PLAIN:
        return hiredis.pack_command(tuple(args))
    if kinds != {bytes}:
        args = [a if a.__class__ is bytes else a.encode() if a.__class__ is str else b"%d" % a for a in args]
    lengths = list(map(len, args))
    # Each header ends the argument before it: "\r\n$<length>\r\n".
    heads = {n: b"\r\n$%d\r\n" % n for n in set(lengths)}
    parts: list[bytes] = [b""] * (2 * len(args))
    parts[0::2] = map(heads.__getitem__, lengths)
    parts[1::2] = args
    parts[0] = b"*%d\r\n$%d\r\n" % (len(args), lengths[0])
    parts.append(b"\r\n")
    return b"".join(parts)


# Aggregates: how many elements each one's count stands for (a map's and an attribute's are pairs).
_AGGREGATES = {ord("*"): 1, ord("~"): 1, ord(">"): 1, ord("%"): 2, ord("|"): 2}
_BULKS = frozenset(b"$=!")
_LINES = frozenset(b"+-:_,#(")
_MAX_DEPTH = 64


def reply_scan_python(buf: bytes | bytearray, pos: int, stack: list[int]) -> int:
    """Walks RESP elements of buf from pos. stack holds the element counts still owed at each nesting
    level, outermost first ([1] at a reply's start), and is updated in place. Returns the position after
    the last whole element: the reply's end when stack comes back empty, else where to go on once more
    bytes came. ValueError for bytes that are not RESP. _resp.c's reply_scan does the same in C."""
    n = len(buf)
    if not 0 <= pos <= n or len(stack) > _MAX_DEPTH or any(c < 0 for c in stack):
        raise ValueError("position outside the buffer, or a bad stack")
    while stack:
        if stack[-1] == 0:
            stack.pop()
            continue
        if pos >= n:
            return pos
        kind, count = buf[pos], 0
        if kind in _LINES:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                return pos
            if buf[nl - 1] != 13:
                raise ValueError("not a RESP reply")
            after = nl + 1
        elif kind in _BULKS:
            line = _number_line(buf, pos)
            if line is None:
                return pos
            size, after = line
            if size == -1 and kind != ord("$"):
                raise ValueError("not a RESP reply")
            if size >= 0:
                if n - after < size + 2:
                    return pos
                if buf[after + size : after + size + 2] != b"\r\n":
                    raise ValueError("not a RESP reply")
                after += size + 2
        elif kind in _AGGREGATES:
            line = _number_line(buf, pos)
            if line is None:
                return pos
            count, after = line
            if count == -1 and kind != ord("*"):
                raise ValueError("not a RESP reply")
            count *= _AGGREGATES[kind]
        else:
            raise ValueError("not a RESP reply")
        pos = after
        if kind != ord("|"):  # an attribute comes before the element it describes
            stack[-1] -= 1
        if count > 0:
            if len(stack) == _MAX_DEPTH:
                raise ValueError("not a RESP reply")
            stack.append(count)
    return pos


def _number_line(buf: bytes | bytearray, pos: int) -> tuple[int, int] | None:
    """The length or count after the type byte at pos (-1, or up to 18 digits, then CRLF) and the
    position after its CRLF; None if the line is not all there (read as _resp.c reads it)."""
    n, i = len(buf), pos + 1
    negative = i < n and buf[i] == 45  # '-'
    i += negative
    start = i
    while i < n and 48 <= buf[i] <= 57:
        if i - start == 18:
            raise ValueError("not a RESP reply")
        i += 1
    if i >= n:
        return None
    value = int(buf[start:i]) if i > start else 0
    if i == start or buf[i] != 13 or (negative and value != 1):
        raise ValueError("not a RESP reply")
    if i + 1 >= n:
        return None
    if buf[i + 1] != 10:
        raise ValueError("not a RESP reply")
    return (-value if negative else value), i + 2


reply_scan: ReplyScan = reply_scan_c if reply_scan_c is not None else reply_scan_python
