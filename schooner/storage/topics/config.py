"""Topic configs: names, types, defaults, synonyms, documentation and validation, in one table. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from ..offsets import DEFAULT_SEQUENCE_BITS, DENSE, ENCODINGS, MAX_SEQUENCE_BITS

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

SEQUENCE_BITS = "schooner.sequence.bits"
OFFSET_ENCODING = "schooner.offset.encoding"
TRIM_APPROXIMATE = "schooner.trim.approximate"
# The cold tier's table of a tiered topic (docs/tiered-storage.md), each fixed when the topic is created:
# its format, and how its keys and values are held (raw bytes, or typed columns decoded by the schema id
# each record carries or by the subject's latest schema, beside the raw bytes).
TABLE_FORMAT = "schooner.table.format"
TABLE_KEY_MODE = "schooner.table.key.mode"
TABLE_VALUE_MODE = "schooner.table.value.mode"
TABLE_FORMATS = ("delta", "iceberg")
RAW, SCHEMA_ID_PREFIX, SCHEMA_LATEST = "raw", "schema_id_prefix", "schema_latest"
TABLE_MODES = (RAW, SCHEMA_ID_PREFIX, SCHEMA_LATEST)
TABLE_CONFIGS = (TABLE_FORMAT, TABLE_KEY_MODE, TABLE_VALUE_MODE)
TIMESTAMP_BEFORE_MAX_MS = "message.timestamp.before.max.ms"
TIMESTAMP_AFTER_MAX_MS = "message.timestamp.after.max.ms"
TIMESTAMP_DIFFERENCE_MAX_MS = "message.timestamp.difference.max.ms"
REMOTE_STORAGE = "remote.storage.enable"
LOCAL_RETENTION_MS = "local.retention.ms"
LOCAL_RETENTION_BYTES = "local.retention.bytes"
MAX_DECOMPRESSED_BYTES = "max.decompressed.message.bytes"
# Confluent Server's broker-side schema validation (docs/schemas.md), by its names.
KEY_SCHEMA_VALIDATION = "confluent.key.schema.validation"
VALUE_SCHEMA_VALIDATION = "confluent.value.schema.validation"
KEY_SUBJECT_STRATEGY = "confluent.key.subject.name.strategy"
VALUE_SUBJECT_STRATEGY = "confluent.value.subject.name.strategy"
_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."
_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")


class InvalidConfig(ValueError):
    pass


def valid_topic_name(name: str) -> bool:
    return bool(TOPIC_NAME.match(name)) and name not in (".", "..")


def _long(low: int, high: int = 2**63 - 1) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            number = int(value)
        except ValueError:
            raise InvalidConfig(f"{value!r} is not an integer") from None
        if not low <= number <= high:
            raise InvalidConfig(f"{number} is outside [{low}, {high}]")

    return check


def _one_of(*choices: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in choices:
            raise InvalidConfig(f"{value!r} is not one of {', '.join(choices)}")

    return check


def _boolean(value: str) -> None:
    if value.lower() not in ("true", "false"):
        raise InvalidConfig(f"{value!r} is not true or false")


def _double(low: float, high: float) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            number = float(value)
        except ValueError:
            raise InvalidConfig(f"{value!r} is not a number") from None
        if not low <= number <= high:  # NaN fails too
            raise InvalidConfig(f"{value} is outside [{low}, {high}]")

    return check


def _gzip_level(value: str) -> None:
    _long(-1, 9)(value)
    if value.strip() == "0":
        raise InvalidConfig("0 is not -1 (the codec's default) or a level in [1, 9]")


def _anything(value: str) -> None:
    return None


CLEANUP_POLICIES = ("delete", "compact")


def _cleanup_policy(value: str) -> None:
    parts = [p.strip() for p in value.split(",")]
    if not value.strip() or any(p not in CLEANUP_POLICIES for p in parts) or len(set(parts)) < len(parts):
        raise InvalidConfig(f"{value!r} is not delete, compact or compact,delete")


class ConfigType(IntEnum):
    """A config's type, numbered as Kafka's DescribeConfigs (v3+) reports it."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7


class ConfigSource(IntEnum):
    """Where a described config's value comes from, numbered as Kafka's DescribeConfigs reports it."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One config as DescribeConfigs reports it (of a topic, the broker or a group)."""

    name: str
    value: str | None
    source: int
    read_only: bool
    config_type: int
    synonyms: tuple[tuple[str, str | None, int], ...]  # (name, value, source), the winning one first
    documentation: str | None = None


NO_EFFECT_DOC = "Accepted for compatibility; it has no effect on a log kept in Redis Streams."


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """Every fact about one topic config, in one place."""

    name: str
    default: str
    check: Callable[[str], None]
    effective: bool  # False: accepted and described for compatibility, but has no effect here
    read_only: bool = False
    kind: ConfigType = ConfigType.LONG
    synonym: str | None = None  # the broker-wide config that supplies its default (Kafka's synonym)
    # False where Kafka's broker config has no default of its own (log.retention.ms falls back to
    # log.retention.hours): DescribeConfigs lists no default synonym then.
    broker_default_listed: bool = True

    @property
    def broker_name(self) -> str:
        return self.synonym or self.name

    @property
    def documentation(self) -> str | None:
        return _DOC.get(self.name) if self.effective else _DOC.get(self.name, NO_EFFECT_DOC)


_DOC = {
    "retention.ms": "How long records are kept before retention trims them (MINID); -1 keeps them forever.",
    "retention.bytes": "Size a partition may reach before its oldest records are trimmed; -1: no limit.",
    "cleanup.policy": "delete: retention trims the oldest records. compact: the compactor keeps the latest "
    "record per key and retention does not trim. compact,delete: both.",
    "delete.retention.ms": "How long a tombstone (a record without a value) stays after the compactor "
    "first reached it on a compacted topic.",
    "min.compaction.lag.ms": "The compactor only reaches records whose timestamp is at least this old.",
    "max.compaction.lag.ms": "A compacted partition whose oldest uncompacted record is older than this is "
    "compacted even below min.cleanable.dirty.ratio.",
    "min.cleanable.dirty.ratio": "A compaction pass begins only when the records after the compacted part "
    "are more than this fraction of the partition's records.",
    "compression.type": (
        "The compression codec of the record batches that Fetch serves for this topic: 'producer', "
        "each batch with the codec its producer used."
    ),
    "max.message.bytes": "The largest record batch a producer may send to this topic.",
    "message.timestamp.type": "CreateTime keeps the producer's timestamps; LogAppendTime the append time.",
    TIMESTAMP_BEFORE_MAX_MS: "CreateTime topics: a produced record stamped more than this before the "
    "broker's clock is refused with INVALID_TIMESTAMP.",
    TIMESTAMP_AFTER_MAX_MS: "CreateTime topics: a produced record stamped more than this after the "
    "broker's clock is refused with INVALID_TIMESTAMP.",
    TIMESTAMP_DIFFERENCE_MAX_MS: "Deprecated: the bound on either side that message.timestamp.before.max.ms "
    "or message.timestamp.after.max.ms leaves at its default.",
    OFFSET_ENCODING: "How offsets map to entry IDs: dense (offset n is ID 0-(n+1), offsets count records) or "
    "timestamp ((ms << bits) | seq); fixed when the topic is created.",
    SEQUENCE_BITS: "Low bits of a timestamp-encoded offset holding the ID's sequence; fixed at creation.",
    TRIM_APPROXIMATE: "Trim retention with '~' (approximate and cheaper) rather than exactly.",
    TABLE_FORMAT: "The format of the topic's cold-tier table: delta (Delta Lake) or iceberg. Fixed at "
    "creation.",
    TABLE_KEY_MODE: "How the cold-tier table holds keys: raw bytes, or typed columns beside them, decoded by "
    "the schema id each key carries (schema_id_prefix) or by the subject's latest schema (schema_latest). "
    "Fixed at creation.",
    TABLE_VALUE_MODE: "How the cold-tier table holds values: raw, schema_id_prefix or schema_latest, as "
    f"{TABLE_KEY_MODE}. Fixed at creation.",
    REMOTE_STORAGE: "Archive the topic to the cold tier (Delta Lake tables) and serve old records "
    "from there; needs a broker with a cold store, and a topic whose cleanup.policy is delete. Cannot be "
    "turned off.",
    LOCAL_RETENTION_MS: "Tiered topics: how long records stay in Redis once archived; -2 means "
    "retention.ms. retention.ms bounds the whole log, Redis and the cold tier together.",
    **dict.fromkeys(
        ("compression.gzip.level", "compression.lz4.level", "compression.zstd.level"),
        "Accepted for compatibility: Fetch compresses each batch again at a fixed fast level "
        "(docs/key-layout.md#compression).",
    ),
    MAX_DECOMPRESSED_BYTES: "The most one compressed record batch may inflate to on Produce; the "
    "broker's max_decompressed_batch_bytes bounds it too, whichever is lower.",
    LOCAL_RETENTION_BYTES: "Tiered topics: how many bytes of a partition stay in Redis once archived; -2 "
    "means retention.bytes, which bounds the whole log.",
}
LONG_MAX = str(2**63 - 1)

# name, default, check, effective, then type (LONG unless given) and the broker-wide synonym.
_DEFS = [
    ConfigDef(
        "retention.ms", "604800000", _long(-1), True, synonym="log.retention.ms", broker_default_listed=False
    ),
    ConfigDef("retention.bytes", "-1", _long(-1), True, synonym="log.retention.bytes"),
    ConfigDef(
        "cleanup.policy",
        "delete",
        _cleanup_policy,
        True,
        kind=ConfigType.LIST,
        synonym="log.cleanup.policy",
    ),
    ConfigDef(
        "compression.type",
        "producer",
        _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
        True,
        kind=ConfigType.STRING,
        synonym="compression.type",
    ),
    ConfigDef(
        "max.message.bytes",
        "1048588",
        _long(0, 2**31 - 1),
        True,
        kind=ConfigType.INT,
        synonym="message.max.bytes",
    ),
    ConfigDef(
        "message.timestamp.type",
        "CreateTime",
        _one_of("CreateTime", "LogAppendTime"),
        True,
        kind=ConfigType.STRING,
        synonym="log.message.timestamp.type",
    ),
    ConfigDef(OFFSET_ENCODING, DENSE, _one_of(*ENCODINGS), True, read_only=True, kind=ConfigType.STRING),
    ConfigDef(
        SEQUENCE_BITS,
        str(DEFAULT_SEQUENCE_BITS),
        _long(0, MAX_SEQUENCE_BITS),
        True,
        read_only=True,
        kind=ConfigType.INT,
    ),
    ConfigDef(TRIM_APPROXIMATE, "false", _boolean, True, kind=ConfigType.BOOLEAN),
    ConfigDef(TABLE_FORMAT, "delta", _one_of(*TABLE_FORMATS), True, read_only=True, kind=ConfigType.STRING),
    ConfigDef(TABLE_KEY_MODE, RAW, _one_of(*TABLE_MODES), True, read_only=True, kind=ConfigType.STRING),
    ConfigDef(TABLE_VALUE_MODE, RAW, _one_of(*TABLE_MODES), True, read_only=True, kind=ConfigType.STRING),
    # Accepted so that tools which set them keep working; storage in Redis gives them no meaning.
    ConfigDef(
        "segment.bytes", "1073741824", _long(14), False, kind=ConfigType.INT, synonym="log.segment.bytes"
    ),
    ConfigDef("segment.ms", "604800000", _long(1), False, synonym="log.roll.ms", broker_default_listed=False),
    ConfigDef(
        "segment.index.bytes",
        "10485760",
        _long(4),
        False,
        kind=ConfigType.INT,
        synonym="log.index.size.max.bytes",
    ),
    ConfigDef(
        "segment.jitter.ms", "0", _long(0), False, synonym="log.roll.jitter.ms", broker_default_listed=False
    ),
    ConfigDef(
        "min.insync.replicas",
        "1",
        _long(1, 2**31 - 1),
        False,
        kind=ConfigType.INT,
        synonym="min.insync.replicas",
    ),
    ConfigDef(
        "unclean.leader.election.enable",
        "false",
        _boolean,
        False,
        kind=ConfigType.BOOLEAN,
        synonym="unclean.leader.election.enable",
    ),
    ConfigDef(
        "index.interval.bytes",
        "4096",
        _long(0),
        False,
        kind=ConfigType.INT,
        synonym="log.index.interval.bytes",
    ),
    ConfigDef("flush.messages", LONG_MAX, _long(1), False, synonym="log.flush.interval.messages"),
    ConfigDef(
        "flush.ms", LONG_MAX, _long(0), False, synonym="log.flush.interval.ms", broker_default_listed=False
    ),
    ConfigDef("delete.retention.ms", "86400000", _long(0), True, synonym="log.cleaner.delete.retention.ms"),
    ConfigDef("file.delete.delay.ms", "60000", _long(0), False, synonym="log.segment.delete.delay.ms"),
    ConfigDef("min.compaction.lag.ms", "0", _long(0), True, synonym="log.cleaner.min.compaction.lag.ms"),
    ConfigDef("max.compaction.lag.ms", LONG_MAX, _long(1), True, synonym="log.cleaner.max.compaction.lag.ms"),
    ConfigDef(
        "min.cleanable.dirty.ratio",
        "0.5",
        _double(0.0, 1.0),
        True,
        kind=ConfigType.DOUBLE,
        synonym="log.cleaner.min.cleanable.ratio",
    ),
    ConfigDef("preallocate", "false", _boolean, False, kind=ConfigType.BOOLEAN, synonym="log.preallocate"),
    # KIP-937, with Kafka 4.0's defaults (KIP-1030 set after to an hour); produce refuses records outside.
    ConfigDef(
        TIMESTAMP_BEFORE_MAX_MS, LONG_MAX, _long(0), True, synonym="log.message.timestamp.before.max.ms"
    ),
    ConfigDef(
        TIMESTAMP_AFTER_MAX_MS, "3600000", _long(0), True, synonym="log.message.timestamp.after.max.ms"
    ),
    # Deprecated by KIP-937 (gone in Kafka 4.0); it works as in Kafka 3.6 to 3.9 (topics/timestamps.py).
    ConfigDef(
        TIMESTAMP_DIFFERENCE_MAX_MS,
        LONG_MAX,
        _long(0),
        True,
        synonym="log.message.timestamp.difference.max.ms",
    ),
    # Kafka 4.x's: compression levels (KIP-390), the inflated size bound, a share group's dead letters.
    ConfigDef(
        "compression.gzip.level",
        "-1",
        _gzip_level,
        False,
        kind=ConfigType.INT,
        synonym="compression.gzip.level",
    ),
    ConfigDef(
        "compression.lz4.level",
        "9",
        _long(1, 17),
        False,
        kind=ConfigType.INT,
        synonym="compression.lz4.level",
    ),
    ConfigDef(
        "compression.zstd.level",
        "3",
        _long(-131072, 22),
        False,
        kind=ConfigType.INT,
        synonym="compression.zstd.level",
    ),
    ConfigDef(
        MAX_DECOMPRESSED_BYTES,
        "2147483639",
        _long(0, 2**31 - 1),
        True,
        kind=ConfigType.INT,
        synonym=MAX_DECOMPRESSED_BYTES,
    ),
    ConfigDef("errors.deadletterqueue.group.enable", "false", _boolean, False, kind=ConfigType.BOOLEAN),
    ConfigDef("leader.replication.throttled.replicas", "", _anything, False, kind=ConfigType.LIST),
    ConfigDef("follower.replication.throttled.replicas", "", _anything, False, kind=ConfigType.LIST),
    # Tiered storage (KIP-405; docs/tiered-storage.md): Redis is the local log, the Delta tables the remote.
    ConfigDef(LOCAL_RETENTION_MS, "-2", _long(-2), True, synonym="log.local.retention.ms"),
    ConfigDef(LOCAL_RETENTION_BYTES, "-2", _long(-2), True, synonym="log.local.retention.bytes"),
    ConfigDef(REMOTE_STORAGE, "false", _boolean, True, kind=ConfigType.BOOLEAN),
    ConfigDef("remote.log.copy.disable", "false", _boolean, False, kind=ConfigType.BOOLEAN),
    ConfigDef("remote.log.delete.on.disable", "false", _boolean, False, kind=ConfigType.BOOLEAN),
    ConfigDef("remote.copy.lag.ms", "0", _long(0), False, synonym="log.remote.copy.lag.ms"),
    ConfigDef("remote.copy.lag.bytes", "-1", _long(-1), False, synonym="log.remote.copy.lag.bytes"),
    # Records checked against the schema registry on produce (broker/schemas/validation.py).
    ConfigDef(KEY_SCHEMA_VALIDATION, "false", _boolean, True, kind=ConfigType.BOOLEAN),
    ConfigDef(VALUE_SCHEMA_VALIDATION, "false", _boolean, True, kind=ConfigType.BOOLEAN),
    ConfigDef(
        KEY_SUBJECT_STRATEGY,
        _STRATEGY_PACKAGE + "TopicNameStrategy",
        _one_of(*_STRATEGIES, *(_STRATEGY_PACKAGE + s for s in _STRATEGIES)),
        True,
        kind=ConfigType.STRING,
    ),
    ConfigDef(
        VALUE_SUBJECT_STRATEGY,
        _STRATEGY_PACKAGE + "TopicNameStrategy",
        _one_of(*_STRATEGIES, *(_STRATEGY_PACKAGE + s for s in _STRATEGIES)),
        True,
        kind=ConfigType.STRING,
    ),
]

CONFIG_DEFS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}


def validate(name: str, value: str | None) -> None:
    """Raises InvalidConfig for an unknown name or a bad value."""
    definition = CONFIG_DEFS.get(name)
    if definition is None:
        raise InvalidConfig(f"unknown topic config {name!r}")
    if value is None:
        raise InvalidConfig(f"config {name!r} needs a value")
    definition.check(value)


def check_together(configs: Mapping[str, str], remote_storage_available: bool = True) -> None:
    """Refuses effective values that conflict with each other (as Kafka, a min lag above the max lag),
    and remote storage where Kafka refuses it: on a compacted topic, or on a broker without a remote
    (cold) store."""
    low, high = configs.get("min.compaction.lag.ms", "0"), configs.get("max.compaction.lag.ms", LONG_MAX)
    if int(low) > int(high):
        raise InvalidConfig(f"min.compaction.lag.ms ({low}) is above max.compaction.lag.ms ({high})")
    if configs.get(REMOTE_STORAGE, "false").lower() != "true":
        return
    if not remote_storage_available:
        raise InvalidConfig(
            "Tiered storage is not enabled on this broker (no cold_store_url): a topic cannot be "
            f"configured with {REMOTE_STORAGE}=true"
        )
    if "compact" in configs.get("cleanup.policy", "delete"):
        raise InvalidConfig(f"{REMOTE_STORAGE}=true is not supported for topics with cleanup.policy=compact")
    for local, whole in ((LOCAL_RETENTION_MS, "retention.ms"), (LOCAL_RETENTION_BYTES, "retention.bytes")):
        part, total = int(configs.get(local, "-2")), int(configs.get(whole, "-1"))
        if part == -2 or total == -1:
            continue
        if part == -1 or part > total:
            raise InvalidConfig(f"{local} ({part}) must not be more than {whole} ({total})")


def validate_defaults(defaults: Mapping[str, str], remote_storage_available: bool = True) -> None:
    """Topic defaults (the broker's `topic_defaults`) name topic configs and hold values they may take;
    a bad one would otherwise be stamped on every new topic and fail its appends later."""
    for name, value in defaults.items():
        if name not in CONFIG_DEFS:
            raise InvalidConfig(f"unknown topic config {name!r}")
        try:
            validate(name, value)
        except InvalidConfig as exc:
            raise InvalidConfig(f"{name} = {value!r}: {exc}") from None
    check_together(effective({}, defaults), remote_storage_available)


def effective(overrides: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """Every config's value: the topic's override, else the broker's default, else Kafka's."""
    values = {name: d.default for name, d in CONFIG_DEFS.items()}
    values.update({k: v for k, v in defaults.items() if k in CONFIG_DEFS})
    values.update(overrides)
    return values
