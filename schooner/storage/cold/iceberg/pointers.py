"""The Redis catalog's state (Keyspace.iceberg_tables, .iceberg_namespaces), as Calls: each table's
current metadata file, moved only by compare-and-swap (scripts/iceberg_swap.lua), and the namespaces
with their properties. catalog.py runs them on a blocking client (the cold store's calls run in threads)."""

from __future__ import annotations

import json
from typing import Any

from ...keys import Keyspace
from ...redis.calls import Call, command, script, text


def table_field(namespace: str, table: str) -> str:
    return f"{namespace}\x00{table}"


def location(ks: Keyspace, field: str) -> Call[str | None]:
    return command("HGET", ks.iceberg_tables, field, parse=lambda r: None if r is None else text(r))


def swap(ks: Keyspace, field: str, expected: str | None, new: str | None) -> Call[bool]:
    """Points the table at `new` (None: drops it) if it points at `expected` (None: at nothing)."""
    return script("iceberg_swap", (ks.iceberg_tables,), (field, expected or "", new or ""), parse=bool)


def drop(ks: Keyspace, field: str) -> Call[bool]:
    return command("HDEL", ks.iceberg_tables, field, parse=lambda r: int(r) > 0)


def tables(ks: Keyspace) -> Call[list[tuple[str, str]]]:
    """Every table as (namespace, name)."""

    def parse(reply: Any) -> list[tuple[str, str]]:
        return [(ns, table) for ns, _, table in (text(f).partition("\x00") for f in reply)]

    return command("HKEYS", ks.iceberg_tables, parse=parse)


def namespaces(ks: Keyspace) -> Call[dict[str, dict[str, str]]]:
    return command(
        "HGETALL", ks.iceberg_namespaces, parse=lambda r: {text(k): json.loads(v) for k, v in _pairs(r)}
    )


def namespace(ks: Keyspace, name: str) -> Call[dict[str, str] | None]:
    """A namespace's properties; None when it does not exist."""
    return command("HGET", ks.iceberg_namespaces, name, parse=lambda r: None if r is None else json.loads(r))


def create_namespace(ks: Keyspace, name: str, properties: dict[str, str]) -> Call[bool]:
    """False when it exists already."""
    return command("HSETNX", ks.iceberg_namespaces, name, json.dumps(properties), parse=lambda r: int(r) == 1)


def put_namespace(ks: Keyspace, name: str, properties: dict[str, str]) -> Call[Any]:
    return command("HSET", ks.iceberg_namespaces, name, json.dumps(properties))


def drop_namespace(ks: Keyspace, name: str) -> Call[Any]:
    return command("HDEL", ks.iceberg_namespaces, name)


def _pairs(reply: Any) -> list[tuple[Any, Any]]:
    """HGETALL's reply, a dict (RESP3, redis-py's parsers) or a flat list."""
    return list(reply.items()) if isinstance(reply, dict) else list(zip(reply[::2], reply[1::2], strict=True))
