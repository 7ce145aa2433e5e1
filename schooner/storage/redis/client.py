"""Redis connections for the storage layer (redis-py with the hiredis parser)."""

from __future__ import annotations

from typing import Any

import hiredis
import redis
import redis.asyncio as aredis
from redis.asyncio.connection import Connection as AsyncConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

_RAW_REPLY_COMMANDS = ("XRANGE", "XREVRANGE", "XREAD", "XINFO STREAM")


class HiredisPackedConnection(AsyncConnection):
    """redis-py's asyncio connection packs commands in Python; hiredis packs them in C.

    An append carries thousands of arguments, where this measured 4x faster (docs/benchmarks.md).
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        name = args[0]
        if isinstance(name, str) and " " in name:  # redis-py passes e.g. "SCRIPT LOAD" as one word
            args = (*name.split(), *args[1:])
        return [hiredis.pack_command(args)]


def _raw(response: Any, **options: Any) -> Any:
    return response


def connect(url: str, timeout_ms: int | None = None, **options: Any) -> aredis.Redis:
    """An asyncio client whose stream replies are left as hiredis returns them (lists of bytes).

    With timeout_ms, a round trip (or a connect) that takes longer fails with a TimeoutError, and no
    failed round trip is retried here: a retry would stretch the wait past timeout_ms, and could run
    a command twice when only its reply was lost. Callers answer a retriable error instead, and the
    pool replaces connections that broke. Blocking pub/sub reads (listen()) are exempt from it.
    """
    if timeout_ms is not None:
        options = {
            "socket_timeout": timeout_ms / 1000,
            "socket_connect_timeout": timeout_ms / 1000,
            "retry": Retry(NoBackoff(), 0),
            **options,
        }
    client = aredis.Redis.from_url(
        url, decode_responses=False, connection_class=HiredisPackedConnection, **options
    )
    for command in _RAW_REPLY_COMMANDS:
        client.response_callbacks[command] = _raw
    return client


def connect_sync(url: str, **options: Any) -> redis.Redis:
    client = redis.Redis.from_url(url, decode_responses=False, **options)
    for command in _RAW_REPLY_COMMANDS:
        client.response_callbacks[command] = _raw
    return client
