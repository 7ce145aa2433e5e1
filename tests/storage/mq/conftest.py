"""Fixtures of the MQ storage tests: a blocking client, the keyspace, and a two-partition topic "jobs"."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.redis import calls, client
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic

GROUP = "g"


@pytest.fixture
def ks(keyspace: str) -> Keyspace:
    return Keyspace(keyspace)


@pytest.fixture
def redis(redis_server: Any) -> Iterator[Any]:
    r = client.connect_sync(redis_server.url)
    yield r
    r.close()


@pytest.fixture
def topic(redis_server: Any, ks: Keyspace, topic_defaults: dict[str, str]) -> Topic:
    async def make() -> Topic:
        r = client.connect(redis_server.url)
        try:
            return await calls.drive(r, metadata.create(ks, "jobs", 2, {}, topic_defaults))
        finally:
            await r.aclose()

    return asyncio.run(make())


def run(redis: Any, call: calls.Call[Any]) -> Any:
    return calls.run_sync(redis, call)
