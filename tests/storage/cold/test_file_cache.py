"""FileCache: a data file is decoded once while readers go through it, sliced from any offset, and the
least recently used files leave first when the byte budget is spent."""

from __future__ import annotations

import pyarrow as pa

from schooner.storage.cold import layout
from schooner.storage.cold.file_cache import FileCache


def _file(first: int, count: int) -> pa.Table:
    rows = {name: [None] * count for name in layout.READ_COLUMNS}
    rows[layout.OFFSET] = list(range(first + count - 1, first - 1, -1))  # unsorted, as a rewrite may be
    rows[layout.TS] = [1_700_000_000_000] * count
    rows["value"] = [b"v%d" % i for i in range(count)]
    rows["headers"] = [[] for _ in range(count)]
    rows["timestamp_type"] = [0] * count
    rows["transactional"] = [False] * count
    rows["aborted"] = [False] * count
    return pa.table(rows).cast(layout.READ_SCHEMA)


def test_a_file_is_decoded_once_and_sliced_from_any_offset() -> None:
    cache = FileCache()
    decoded: list[str] = []

    def decode() -> pa.Table:
        decoded.append("a")
        return _file(100, 50)

    assert cache.rows_from("a", 100, decode).column(layout.OFFSET).to_pylist() == list(range(100, 150))
    assert cache.rows_from("a", 120, decode).column(layout.OFFSET).to_pylist() == list(range(120, 150))
    assert cache.rows_from("a", 90, decode).num_rows == 50  # below the file: all of it
    assert cache.rows_from("a", 150, decode).num_rows == 0
    assert decoded == ["a"]


def test_the_least_recently_used_file_leaves_when_the_budget_is_spent() -> None:
    one = _file(0, 100).nbytes
    cache = FileCache(max_bytes=2 * one + one // 2)
    decoded: list[str] = []

    def reader(name: str, first: int):
        def decode() -> pa.Table:
            decoded.append(name)
            return _file(first, 100)

        return decode

    cache.rows_from("a", 0, reader("a", 0))
    cache.rows_from("b", 100, reader("b", 100))
    cache.rows_from("a", 0, reader("a", 0))  # a is now the most recent
    cache.rows_from("c", 200, reader("c", 200))  # b leaves
    cache.rows_from("a", 0, reader("a", 0))
    cache.rows_from("b", 100, reader("b", 100))
    assert decoded == ["a", "b", "c", "b"]
