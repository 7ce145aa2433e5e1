"""What `schooner broker --check` asks a Redis (or each primary of a Redis Cluster): plain facts, read with a
blocking client in a few pipelined round trips. Whether a fact is fine is not decided here: the rules are
in ops/check.py.

Facts a user may not read (CONFIG GET and ACL commands are refused to a user limited to Schooner's
commands, storage/redis/acl.py) are None, with the reason where one helps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.exceptions import AuthenticationError, ResponseError

from .acl import COMMANDS
from .calls import BlockingRedis, Call, command, run_many_sync, text
from .client import _split_mode, redacted
from .server_info import Memory, parse_memory

CLUSTER_SLOTS = 16384


class Refused(str):
    """A command the user may not run, or the server refused: the error's text."""


def _refused(exc: Exception) -> Refused:
    return Refused(str(exc))


@dataclass(frozen=True)
class NodeFacts:
    address: str  # host:port
    version: str  # redis_version
    memory: Memory
    aof_enabled: bool
    appendfsync: str | None  # None: CONFIG GET refused
    save: str | None  # the RDB snapshot rules ("" for none); None: CONFIG GET refused
    rdb_saves: int  # snapshots since start (INFO persistence), a hint when `save` is unknown
    stream_module: bool | None = None  # SCHOONER.XADDRUN is there (redis/_stream_module.c); None: not asked


@dataclass(frozen=True)
class ClusterFacts:
    state: str  # cluster_state: ok or fail
    slots_assigned: int
    slots_ok: int
    primaries: int


@dataclass(frozen=True)
class AclFacts:
    user: str | None
    denied: list[str] = field(default_factory=list)  # "command: why" for each command the user may not run
    unchecked: str | None = None  # why the commands could not be checked (ACL DRYRUN refused)


@dataclass(frozen=True)
class RedisFacts:
    url: str  # redacted
    error: str | None = None  # cannot connect, or a command failed outright
    auth_failed: bool = False
    nodes: list[NodeFacts] = field(default_factory=list)
    cluster: ClusterFacts | None = None
    acl: AclFacts | None = None


def _config(name: str) -> Call[str | None]:
    def parse(reply: Any) -> str | None:
        values = {text(k): text(v) for k, v in (reply or {}).items()}
        return values.get(name)

    return command("CONFIG", "GET", name, parse=parse, on_error=lambda _: None)


def _node(client: BlockingRedis, address: str) -> NodeFacts:
    server, memory, persistence, appendfsync, save, module = run_many_sync(
        client,
        [
            command("INFO", "server"),
            command("INFO", "memory", parse=parse_memory),
            command("INFO", "persistence"),
            _config("appendfsync"),
            _config("save"),
            command(
                "COMMAND", "INFO", "schooner.xaddrun",
                parse=lambda reply: bool(reply and any(reply)), on_error=lambda _: None,
            ),
        ],
    )  # fmt: skip
    return NodeFacts(
        address,
        str(server.get("redis_version", "0")),
        memory,
        bool(int(persistence.get("aof_enabled", 0))),
        appendfsync,
        save,
        int(persistence.get("rdb_saves", 0)),
        module,
    )


def _cluster(client: BlockingRedis) -> tuple[ClusterFacts, list[str]]:
    info, nodes = run_many_sync(client, [command("CLUSTER", "INFO"), command("CLUSTER", "NODES")])
    if not isinstance(info, dict):  # redis-py parses CLUSTER INFO into a dict; older ones give text
        info = dict(line.split(":", 1) for line in text(info).splitlines() if ":" in line)
    primaries = []
    # CLUSTER NODES: id host:port@bus flags primary ping pong epoch link-state slot...
    for line in text(nodes).splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        flags = fields[2].split(",")
        if "master" in flags and "fail" not in flags and fields[7] == "connected" and len(fields) > 8:
            primaries.append(fields[1].split("@", 1)[0])
    facts = ClusterFacts(
        str(info.get("cluster_state", "fail")),
        int(info.get("cluster_slots_assigned", 0)),
        int(info.get("cluster_slots_ok", 0)),
        len(primaries),
    )
    return facts, sorted(primaries)


def _acl(client: BlockingRedis, prefix: str) -> AclFacts:
    """ACL DRYRUN of every command Schooner sends, with each key and channel argument under the prefix."""
    (user,) = run_many_sync(client, [command("ACL", "WHOAMI", parse=text, on_error=_refused)])
    if isinstance(user, Refused):
        return AclFacts(None, unchecked=f"the user may not run ACL commands ({user})")
    names = sorted({c.split("|")[0] for c in COMMANDS})
    (described,) = run_many_sync(client, [command("COMMAND", "INFO", *names)])
    probes = []
    for name in COMMANDS:
        words = name.split("|")
        arity = _arity(described, words)
        # Every argument a key or channel name under the prefix: enough for the arity and the patterns.
        probes.append(command("ACL", "DRYRUN", user, *words, *[f"{prefix}:check"] * (arity - len(words)),
                              parse=text, on_error=_refused))  # fmt: skip
    replies = run_many_sync(client, probes)
    errors = [reply for reply in replies if isinstance(reply, Refused)]
    if errors:  # DRYRUN's verdicts are plain replies; an error is DRYRUN itself refused
        return AclFacts(user, unchecked=f"ACL DRYRUN is refused ({errors[0]})")
    denied = [f"{name}: {reply}" for name, reply in zip(COMMANDS, replies, strict=True) if reply != "OK"]
    return AclFacts(user, denied)


def _arity(described: Any, words: Sequence[str]) -> int:
    """The fewest words the command takes (COMMAND INFO's arity, negative for "at least")."""
    entry = (described or {}).get(words[0]) or {}
    arity = int(entry.get("arity", -len(words)))
    if len(words) > 1:
        for sub in entry.get("subcommands", []):
            if text(sub[0]) == "|".join(words):
                arity = int(sub[1])
    return max(abs(arity), len(words))


def _node_url(url: str, address: str) -> str:
    """The URL with another host:port, keeping credentials and options."""
    parts = urlsplit(url)
    auth = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=f"{auth}@{address}" if auth else address))


def _connect(url: str, timeout_s: float) -> BlockingRedis:
    return redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)


def gather(url: str, prefix: str, timeout_s: float = 5.0) -> RedisFacts:
    """The facts of the Redis at `url` (the `cluster` query option is ignored: the server says)."""
    plain, _ = _split_mode(url)
    shown = redacted(plain)
    client = _connect(plain, timeout_s)
    try:
        (cluster_info,) = run_many_sync(client, [command("INFO", "cluster")])
        kwargs = client.connection_pool.connection_kwargs
        address = f"{kwargs.get('host')}:{kwargs.get('port')}"
        cluster: ClusterFacts | None = None
        if int(cluster_info.get("cluster_enabled", 0)):
            cluster, primaries = _cluster(client)
            nodes = []
            for primary in primaries:
                with _connect(_node_url(plain, primary), timeout_s) as node:
                    nodes.append(_node(node, primary))
        else:
            nodes = [_node(client, address)]
        return RedisFacts(shown, nodes=nodes, cluster=cluster, acl=_acl(client, prefix))
    except AuthenticationError as exc:
        return RedisFacts(shown, error=str(exc), auth_failed=True)
    except ResponseError as exc:
        if str(exc).startswith(("NOAUTH", "WRONGPASS")):
            return RedisFacts(shown, error=str(exc), auth_failed=True)
        return RedisFacts(shown, error=str(exc))
    except (redis.RedisError, OSError) as exc:
        return RedisFacts(shown, error=str(exc) or type(exc).__name__)
    finally:
        client.close()
