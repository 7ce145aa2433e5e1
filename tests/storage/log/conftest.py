"""The runner the log tests share: an async test body on its own client, against the test redis-server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.redis import client


@pytest.fixture
def run(redis_server, keyspace) -> Callable[[Callable[..., Awaitable[Any]]], Any]:
    def runner(fn: Callable[..., Awaitable[Any]]) -> Any:
        async def main() -> Any:
            redis = client.connect(redis_server.url)
            try:
                return await fn(redis, Keyspace(keyspace))
            finally:
                await redis.aclose()

        return asyncio.run(main())

    return runner
