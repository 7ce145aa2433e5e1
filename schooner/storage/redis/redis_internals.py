"""What storage takes from redis-py beyond its public API, in this one module.

Checked against redis-py 8.1; pyproject.toml bounds it (`redis>=8.1,<9`), and
tests/storage/redis/test_redis_internals.py pins the shape assumed here, so a redis-py that changes it
fails that test rather than the append lane. No other module of schooner imports a private module of
redis-py or reads a connection's private attributes (the test checks that too).

- parse_error: the exception class of an error reply (MovedError, AskError, NoScriptError, ...), as
  redis-py's own parser picks it: `redis._parsers.base.BaseParser.parse_error`, a classmethod.
- streams, buffered, detach: the lane and the subscription read and write a connection's socket
  themselves, after redis-py's connect() has made it and run the handshake (AUTH, SELECT, TLS). An
  asyncio connection keeps the asyncio StreamReader and StreamWriter it opened in `_reader` and
  `_writer`; the reader may already hold bytes (asyncio's private `StreamReader._buffer`) when its
  transport is taken over; and both are set to None before disconnect(), so that redis-py does not
  close a transport the caller has aborted itself.

The public names that storage also leans on are pinned by the same test: a connection class's
`pack_command(*args) -> list[bytes]`, which client.py overrides, and the cluster clients'
`connection_kwargs`, `nodes_manager.create_redis_node` and a node's `redis_connection`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis._parsers.base import BaseParser
from redis.exceptions import ResponseError

REDIS_CHECKED = "8.1"  # the redis-py version this module was checked against


def parse_error(message: str) -> ResponseError:
    """The redis-py exception for an error reply's text ("MOVED 3999 127.0.0.1:6381", "NOSCRIPT ...")."""
    error: ResponseError = BaseParser.parse_error(message)
    return error


def streams(connection: Any) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The reader and writer of a connected asyncio connection."""
    reader, writer = connection._reader, connection._writer
    if reader is None or writer is None:
        raise RuntimeError("the redis-py connection is not connected")
    return reader, writer


def buffered(reader: asyncio.StreamReader) -> bytes:
    """The bytes the reader has received and not handed out (the handshake's replies are read by then,
    so these are the start of what the caller asked for)."""
    return bytes(reader._buffer)  # type: ignore[attr-defined]


def detach(connection: Any) -> None:
    """Forgets the connection's reader and writer, whose transport the caller has taken over: redis-py's
    disconnect() then closes nothing, and the connection counts as not connected."""
    connection._reader = connection._writer = None
