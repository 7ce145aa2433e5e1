"""Round trips as values: a command or a script call plus the parser of its reply.

Every storage round trip is written once, as a Call (one command) or Steps (a procedure of round trips,
each a list of Calls sent in one pipeline), and run by whichever runner fits the caller: `run` and
`drive` from asyncio, `run_sync` and `drive_sync` from blocking code, `PipelinedLane.send_call` on the
broker's append lane. Loading a script the server lacks (NOSCRIPT) is handled here and in the lane only.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import redis as sync_redis
import redis.asyncio as async_redis
from redis.exceptions import (
    ClusterDownError,
    MovedError,
    NoScriptError,
    RedisClusterException,
    RedisError,
    ResponseError,
    SlotNotCoveredError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import scripts
from .client import is_cluster

T = TypeVar("T")

StorageError = RedisError  # what a round trip raises when Redis fails (outage, timeout, error reply)
StorageTimeout = RedisTimeoutError  # no reply in time
# A round trip that was sent but got no reply: it may have run, and the caller cannot tell.
OUTCOME_UNKNOWN = (RedisTimeoutError, RedisConnectionError, TimeoutError)

Redis = async_redis.Redis  # the asyncio client (client.connect)
BlockingRedis = sync_redis.Redis  # the blocking client (client.connect_sync)

# Told of every asyncio round trip on a client it observes (and on the lanes it is given to): the
# seconds it took and whether it succeeded. The broker installs one for its metrics; storage knows
# nothing of what it does with them.
RoundTripObserver = Callable[[float, bool], None]
_observers: weakref.WeakKeyDictionary[Redis, RoundTripObserver] = weakref.WeakKeyDictionary()


def observe_round_trips(redis: Redis, observer: RoundTripObserver | None) -> None:
    """From now on `observer` hears of the pipelined round trips run_many sends on this client (None:
    no more)."""
    if observer is None:
        _observers.pop(redis, None)
    else:
        _observers[redis] = observer


def _same(reply: Any) -> Any:
    return reply


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """A plain command (args) when script is empty, else EVALSHA of scripts/<script>.lua (keys, args)."""

    args: tuple[Any, ...]
    parse: Callable[[Any], T]
    script: str = ""
    keys: tuple[str, ...] = ()
    on_error: Callable[[Exception], T] | None = None  # a reply for a Redis error (e.g. no such key)
    options: tuple[tuple[str, Any], ...] = ()  # redis-py reply options (e.g. parse_detail for XPENDING)
    # The read lane may hand parse the reply's RESP bytes rather than parsing it (lane.py): parse takes both.
    raw: bool = False


def command(
    *args: Any,
    parse: Callable[[Any], T] = _same,
    on_error: Callable[[Exception], T] | None = None,
    **options: Any,
) -> Call[T]:
    return Call(args, parse, on_error=on_error, options=tuple(options.items()))


def raw_command(*args: Any, parse: Callable[[Any], T]) -> Call[T]:
    """A command whose reply may reach parse as its RESP bytes (on the read lane) or parsed (elsewhere)."""
    return Call(args, parse, raw=True)


def script(name: str, keys: Sequence[str], args: Sequence[Any], parse: Callable[[Any], T] = _same) -> Call[T]:
    return Call(tuple(args), parse, name, tuple(keys))


# Commands whose keys redis-py's cluster client would find by asking the server (COMMAND GETKEYS),
# one more round trip each: on a cluster they are sent to the node of their first stream instead.
_MOVABLE_KEYS = {"XREAD", "XREADGROUP"}
# Errors after which a cluster client's map of slots to nodes may be out of date.
_TOPOLOGY_ERRORS = (RedisConnectionError, RedisTimeoutError, ClusterDownError, MovedError)
_STALE_MAP_REPLIES = (*_TOPOLOGY_ERRORS, SlotNotCoveredError)


def _queue(pipe: Any, call: Call[Any], cluster: Any) -> None:
    """Queues one call on a pipeline; `cluster` is the cluster client, or None on a single Redis."""
    if call.script:
        s = scripts.script(call.script)
        # The raw command: the cluster pipeline refuses evalsha(), and routes EVALSHA by its keys.
        pipe.execute_command("EVALSHA", s.sha, len(call.keys), *call.keys, *call.args)
    elif cluster is not None and str(call.args[0]).upper() in _MOVABLE_KEYS:
        key = call.args[[str(a).upper() for a in call.args].index("STREAMS") + 1]
        pipe.execute_command(*call.args, target_nodes=cluster.get_node_from_key(key), **dict(call.options))
    else:
        pipe.execute_command(*call.args, **dict(call.options))


class ClusterUnavailable(RedisConnectionError):
    """No node of a Redis Cluster answers for a slot now (a failover in progress, or every node
    unreachable): a connection error, so that callers answer it as the retriable outage it is.
    (redis-py raises these outside its RedisError tree.)"""


@contextlib.contextmanager
def cluster_errors_as_storage_errors(redis: Any) -> Iterator[None]:
    """Turns redis-py's cluster outages into ClusterUnavailable, and marks the slot map stale after
    any error that may mean the topology changed. Other RedisClusterExceptions (a script's keys in
    two slots) are bugs, and pass unchanged."""
    try:
        yield
    except _TOPOLOGY_ERRORS:
        mark_topology_stale(redis)
        raise
    except SlotNotCoveredError as exc:
        mark_topology_stale(redis)
        raise ClusterUnavailable(str(exc)) from exc
    except RedisClusterException as exc:
        if "cannot be connected" not in str(exc):
            raise
        mark_topology_stale(redis)
        raise ClusterUnavailable(str(exc)) from exc


def mark_topology_stale(redis: Any) -> None:
    """A cluster client fetches the slot map again before its next command (after a connection error,
    a MOVED, or a failover): the pipelines that calls.py sends do not refresh it themselves."""
    if isinstance(redis, async_redis.RedisCluster):
        redis._initialize = True  # redis-py's own flag, set by its single-command path on such errors
    elif isinstance(redis, sync_redis.RedisCluster):
        with contextlib.suppress(RedisError, OSError):  # nothing reachable: the next call fails alike
            redis.nodes_manager.initialize()


async def refresh_topology(redis: Any) -> None:
    """Fetches a cluster client's slot map again if it was marked stale. Not with the client's own
    initialize(), which also asks its default node for COMMAND: while that node is the one that died,
    every call, to any primary, would fail until its replica took over."""
    if not isinstance(redis, async_redis.RedisCluster) or not redis._initialize:
        return
    if not redis.commands_parser.commands:  # the first connect: COMMAND is needed once
        await redis.initialize()
        return
    await redis.nodes_manager.initialize()
    redis._initialize = False


def _check_topology(redis: Any, replies: Sequence[Any]) -> None:
    if is_cluster(redis) and any(isinstance(r, _STALE_MAP_REPLIES) for r in replies):
        mark_topology_stale(redis)


# Scripts each client has loaded: a batch's first use of a script loads it in the same round trip, so
# calls of one batch keep their order. NOSCRIPT after that (a flushed or restarted server) reloads and
# sends only the failed calls again, so the calls of one batch must not depend on each other.
_loaded: weakref.WeakKeyDictionary[Redis | BlockingRedis, set[str]] = weakref.WeakKeyDictionary()


def _to_load(redis: Redis | BlockingRedis, calls: Sequence[Call[Any]]) -> list[scripts.Script]:
    known = _loaded.setdefault(redis, set())
    needed = {c.script for c in calls if c.script} - known
    return [scripts.script(name) for name in sorted(needed)]


def _missing_scripts(replies: list[Any]) -> list[int]:
    return [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]


def _finish(calls: Sequence[Call[Any]], replies: list[Any]) -> list[Any]:
    out = []
    for call, reply in zip(calls, replies, strict=True):
        if (
            isinstance(reply, ResponseError)
            and call.on_error is not None
            and not isinstance(reply, NoScriptError)
        ):
            out.append(call.on_error(reply))
            continue
        if isinstance(reply, SlotNotCoveredError):
            raise ClusterUnavailable(str(reply)) from reply
        if isinstance(reply, Exception):
            raise reply
        out.append(call.parse(reply))
    return out


def run_many_sync(redis: BlockingRedis, calls: Sequence[Call[Any]]) -> list[Any]:
    """One pipelined round trip; a script the server lacks (a restart) is loaded and its call sent again."""
    if not calls:
        return []
    cluster = redis if is_cluster(redis) else None
    loading = _to_load(redis, calls)
    with cluster_errors_as_storage_errors(redis):
        if cluster is not None:  # SCRIPT LOAD goes to every primary, so not inside a pipeline
            for s in loading:
                redis.script_load(s.source)
            _loaded[redis].update(s.name for s in loading)
            loading = []
        pipe = redis.pipeline(transaction=False)
        for s in loading:
            pipe.script_load(s.source)
        for call in calls:
            _queue(pipe, call, cluster)
        replies = list(pipe.execute(raise_on_error=False))[len(loading) :]
        _loaded[redis].update(s.name for s in loading)
        missing = _missing_scripts(replies)
        if missing:
            _loaded[redis].clear()
            for name in sorted({calls[i].script for i in missing}):
                redis.script_load(scripts.script(name).source)
            pipe = redis.pipeline(transaction=False)
            for i in missing:
                _queue(pipe, calls[i], cluster)
            for i, reply in zip(missing, pipe.execute(raise_on_error=False), strict=True):
                replies[i] = reply
    _check_topology(redis, replies)
    return _finish(calls, replies)


def run_sync(redis: BlockingRedis, call: Call[T]) -> T:
    result: T = run_many_sync(redis, [call])[0]
    return result


async def run_many(redis: Redis, calls: Sequence[Call[Any]]) -> list[Any]:
    """The asyncio twin of run_many_sync."""
    if not calls:
        return []
    observer = _observers.get(redis)
    if observer is None:
        return await _run_many(redis, calls)
    started = time.perf_counter()
    try:
        replies = await _run_many(redis, calls)
    except Exception:  # a cancel is not Redis failing: it is not reported
        observer(time.perf_counter() - started, False)
        raise
    observer(time.perf_counter() - started, True)
    return replies


async def _run_many(redis: Redis, calls: Sequence[Call[Any]]) -> list[Any]:
    cluster = redis if is_cluster(redis) else None
    loading = _to_load(redis, calls)
    with cluster_errors_as_storage_errors(redis):
        await refresh_topology(redis)  # the slot map, for _queue's routing
        if cluster is not None:  # SCRIPT LOAD goes to every primary, so not inside a pipeline
            for s in loading:
                await redis.script_load(s.source)
            _loaded[redis].update(s.name for s in loading)
            loading = []
        async with redis.pipeline(transaction=False) as pipe:
            for s in loading:
                pipe.script_load(s.source)
            for call in calls:
                _queue(pipe, call, cluster)
            replies = list(await pipe.execute(raise_on_error=False))[len(loading) :]
        _loaded[redis].update(s.name for s in loading)
        missing = _missing_scripts(replies)
        if missing:  # a restarted server, or on a cluster a promoted replica or a moved slot
            _loaded[redis].clear()
            for name in sorted({calls[i].script for i in missing}):
                await redis.script_load(scripts.script(name).source)
            async with redis.pipeline(transaction=False) as pipe:
                for i in missing:
                    _queue(pipe, calls[i], cluster)
                again = await pipe.execute(raise_on_error=False)
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
    _check_topology(redis, replies)
    return _finish(calls, replies)


async def run(redis: Redis, call: Call[T]) -> T:
    result: T = (await run_many(redis, [call]))[0]
    return result


def text(value: bytes | str | None) -> str:
    """A reply item as text (hiredis gives bytes)."""
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)


# A procedure of several round trips, written once: it yields the calls of each round trip and is sent
# their results. drive_sync / drive run it from blocking code or from asyncio.
Steps = Generator[list[Call[Any]], list[Any], T]


class Progress(Generic[T]):
    """Where a procedure stands: next() sends the last replies and gives the next round trip's calls,
    or None once it has returned (its value in result)."""

    def __init__(self, steps: Steps[T]) -> None:
        self.steps = steps
        self.result: T

    def next(self, replies: list[Any] | None) -> list[Call[Any]] | None:
        try:
            return self.steps.send(replies)  # type: ignore[arg-type]  # a generator's first send is None
        except StopIteration as done:
            self.result = done.value
            return None


def drive_sync(redis: BlockingRedis, steps: Steps[T]) -> T:
    progress = Progress(steps)
    batch = progress.next(None)
    while batch is not None:
        batch = progress.next(run_many_sync(redis, batch))
    return progress.result


async def drive(redis: Redis, steps: Steps[T]) -> T:
    progress = Progress(steps)
    batch = progress.next(None)
    while batch is not None:
        batch = progress.next(await run_many(redis, batch))
    return progress.result


def together(calls: Sequence[Call[T]]) -> Steps[list[T]]:
    """Calls that need no answer from each other, as one pipelined round trip."""
    replies: list[T] = yield list(calls)
    return replies


def parallel(procedures: Sequence[Steps[T]]) -> Steps[list[T]]:
    """Runs procedures side by side: each round trip carries the next calls of every unfinished one."""
    results: list[Any] = [None] * len(procedures)
    waiting: dict[int, list[Call[Any]]] = {}
    for i, proc in enumerate(procedures):
        try:
            waiting[i] = next(proc)
        except StopIteration as done:
            results[i] = done.value
    while waiting:
        order = list(waiting)
        replies = yield [call for i in order for call in waiting[i]]
        following: dict[int, list[Call[Any]]] = {}
        pos = 0
        for i in order:
            n = len(waiting[i])
            try:
                following[i] = procedures[i].send(replies[pos : pos + n])
            except StopIteration as done:
                results[i] = done.value
            pos += n
        waiting = following
    return results
