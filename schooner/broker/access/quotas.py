"""Client quota enforcement on this broker (KIP-13, KIP-55, KIP-124, KIP-219).

Each broker counts its own traffic, as each Kafka broker does: a producer_byte_rate of 1 MB/s lets a
client produce 1 MB/s to every broker. The rules (windows, throttle times, which entity applies) are
security/quotas.py; this module holds the configuration cached from Redis and applies it to requests.

- The configuration is every entity in Redis (the base keyspace: quotas are deployment-wide), reloaded
  when quotas_alter.lua publishes a change on the quotas channel and at least once a second besides.
- With no quota configured, dispatch asks nothing more than `book.active`. Otherwise each request's
  (user, client-id) finds its windows in one cached lookup, and a client no quota applies to costs that
  lookup only.
- producer_byte_rate counts Produce request bytes; consumer_byte_rate counts the record bytes of Fetch
  and ShareFetch responses; request_percentage counts handler time (the time the request's coroutines,
  and the tasks they start, run on the event loop; not the time they wait) as a percentage of one core.
- A violation sets throttle_time_ms in the response (the largest of the quotas') and mutes the
  connection for that long after the response (Session.throttled_until; connection.py reads nothing
  meanwhile). A throttled Fetch carries no records and costs no bytes, as in Kafka; Fetch max_bytes is
  capped at what the quota allows over the window. Produce with acks=0 has no response and no request
  quota, but its bytes still mute the connection.
- Responses of versions older than KIP-219 (clients that do not back off themselves) are held back for
  the throttle time instead (the connection asks protocol.apis.client_throttles()).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from contextvars import Context, ContextVar
from dataclasses import replace
from typing import Any, TypeVar

from kio.static.protocol import RequestPayload, ResponsePayload

from ...config import Settings
from ...protocol.apis import ApiKey
from ...protocol.messages import NO_RESPONSE, Answer, Request
from ...security.quotas import DEFAULT, ClientLimits, EntityKey, Name, QuotaBook, WindowConfig
from ...storage.keys import Keyspace
from ...storage.quotas import CLIENT_ID, USER, Entity
from ...storage.redis.calls import StorageError
from ...storage.store import Store
from ..net.session import RequestScope

log = logging.getLogger(__name__)
T = TypeVar("T")

RELOAD_SECONDS = 1.0  # the safety net behind the change notices
_GATE = "quota_gate"  # Session.extra: the lock that serves a quota'd connection's requests one at a time

Handler = Callable[[Any, RequestPayload, RequestScope], Awaitable[Answer]]


class ClientQuotas:
    """This broker's quota configuration and windows; ctx.access.quotas. One per broker, shared by tenants."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.book = QuotaBook(WindowConfig(settings.quota_window_num, settings.quota_window_size_seconds))
        self.base = Keyspace(settings.keyspace)  # quotas are deployment-wide, never a tenant's
        self._store = store
        self._changed = asyncio.Event()
        self._reloading = asyncio.Lock()
        self._timing = False  # the task factory that meters handler time is installed

    # -- the configuration ------------------------------------------------------------------------
    def changed(self, _entity: bytes = b"") -> None:
        """A change notice: reload now."""
        self._changed.set()

    async def reload(self) -> bool:
        """Reads every entity's quotas; returns whether the configuration changed."""
        async with self._reloading:  # reads are applied in the order they were made
            stored = await self._store.client_quotas(self.base)
            changed = self.book.load(_client_entities(stored))
        loop = asyncio.get_running_loop()
        self.book.forget_idle(loop.time())
        if self.book.times_requests != self._timing:
            self._timing = self.book.times_requests
            factory: Any = metered_task if self._timing else None  # typeshed's type is narrower
            loop.set_task_factory(factory)
        return changed

    def close(self) -> None:
        """Stops metering handler time (the broker is stopping)."""
        if self._timing:
            self._timing = False
            asyncio.get_running_loop().set_task_factory(None)

    async def keep_loaded(self) -> None:
        """Reloads on every notice, and every RELOAD_SECONDS whatever happens (a notice may be lost)."""
        failing = False
        while True:
            self._changed.clear()
            try:
                await self.reload()
                failing = False
            except (StorageError, OSError) as exc:
                if not failing:  # once per outage; the quotas already loaded stay in force
                    log.warning("client quotas not reloaded: %s", exc)
                failing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), RELOAD_SECONDS)

    # -- a request --------------------------------------------------------------------------------
    async def serve(self, handler: Handler, ctx: Any, request: Request, scope: RequestScope) -> Answer:
        """Runs the handler under the client's quotas (dispatch calls this only while book.active); the
        handler's scope carries the client's windows (Fetch caps its max_bytes by them)."""
        session = scope.session
        limits = self.book.limits(session.user, scope.client_id, asyncio.get_running_loop().time())
        if limits is None:
            return await handler(ctx, request.body, scope)
        scope = replace(scope, limits=limits)
        # One request at a time, as a Kafka broker serves every connection: requests the client
        # pipelined before it heard of its throttle wait out the mute instead of all counting at once.
        gate = session.extra.get(_GATE)
        if gate is None:
            gate = session.extra[_GATE] = asyncio.Lock()
        async with gate:
            loop = asyncio.get_running_loop()
            if (wait := session.throttled_until - loop.time()) > 0:
                await asyncio.sleep(wait)
            answer, throttle_ms = await self._serve(handler, ctx, request, scope, limits)
            if throttle_ms > 0:
                session.throttled_until = max(session.throttled_until, loop.time() + throttle_ms / 1000)
            return answer

    async def _serve(
        self, handler: Handler, ctx: Any, request: Request, scope: RequestScope, limits: ClientLimits
    ) -> tuple[Answer, int]:
        seconds: float | None = None
        if limits.request is not None:
            answer, seconds = await run_metered(handler(ctx, request.body, scope))
        else:
            answer = await handler(ctx, request.body, scope)
        return _account(request, answer, limits, seconds, asyncio.get_running_loop().time())


def _account(
    request: Request, answer: Answer, limits: ClientLimits, seconds: float | None, now: float
) -> tuple[Answer, int]:
    """Records the request in its windows (`seconds`: its handler time, when metered); the answer to
    send and the throttle time it earned."""
    api = request.header.api_key
    throttle = 0
    if seconds is not None and limits.request is not None and answer is not NO_RESPONSE:
        throttle = limits.request.record(seconds * 100, now)  # acks=0 is exempt, as in Kafka
    if api == ApiKey.PRODUCE:
        if limits.produce is not None:
            throttle = max(throttle, limits.produce.record(request.size, now))
    elif api == ApiKey.FETCH and answer is not NO_RESPONSE:
        size = _record_bytes(answer) if limits.fetch is not None else 0
        if limits.fetch is not None:
            throttle = max(throttle, limits.fetch.record(size, now))
        if throttle > 0:
            # A throttled Fetch carries nothing and so costs nothing; the client asks again later.
            if limits.fetch is not None:
                limits.fetch.unrecord(size, now)
            answer = dataclasses.replace(answer, responses=())  # type: ignore[call-arg]
    elif api == ApiKey.SHARE_FETCH and limits.fetch is not None and answer is not NO_RESPONSE:
        # Acquired records are locked to this member: they go out, and the bytes count.
        throttle = max(throttle, limits.fetch.record(_record_bytes(answer), now))
    if throttle > 0 and answer is not NO_RESPONSE:
        answer = with_throttle(answer, throttle)
    return answer, throttle


def with_throttle(answer: ResponsePayload, throttle_ms: int) -> ResponsePayload:
    """The response with throttle_time_ms set, for the versions that have the field; a longer one the
    handler set stays (Produce's for Redis memory)."""
    if "throttle_time" not in getattr(answer, "__dataclass_fields__", {}):
        return answer
    throttle = max(datetime.timedelta(milliseconds=throttle_ms), answer.throttle_time)  # type: ignore[union-attr]
    return dataclasses.replace(answer, throttle_time=throttle)  # type: ignore[call-arg]


def _record_bytes(answer: Any) -> int:
    """Record bytes of a Fetch or ShareFetch response (per partition, never per record)."""
    return sum(len(p.records or b"") for t in answer.responses for p in t.partitions)


def fetch_byte_cap(max_bytes: int, limits: ClientLimits | None) -> int:
    """A Fetch's max_bytes within what the client's consumer_byte_rate allows over the window (Kafka's
    cap: a larger response would be throttled however long the client waited); `limits` are the
    request's (RequestScope.limits)."""
    if limits is None or limits.fetch_window_bytes is None:
        return max_bytes
    return min(max_bytes, limits.fetch_window_bytes)


Configured = tuple[EntityKey, Mapping[str, float]]


def _client_entities(stored: Mapping[Entity, Mapping[str, float]]) -> list[Configured]:
    """User and client-id entities as (user, client-id) keys; ip entities limit connections, not here."""
    found: list[Configured] = []
    for entity, values in stored.items():
        components = dict(entity)
        if set(components) - {USER, CLIENT_ID}:
            continue
        found.append(((_name(components, USER), _name(components, CLIENT_ID)), values))
    return found


def _name(components: Mapping[str, str | None], entity_type: str) -> Name:
    if entity_type not in components:
        return None
    name = components[entity_type]
    return DEFAULT if name is None else name


# -- handler time ------------------------------------------------------------------------------------
class _Meter:
    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


# The meter of the request being served: tasks its handler starts are metered into it too.
_METER: ContextVar[_Meter | None] = ContextVar("quota_meter", default=None)


class _Metered:
    """Awaits a coroutine, adding to the meter the time each of its steps runs (not the time it waits)."""

    __slots__ = ("_awaitable", "_meter")

    def __init__(self, awaitable: Awaitable[Any], meter: _Meter) -> None:
        self._awaitable = awaitable
        self._meter = meter

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, meter, clock = self._awaitable.__await__(), self._meter, time.perf_counter
        value: Any = None
        error: BaseException | None = None
        while True:
            started = clock()
            try:
                signal = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as done:
                meter.seconds += clock() - started
                return done.value
            except BaseException:
                meter.seconds += clock() - started
                raise
            meter.seconds += clock() - started
            try:
                value, error = (yield signal), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation, passed on to the coroutine
                value, error = None, exc


async def run_metered(awaitable: Awaitable[T]) -> tuple[T, float]:
    """Awaits it; returns its result and the seconds it, and the tasks it starts while metered_task is
    the loop's task factory, ran on the event loop (not the time they waited)."""
    meter = _Meter()
    _METER.set(meter)  # in this task's context, which the tasks it starts copy
    result: T = await _Metered(awaitable, meter)
    return result, meter.seconds


async def _run_in(coro: Coroutine[Any, Any, Any], meter: _Meter) -> Any:
    return await _Metered(coro, meter)


def metered_task(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **options: Any
) -> asyncio.Task[Any]:
    """The loop's task factory while a request_percentage quota exists: a task started while a metered
    request is served is metered into that request too. `options` are create_task's (context, ...)."""
    context: Context | None = options.get("context")
    meter = _METER.get() if context is None else context.get(_METER)
    if meter is not None:
        coro = _run_in(coro, meter)
    return asyncio.Task(coro, loop=loop, **options)
