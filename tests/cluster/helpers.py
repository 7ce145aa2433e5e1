"""Helpers of the cluster tests: where a key sits, and which primaries a set of keys covers."""

from __future__ import annotations

from collections.abc import Iterable

import redis


def primary_of(client: redis.RedisCluster, key: str) -> int:
    """The port of the primary that holds the key's slot."""
    return int(client.get_node_from_key(key).port)


def primaries_of(client: redis.RedisCluster, keys: Iterable[str]) -> set[int]:
    return {primary_of(client, key) for key in keys}
