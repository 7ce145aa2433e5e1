"""Transactions in the cold tier: archive slices stop at the last stable offset, markers and aborted
records are kept with what read_committed needs, and a read_committed cold read lists the aborted
transactions as the hot read does."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from schooner.storage.log.entry import Record

pytestmark = pytest.mark.both_encodings
OLD = 1_700_000_000_000


def _r(i: int) -> list[Record]:
    return [Record(OLD + i, b"k%d" % i, b"v%d" % i)]


def test_markers_and_aborted_records_round_trip(make_log, cold) -> None:
    log = make_log()
    base = log.append(_r(0))
    log.append(_r(1) + _r(2), pid=7, epoch=0, seq=0)
    log.append(_r(3), pid=8, epoch=2, seq=0)
    log.append(_r(4))
    log.end_txn(7, 0, commit=False)
    log.end_txn(8, 2, commit=True)
    log.append(_r(5))
    piece = log.slice(base, 100)
    assert len(piece.entries) == 8
    cold.archive(log.topic, 0, piece)
    hot = log.read(base, 100, committed=True)
    back = cold.read(log.topic, 0, base, 1 << 20, committed=True)
    assert back.entries == hot.entries
    assert back.aborted == hot.aborted and len(hot.aborted) == 1 and hot.aborted[0].producer_id == 7
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset").to_pylist()
    assert [r["aborted"] for r in rows] == [False, True, True, False, False, False, False, False]
    assert [r["control"] for r in rows] == [None] * 5 + ["abort", "commit", None]
    assert [r["producer_id"] for r in rows] == [None, 7, 7, 8, None, 7, 8, None]
    assert [r["producer_epoch"] for r in rows] == [None, 0, 0, 2, None, 0, 2, None]
    assert [r["transactional"] for r in rows] == [False, True, True, True, False, True, True, False]
    # A plain read lists no aborted transactions, as the hot one.
    assert cold.read(log.topic, 0, base, 1 << 20).aborted == ()


def test_a_slice_stops_at_the_last_stable_offset(make_log, cold) -> None:
    log = make_log()
    base = log.append(_r(0))
    open_at = log.append(_r(1), pid=9, epoch=0, seq=0)  # never ended here
    log.append(_r(2))
    piece = log.slice(base, 100)
    assert piece.last_stable_offset == open_at and len(piece.entries) == 1
    assert piece.end == base + 1  # after its last entry (on timestamp topics the LSO may be further)
    cold.archive(log.topic, 0, piece)
    assert cold.archived_end(log.topic, 0) == piece.end
    log.end_txn(9, 0, commit=True)
    rest = log.slice(piece.end, 100)
    assert len(rest.entries) == 3
    assert cold.archive(log.topic, 0, rest).records == 3


def test_a_slice_ends_before_a_transaction_whose_marker_is_past_it(make_log, cold) -> None:
    log = make_log()
    base = log.append(_r(0))
    first = log.append(_r(1), pid=10, epoch=0, seq=0)
    log.append(_r(2) + _r(3))
    log.end_txn(10, 0, commit=False)
    piece = log.slice(base, 4)  # entries 0..3: the marker of pid 10 is the fifth
    assert piece.end == base + 1 and len(piece.entries) == 1 and first > base
    cold.archive(log.topic, 0, piece)
    rest = log.slice(piece.end, 100)
    assert len(rest.entries) == 4 and [a.producer_id for a in rest.aborted] == [10]
    cold.archive(log.topic, 0, rest)
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset")
    assert rows.column("aborted").to_pylist() == [False, True, False, False, False]


def test_a_slice_inside_a_long_transaction_asks_the_aborted_index(make_log, cold) -> None:
    log = make_log()
    first = log.append(_r(0), pid=11, epoch=0, seq=0)
    log.append(_r(1) + _r(2))
    log.append(_r(3), pid=11, epoch=0, seq=1)
    log.end_txn(11, 0, commit=False)
    piece = log.slice(first, 2)  # starts inside the transaction and ends before its marker
    assert len(piece.entries) == 2 and [a.producer_id for a in piece.aborted] == [11]
    cold.archive(log.topic, 0, piece)
    cold.archive(log.topic, 0, log.slice(piece.end, 100))
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset")
    assert rows.column("aborted").to_pylist() == [True, False, False, True, False]
    back = cold.read(log.topic, 0, first, 1 << 20, committed=True)
    hot = log.read(first, 100, committed=True)
    assert back.entries == hot.entries
    assert [(a.producer_id, a.first_offset) for a in back.aborted] == [(11, first)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5])
@pytest.mark.parametrize("size", [100, 4])
def test_slices_read_in_chunks_hold_what_one_read_would(make_log, monkeypatch, chunk: int, size: int) -> None:
    """Slices are read READ_CHUNK entries per round trip (Redis' reply buffers count toward maxmemory):
    cut anywhere, inside transactions too, the archiver's steps hold every entry once, in order, with
    each aborted record's transaction listed in its step."""
    from schooner.storage.cold import source

    log = make_log()
    base = log.append(_r(0))
    log.append(_r(1) + _r(2) + _r(3), pid=7, epoch=0, seq=0)
    log.append(_r(4), pid=8, epoch=0, seq=0)
    log.append(_r(5))
    log.end_txn(7, 0, commit=False)
    log.append(_r(6) + _r(7), pid=8, epoch=0, seq=1)
    log.end_txn(8, 0, commit=False)
    log.append(_r(8))
    whole = log.slice(base, 100)  # READ_CHUNK entries are more than the log: one read
    assert len(whole.entries) == 11 and {a.producer_id for a in whole.aborted} == {7, 8}
    monkeypatch.setattr(source, "READ_CHUNK", chunk)
    steps, at = [], base
    while (piece := log.slice(at, size)).entries:
        assert len(piece.entries) <= size
        steps.append(piece)
        at = piece.end
    assert [e for p in steps for e in p.entries] == whole.entries
    offsets = log.topic.offsets
    for piece in steps:
        for entry_id, fields in piece.entries:
            pid = dict(zip(fields[::2], fields[1::2], strict=True)).get(b"txn", b"").partition(b":")[0]
            offset = offsets.offset_of_id(entry_id)
            truth = [
                a
                for a in whole.aborted
                if a.producer_id == int(pid or -1) and a.first_offset <= offset < a.last_offset
            ]
            listed = [
                a
                for a in piece.aborted
                if a.producer_id == int(pid or -1) and a.first_offset <= offset < a.last_offset
            ]
            assert bool(truth) == bool(listed), (entry_id, fields)
