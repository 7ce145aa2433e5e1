from __future__ import annotations

from schooner.storage.log import entry
from schooner.storage.offsets import id_of, id_text, offset_of, offset_of_id


def test_offset_round_trips_through_entry_ids() -> None:
    for bits in (0, 4, 10, 12):
        for ms, seq in [(0, 0), (1, 0), (1_763_791_234_567, 0), (1_763_791_234_567, (1 << bits) - 1)]:
            off = offset_of(ms, seq, bits)
            assert id_of(off, bits) == (ms, seq)
            assert offset_of_id(f"{ms}-{seq}", bits) == off
            assert id_text(off, bits) == f"{ms}-{seq}".encode()


def test_offset_after_the_last_sequence_is_the_next_millisecond() -> None:
    bits = 10
    last = offset_of(5, 1023, bits)
    assert id_of(last + 1, bits) == (6, 0)


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
