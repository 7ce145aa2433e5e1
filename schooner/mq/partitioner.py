"""Kafka's default key partitioner: murmur2 of the key bytes, made positive, modulo the partition count.

murmur2 is MurmurHash2 (32-bit) with Kafka's seed 0x9747b28c, written from the algorithm's description:
four bytes at a time, little-endian, then the 1-3 tail bytes, then a final avalanche. Records without a
key are spread round-robin (Kafka's clients use sticky or random choice: any spread is allowed).
"""

from __future__ import annotations

import itertools

_MASK = 0xFFFFFFFF
_M = 0x5BD1E995
_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    """The 32-bit hash as Java's Utils.murmur2 returns it: a signed int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka's toPositive(murmur2(key)) % partitions."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class Partitioner:
    """Keyed records by murmur2, as Kafka's clients; keyless ones round-robin per topic."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count[int]] = {}

    def partition(self, topic: str, key: bytes | None, partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, partitions)
        counter = self._counters.setdefault(topic, itertools.count())
        return next(counter) % partitions
