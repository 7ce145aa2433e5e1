"""`schooner broker --check`: is this config, and the Redis under it, fit to run a broker on?

One line per check, `ok`, `warn`, `fail` or `skip` with the reason; the exit status is 1 when any check
failed, 0 otherwise. Nothing is served. The config checks are those the broker makes when it starts
(config.load, the listeners, the TLS files); the Redis checks read facts with storage/redis/health.py
and judge them here, with pure rules (redis_checks) that tests can call on made-up facts.

Why each Redis rule:
- version: Schooner needs Redis 7.0 (XADD 0-*, ACL DRYRUN, sharded pub/sub); WAITAOF needs 7.2.
- persistence: with AOF each write reaches the disk within a second (appendfsync everysec) or at once
  (always); RDB snapshots alone lose every record since the last snapshot when Redis stops; neither
  loses everything.
- maxmemory-policy: allkeys-* policies evict any key when memory is full, stream keys (records) too;
  volatile-* ones evict only keys with a TTL, which stream keys never have (broker registrations and MQ
  leases do, and are re-made). The broker refuses to start on any policy but noeviction unless
  allow_evicting_redis is set (broker/server.py), which is a fail here too.
- cluster: every one of the 16384 slots must be served, or the partitions hashed to the missing ones
  cannot be written or read.
- ACL: the user must be allowed every command Schooner sends (storage/redis/acl.py), on keys and
  channels under the keyspace prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import config
from ..storage.redis.client import redacted
from ..storage.redis.embedded import DataDirInUse, EmbeddedRedis
from ..storage.redis.health import CLUSTER_SLOTS, NodeFacts, RedisFacts, gather
from ..storage.topics.config import InvalidConfig, validate_defaults
from .logs import formatter

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
MIN_VERSION = (7, 0)
WAITAOF_VERSION = (7, 2)


@dataclass(frozen=True)
class Check:
    status: str  # ok, warn, fail, skip
    name: str
    message: str

    def line(self) -> str:
        return f"{self.status:<4} {self.name}: {self.message}"


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


# -- the rules ----------------------------------------------------------------------------------


def version_check(node: NodeFacts, acks_all_fsync: bool) -> Check:
    found = _version(node.version)
    if found < MIN_VERSION:
        return Check(FAIL, "redis version", f"{node.version} at {node.address}: Schooner needs Redis >= 7.0")
    if acks_all_fsync and found < WAITAOF_VERSION:
        return Check(
            WARN, "redis version",
            f"{node.version} at {node.address}: acks_all_fsync needs WAITAOF (Redis >= 7.2); acks=all will "
            "not wait for the fsync",
        )  # fmt: skip
    return Check(OK, "redis version", f"{node.version}")


def persistence_check(node: NodeFacts) -> Check:
    where = node.address
    if node.aof_enabled:
        fsync = node.appendfsync
        if fsync in ("everysec", "always"):
            return Check(OK, "redis persistence", f"AOF on, appendfsync {fsync}")
        if fsync == "no":
            return Check(
                WARN, "redis persistence",
                f"AOF on at {where}, but appendfsync no: the OS decides when writes reach the disk, so a "
                "crash of the host may lose many seconds of records; use everysec or always",
            )  # fmt: skip
        return Check(OK, "redis persistence", "AOF on (appendfsync not readable: CONFIG GET is refused)")
    rdb = node.save if node.save is not None else ("?" if node.rdb_saves else "")
    if rdb:
        return Check(
            WARN, "redis persistence",
            f"RDB snapshots only at {where} (AOF off): records written since the last snapshot are lost "
            "when Redis stops; set appendonly yes",
        )  # fmt: skip
    return Check(
        WARN, "redis persistence",
        f"none at {where} (AOF off, no RDB snapshots): every record is lost when Redis stops; set "
        "appendonly yes",
    )  # fmt: skip


def policy_check(node: NodeFacts, allow_evicting: bool) -> list[Check]:
    policy = node.memory.policy
    name = "redis maxmemory-policy"
    if policy == "noeviction":
        return [Check(OK, name, "noeviction: a full Redis refuses writes (producers get a retriable error)")]
    if policy.startswith("allkeys-"):
        found = Check(
            WARN, name,
            f"{policy} at {node.address} can evict stream keys when memory is full: records would vanish "
            "silently; use noeviction",
        )  # fmt: skip
    else:
        found = Check(
            OK, name,
            f"{policy} cannot evict stream keys (they have no TTL); it may evict keys that have one (broker "
            "registrations, MQ leases), which are made again",
        )  # fmt: skip
    if allow_evicting:
        return [found]
    refusal = Check(
        FAIL, "broker start",
        f"the broker refuses to start on maxmemory-policy {policy}: set noeviction, or allow_evicting_redis "
        "= true to start anyway",
    )  # fmt: skip
    return [found, refusal]


def maxmemory_check(node: NodeFacts, settings: config.Settings) -> Check:
    mem = node.memory
    if mem.maxmemory:
        mark, slow = settings.redis_memory_high_water, settings.redis_memory_throttle_from
        return Check(
            OK, "redis maxmemory",
            f"{_size(mem.maxmemory)} ({_size(mem.used)} used, {mem.fill:.0%}); record appends wait from "
            f"{mark:.0%} (redis_memory_high_water, {_size(int(mem.maxmemory * mark))}), the rest kept for "
            f"the brokers' own writes; tiered producers are slowed from {slow:.0%} "
            "(redis_memory_throttle_from)",
        )  # fmt: skip
    host = f" of the host's {_size(mem.system)}" if mem.system else ""
    return Check(
        OK, "redis maxmemory",
        f"0, no limit: Redis may use all{host} memory ({_size(mem.used)} used); set maxmemory so that a "
        "full Redis refuses writes before the host runs out",
    )  # fmt: skip


def stream_module_check(node: NodeFacts) -> Check:
    if node.stream_module is None:
        return Check(SKIP, "redis stream module", "not checked: COMMAND INFO refused")
    if node.stream_module:
        return Check(
            OK, "redis stream module", "loaded: an append adds its records in runs (SCHOONER.XADDRUN)"
        )
    return Check(
        OK, "redis stream module",
        f"not loaded at {node.address}: appends run one XADD per record, about half the produce rate; "
        "docs/operations.md says how to load it",
    )  # fmt: skip


def redis_checks(facts: RedisFacts, settings: config.Settings) -> list[Check]:
    """The verdicts on one Redis (or cluster): pure, from the facts and the settings."""
    if facts.error is not None:
        if facts.auth_failed:
            return [
                Check(FAIL, "redis auth", f"{facts.url}: {facts.error}; check the URL's user and password")
            ]
        return [Check(FAIL, "redis reachable", f"{facts.url}: {facts.error}")]
    checks = [Check(OK, "redis reachable", f"{facts.url}, authenticated")]
    if facts.cluster is not None:
        c = facts.cluster
        if c.state == "ok" and c.slots_ok == CLUSTER_SLOTS:
            checks.append(
                Check(OK, "redis cluster", f"{c.primaries} primaries serve all {CLUSTER_SLOTS} slots")
            )
        else:
            checks.append(Check(
                FAIL, "redis cluster",
                f"cluster_state {c.state}: {c.slots_ok} of {CLUSTER_SLOTS} slots served ({c.slots_assigned} "
                "assigned); partitions on the others can be neither written nor read",
            ))  # fmt: skip
    else:
        checks.append(Check(OK, "redis cluster", "a single server (not a cluster)"))
    for node in facts.nodes:
        checks.append(version_check(node, settings.acks_all_fsync))
        checks.append(persistence_check(node))
        checks.extend(policy_check(node, settings.allow_evicting_redis))
        checks.append(maxmemory_check(node, settings))
        checks.append(stream_module_check(node))
    checks.append(acl_check(facts))
    return _dedupe(checks)


def acl_check(facts: RedisFacts) -> Check:
    acl = facts.acl
    if acl is None or acl.unchecked is not None:
        why = acl.unchecked if acl is not None else "not asked"
        return Check(SKIP, "redis acl", f"not checked: {why}; docs/security.md gives the rules")
    if acl.denied:
        shown = "; ".join(acl.denied[:5]) + (
            f"; and {len(acl.denied) - 5} more" if len(acl.denied) > 5 else ""
        )
        return Check(FAIL, "redis acl", f"user {acl.user} may not run what Schooner sends: {shown}")
    return Check(OK, "redis acl", f"user {acl.user} may run every command Schooner sends")


def _dedupe(checks: list[Check]) -> list[Check]:
    """A cluster's primaries usually agree: one line for each distinct verdict."""
    seen: set[Check] = set()
    return [c for c in checks if not (c in seen or seen.add(c))]  # type: ignore[func-returns-value]


# -- the config ---------------------------------------------------------------------------------


def config_checks(
    config_file: str | None, overrides: Mapping[str, Any]
) -> tuple[list[Check], config.Settings | None]:
    """config.load and what the broker checks before it opens a port; the settings, None when unusable."""
    from ..broker.net.tls import TlsSetupError, certificate_principals, server_contexts

    source = config_file or "defaults, environment and flags"
    try:
        settings = config.load(config_file, overrides=overrides)
    except (ValueError, OSError, TypeError) as exc:
        return [Check(FAIL, "config", f"{source}: {exc}")], None
    checks = [Check(OK, "config", f"{source} loaded")]
    try:
        formatter(settings.log_format)
        listeners = settings.listeners_in_force()
        contexts = server_contexts(settings, listeners)
        if contexts:
            certificate_principals(settings)
    except (ValueError, OSError) as exc:  # TlsSetupError is a ValueError
        kind = "tls" if isinstance(exc, TlsSetupError) else "config"
        checks.append(Check(FAIL, kind, str(exc)))
        return checks, settings
    shown = ", ".join(f"{x.protocol}://{x.host}:{x.port}" for x in listeners)
    checks.append(Check(OK, "listeners", shown + (" (TLS files load)" if contexts else "")))
    if settings.topic_defaults:
        checks.append(topic_defaults_check(settings.topic_defaults))
    return checks, settings


def topic_defaults_check(defaults: Mapping[str, str]) -> Check:
    """Each topic default names a topic config and has a value it may take (the broker applies them to
    every new topic, and a bad one would fail appends later)."""
    try:
        validate_defaults(defaults)
    except InvalidConfig as exc:
        return Check(FAIL, "topic defaults", str(exc))
    return Check(OK, "topic defaults", ", ".join(f"{k}={v}" for k, v in sorted(defaults.items())))


def run(config_file: str | None, overrides: Mapping[str, Any], echo: Callable[[str], None]) -> int:
    """Runs every check, echoes a line each; the exit status."""
    checks, settings = config_checks(config_file, overrides)
    for c in checks:
        echo(c.line())
    if settings is not None:
        for c in [*_check_redis(settings, echo), cold_store_check(settings)]:
            checks.append(c)
            echo(c.line())
    return 1 if any(c.status == FAIL for c in checks) else 0


def cold_store_check(settings: config.Settings) -> Check:
    """The cold tier of tiered topics: a probe object written, read back and deleted under its root."""
    from ..broker.tiering.tiering import cold_location
    from ..storage.cold.errors import ColdStoreUnavailable
    from ..storage.cold.probe import probe

    try:
        location = cold_location(settings)
    except ValueError as exc:
        return Check(FAIL, "cold store", str(exc))
    if location is None:
        return Check(OK, "cold store", "none (cold_store_url unset, external Redis): topics cannot be tiered")
    try:
        probe(location)
    except ColdStoreUnavailable as exc:
        return Check(FAIL, "cold store", f"{exc}; tiered topics keep every record in Redis until it works")
    return Check(OK, "cold store", f"{location.root}: writes, reads and deletes work")


def _check_redis(settings: config.Settings, echo: Callable[[str], None]) -> list[Check]:
    timeout_s = min(settings.redis_timeout_ms / 1000, 5.0)
    if settings.redis_url is not None:
        return redis_checks(gather(settings.redis_url, settings.keyspace, timeout_s), settings)
    data_dir = Path(settings.data_dir) / "redis"
    embedded = EmbeddedRedis(data_dir, persistent=True, maxmemory=settings.redis_maxmemory)
    try:
        url = embedded.start()
    except DataDirInUse:  # a broker runs on this data folder: check its redis-server
        running = EmbeddedRedis.running_url(data_dir)
        if running is None:
            return [Check(FAIL, "redis reachable", f"{data_dir} is in use, and holds no url file")]
        echo(f"info embedded redis-server of a running broker, at {redacted(running)}")
        return redis_checks(gather(running, settings.keyspace, timeout_s), settings)
    except (RuntimeError, OSError) as exc:
        return [Check(FAIL, "redis reachable", f"cannot start the embedded redis-server: {exc}")]
    try:
        echo(f"info embedded redis-server started for the check, in {embedded.data_dir}")
        return redis_checks(gather(url, settings.keyspace, timeout_s), settings)
    finally:
        embedded.stop()
