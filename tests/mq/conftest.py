"""Helpers of the MQ tests: topics made through the storage layer, a blocking client, a fresh registry."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from schooner.mq.engine import Batch, Effect
from schooner.storage.keys import Keyspace
from schooner.storage.redis import calls, client
from schooner.storage.redis.embedded import EmbeddedRedis
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic


def create_topic(
    url: str, ks: Keyspace, name: str, partitions: int, defaults: Mapping[str, str], **overrides: str
) -> Topic:
    """Creates a topic through storage, with `defaults` as the broker's topic defaults (the
    `topic_defaults` fixture: its offset encoding)."""

    async def make() -> Topic:
        redis = client.connect(url)
        try:
            return await calls.drive(redis, metadata.create(ks, name, partitions, overrides, defaults))
        finally:
            await redis.aclose()

    return asyncio.run(make())


def wait_until(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s: {check}")
        time.sleep(interval)


@pytest.fixture
def ks(keyspace: str) -> Keyspace:
    return Keyspace(keyspace)


@pytest.fixture
def url(redis_server: EmbeddedRedis) -> str:
    return redis_server.url


@pytest.fixture
def redis(redis_server: EmbeddedRedis) -> Iterator[Any]:
    r = client.connect_sync(redis_server.url)
    yield r
    r.close()


@pytest.fixture
def make_topic(
    redis_server: EmbeddedRedis, ks: Keyspace, topic_defaults: dict[str, str]
) -> Callable[..., Topic]:
    def make(name: str = "orders", partitions: int = 1, **overrides: str) -> Topic:
        return create_topic(redis_server.url, ks, name, partitions, topic_defaults, **overrides)

    return make


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


class Crash(Exception):
    """Stands for a process that died between two round trips."""


def crash_after(
    work: Generator[Effect, Any, Any], budget: list[int], missed: list[Batch] | None = None
) -> Generator[Effect, Any, Any]:
    """Passes a member's effects through, but dies before the round trip after the last one budgeted
    (which is put in `missed`)."""
    reply: Any = None
    while True:
        try:
            effect = work.send(reply)
        except StopIteration as done:
            return done.value
        if isinstance(effect, Batch):
            if budget[0] <= 0:
                if missed is not None:
                    missed.append(effect)
                work.close()
                raise Crash()
            budget[0] -= 1
        reply = yield effect
