"""The lane's RESP encoder writes long commands byte for byte as hiredis.pack_command does."""

from __future__ import annotations

from typing import Any

import hiredis
import pytest

from schooner.storage.redis import resp

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


def test_the_compiled_encoder_is_built_and_matches_hiredis() -> None:
    # `make install` builds it; without it resp.pack joins in Python, which the cases above also cover.
    assert resp.pack_bytes is not None
    args = [b"XADD", b"", b"x" * 1_000_003, *VALUES, b"9" * 10]
    assert resp.pack_bytes(args) == hiredis.pack_command(tuple(args))
    assert resp.pack_bytes(tuple(args)) == resp.pack_bytes(args)


def test_the_compiled_encoder_leaves_anything_but_plain_bytes_to_the_join() -> None:
    assert resp.pack_bytes is not None
    assert resp.pack_bytes([b"RPUSH", b"k", "text"]) is None
    assert resp.pack_bytes([b"RPUSH", Tagged(b"k")]) is None
    assert resp.pack([b"RPUSH", Tagged(b"k"), *VALUES]) == hiredis.pack_command((b"RPUSH", b"k", *VALUES))
