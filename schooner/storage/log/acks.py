"""acks=all: a produce is answered once every replica its Redis has took the appends (WAIT), and,
with `acks_all_fsync`, once the primary's AOF has them on disk (WAITAOF, Redis 7.2+).

WAIT and WAITAOF wait for the replication offset of the last write made on their own connection.
The appends go down the append lane, so the wait goes on another connection after a write of its
own: a marker key in the partition's slot. The lane's appends have run by then (their replies are
in), so the marker's offset covers them, and the lane never blocks behind a WAIT. On a cluster this
is done once per primary that took appends, all in one pipelined round trip; and only on the primary
that ran them: when the slot map names another owner now (the old one failed over), the appends may
not have reached the new one, and the answer is False (retriable; an idempotent producer's retry is
deduplicated if they did).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, Redis, StorageError, command, refresh_topology, run_many
from ..redis.client import is_cluster

MARKER_TTL_MS = 3_600_000
CHECK_EVERY_S = 5.0  # how long what INFO said of a server's replicas and AOF is trusted


@dataclass(frozen=True, slots=True)
class Durability:
    """What acks=all can wait for on one server."""

    replicas: int = 0  # connected replicas
    aof: bool = False


class NotDurable(StorageError):
    """A write took effect on the primary, but its replicas (or its AOF's fsync) did not confirm it in
    time: the client is answered with a retriable error, as for an append under acks=all."""


def parse_durability(info: Any) -> Durability:
    return Durability(int(info.get("connected_slaves", 0)), bool(int(info.get("aof_enabled", 0))))


def _refused(_: Exception) -> None:
    return None


class AcksAll:
    def __init__(
        self,
        redis: Redis,
        ks: Keyspace,
        fsync: bool = False,
        written_on: Callable[[str], str | None] | None = None,
    ) -> None:
        self._redis = redis
        self._written_on = written_on  # on a cluster: stream key -> the node that ran its last append
        self._ks = ks
        self._fsync = fsync
        self._known: dict[str, tuple[float, Durability]] = {}  # by node name ("" for one server)
        self._waitaof = True  # until a server refuses it

    def _routes(
        self, markers: Iterable[tuple[str, str | None]]
    ) -> dict[str, tuple[str, dict[str, Any]]] | None:
        """One marker key per server, with the options that send its calls to that server; None when
        a stream's appends ran on a node that no longer owns its slot. markers: (marker key, the stream
        whose appends went down a lane, or None for a write through the client)."""
        routes: dict[str, tuple[str, dict[str, Any]]] = {}
        cluster = is_cluster(self._redis)
        for key, stream in markers:
            if not cluster:
                return {"": (key, {})}
            node = self._redis.get_node_from_key(key)  # type: ignore[attr-defined]
            ran_on = self._written_on(stream) if self._written_on and stream is not None else None
            if node is None or (ran_on is not None and ran_on != node.name):
                return None
            if node.name not in routes:
                routes[node.name] = (key, {"target_nodes": node})
        return routes

    async def wait(self, partitions: Iterable[tuple[str, int]], timeout_ms: int) -> bool:
        """True once every replica of each server holding these partitions has their appends."""
        markers: list[tuple[str, str | None]] = [
            (self._ks.acks_marker(t, p), self._ks.stream(t, p)) for t, p in partitions
        ]
        return await self._wait(markers, timeout_ms)

    async def wait_keys(self, keys: Iterable[str], timeout_ms: int) -> bool:
        """The same for writes to these keys made through the client (a coordinator's state): True
        once every replica (and the AOF, with fsync) of each server holding them has them."""
        return await self._wait([(self._ks.acks_marker_for(k), None) for k in keys], timeout_ms)

    async def _wait(self, markers: list[tuple[str, str | None]], timeout_ms: int) -> bool:
        if not markers:
            return True
        if is_cluster(self._redis):
            await refresh_topology(self._redis)
        routes = self._routes(markers)
        if routes is None:
            return False
        now = time.monotonic()
        stale = [
            name for name in routes if now - self._known.get(name, (-CHECK_EVERY_S, None))[0] >= CHECK_EVERY_S
        ]
        if stale:
            infos = await run_many(
                self._redis,
                [
                    command("INFO", "replication", "persistence", parse=parse_durability, **routes[n][1])
                    for n in stale
                ],
            )
            for name, durability in zip(stale, infos, strict=True):
                self._known[name] = (now, durability)
        calls: list[Call[Any]] = []
        waited: list[tuple[str, int]] = []  # (server, replicas needed), one per marker and wait
        for name, (key, options) in routes.items():
            durability = self._known[name][1]
            fsync = self._fsync and durability.aof and self._waitaof
            if not durability.replicas and not fsync:
                continue  # nothing to wait for: the primary's memory (and its AOF, if any) is all
            calls.append(command("SET", key, int(time.time() * 1000), "PX", MARKER_TTL_MS, **options))
            if fsync:
                calls.append(
                    command("WAITAOF", 1, durability.replicas, timeout_ms, on_error=_refused, **options)
                )
            else:
                calls.append(command("WAIT", durability.replicas, timeout_ms, **options))
            waited.append((name, durability.replicas))
        if not calls:
            return True
        replies = (await run_many(self._redis, calls))[1::2]
        if any(reply is None for reply in replies):  # WAITAOF refused (Redis before 7.2): WAIT instead
            self._waitaof = False
            return await self._wait(markers, timeout_ms)
        ok = True
        for (name, replicas), reply in zip(waited, replies, strict=True):
            acked = reply[1] if isinstance(reply, list) else reply  # WAITAOF: [local, replicas]
            if int(acked) < replicas:
                ok = False
                self._known.pop(name, None)  # a replica may have gone: ask INFO again next time
        return ok
