"""Group consumers: Consumer (blocking, optionally on its own thread) and AsyncConsumer (asyncio).

Both drive the same GroupMember (engine.py): they run its storage calls in pipelines, call the handler,
and wait. An exception from the handler is the outcome Fail; a Redis error drops what was fetched (it
stays pending and is claimed again) and the member carries on after a pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import random
import re
import socket
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from prometheus_client import CollectorRegistry

from schooner.storage.blocking_store import BlockingStore
from schooner.storage.keys import Keyspace
from schooner.storage.redis import calls, client
from schooner.storage.redis.calls import BlockingRedis, Redis, StorageError
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic, UnknownTopic

from .engine import Batch, ConsumerConfig, Effect, GroupMember, Handle, Handled, Wait, Work
from .handlers import AsyncHandler, Fail, Handler, Outcome, Success, outcome_of
from .metrics import metrics_for

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
ERROR_PAUSE_S = 0.5
T = TypeVar("T")
C = TypeVar("C", BlockingRedis, Redis)  # the client: blocking or asyncio
H = TypeVar("H", Handler, AsyncHandler)
E = TypeVar("E", threading.Event, asyncio.Event)

__all__ = ["AsyncConsumer", "Consumer", "ConsumerConfig", "new_member_id"]


def new_member_id() -> str:
    host = re.sub(r"[^a-zA-Z0-9.-]", "-", socket.gethostname())[:40]
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _check_group(group: str) -> None:
    if not _NAME.match(group):
        raise ValueError(f"group names use [a-zA-Z0-9._-]: {group!r}")


def _failure(result: Any) -> Outcome | None:
    """A handler's result that is not a plain success: its Outcome (None for a Success subclass)."""
    outcome = outcome_of(result)  # a TypeError for a result that is no Outcome: the handler's failure
    return None if isinstance(outcome, Success) else outcome


class _Answers(Generic[T]):
    """Steps an engine generator: next() gives its next effect (None once it has ended, with its value
    in result); the driver sets reply, or error to throw in, before the next call."""

    def __init__(self, work: Work[T]) -> None:
        self.work = work
        self.reply: Any = None
        self.error: BaseException | None = None
        self.result: T  # set once the generator has returned

    def next(self) -> Effect | None:
        try:
            effect = self.work.throw(self.error) if self.error is not None else self.work.send(self.reply)
        except StopIteration as done:
            self.result = done.value
            return None
        self.reply, self.error = None, None
        return effect


class _Base(ABC, Generic[C, H, E]):
    """What both consumers share: the member's identity and settings, and its lifecycle as effects
    (engine.py's style), so the blocking and the asyncio driver differ only in how they answer them."""

    def __init__(
        self,
        redis: str | C,
        topic: str,
        group: str,
        handler: H,
        *,
        config: ConsumerConfig | None = None,
        keyspace: str | Keyspace = "schooner",
        registry: CollectorRegistry | None = None,
        member_id: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        _check_group(group)
        self._owns_client = isinstance(redis, str)
        self.redis: C = self._connect(redis) if isinstance(redis, str) else redis
        self.topic_name, self.group = topic, group
        self.handler: H = handler
        self.config = config or ConsumerConfig()
        self.ks = keyspace if isinstance(keyspace, Keyspace) else Keyspace(keyspace)
        self.metrics = metrics_for(registry)
        self.member_id = member_id or new_member_id()
        self.rng = rng
        self.engine: GroupMember | None = None
        self.error: BaseException | None = None
        self._stopping: E = self._stop_event()

    @abstractmethod
    def _connect(self, url: str) -> C:
        """A client of this consumer's kind (blocking or asyncio) for a Redis URL."""

    @abstractmethod
    def _stop_event(self) -> E:
        """The event stop() sets: a thread's or the event loop's."""

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

    def _lifecycle(self, stopping: Callable[[], bool]) -> Work[None]:
        """Join, then steps until stopping() says so, then hand the partitions back. A Redis error in a
        step drops what was fetched (it stays pending and is claimed again) and pauses."""
        (topic,) = yield Batch([metadata.load(self.ks, self.topic_name, {})])
        engine = self._engine(topic)
        yield from engine.start()
        while not stopping():
            try:
                yield from engine.step()
            except StorageError as exc:
                log.warning("MQ consumer %s: %s; retrying", self.member_id, exc)
                yield Wait(ERROR_PAUSE_S)
                engine.recover()
        yield from engine.stop()


class Consumer(_Base[BlockingRedis, Handler, threading.Event]):
    """consumer.run() blocks until stop() (from another thread); start() runs it on a thread of its own."""

    _thread: threading.Thread | None = None

    def _connect(self, url: str) -> BlockingRedis:
        return client.connect_sync(url)

    def _stop_event(self) -> threading.Event:
        return threading.Event()

    def run(self) -> None:
        try:
            self.drive(self._lifecycle(self._stopping.is_set))
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            if self._owns_client:
                self.redis.close()

    @functools.cached_property
    def store(self) -> BlockingStore:
        """The client and keyspace the member's round trips go through (made on first use)."""
        return BlockingStore(self.redis, self.ks)

    def drive(self, work: Work[T]) -> T:
        """Runs one engine generator to its end, answering each effect."""
        answers = _Answers(work)
        run_many = self.store.run_many  # once: the loop every fetch passes through
        while (effect := answers.next()) is not None:
            if isinstance(effect, Batch):
                try:
                    answers.reply = run_many(effect.calls)
                except StorageError as exc:
                    answers.error = exc  # thrown into the engine, which decides what it means
            elif isinstance(effect, Handle):
                answers.reply = self._handle(effect)
            else:
                self._stopping.wait(effect.seconds)
        return answers.result

    def _handle(self, effect: Handle) -> Handled:
        """The handler on each message in turn (the loop every message passes through: kept lean)."""
        handler, clock, until = self.handler, effect.clock, effect.until
        seconds: list[float] = []
        now = clock()
        for message in effect.messages:
            if now >= until:
                break
            failure: Outcome | None = None
            try:
                result = handler(message)
                if result is not None and result.__class__ is not Success:
                    failure = _failure(result)
            except Exception as exc:  # the handler's failure is an outcome, not the consumer's
                failure = Fail.of(exc)
            then = clock()
            seconds.append(then - now)
            now = then
            if failure is not None:
                return Handled(seconds, failure)
        return Handled(seconds)

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


class AsyncConsumer(_Base[Redis, AsyncHandler, asyncio.Event]):
    """await consumer.run() until stop(); the handler may be a coroutine function or a plain one."""

    _task: asyncio.Task[None] | None = None

    def _connect(self, url: str) -> Redis:
        return client.connect(url)

    def _stop_event(self) -> asyncio.Event:
        return asyncio.Event()

    async def run(self) -> None:
        try:
            await self.drive(self._lifecycle(self._stopping.is_set))
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            if self._owns_client:
                await self.redis.aclose()

    async def drive(self, work: Work[T]) -> T:
        answers = _Answers(work)
        while (effect := answers.next()) is not None:
            if isinstance(effect, Batch):
                try:
                    answers.reply = await calls.run_many(self.redis, effect.calls)
                except StorageError as exc:
                    answers.error = exc  # thrown into the engine, which decides what it means
            elif isinstance(effect, Handle):
                answers.reply = await self._handle(effect)
            else:
                await self._wait(effect.seconds)
        return answers.result

    async def _handle(self, effect: Handle) -> Handled:
        handler, clock, until = self.handler, effect.clock, effect.until
        seconds: list[float] = []
        now = clock()
        for message in effect.messages:
            if now >= until:
                break
            failure: Outcome | None = None
            try:
                result = handler(message)
                if inspect.isawaitable(result):
                    result = await result
                if result is not None and result.__class__ is not Success:
                    failure = _failure(result)
            except Exception as exc:
                failure = Fail.of(exc)
            then = clock()
            seconds.append(then - now)
            now = then
            if failure is not None:
                return Handled(seconds, failure)
        return Handled(seconds)

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
