"""The archive's rows (cold/layout.py): a slice of plain records, turned into columns by Arrow at once,
gives the very table the entry-by-entry path gives; any other slice goes entry by entry."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schooner.storage.cold import layout
from schooner.storage.log.entry import KEY, TIMESTAMP, VALUE
from schooner.storage.log.transactions import TXN
from schooner.storage.offsets import DENSE, codec_for

ENCODINGS = [codec_for(DENSE), codec_for("timestamp")]
stamp = st.integers(-1, 2**41).map(lambda t: str(t).encode())
blob = st.binary(max_size=8)
keyed = st.tuples(stamp, blob, blob).map(lambda t: [TIMESTAMP, t[0], KEY, t[1], VALUE, t[2]])
unkeyed = st.tuples(stamp, blob).map(lambda t: [TIMESTAMP, t[0], VALUE, t[1]])
other = st.one_of(
    st.tuples(stamp, blob).map(lambda t: [TIMESTAMP, t[0], KEY, t[1]]),  # a tombstone
    st.tuples(stamp, blob).map(lambda t: [TIMESTAMP, t[0], VALUE, t[1], TXN, b"7:0"]),
    st.tuples(blob, blob).map(lambda t: [KEY, t[0], VALUE, t[1]]),  # a plain Redis client's entry
)


def _entries(fields: list[list[bytes]], dense: bool, start: int) -> list[Any]:
    if dense:
        return [[b"0-%d" % (start + i + 1), f] for i, f in enumerate(fields)]
    return [[b"%d-%d" % (1_700_000_000_000 + i // 3, i % 3), f] for i, f in enumerate(fields)]


@settings(max_examples=300, deadline=None)
@given(
    fields=st.one_of(
        st.lists(keyed, max_size=30),
        st.lists(unkeyed, max_size=30),
        st.lists(st.one_of(keyed, unkeyed, other), max_size=30),
    ),  # fmt: skip
    dense=st.booleans(),
    start=st.integers(0, 1000),
    skip=st.integers(0, 40),
    log_append_time=st.booleans(),
)
def test_the_columns_are_those_of_the_entry_by_entry_path(
    fields: list[list[bytes]], dense: bool, start: int, skip: int, log_append_time: bool
) -> None:
    offsets = ENCODINGS[0] if dense else ENCODINGS[1]
    entries = _entries(fields, dense, start)
    first = offsets.offset_of_id(entries[0][0]) if entries else 0
    whole = layout.to_table(entries, offsets, 3, log_append_time, (), from_offset=first + skip)
    one_by_one = layout.entry_by_entry(entries, offsets, 3, log_append_time, (), from_offset=first + skip)
    assert whole.equals(one_by_one)


@pytest.mark.parametrize("offsets", ENCODINGS, ids=["dense", "timestamp"])
def test_a_slice_of_plain_records_takes_the_columnar_path(offsets: Any) -> None:
    plain = _entries([[TIMESTAMP, b"5", KEY, b"k", VALUE, b"v"]] * 10, offsets.dense, 0)
    assert layout._plain_table(plain, offsets, 0, False, 0) is not None
    mixed = [*plain, _entries([[TIMESTAMP, b"5", VALUE, b"v", TXN, b"1:0"]], offsets.dense, 10)[0]]
    assert layout._plain_table(mixed, offsets, 0, False, 0) is None
