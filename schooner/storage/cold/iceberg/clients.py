"""Blocking Redis clients for the Iceberg catalog (the cold store's calls run in threads, so its Redis
calls block too). No pyiceberg here: the broker names these before any topic needs Iceberg."""

from __future__ import annotations

from typing import Any

import redis as sync_redis
import redis.cluster as sync_cluster

from ...redis.client import connect_sync, is_cluster

_TLS_OPTIONS = (
    "ssl_keyfile",
    "ssl_certfile",
    "ssl_cert_reqs",
    "ssl_ca_certs",
    "ssl_ca_data",
    "ssl_check_hostname",
)


def sync_twin(client: Any) -> Any:
    """A blocking client to the server an asyncio redis-py client talks to (the cold store's calls run
    in threads): same address, database, credentials and TLS."""
    clustered = is_cluster(client)
    kwargs = client.connection_kwargs if clustered else client.connection_pool.connection_kwargs
    kind = kwargs.get("connection_class") if clustered else client.connection_pool.connection_class
    tls = kind is not None and "SSL" in kind.__name__
    auth: dict[str, Any] = {k: kwargs[k] for k in ("username", "password") if kwargs.get(k) is not None}
    if tls:  # the certificates too (docs/security.md: rediss:// with a CA, or a client certificate)
        auth.update({k: kwargs[k] for k in _TLS_OPTIONS if kwargs.get(k) is not None})
    timeouts: dict[str, Any] = {"socket_timeout": 10.0, "socket_connect_timeout": 5.0}
    if clustered:
        node = client.get_default_node() or client.startup_nodes[0]
        return sync_cluster.RedisCluster(host=node.host, port=node.port, ssl=tls, **auth, **timeouts)
    if kwargs.get("path"):
        return sync_redis.Redis(unix_socket_path=kwargs["path"], db=kwargs.get("db", 0), **auth, **timeouts)
    return sync_redis.Redis(
        host=kwargs.get("host", "127.0.0.1"), port=kwargs.get("port", 6379), db=kwargs.get("db", 0), ssl=tls,
        **auth, **timeouts,
    )  # fmt: skip


def from_url(url: str) -> Any:
    """A blocking client of a Redis URL (the Spark connector's redis.url)."""
    return connect_sync(url, socket_timeout=10.0, socket_connect_timeout=5.0)
