"""Store.observe: the broker's metrics hear of every round trip, through the asyncio client (one
pipeline) and on the append lane (one command), with failures told apart; unobserved, nothing is told."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ResponseError

from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import command
from schooner.storage.store import Store


def test_round_trips_are_observed_with_their_outcome(redis_server, keyspace) -> None:
    asyncio.run(_observe(redis_server.url, keyspace))


async def _observe(url: str, keyspace: str) -> None:
    redis = client.connect(url)
    store = Store(redis, Keyspace(keyspace))
    heard: list[tuple[float, bool]] = []
    key = f"{keyspace}:observed"
    try:
        await store.run(command("SET", key, "text"))
        assert heard == []  # not observed yet

        store.observe(lambda seconds, ok: heard.append((seconds, ok)))
        await store.run(command("GET", key))
        await store.drive(_two_round_trips(key))
        with pytest.raises(ResponseError):
            await store.run(command("INCR", key))  # not an integer: an error reply
        assert [ok for _, ok in heard] == [True, True, True, False]

        heard.clear()
        assert await (await store.lane.send_call(command("GET", key))) == b"text"
        with pytest.raises(ResponseError):
            await (await store.lane.send_call(command("INCR", key)))
        assert [ok for _, ok in heard] == [True, False]
        assert all(seconds >= 0 for seconds, _ in heard)

        tenant = store.with_keyspace(Keyspace(keyspace).tenant("t"))  # same client and lane: observed too
        heard.clear()
        await tenant.run(command("GET", key))
        assert [ok for _, ok in heard] == [True]

        store.observe(None)
        await store.run(command("GET", key))
        assert len(heard) == 1
    finally:
        await store.close()


def _two_round_trips(key: str):  # type: ignore[no-untyped-def]
    yield [command("GET", key)]
    yield [command("STRLEN", key)]
