"""The Redis ACL rules of a user that may run Schooner (broker, MQ library, Spark source and sink) on one
keyspace prefix and nothing else: its keys `<prefix>:*` (tenants' included, docs/key-layout.md), its
pub/sub channels `<prefix>:*`, and only the commands Schooner sends (docs/security.md, section "Redis").

The commands were found by running the test suite's brokers, MQ clients and Spark jobs as a user with
these rules and reading Redis's ACL LOG for refusals; tests/storage/redis/test_acl.py keeps them true.
No command here ignores key patterns (as FLUSHALL or KEYS would): the user cannot reach another key.
"""

from __future__ import annotations

# By what they are for; each is a command, or a container command's one subcommand (CLUSTER|SLOTS).
COMMANDS = (
    # connections: redis-py's handshake (AUTH and HELLO need no rule) and health checks
    "ping", "select", "client|setinfo",
    # server facts: cluster detection and the eviction check (INFO), acks=all, DescribeLogDirs
    "info", "wait", "waitaof", "memory|usage",
    # Redis Cluster: redis-py's slot map and its table of commands' keys
    "cluster|slots", "command",
    # scripts: every append, and most state changes, is one Lua script loaded once (TIME inside them)
    "evalsha", "script|load", "time",
    # streams
    "xadd", "xrange", "xrevrange", "xlen", "xtrim", "xdel", "xsetid", "xinfo|stream", "xinfo|groups",
    "xinfo|consumers", "xgroup|create", "xgroup|destroy", "xgroup|delconsumer", "xreadgroup", "xack",
    "xpending", "xclaim",
    # hashes, sets, sorted sets, strings, keys
    "hset", "hsetnx", "hget", "hmget", "hgetall", "hdel", "hkeys", "hvals", "hlen", "hexists", "hincrby",
    "hscan", "sadd", "srem", "smembers", "sismember", "zadd", "zrem", "zrange", "zrangebyscore",
    "zremrangebyscore", "zcard", "get", "set", "incr", "del", "unlink", "exists", "pexpire", "pttl", "rename",
    "object|encoding",
    # pub/sub: wake-ups of long-polling fetches and topic change notices (sharded on a cluster)
    "publish", "subscribe", "unsubscribe", "spublish", "ssubscribe", "sunsubscribe",
)  # fmt: skip


def acl_rules(prefix: str) -> list[str]:
    """The arguments of `ACL SETUSER <name> on ><password>` after the password, for this prefix."""
    return [
        "resetkeys",
        f"~{prefix}:*",
        "resetchannels",
        f"&{prefix}:*",
        "-@all",
        *(f"+{c}" for c in COMMANDS),
    ]


def acl_setuser(name: str, password: str, prefix: str) -> list[str]:
    """The whole command: `ACL SETUSER name reset on >password ...rules`."""
    return ["ACL", "SETUSER", name, "reset", "on", f">{password}", *acl_rules(prefix)]
