"""The shape of redis-py that storage/redis/redis_internals.py assumes, and that it is the one door to it.

A redis-py release that renames a private module, moves a connection's streams or changes how error
replies map to exceptions fails here, by name, rather than somewhere in the append lane.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import hiredis
import pytest
import redis.asyncio.cluster as acluster
import redis.cluster as scluster
from packaging.requirements import Requirement
from redis.asyncio.connection import Connection as AsyncConnection
from redis.exceptions import AskError, MovedError, NoScriptError, ResponseError

from schooner.storage.redis import client, redis_internals, resp

ROOT = Path(__file__).resolve().parents[3]
ADAPTER = "schooner/storage/redis/redis_internals.py"


def _requirement(name: str) -> Requirement:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(r for r in map(Requirement, deps) if r.name == name)


@pytest.mark.parametrize("package", ["redis", "hiredis"])
def test_the_installed_version_is_within_the_bounds(package: str) -> None:
    requirement = _requirement(package)
    assert requirement.specifier, f"{package} has no version bounds in pyproject.toml"
    assert any(spec.operator == "<" for spec in requirement.specifier), f"{package} has no upper bound"
    assert requirement.specifier.contains(version(package)), (package, version(package))


def test_the_adapter_names_the_version_it_was_checked_against() -> None:
    assert _requirement("redis").specifier.contains(redis_internals.REDIS_CHECKED)


def test_error_replies_become_redis_py_exceptions() -> None:
    moved = redis_internals.parse_error("MOVED 3999 127.0.0.1:6381")
    assert isinstance(moved, MovedError) and moved.slot_id == 3999 and moved.port == 6381
    assert isinstance(redis_internals.parse_error("ASK 1 h:7000"), AskError)
    assert isinstance(redis_internals.parse_error("NOSCRIPT No matching script"), NoScriptError)
    plain = redis_internals.parse_error("ERR wrong number of arguments")
    assert type(plain) is ResponseError and "wrong number" in str(plain)


def _connection_attributes() -> set[str]:
    """The attributes the asyncio connection's own code sets on itself."""
    source = inspect.getsource(inspect.getmodule(AsyncConnection))  # type: ignore[arg-type]
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
    }


def test_an_asyncio_connection_keeps_its_streams_where_the_adapter_reads_them() -> None:
    assert {"_reader", "_writer"} <= _connection_attributes()
    loop = asyncio.new_event_loop()  # a reader of its own: the test may run where no loop is current
    try:
        assert "_buffer" in vars(asyncio.StreamReader(loop=loop))  # asyncio's own, which buffered() reads
    finally:
        loop.close()
    params = inspect.signature(AsyncConnection.pack_command).parameters
    assert [p.kind for p in params.values()] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
    ]


def test_the_cluster_clients_have_the_hooks_client_py_uses() -> None:
    create = inspect.signature(scluster.NodesManager.create_redis_node)
    assert list(create.parameters)[:3] == ["self", "host", "port"]
    assert "redis_connection" in inspect.signature(scluster.ClusterNode.__init__).parameters
    node = acluster.ClusterNode("127.0.0.1", 1, connection_class=AsyncConnection, db=0)
    assert node.connection_class is AsyncConnection and node.connection_kwargs["db"] == 0


def test_hiredis_reads_and_packs_as_the_lane_expects() -> None:
    reader = hiredis.Reader(replyError=ResponseError)
    reader.feed(b"+OK\r\n-ERR no\r\n*2\r\n$1\r\na\r\n:5\r\n")
    assert reader.gets() == b"OK"
    error = reader.gets()
    assert isinstance(error, ResponseError) and str(error) == "ERR no"
    assert reader.gets() == [b"a", 5]
    assert reader.gets() is False
    assert hiredis.pack_command(("SET", b"k", 1)) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n"


@pytest.mark.single_redis
def test_a_round_trip_on_a_connection_taken_over(redis_server: Any) -> None:
    """What the lane does: connect with redis-py, then write and read the socket through the adapter."""
    asyncio.run(_take_over(redis_server.url))


async def _take_over(url: str) -> None:
    redis_client = client.connect(url)
    connection = redis_client.connection_pool.make_connection()
    try:
        await connection.connect()
        reader, writer = redis_internals.streams(connection)
        assert isinstance(reader, asyncio.StreamReader) and isinstance(writer, asyncio.StreamWriter)
        assert redis_internals.buffered(reader) == b""
        writer.write(resp.pack(("PING",)))
        for _ in range(200):
            if redis_internals.buffered(reader):
                break
            await asyncio.sleep(0.01)
        assert redis_internals.buffered(reader) == b"+PONG\r\n"  # received, not yet read
        assert await reader.readexactly(7) == b"+PONG\r\n"
        redis_internals.detach(connection)
        assert not connection.is_connected
        with pytest.raises(RuntimeError, match="not connected"):
            redis_internals.streams(connection)
        await connection.disconnect()  # closes nothing: the streams are the caller's now
        assert not writer.transport.is_closing()
        writer.transport.abort()
    finally:
        await redis_client.aclose()


def test_no_other_module_reaches_into_redis_py() -> None:
    """Private modules of redis-py (redis._parsers, ...) and a connection's private streams are used
    only in the adapter."""
    found = []
    for path in sorted((ROOT / "schooner").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if name == ADAPTER:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules = [node.module]
            for module in modules:
                parts = module.split(".")
                if parts[0] == "redis" and any(part.startswith("_") for part in parts[1:]):
                    found.append(f"{name}:{node.lineno} imports {module}")
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("_reader", "_writer", "_buffer")
                and not (isinstance(node.value, ast.Name) and node.value.id == "self")
            ):
                found.append(f"{name}:{node.lineno} reads {ast.unparse(node)}")
    assert not found, "\n".join(found)
