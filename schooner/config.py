"""Broker settings: defaults, then a TOML config file, then SCHOONER_* environment variables, then flags.

Config file (TOML), all keys optional:
    host = "127.0.0.1"            port = 9092            advertise = "host:port"
    redis_url = "redis://..."     data_dir = ".data"     keyspace = "schooner"
    broker_id = 1                 default_partitions = 1 auto_create_topics = true
    max_request_bytes = 104857600  log_retention_check_interval_ms = 300000
    max_decompressed_batch_bytes = 0
    connections_max_idle_ms, request_timeout_ms, max_connections, max_connections_per_ip,
    max_in_flight_requests, max_in_flight_bytes, max_queued_response_bytes, fetch_max_wait_cap_ms,
    shutdown_timeout_ms, redis_timeout_ms,
    redis_maxmemory = "2gb", allow_evicting_redis = false, producer_id_expiration_ms = 86400000
    redis_memory_high_water = 0.9, redis_memory_throttle_from = 0.75
    log_format = "text"            # or "json"
    listeners = ["SASL_SSL://0.0.0.0:9093"], ssl_*, sasl_*, authorizer, super_users (docs/security.md)
    metrics_port = 9404, metrics_host = "0.0.0.0" (Prometheus metrics; off unless metrics_port is set)
    schema_registry_port = 8081, schema_registry_host (the schema registry; 0 turns it off)
    cold_store_url = "s3://bucket/prefix", cold_store_endpoint, cold_store_region,
    cold_store_access_key_id, cold_store_secret_access_key, cold_store_allow_http, cold_store_catalog,
    archive_interval_ms = 5000, archive_batch_records = 50000, archive_concurrency = 4 (tiered storage)
    processes = 2                  # broker processes on consecutive ports (one per core)
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
    # The most a compressed batch (or a legacy message set's wrappers) may inflate to; more is refused
    # with MESSAGE_TOO_LARGE, since max.message.bytes limits the compressed size only. 0: eight times
    # the topic's max.message.bytes (protocol/inflate.py).
    max_decompressed_batch_bytes: int = 0
    heartbeat_ms: int = 1000
    session_ms: int = 5000  # a broker that misses heartbeats this long leaves Metadata
    # Kafka's log.retention.check.interval.ms: how often the retention pass applies retention.ms and
    # retention.bytes to every partition. Appends never apply retention.ms (a backfill stays until then).
    log_retention_check_interval_ms: int = 300_000
    retention_check_ms: int = 30000  # how often idle producers are expired and compacted topics compacted
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
    # Per connection: bytes of responses computed but not yet taken by the client; above it the broker
    # starts no more of its requests (limits.py says why 16 MiB).
    max_queued_response_bytes: int = 16 * 1024 * 1024
    # The longest a Fetch or ShareFetch waits for min_bytes, whatever max_wait_ms it asks for.
    fetch_max_wait_cap_ms: int = 10_000
    shutdown_timeout_ms: int = 30_000  # SIGTERM: how long in-flight requests may take to finish
    # Redis
    redis_timeout_ms: int = 10_000  # a Redis round trip that takes longer fails (retriable to clients)
    redis_maxmemory: str | None = None  # embedded redis-server only, e.g. "2gb"; policy is noeviction
    allow_evicting_redis: bool = False  # start even if Redis may evict keys (and so lose records)
    # Fractions of Redis' maxmemory (broker/memory.py): record appends are refused from the high-water
    # mark on, the rest being the broker's own writes' reserve; from throttle_from on, producers of
    # tiered topics are slowed and the archiver trims Redis to what is archived. 1.0: no reserve.
    redis_memory_high_water: float = 0.9
    redis_memory_throttle_from: float = 0.75
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
    # Kafka's max.incremental.fetch.session.cache.slots (KIP-227): fetch sessions one broker keeps.
    fetch_session_cache_slots: int = 1000
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
    # Security (docs/security.md), with Kafka's names. `listeners` entries are PROTOCOL://host:port with
    # PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (the listener's name is its protocol); when
    # empty, host and port make the one PLAINTEXT listener. advertised_listeners: what clients of each
    # listener are told to connect to (same form; a listener not named advertises its own address).
    listeners: list[str] = field(default_factory=list)
    advertised_listeners: list[str] = field(default_factory=list)
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_keyfile_password: str | None = None
    ssl_cafile: str | None = None  # the CA that signs client certificates
    ssl_client_auth: str = "none"  # none, requested, required
    # Kafka's ssl.principal.mapping.rules: a certificate's subject to a principal name.
    ssl_principal_mapping_rules: str = "DEFAULT"
    ssl_handshake_timeout_ms: int = 10_000  # a TLS handshake not done by then closes the connection
    sasl_enabled_mechanisms: list[str] = field(
        default_factory=lambda: ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]
    )
    # Kafka's sasl.server.max.receive.size: the largest frame a client may send before it is authenticated.
    sasl_max_receive_bytes: int = 524_288
    connections_max_reauth_ms: int = 0  # KIP-368: 0 means a session never has to re-authenticate
    # KIP-306: a connection whose SASL authentication failed is closed this long after the answer.
    connection_failed_authentication_delay_ms: int = 100
    sasl_oauthbearer_jwks_file: str | None = None  # OAUTHBEARER: the JWKS file whose keys sign tokens
    # Authorization: Kafka's ACL model, off unless `authorizer` is true.
    authorizer: bool = False
    super_users: list[str] = field(default_factory=list)  # principals, e.g. "User:admin"
    allow_everyone_if_no_acl_found: bool = False
    # Quotas (KIP-13, KIP-124): the rate window is quota_window_num samples of this many seconds each.
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    # Logs (docs/operations.md, "Logs"): "text" lines, or "json", one object per line (ops/logs.py).
    log_format: str = "text"
    # Metrics (docs/operations.md): Prometheus text at http://metrics_host:metrics_port/metrics. Off when
    # metrics_port is unset or 0; metrics_host defaults to the host of the first listener.
    metrics_port: int | None = None
    metrics_host: str | None = None
    # The schema registry (docs/schemas.md): Confluent's REST API on its own HTTP port, 0 for none; the
    # host defaults to the first listener's, and it serves HTTPS when that listener is SSL or SASL_SSL.
    schema_registry_port: int = 8081
    schema_registry_host: str | None = None
    # Broker processes on this host (docs/operations.md, "Several processes on one host"): each its own
    # broker on the next port, over the same Redis; ops/processes.py starts and stops them together.
    processes: int = 1
    # The cold tier (docs/tiered-storage.md): where topics with remote.storage.enable are archived. A path,
    # file:///path or s3://bucket/prefix; None (unset): <data_dir>/cold with the embedded redis-server,
    # none with an external Redis; "" none. The S3 settings apply to an s3:// URL only.
    cold_store_url: str | None = None
    cold_store_endpoint: str | None = None  # an S3-compatible store's URL, e.g. http://127.0.0.1:9000
    cold_store_region: str | None = None
    cold_store_access_key_id: str | None = None
    cold_store_secret_access_key: str | None = None
    cold_store_allow_http: bool | None = None  # None: true when the endpoint is http://
    # The catalog of topics whose table is Iceberg (schooner.table.format=iceberg): sql+sqlite:///path or
    # postgresql://... (an SQL catalog), http(s)://... (a REST catalog); None (unset): kept in Redis.
    cold_store_catalog: str | None = None
    # The archiver: a pass every archive_interval_ms over this broker's tiered partitions, up to
    # archive_batch_records records per Delta commit, archive_concurrency partitions at a time.
    archive_interval_ms: int = 5000
    archive_batch_records: int = 50_000
    archive_concurrency: int = 4
    # The settings the operator gave (config file, environment, flags), which load() fills in: Kafka
    # reports those as STATIC_BROKER_CONFIG even when they equal the default. Not a setting itself.
    explicit: frozenset[str] = frozenset()

    @property
    def advertised_host_port(self) -> tuple[str, int]:
        if self.advertise:
            host, _, port = self.advertise.rpartition(":")
            return host, int(port)
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return host, self.port

    def listeners_in_force(self) -> list[Listener]:
        """The listeners to open: `listeners`, or the one PLAINTEXT listener on host and port."""
        if not self.listeners:
            return [Listener("PLAINTEXT", self.host, self.port)]
        found = [Listener.parse(text) for text in self.listeners]
        protocols = [listener.protocol for listener in found]
        if len(set(protocols)) != len(protocols):
            raise ValueError(f"listeners: each protocol may have one listener: {self.listeners}")
        return found

    def advertised_for(self, listener: Listener, bound_port: int) -> tuple[str, int]:
        """The host and port clients of this listener are told to connect to."""
        for text in self.advertised_listeners:
            named = Listener.parse(text)
            if named.protocol == listener.protocol:
                return named.host, named.port
        if listener.protocol == "PLAINTEXT" and self.advertise and not self.listeners:
            return self.advertised_host_port
        host = listener.host if listener.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return host, bound_port if listener.port == 0 else listener.port

    @property
    def cold_store_root(self) -> str | None:
        """The cold store's URL in force: None when the broker has none. An embedded broker's default
        is the absolute path of <data_dir>/cold."""
        if self.cold_store_url is None:
            return str((Path(self.data_dir) / "cold").resolve()) if self.redis_url is None else None
        return self.cold_store_url or None

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """Where /metrics is served (host, port), or None when metrics are off."""
        if not self.metrics_port:
            return None
        host = self.metrics_host if self.metrics_host is not None else self.listeners_in_force()[0].host
        return host, self.metrics_port

    @property
    def schema_registry_address(self) -> tuple[str, int] | None:
        """Where the schema registry is served (host, port), or None when it is off."""
        if not self.schema_registry_port:
            return None
        host = self.schema_registry_host
        return (self.listeners_in_force()[0].host if host is None else host), self.schema_registry_port


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class Listener:
    """One address the broker accepts clients on, and the security protocol spoken there."""

    protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; also the listener's name
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def parse(cls, text: str) -> Listener:
        """PROTOCOL://host:port, the host in brackets for IPv6, empty for every address."""
        protocol, sep, address = text.strip().partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ValueError(f"listener {text!r} is not PROTOCOL://host:port")
        protocol = protocol.upper()
        if protocol not in SECURITY_PROTOCOLS:
            known = ", ".join(SECURITY_PROTOCOLS)
            raise ValueError(f"listener {text!r}: the protocol must be one of {known}")
        return cls(protocol, host.strip("[]"), int(port))


_FIELDS = {f.name: f for f in dataclasses.fields(Settings) if f.name != "explicit"}
_TOPIC_ENV_PREFIX = "SCHOONER_TOPIC_"


def _coerce(name: str, value: Any) -> Any:
    kind = _FIELDS[name].type
    if value is None:
        return None
    if "list" in str(kind):  # a TOML array, or comma-separated text from the environment
        items = value if isinstance(value, list) else str(value).split(",")
        return [str(item).strip() for item in items if str(item).strip()]
    if "bool" in str(kind):
        return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
    if "int" in str(kind):
        return int(value)
    if "float" in str(kind):
        return float(value)
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
    settings = Settings(**values, explicit=frozenset(values))
    settings.topic_defaults.update(topic_defaults)
    return settings


COMPILED_ENV = "SCHOONER_COMPILED"
_OFF = ("0", "false", "no", "off")


def compiled_enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether the compiled fast paths may run: SCHOONER_COMPILED=0 (or false, no, off) turns them all off.

    Then the record-batch encoder and reader (protocol/batch_c.py) and the RESP encoder
    (storage/redis/resp.py) are None, as where they were not built; the embedded redis-server does not
    load the stream module, and log_append.lua does not call SCHOONER.XADDRUN on a server that has it.
    Each module reads this once, when it is imported. `make test` runs the fast paths' tests a second
    time with it off (the Makefile), so that the Python paths keep working.
    """
    value = (os.environ if env is None else env).get(COMPILED_ENV, "")
    return value.strip().lower() not in _OFF
