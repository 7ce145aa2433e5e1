"""The lane's RESP encoder writes long commands byte for byte as hiredis.pack_command does: the compiled one
(_resp.c) and the Python one, on chosen, random and extreme commands."""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schooner.storage.redis import resp
from tests.compiled import ON, needs_compiled

VALUES = [bytes([i % 251]) * (i % 7 * 30) for i in range(300)]  # lengths repeat, one is empty


@pytest.mark.parametrize(
    "args",
    [
        ["EVALSHA", "ab" * 20, 1, "key", *VALUES],  # str and int head, bytes tail
        [b"XADD", *VALUES],  # all bytes
        ["SET", "k", "v"],  # short: hiredis itself
        ["RPUSH", "ключ", *[f"élément {i}" for i in range(100)]],  # UTF-8 text
        ["RPUSH", "k", *range(-50, 50)],  # negative numbers
        ["RPUSH", "k", 1.5, *VALUES],  # a float: hiredis writes it
        ["RPUSH", "k", memoryview(b"mv"), *VALUES],  # another buffer: hiredis too
    ],
)
def test_pack_matches_hiredis(args: list[Any]) -> None:
    assert resp.pack(args) == hiredis.pack_command(tuple(args))


def test_pack_reads_back_as_the_same_arguments() -> None:
    # A RESP reader sees the command as an array of the arguments, in order.
    reader = hiredis.Reader()
    reader.feed(resp.pack([b"CMD", *VALUES]))
    assert reader.gets() == [b"CMD", *VALUES]


class Tagged(bytes):
    pass


def test_the_compiled_encoder_is_built() -> None:
    # `make install` builds it; without it (or with SCHOONER_COMPILED=0) resp.pack joins in Python,
    # which the cases above also cover.
    assert (resp.pack_bytes is not None) == ON


@needs_compiled
def test_the_compiled_encoder_matches_hiredis() -> None:
    assert resp.pack_bytes is not None
    args = [b"XADD", b"", b"x" * 1_000_003, *VALUES, b"9" * 10]
    assert resp.pack_bytes(args) == hiredis.pack_command(tuple(args))
    assert resp.pack_bytes(tuple(args)) == resp.pack_bytes(args)


@needs_compiled
def test_the_compiled_encoder_leaves_anything_but_plain_bytes_to_the_join() -> None:
    assert resp.pack_bytes is not None
    assert resp.pack_bytes([b"RPUSH", b"k", "text"]) is None
    assert resp.pack_bytes([b"RPUSH", Tagged(b"k")]) is None
    assert resp.pack([b"RPUSH", Tagged(b"k"), *VALUES]) == hiredis.pack_command((b"RPUSH", b"k", *VALUES))


# Random and extreme commands, through the compiled encoder, the Python one, and hiredis: the same
# bytes, or all refuse. Lengths sit at the digit boundaries of their headers (9/10, 99/100, ...), and
# commands are short and long (the Python encoder joins from _LONG arguments on).
TWINS = settings(derandomize=True, database=None, deadline=None, max_examples=200)
BOUNDARY_LENGTHS = [0, 1, 9, 10, 99, 100, 999, 1000, 10_000]
plain_bytes = st.binary(max_size=12) | st.sampled_from(BOUNDARY_LENGTHS).map(lambda n: b"\xff" * n)
any_argument = st.one_of(
    plain_bytes,
    st.text(max_size=6),
    st.integers(),  # any size: hiredis and the join write its digits
    st.sampled_from([True, 1.5, float("nan"), bytearray(b"ba"), memoryview(b"mv"), Tagged(b"sub"), None]),
)
lengths = st.integers(0, 3) | st.integers(62, 66) | st.just(130)


def _packed(pack: Any, args: Any) -> Any:
    try:
        return pack(args)
    except Exception:
        return "refused"


@TWINS
@given(st.data(), lengths)
def test_commands_of_bytes_pack_alike(data: st.DataObject, n: int) -> None:
    args = data.draw(st.lists(plain_bytes, min_size=n, max_size=n))
    expected = hiredis.pack_command(tuple(args))
    assert resp.pack_python(args) == expected
    assert resp.pack(args) == expected
    if resp.pack_bytes is not None:
        assert resp.pack_bytes(args) == resp.pack_bytes(tuple(args)) == expected
    reader = hiredis.Reader()
    reader.feed(expected)
    assert reader.gets() == args


@TWINS
@given(st.data(), lengths)
def test_commands_of_any_arguments_pack_alike_or_are_refused_alike(data: st.DataObject, n: int) -> None:
    args = data.draw(st.lists(any_argument, min_size=n, max_size=n))
    expected = _packed(lambda a: hiredis.pack_command(tuple(a)), args)
    assert _packed(resp.pack_python, args) == expected
    assert _packed(resp.pack, args) == expected
    if resp.pack_bytes is not None and not all(type(a) is bytes for a in args):
        assert resp.pack_bytes(args) is None  # left to the Python encoder
