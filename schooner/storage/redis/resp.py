"""Encodes a command as RESP, faster than hiredis.pack_command for the long ones.

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
pack_bytes: PackBytes | None = None
if compiled_enabled():
    try:
        from ._resp import pack_bytes
    except ImportError:  # not built (no C compiler): the join below does it
        pack_bytes = None

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
