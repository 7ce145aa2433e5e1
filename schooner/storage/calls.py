"""Round trips as values: a command or a script call plus the parser of its reply.

The MQ library builds lists of calls and runs them in one pipeline, from blocking code or from asyncio
alike, so each storage function is written once and its reply parsed in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from redis.exceptions import NoScriptError

from . import scripts

T = TypeVar("T")


def _same(reply: Any) -> Any:
    return reply


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """A plain command (args) when script is empty, else EVALSHA of scripts/<script>.lua with keys and args."""

    args: tuple[Any, ...]
    parse: Callable[[Any], T]
    script: str = ""
    keys: tuple[str, ...] = ()


def command(*args: Any, parse: Callable[[Any], T] = _same) -> Call[T]:
    return Call(args, parse)


def script(name: str, keys: Sequence[str], args: Sequence[Any], parse: Callable[[Any], T] = _same) -> Call[T]:
    return Call(tuple(args), parse, name, tuple(keys))


def _queue(pipe: Any, call: Call[Any]) -> None:
    if call.script:
        s = scripts.script(call.script)
        pipe.evalsha(s.sha, len(call.keys), *call.keys, *call.args)
    else:
        pipe.execute_command(*call.args)


def _missing_scripts(replies: list[Any]) -> list[int]:
    return [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]


def _finish(calls: Sequence[Call[Any]], replies: list[Any]) -> list[Any]:
    out = []
    for call, reply in zip(calls, replies, strict=True):
        if isinstance(reply, Exception):
            raise reply
        out.append(call.parse(reply))
    return out


def run_many_sync(redis: Any, calls: Sequence[Call[Any]]) -> list[Any]:
    """One pipelined round trip; a script the server lacks (a restart) is loaded and its call sent again."""
    if not calls:
        return []
    pipe = redis.pipeline(transaction=False)
    for call in calls:
        _queue(pipe, call)
    replies = list(pipe.execute(raise_on_error=False))
    missing = _missing_scripts(replies)
    if missing:
        for name in sorted({calls[i].script for i in missing}):
            redis.script_load(scripts.script(name).source)
        pipe = redis.pipeline(transaction=False)
        for i in missing:
            _queue(pipe, calls[i])
        for i, reply in zip(missing, pipe.execute(raise_on_error=False), strict=True):
            replies[i] = reply
    return _finish(calls, replies)


def run_sync(redis: Any, call: Call[T]) -> T:
    result: T = run_many_sync(redis, [call])[0]
    return result


async def run_many(redis: Any, calls: Sequence[Call[Any]]) -> list[Any]:
    """The asyncio twin of run_many_sync."""
    if not calls:
        return []
    async with redis.pipeline(transaction=False) as pipe:
        for call in calls:
            _queue(pipe, call)
        replies = list(await pipe.execute(raise_on_error=False))
    missing = _missing_scripts(replies)
    if missing:
        for name in sorted({calls[i].script for i in missing}):
            await redis.script_load(scripts.script(name).source)
        async with redis.pipeline(transaction=False) as pipe:
            for i in missing:
                _queue(pipe, calls[i])
            again = await pipe.execute(raise_on_error=False)
        for i, reply in zip(missing, again, strict=True):
            replies[i] = reply
    return _finish(calls, replies)


async def run(redis: Any, call: Call[T]) -> T:
    result: T = (await run_many(redis, [call]))[0]
    return result


def text(value: bytes | str | None) -> str:
    """A reply item as text (hiredis gives bytes)."""
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)
