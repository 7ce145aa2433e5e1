"""Redis connections for the storage layer (redis-py with the hiredis parser), to one server or to a
Redis Cluster.

The URL carries credentials and TLS, as redis-py reads them: `redis://user:password@host:port/0` (or
`redis://:password@...` for the default user), `rediss://...` for TLS, with the query options
`ssl_ca_certs`, `ssl_certfile`, `ssl_keyfile`, `ssl_cert_reqs`, `ssl_check_hostname`
(docs/configuration.md). Every connection made from a client inherits them: the pool's, pub/sub's,
and the append lanes' (lane.py, cluster_lanes.py), which are made by the pool's own connection class.

Cluster mode is detected from the URL's server (`INFO cluster`), or chosen in the URL with the query
option `cluster=yes` or `cluster=no` (docs/operations.md). A cluster gets redis-py's cluster client,
which routes each command by its key's slot and follows MOVED and ASK.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

import hiredis
import redis
import redis.asyncio as aredis
import redis.asyncio.cluster as acluster
import redis.cluster as scluster
from redis.asyncio.connection import Connection as AsyncConnection
from redis.asyncio.connection import SSLConnection as AsyncSSLConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.retry import Retry as SyncRetry

_RAW_REPLY_COMMANDS = ("XRANGE", "XREVRANGE", "XREAD", "XINFO STREAM")
PROBE_TIMEOUT_S = 2.0


def _pack(args: tuple[Any, ...]) -> list[bytes]:
    name = args[0]
    if isinstance(name, str) and " " in name:  # redis-py passes e.g. "SCRIPT LOAD" as one word
        args = (*name.split(), *args[1:])
    return [hiredis.pack_command(args)]


class HiredisPackedConnection(AsyncConnection):
    """redis-py's asyncio connection packs commands in Python; hiredis packs them in C.

    An append carries thousands of arguments, where this measured 4x faster (docs/benchmarks.md).
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        return _pack(args)


class HiredisPackedSSLConnection(AsyncSSLConnection):
    """The same over TLS (rediss://)."""

    def pack_command(self, *args: Any) -> list[bytes]:
        return _pack(args)


def _packed(connection_class: type[Any]) -> type[Any]:
    """The hiredis-packing class for the one a URL chose: TLS stays TLS; others (unix://) stay."""
    if issubclass(connection_class, AsyncSSLConnection):
        return HiredisPackedSSLConnection
    if connection_class is AsyncConnection:
        return HiredisPackedConnection
    return connection_class


def _unsplit(parts: SplitResult) -> str:
    """urlunsplit, keeping the `//` of a URL with an empty host: `unix:///path` (a Redis unix socket)
    would otherwise come back as `unix:/path`, which redis-py refuses."""
    text = urlunsplit(parts)
    if parts.netloc or not parts.path.startswith("/") or text.startswith(f"{parts.scheme}://"):
        return text
    return f"{parts.scheme}://{text[len(parts.scheme) + 1 :]}"


def redacted(url: str) -> str:
    """The URL without its password (in the user part or the `password` option), for logs and messages."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if parts.password is None and not any(name == "password" for name, _ in query):
        return url
    if parts.password is not None:
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{user}:***@{host}")
    hidden = [(name, "***" if name == "password" else value) for name, value in query]
    return _unsplit(parts._replace(query=urlencode(hidden, safe="*")))


def _raw(response: Any, **options: Any) -> Any:
    return response


def is_cluster(client: Any) -> bool:
    """Whether a client from connect / connect_sync talks to a Redis Cluster."""
    return isinstance(client, (acluster.RedisCluster, scluster.RedisCluster))


def _split_mode(url: str) -> tuple[str, str]:
    """The URL without the `cluster` query option, and that option ("yes", "no" or "auto")."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    mode = "auto"
    kept = []
    for name, value in query:
        if name == "cluster":
            mode = {"yes": "yes", "true": "yes", "1": "yes", "no": "no", "false": "no", "0": "no"}.get(
                value.lower(), "auto"
            )
        else:
            kept.append((name, value))
    return _unsplit(parts._replace(query=urlencode(kept))), mode


_modes: dict[str, bool] = {}  # what each server URL said, asked once per process


def _server_is_cluster(url: str) -> bool:
    """Asks the server. One that cannot be reached is taken for a single server this time (and asked
    again next time): a cluster that may be down when clients start is named with `cluster=yes`."""
    if url in _modes:
        return _modes[url]
    probe = redis.Redis.from_url(url, socket_timeout=PROBE_TIMEOUT_S, socket_connect_timeout=PROBE_TIMEOUT_S)
    try:
        _modes[url] = bool(int(probe.info("cluster").get("cluster_enabled", 0)))
    except (redis.RedisError, OSError, ValueError):
        return False
    finally:
        probe.close()
    return _modes[url]


def cluster_url(url: str) -> tuple[str, bool]:
    """The URL to hand redis-py, and whether it names a Redis Cluster."""
    plain, mode = _split_mode(url)
    if mode == "auto":
        return plain, _server_is_cluster(plain)
    return plain, mode == "yes"


def connect(url: str, timeout_ms: int | None = None, **options: Any) -> aredis.Redis:
    """An asyncio client whose stream replies are left as hiredis returns them (lists of bytes).

    With timeout_ms, a round trip (or a connect) that takes longer fails with a TimeoutError, and no
    failed round trip is retried here: a retry would stretch the wait past timeout_ms, and could run
    a command twice when only its reply was lost. Callers answer a retriable error instead, and the
    pool replaces connections that broke. Blocking pub/sub reads (listen()) are exempt from it.

    On a cluster this is a redis.asyncio.RedisCluster (typed as the plain client: storage code that
    needs the difference asks is_cluster).
    """
    plain, clustered = cluster_url(url)
    if timeout_ms is not None:
        options = {
            "socket_timeout": timeout_ms / 1000,
            "socket_connect_timeout": timeout_ms / 1000,
            "retry": Retry(NoBackoff(), 0),
            **options,
        }
    if clustered:
        return _connect_cluster(plain, options)  # type: ignore[return-value]
    # The URL's scheme picks the connection class (TLS for rediss://), then the packing one of its kind.
    client = aredis.Redis.from_url(plain, decode_responses=False, **options)
    pool = client.connection_pool
    pool.connection_class = _packed(pool.connection_class)
    for command in _RAW_REPLY_COMMANDS:
        client.response_callbacks[command] = _raw
    return client


def _connect_cluster(url: str, options: dict[str, Any]) -> acluster.RedisCluster:
    # Surviving shards keep serving while one has no primary (a failover in progress).
    options.setdefault("retry", Retry(NoBackoff(), 0))
    client = acluster.RedisCluster.from_url(
        url, decode_responses=False, require_full_coverage=False, **options
    )
    # The cluster client takes no connection class; its nodes, including those found later through
    # MOVED, are made from this one shared dict (which holds the TLS class and options for rediss://).
    kwargs = client.connection_kwargs
    kwargs["connection_class"] = _packed(kwargs.get("connection_class", AsyncConnection))
    for command in _RAW_REPLY_COMMANDS:
        client.response_callbacks[command] = _raw
    return client


def _raw_replies_on_nodes(cluster_client: scluster.RedisCluster) -> None:
    """The blocking cluster client parses replies with each node's own client: raw stream replies are
    set on the nodes it has and on those it makes later (after a failover or a reshard)."""
    manager = cluster_client.nodes_manager
    make_node = manager.create_redis_node

    def make_raw_node(host: str, port: int, **kwargs: Any) -> redis.Redis:
        node: redis.Redis = make_node(host, port, **kwargs)
        for command in _RAW_REPLY_COMMANDS:
            node.response_callbacks[command] = _raw
        return node

    manager.create_redis_node = make_raw_node  # type: ignore[method-assign]
    for node in cluster_client.get_nodes():
        if node.redis_connection is not None:
            for command in _RAW_REPLY_COMMANDS:
                node.redis_connection.response_callbacks[command] = _raw


def connect_sync(url: str, **options: Any) -> redis.Redis:
    plain, clustered = cluster_url(url)
    if clustered:
        options.setdefault("retry", SyncRetry(NoBackoff(), 0))  # as connect(): never run a call twice
        cluster_client = scluster.RedisCluster.from_url(
            plain, decode_responses=False, require_full_coverage=False, **options
        )
        _raw_replies_on_nodes(cluster_client)
        return cluster_client  # type: ignore[return-value]
    client = redis.Redis.from_url(plain, decode_responses=False, **options)
    for command in _RAW_REPLY_COMMANDS:
        client.response_callbacks[command] = _raw
    return client
