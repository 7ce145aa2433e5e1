from __future__ import annotations

import struct

import pytest

from schooner.protocol.errors import FrameTooLarge, ProtocolError
from schooner.protocol.framing import FrameDecoder, frame


def test_frames_split_across_reads_and_several_in_one_read() -> None:
    decoder = FrameDecoder(1000)
    data = frame(b"hello") + frame(b"") + frame(b"world!")
    got = []
    for i in range(len(data)):
        got += decoder.feed(data[i : i + 1])
    assert got == [b"hello", b"", b"world!"]
    assert decoder.feed(data) == [b"hello", b"", b"world!"]
    assert decoder.buffered == 0


def test_oversized_frame_is_refused_on_its_size_alone() -> None:
    decoder = FrameDecoder(10)
    with pytest.raises(FrameTooLarge):
        decoder.feed(struct.pack(">i", 11))


def test_negative_size_is_refused() -> None:
    with pytest.raises(ProtocolError):
        FrameDecoder(10).feed(struct.pack(">i", -1))
