"""The two fixtures every test that needs Redis or a broker uses: `redis_server` and `broker`.

`redis_server` is a real redis-server (the one Schooner embeds) on a free port, one per test session.
Each test gets its own keyspace prefix on it, so tests never see each other's keys.
`broker` runs a real Schooner broker on a free port, in a thread with its own event loop, so that
blocking clients (confluent-kafka, kafka-python, kcat) can talk to it from the test.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from schooner import config
from schooner.broker.server import Broker
from schooner.storage.embedded import EmbeddedRedis


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), persistent=False)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def keyspace() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def redis_client(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


@dataclass
class RunningBroker:
    broker: Broker
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    settings: config.Settings
    redis_url: str
    stopped: bool = field(default=False)

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def broker_id(self) -> int:
        assert self.broker.ctx is not None
        return self.broker.ctx.me.broker_id

    def call(self, coro: Any, timeout: float = 30) -> Any:
        """Runs a coroutine on the broker's loop (for checks of storage from a test)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def start_broker(redis_url: str, keyspace: str, **overrides: Any) -> RunningBroker:
    # A short initial rebalance delay keeps group tests quick; tests that need Kafka's 3 s pass it.
    settings = config.load(
        env={},
        overrides={
            "host": "127.0.0.1",
            "port": 0,
            "redis_url": redis_url,
            "keyspace": keyspace,
            "group_initial_rebalance_delay_ms": 100,
            **overrides,
        },
    )
    loop = asyncio.new_event_loop()
    started: Future[Broker] = Future()

    def run() -> None:
        asyncio.set_event_loop(loop)
        broker = Broker(settings, redis_url)
        try:
            loop.run_until_complete(broker.start())
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(broker)
        loop.run_forever()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    thread = threading.Thread(target=run, name="schooner-broker", daemon=True)
    thread.start()
    broker = started.result(30)
    return RunningBroker(broker, loop, thread, settings, redis_url)


@pytest.fixture
def broker_factory(redis_server: EmbeddedRedis, keyspace: str) -> Iterator[Callable[..., RunningBroker]]:
    """Starts brokers on the shared keyspace (several brokers of one deployment), stopped after the test."""
    running: list[RunningBroker] = []

    def make(**overrides: Any) -> RunningBroker:
        b = start_broker(overrides.pop("redis_url", redis_server.url), keyspace, **overrides)
        running.append(b)
        return b

    yield make
    for b in running:
        b.stop()


@pytest.fixture
def broker(broker_factory: Callable[..., RunningBroker]) -> RunningBroker:
    return broker_factory()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path
