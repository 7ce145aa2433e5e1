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
