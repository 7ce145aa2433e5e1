"""Splits a byte stream into Kafka frames: a 4-byte big-endian size, then that many bytes."""

from __future__ import annotations

from .errors import FrameTooLarge, ProtocolError

_SIZE_BYTES = 4


class FrameDecoder:
    """Buffers bytes as they arrive and hands out whole frames (without their size prefix)."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._max = max_frame_bytes
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Adds bytes and returns every frame that is now complete.

        Raises FrameTooLarge as soon as a size prefix announces more than the limit, so an
        oversized request is refused before its body is buffered.
        """
        self._buffer += data
        frames: list[bytes] = []
        buf = self._buffer
        start = 0
        end = len(buf)
        while end - start >= _SIZE_BYTES:
            size = int.from_bytes(buf[start : start + _SIZE_BYTES], "big", signed=True)
            if size < 0:
                raise ProtocolError(f"negative frame size {size}")
            if size > self._max:
                raise FrameTooLarge(size, self._max)
            if end - start - _SIZE_BYTES < size:
                break
            body_start = start + _SIZE_BYTES
            frames.append(bytes(buf[body_start : body_start + size]))
            start = body_start + size
        if start:
            del buf[:start]
        return frames

    @property
    def max_frame_bytes(self) -> int:
        return self._max

    @max_frame_bytes.setter
    def max_frame_bytes(self, limit: int) -> None:
        """A new limit for the size prefixes read from now on (SASL: smaller until authenticated)."""
        self._max = limit

    @property
    def buffered(self) -> int:
        return len(self._buffer)


def frame(payload: bytes | bytearray) -> bytes:
    """Prefixes a payload with its size."""
    return len(payload).to_bytes(_SIZE_BYTES, "big") + bytes(payload)
