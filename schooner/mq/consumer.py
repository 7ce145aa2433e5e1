"""Group consumers: Consumer (blocking, optionally on its own thread) and AsyncConsumer (asyncio).

Both drive the same GroupMember (engine.py): they run its storage calls in pipelines, call the handler,
and wait. An exception from the handler is the outcome Fail; a Redis error drops what was fetched (it
stays pending and is claimed again) and the member carries on after a pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import random
import re
import socket
import threading
import uuid
from collections.abc import Generator
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.storage.keys import Keyspace
from schooner.storage.redis import calls, client
from schooner.storage.redis.calls import StorageError
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic, UnknownTopic

from .engine import Batch, ConsumerConfig, Effect, GroupMember, Handle, Wait
from .handlers import AsyncHandler, Fail, Handler, Outcome, outcome_of
from .message import Message
from .metrics import metrics_for

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
ERROR_PAUSE_S = 0.5

__all__ = ["AsyncConsumer", "Consumer", "ConsumerConfig", "new_member_id"]


def new_member_id() -> str:
    host = re.sub(r"[^a-zA-Z0-9.-]", "-", socket.gethostname())[:40]
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _check_group(group: str) -> None:
    if not _NAME.match(group):
        raise ValueError(f"group names use [a-zA-Z0-9._-]: {group!r}")


class _Base:
    def __init__(
        self,
        topic: str,
        group: str,
        *,
        config: ConsumerConfig | None,
        keyspace: str | Keyspace,
        registry: CollectorRegistry | None,
        member_id: str | None,
        rng: random.Random | None,
    ) -> None:
        _check_group(group)
        self.topic_name, self.group = topic, group
        self.config = config or ConsumerConfig()
        self.ks = keyspace if isinstance(keyspace, Keyspace) else Keyspace(keyspace)
        self.metrics = metrics_for(registry)
        self.member_id = member_id or new_member_id()
        self.rng = rng
        self.engine: GroupMember | None = None
        self.error: BaseException | None = None

    @property
    def partitions(self) -> list[int]:
        """The partitions this member holds now."""
        return self.engine.partitions if self.engine else []

    def _engine(self, topic: Topic | None) -> GroupMember:
        if topic is None:
            raise UnknownTopic(self.topic_name)
        self.engine = GroupMember(
            self.ks, topic, self.group, self.member_id, self.config, self.metrics, rng=self.rng
        )
        return self.engine


class Consumer(_Base):
    """consumer.run() blocks until stop() (from another thread); start() runs it on a thread of its own."""

    def __init__(
        self,
        redis: str | Any,
        topic: str,
        group: str,
        handler: Handler,
        *,
        config: ConsumerConfig | None = None,
        keyspace: str | Keyspace = "schooner",
        registry: CollectorRegistry | None = None,
        member_id: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(
            topic, group, config=config, keyspace=keyspace, registry=registry, member_id=member_id, rng=rng
        )
        self._owns_client = isinstance(redis, str)
        self.redis = client.connect_sync(redis) if isinstance(redis, str) else redis
        self.handler = handler
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        try:
            engine = self._engine(calls.run_sync(self.redis, metadata.load(self.ks, self.topic_name, {})))
            self.drive(engine.start())
            while not self._stopping.is_set():
                try:
                    self.drive(engine.step())
                except StorageError as exc:
                    log.warning("MQ consumer %s: %s; retrying", self.member_id, exc)
                    self._stopping.wait(ERROR_PAUSE_S)
                    engine.recover()
            self.drive(engine.stop())
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            if self._owns_client:
                self.redis.close()

    def drive(self, work: Generator[Effect, Any, Any]) -> Any:
        """Runs one engine generator to its end, answering each effect."""
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = work.throw(error) if error is not None else work.send(reply)
            except StopIteration as done:
                return done.value
            reply, error = None, None
            if isinstance(effect, Batch):
                try:
                    reply = calls.run_many_sync(self.redis, effect.calls)
                except StorageError as exc:
                    error = exc
            elif isinstance(effect, Handle):
                reply = self._handle(effect.message)
            elif isinstance(effect, Wait):
                self._stopping.wait(effect.seconds)

    def _handle(self, message: Message) -> Outcome:
        try:
            return outcome_of(self.handler(message))
        except Exception as exc:  # the handler's failure is an outcome, not the consumer's
            return Fail.of(exc)

    def start(self) -> Consumer:
        self._thread = threading.Thread(target=self._run_quietly, name=f"mq-{self.group}", daemon=True)
        self._thread.start()
        return self

    def _run_quietly(self) -> None:
        try:
            self.run()
        except BaseException:
            log.exception("MQ consumer %s stopped", self.member_id)

    def stop(self, timeout: float | None = 30) -> None:
        """Finishes the fetched entries, releases every partition and leaves the group."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> Consumer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class AsyncConsumer(_Base):
    """await consumer.run() until stop(); the handler may be a coroutine function or a plain one."""

    def __init__(
        self,
        redis: str | Any,
        topic: str,
        group: str,
        handler: AsyncHandler,
        *,
        config: ConsumerConfig | None = None,
        keyspace: str | Keyspace = "schooner",
        registry: CollectorRegistry | None = None,
        member_id: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(
            topic, group, config=config, keyspace=keyspace, registry=registry, member_id=member_id, rng=rng
        )
        self._owns_client = isinstance(redis, str)
        self.redis = client.connect(redis) if isinstance(redis, str) else redis
        self.handler = handler
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        try:
            engine = self._engine(await calls.run(self.redis, metadata.load(self.ks, self.topic_name, {})))
            await self.drive(engine.start())
            while not self._stopping.is_set():
                try:
                    await self.drive(engine.step())
                except StorageError as exc:
                    log.warning("MQ consumer %s: %s; retrying", self.member_id, exc)
                    await self._wait(ERROR_PAUSE_S)
                    engine.recover()
            await self.drive(engine.stop())
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            if self._owns_client:
                await self.redis.aclose()

    async def drive(self, work: Generator[Effect, Any, Any]) -> Any:
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = work.throw(error) if error is not None else work.send(reply)
            except StopIteration as done:
                return done.value
            reply, error = None, None
            if isinstance(effect, Batch):
                try:
                    reply = await calls.run_many(self.redis, effect.calls)
                except StorageError as exc:
                    error = exc
            elif isinstance(effect, Handle):
                reply = await self._handle(effect.message)
            elif isinstance(effect, Wait):
                await self._wait(effect.seconds)

    async def _handle(self, message: Message) -> Outcome:
        try:
            result = self.handler(message)
            if inspect.isawaitable(result):
                result = await result
            return outcome_of(result)
        except Exception as exc:
            return Fail.of(exc)

    async def _wait(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def start(self) -> AsyncConsumer:
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await self._task

    async def __aenter__(self) -> AsyncConsumer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
