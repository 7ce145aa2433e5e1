"""murmur2 and the key partitioner against kafka-python's implementation (an independent one)."""

from __future__ import annotations

import random

from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from schooner.mq.partitioner import Partitioner, murmur2, partition_for_key


def _keys() -> list[bytes]:
    rng = random.Random(7)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", b"order-42", bytes(range(256)), "ключ".encode()]
    keys += [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 70))) for _ in range(2000)]
    return keys


def test_murmur2_matches_kafka_python_bit_for_bit() -> None:
    for key in _keys():
        assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key) & 0xFFFFFFFF, key


def test_murmur2_is_signed_like_javas() -> None:
    assert all(-(2**31) <= murmur2(k) < 2**31 for k in _keys())
    assert any(murmur2(k) < 0 for k in _keys())


def test_partition_is_kafkas_positive_hash_modulo_count() -> None:
    for key in _keys():
        for count in (1, 3, 6, 32):
            assert partition_for_key(key, count) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % count


def test_keyless_records_go_round_robin_per_topic() -> None:
    p = Partitioner()
    assert [p.partition("a", None, 3) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
    assert p.partition("b", None, 3) == 0
    assert p.partition("a", b"k", 3) == partition_for_key(b"k", 3)
