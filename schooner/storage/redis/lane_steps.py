"""Runs a Steps procedure's round trips on the pipelined lane rather than through redis-py."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Protocol, TypeVar

from .calls import Call, Steps, _Progress

T = TypeVar("T")


class Lane(Protocol):
    async def send_call(self, call: Call[Any]) -> Any: ...


async def drive_on_lane(lane: Lane, steps: Steps[T]) -> T:
    """Each round trip's calls go out in one write (the lane joins what one turn of the loop sends);
    the first failed call's error is raised, as drive() does."""
    progress = _Progress(steps)
    batch = progress.next(None)
    while batch is not None:
        futures = [await lane.send_call(_split(call)) for call in batch]
        # Every reply is waited for (none is left unretrieved when one fails), then the first error raised.
        replies = await asyncio.gather(*futures, return_exceptions=True)
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
        batch = progress.next(list(replies))
    return progress.result


def _split(call: Call[T]) -> Call[T]:
    """redis-py splits a command name of two words ("XINFO STREAM"); the lane sends its args as given."""
    name = call.args[0] if call.args and not call.script else None
    if isinstance(name, str) and " " in name:
        return dataclasses.replace(call, args=(*name.split(), *call.args[1:]))
    return call
