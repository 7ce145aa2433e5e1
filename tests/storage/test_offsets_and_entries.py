from __future__ import annotations

from schooner.storage.log import entry
from schooner.storage.offsets import DENSE_OFFSETS, LAST_DENSE_ID, codec_for, timestamp_offsets


def test_timestamp_offsets_round_trip_through_entry_ids() -> None:
    for bits in (0, 4, 10, 12):
        offsets = timestamp_offsets(bits)
        for ms, seq in [(0, 0), (1, 0), (1_763_791_234_567, 0), (1_763_791_234_567, (1 << bits) - 1)]:
            off = offsets.offset_of(ms, seq)
            assert off == (ms << bits) | seq
            assert offsets.id_of(off) == (ms, seq)
            assert offsets.offset_of_id(f"{ms}-{seq}") == off
            assert offsets.id_text(off) == f"{ms}-{seq}".encode()


def test_timestamp_offset_after_the_last_sequence_is_the_next_millisecond() -> None:
    offsets = timestamp_offsets(10)
    assert offsets.id_of(offsets.offset_of(5, 1023) + 1) == (6, 0)


def test_dense_offset_n_is_entry_id_0_n_plus_1() -> None:
    for n in (0, 1, 9, 2**40, 2**63 - 2):
        assert DENSE_OFFSETS.id_text(n) == b"0-%d" % (n + 1)
        assert DENSE_OFFSETS.offset_of_id(b"0-%d" % (n + 1)) == n
        assert DENSE_OFFSETS.numbered(b"0-%d" % (n + 1))
    assert DENSE_OFFSETS.offset_of_id(LAST_DENSE_ID) == 2**64 - 2  # every offset reads below it
    assert not DENSE_OFFSETS.numbered(b"1763791234567-0")  # a plain `XADD key *` on a dense topic
    assert codec_for("dense") is DENSE_OFFSETS and codec_for("timestamp", 7) == timestamp_offsets(7)


def test_headers_are_lossless() -> None:
    headers = [
        ("dup", b"1"),
        ("dup", b"2"),
        ("bin", bytes(range(256))),
        ("null", None),
        ("", b""),
        ("ü", b"x"),
    ]
    assert entry.decode_headers(entry.encode_headers(headers)) == headers


def test_parse_fields_reads_the_entry_layout() -> None:
    fields = [b"timestamp", b"17", b"value", b"v", b"headers", entry.encode_headers([("h", None)])]
    assert entry.parse_fields(fields) == (17, None, b"v", [("h", None)])


def test_entries_from_native_writers_parse_without_timestamp() -> None:
    assert entry.parse_fields([b"value", b"hello", b"other", b"ignored"]) == (-1, None, b"hello", [])
