"""Broker settings: defaults, then a TOML config file, then SCHOONER_* environment variables, then flags.

Config file (TOML), all keys optional:
    host = "127.0.0.1"            port = 9092            advertise = "host:port"
    redis_url = "redis://..."     data_dir = ".data"     keyspace = "schooner"
    broker_id = 1                 default_partitions = 1 auto_create_topics = true
    max_request_bytes = 104857600
    connections_max_idle_ms, request_timeout_ms, max_connections, max_connections_per_ip,
    max_in_flight_requests, max_in_flight_bytes, shutdown_timeout_ms, redis_timeout_ms,
    redis_maxmemory = "2gb", allow_evicting_redis = false, producer_id_expiration_ms = 86400000
    (docs/configuration.md)
    [topic_defaults]               # any topic config, e.g.
    "retention.ms" = "604800000"
Each key has an environment variable: SCHOONER_<KEY IN CAPITALS>; topic defaults use
SCHOONER_TOPIC_<NAME WITH DOTS AS UNDERSCORES>, e.g. SCHOONER_TOPIC_RETENTION_MS.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 9092
    advertise: str | None = None  # HOST:PORT that clients are told to connect to
    redis_url: str | None = None  # None: start the embedded redis-server
    data_dir: str = ".data"
    keyspace: str = "schooner"
    broker_id: int | None = None  # None: allocated from Redis
    rack: str | None = None
    default_partitions: int = 1
    auto_create_topics: bool = True
    max_request_bytes: int = 100 * 1024 * 1024
    heartbeat_ms: int = 1000
    session_ms: int = 5000  # a broker that misses heartbeats this long leaves Metadata
    retention_check_ms: int = 30000  # how often idle partitions are trimmed
    # Kafka's producer.id.expiration.ms: an idempotent producer that has not appended for this long is
    # forgotten by the sweep that runs every retention_check_ms.
    producer_id_expiration_ms: int = 86_400_000
    group_min_session_ms: int = 6000
    group_max_session_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3000  # a new group waits this long for more members
    consumer_group_session_ms: int = 45000  # KIP-848 members silent this long are removed
    consumer_group_heartbeat_ms: int = 5000  # KIP-848 heartbeat interval told to members
    # Connection hygiene (Kafka's names where Kafka has the setting).
    connections_max_idle_ms: int = 600_000  # an idle connection is closed after this long
    request_timeout_ms: int = 30_000  # a frame that does not complete within this closes its connection
    max_connections: int = 10_000  # in all; the newest connection over the cap is closed
    max_connections_per_ip: int = 2_000
    max_in_flight_requests: int = 64  # per connection: requests read but not yet answered
    max_in_flight_bytes: int = 128 * 1024 * 1024  # per connection: bytes of those requests
    shutdown_timeout_ms: int = 30_000  # SIGTERM: how long in-flight requests may take to finish
    # Redis
    redis_timeout_ms: int = 10_000  # a Redis round trip that takes longer fails (retriable to clients)
    redis_maxmemory: str | None = None  # embedded redis-server only, e.g. "2gb"; policy is noeviction
    allow_evicting_redis: bool = False  # start even if Redis may evict keys (and so lose records)
    acks_all_fsync: bool = False  # acks=all also waits for the AOF fsync (WAITAOF), where Redis has AOF
    topic_defaults: dict[str, str] = field(default_factory=dict)
    # Compaction (topics with cleanup.policy compact), on the sweep every retention_check_ms: each step
    # is one script over this many entries; a partition gets at most compaction_max_steps per sweep.
    compaction_step_entries: int = 500
    compaction_max_steps: int = 200
    # Transactions: the longest transaction.timeout.ms a producer may ask for, how long an idle
    # transactional id is remembered, and how often the coordinator looks for timed-out transactions.
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_check_ms: int = 1000
    # Share groups (KIP-932), Kafka's group.share.* broker settings: the defaults of the share.* group
    # configs, and the bounds a group config must keep within.
    share_record_lock_duration_ms: int = 30_000
    share_min_record_lock_duration_ms: int = 15_000
    share_max_record_lock_duration_ms: int = 60_000
    share_delivery_count_limit: int = 5
    share_min_delivery_count_limit: int = 2
    share_max_delivery_count_limit: int = 10
    share_partition_max_record_locks: int = 2000
    share_session_timeout_ms: int = 45_000
    share_heartbeat_interval_ms: int = 5000
    # The bounds of the other group configs (Kafka's group.consumer.min/max.* and group.share.min/max.*),
    # and KIP-1191's errors.deadletterqueue.topic.name.prefix: a group's DLQ topic must start with it.
    consumer_group_min_session_ms: int = 45_000
    consumer_group_max_session_ms: int = 60_000
    consumer_group_min_heartbeat_ms: int = 5000
    consumer_group_max_heartbeat_ms: int = 15_000
    share_min_session_timeout_ms: int = 45_000
    share_max_session_timeout_ms: int = 60_000
    share_min_heartbeat_interval_ms: int = 5000
    share_max_heartbeat_interval_ms: int = 15_000
    share_min_partition_max_record_locks: int = 100
    share_max_partition_max_record_locks: int = 4000
    dlq_topic_name_prefix: str = "dlq."

    @property
    def advertised_host_port(self) -> tuple[str, int]:
        if self.advertise:
            host, _, port = self.advertise.rpartition(":")
            return host, int(port)
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return host, self.port


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_TOPIC_ENV_PREFIX = "SCHOONER_TOPIC_"


def _coerce(name: str, value: Any) -> Any:
    kind = _FIELDS[name].type
    if value is None:
        return None
    if "bool" in str(kind):
        return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
    if "int" in str(kind):
        return int(value)
    return str(value)


def load(
    config_file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    topic_defaults: dict[str, str] = {}
    path = config_file or env.get("SCHOONER_CONFIG")
    if path:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        for key, value in data.items():
            if key == "topic_defaults":
                topic_defaults.update({str(k): str(v) for k, v in value.items()})
            elif key in _FIELDS:
                values[key] = _coerce(key, value)
            else:
                raise ValueError(f"unknown setting {key!r} in {path}")
    for name in _FIELDS:
        raw = env.get(f"SCHOONER_{name.upper()}")
        if raw is not None and name != "topic_defaults":
            values[name] = _coerce(name, raw)
    for key, raw in env.items():
        if key.startswith(_TOPIC_ENV_PREFIX):
            topic_defaults[key[len(_TOPIC_ENV_PREFIX) :].lower().replace("_", ".")] = raw
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
    settings = Settings(**values)
    settings.topic_defaults.update(topic_defaults)
    return settings
