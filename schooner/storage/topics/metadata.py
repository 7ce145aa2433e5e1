"""Topic metadata: one hash per topic, a set of names, and a hash from topic id to name.

Each script that creates, changes or deletes a topic also publishes the topic's name on the topics
channel (see notices.py), so brokers drop their cached copy at once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..keys import Keyspace
from ..offsets import DEFAULT_SEQUENCE_BITS, DENSE, TIMESTAMP, OffsetCodec, codec_for
from ..redis.calls import Call, Steps, command, script, text, together
from .config import (
    CONFIG_DEFS,
    LOCAL_RETENTION_BYTES,
    LOCAL_RETENTION_MS,
    MAX_DECOMPRESSED_BYTES,
    OFFSET_ENCODING,
    REMOTE_STORAGE,
    SEQUENCE_BITS,
    TABLE_CONFIGS,
    TABLE_FORMAT,
    TABLE_KEY_MODE,
    TABLE_VALUE_MODE,
    TRIM_APPROXIMATE,
    ConfigDef,
    effective,
    valid_topic_name,
)

_CONFIG_PREFIX = "config."
_LEADER_PREFIX = "leader."


class TopicExists(Exception):
    pass


class UnknownTopic(Exception):
    pass


class PartitionsNotIncreasing(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    id: uuid.UUID
    partitions: int
    offsets: OffsetCodec
    overrides: Mapping[str, str]
    configs: Mapping[str, str] = field(default_factory=dict)  # effective values
    # Partition -> the broker a replica assignment placed it on (CreateTopics, CreatePartitions,
    # AlterPartitionReassignments); Metadata names that broker as the leader while it is live.
    leaders: Mapping[int, int] = field(default_factory=dict)

    @property
    def fixed_configs(self) -> dict[str, str]:
        """The configs set once, when the topic was created."""
        return {
            OFFSET_ENCODING: self.offsets.encoding,
            SEQUENCE_BITS: self.configs[SEQUENCE_BITS],
            **{name: self.configs[name] for name in TABLE_CONFIGS},
        }

    @property
    def table_format(self) -> str:
        """The cold tier's table format: delta or iceberg."""
        return self.configs[TABLE_FORMAT]

    @property
    def table_key_mode(self) -> str:
        """How the cold table holds keys: raw, schema_id_prefix or schema_latest."""
        return self.configs[TABLE_KEY_MODE]

    @property
    def table_value_mode(self) -> str:
        return self.configs[TABLE_VALUE_MODE]

    @property
    def cleanup_policy(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.configs.get("cleanup.policy", "delete").split(","))

    @property
    def compacted(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def retention_ms(self) -> int:
        """-1 (keep) unless the cleanup policy has delete: a compact-only topic is never trimmed."""
        return int(self.configs["retention.ms"]) if "delete" in self.cleanup_policy else -1

    @property
    def retention_bytes(self) -> int:
        return int(self.configs["retention.bytes"]) if "delete" in self.cleanup_policy else -1

    @property
    def remote_storage(self) -> bool:
        """Tiered (remote.storage.enable): archived to the cold tier, Redis trimmed by the archiver only."""
        return self.configs.get(REMOTE_STORAGE, "false").lower() == "true" and not self.compacted

    @property
    def local_retention_ms(self) -> int:
        """How long archived records stay in Redis (-1: no bound); -2 in the config means retention.ms."""
        value = int(self.configs.get(LOCAL_RETENTION_MS, "-2"))
        return self.retention_ms if value == -2 else value

    @property
    def local_retention_bytes(self) -> int:
        value = int(self.configs.get(LOCAL_RETENTION_BYTES, "-2"))
        return self.retention_bytes if value == -2 else value

    @property
    def redis_retention_bytes(self) -> int:
        """What an append trims to: retention.bytes, or -1 on a tiered topic, whose records leave Redis
        only once archived (the archiver trims it)."""
        return -1 if self.remote_storage else self.retention_bytes

    @property
    def delete_retention_ms(self) -> int:
        return int(self.configs["delete.retention.ms"])

    @property
    def min_compaction_lag_ms(self) -> int:
        return int(self.configs["min.compaction.lag.ms"])

    @property
    def max_compaction_lag_ms(self) -> int:
        return int(self.configs["max.compaction.lag.ms"])

    @property
    def min_cleanable_dirty_ratio(self) -> float:
        return float(self.configs["min.cleanable.dirty.ratio"])

    @property
    def trim_approximate(self) -> bool:
        return self.configs[TRIM_APPROXIMATE].lower() == "true"

    @property
    def log_append_time(self) -> bool:
        return self.configs["message.timestamp.type"] == "LogAppendTime"

    @property
    def max_message_bytes(self) -> int:
        return int(self.configs["max.message.bytes"])

    @property
    def max_decompressed_bytes(self) -> int:
        return int(self.configs[MAX_DECOMPRESSED_BYTES])

    @property
    def compression_type(self) -> str:
        return self.configs["compression.type"]


def decode_topic(raw: Mapping[bytes, bytes], defaults: Mapping[str, str]) -> Topic:
    values = {k.decode(): v.decode() for k, v in raw.items()}
    overrides = {k[len(_CONFIG_PREFIX) :]: v for k, v in values.items() if k.startswith(_CONFIG_PREFIX)}
    bits = int(values.get("sequence_bits", DEFAULT_SEQUENCE_BITS))
    # Topics made before dense offsets existed have no offset_encoding field: they keep the seeds'.
    encoding = values.get("offset_encoding", TIMESTAMP)
    configs = effective(overrides, defaults)
    configs[SEQUENCE_BITS] = str(bits)
    configs[OFFSET_ENCODING] = encoding
    for config in TABLE_CONFIGS:  # topics made before the configs existed have none: raw Delta tables
        configs[config] = values.get(_TABLE_FIELDS[config], CONFIG_DEFS[config].default)
    cut = len(_LEADER_PREFIX)
    leaders = {int(k[cut:]): int(v) for k, v in values.items() if k.startswith(_LEADER_PREFIX)}
    return Topic(
        name=values["name"],
        id=uuid.UUID(values["id"]),
        partitions=int(values["partitions"]),
        offsets=codec_for(encoding, bits),
        overrides=overrides,
        configs=configs,
        leaders=leaders,
    )


# The hash fields of the table configs: a topic keeps them as it was created, whatever the broker default
# becomes.
_TABLE_FIELDS = {
    TABLE_FORMAT: "table_format",
    TABLE_KEY_MODE: "table_key_mode",
    TABLE_VALUE_MODE: "table_value_mode",
}


def _fixed_value(name: str, overrides: Mapping[str, str], defaults: Mapping[str, str]) -> str:
    definition: ConfigDef = CONFIG_DEFS[name]
    return overrides.get(name, defaults.get(name, definition.default))


def fixed_configs(overrides: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """What Topic.fixed_configs will be for a topic created with these overrides."""
    return {
        OFFSET_ENCODING: overrides.get(OFFSET_ENCODING, defaults.get(OFFSET_ENCODING, DENSE)),
        SEQUENCE_BITS: str(overrides.get(SEQUENCE_BITS, defaults.get(SEQUENCE_BITS, DEFAULT_SEQUENCE_BITS))),
        **{name: _fixed_value(name, overrides, defaults) for name in TABLE_CONFIGS},
    }


def _leader_fields(leaders: Mapping[int, int]) -> list[Any]:
    return [item for p, broker_id in sorted(leaders.items()) for item in (f"{_LEADER_PREFIX}{p}", broker_id)]


def create(
    ks: Keyspace,
    name: str,
    partitions: int,
    overrides: Mapping[str, str],
    defaults: Mapping[str, str],
    leaders: Mapping[int, int] | None = None,
) -> Steps[Topic]:
    """One script registers the topic; then one round trip stamps each partition with the topic id.
    `leaders` places partitions on brokers (a manual replica assignment). The name must be a legal Kafka
    topic name: it is part of every key of the topic, and a "{" or "}" would move its keys' hash tag."""
    if not valid_topic_name(name):
        raise ValueError(f"{name!r} is not a legal topic name ([a-zA-Z0-9._-], at most 249 characters)")
    topic_id = uuid.uuid4()
    overrides = dict(overrides)
    bits = int(overrides.pop(SEQUENCE_BITS, defaults.get(SEQUENCE_BITS, DEFAULT_SEQUENCE_BITS)))
    encoding = overrides.pop(OFFSET_ENCODING, defaults.get(OFFSET_ENCODING, DENSE))
    codec_for(encoding, bits)  # refuses an unknown encoding before anything is written
    tables = {config: _fixed_value(config, overrides, defaults) for config in TABLE_CONFIGS}
    for config, value in tables.items():
        overrides.pop(config, None)
        CONFIG_DEFS[config].check(value)
    fields: list[Any] = [
        "partitions",
        partitions,
        "offset_encoding",
        encoding,
        "sequence_bits",
        bits,
        "created_ms",
        int(time.time() * 1000),
        *(item for config, value in tables.items() for item in (_TABLE_FIELDS[config], value)),
    ]
    for key, value in overrides.items():
        fields += [_CONFIG_PREFIX + key, value]
    fields += _leader_fields(leaders or {})
    keys = [ks.topic(name), ks.topic_names, ks.topic_ids]
    (created,) = yield [script("topic_create", keys, [name, str(topic_id), ks.topics_channel, *fields])]
    if not created:
        raise TopicExists(name)
    yield from stamp_partitions(ks, name, topic_id, range(partitions))
    return decode_topic(
        {
            b"name": name.encode(),
            b"id": str(topic_id).encode(),
            b"partitions": str(partitions).encode(),
            b"offset_encoding": encoding.encode(),
            b"sequence_bits": str(bits).encode(),
            **{_TABLE_FIELDS[config].encode(): value.encode() for config, value in tables.items()},
            **{(_CONFIG_PREFIX + k).encode(): v.encode() for k, v in overrides.items()},
            **{f"{_LEADER_PREFIX}{p}".encode(): str(b).encode() for p, b in (leaders or {}).items()},
        },
        defaults,
    )


def stamp_partitions(ks: Keyspace, name: str, topic_id: uuid.UUID, partitions: range) -> Steps[list[Any]]:
    """Writes the topic id into each partition's state hash; the append script refuses any other id."""
    return together(
        [command("HSET", ks.partition_state(name, p), "topic_id", str(topic_id)) for p in partitions]
    )


def load(ks: Keyspace, name: str, defaults: Mapping[str, str]) -> Call[Topic | None]:
    return command("HGETALL", ks.topic(name), parse=lambda raw: decode_topic(raw, defaults) if raw else None)


def load_all(ks: Keyspace, defaults: Mapping[str, str]) -> Steps[list[Topic]]:
    """Two round trips: the names, then every topic's hash."""
    (names,) = yield [command("SMEMBERS", ks.topic_names)]
    found = yield [load(ks, name, defaults) for name in sorted(text(n) for n in names)]
    return [t for t in found if t is not None]


def name_of(ks: Keyspace, topic_id: uuid.UUID) -> Call[str | None]:
    return command("HGET", ks.topic_ids, str(topic_id), parse=lambda name: text(name) if name else None)


UNLINK_CHUNK = 300  # keys per round trip when a topic's partitions are removed


def delete(ks: Keyspace, name: str, expected_id: uuid.UUID | None = None) -> Steps[None]:
    """Unregisters the topic in one script (only if it still has expected_id), then unlinks its keys."""
    keys = [ks.topic(name), ks.topic_names, ks.topic_ids]
    args = [name, str(expected_id) if expected_id else "", ks.topics_channel]
    (count,) = yield [script("topic_delete", keys, args, int)]
    if count < 0:
        raise UnknownTopic(name)
    doomed = [key for p in range(count) for key in ks.partition_keys(name, p)]
    for start in range(0, len(doomed), UNLINK_CHUNK):
        yield [command("UNLINK", key) for key in doomed[start : start + UNLINK_CHUNK]]


def update(
    ks: Keyspace,
    name: str,
    *,
    partitions: int = 0,
    set_configs: Mapping[str, str] | None = None,
    delete_configs: list[str] | tuple[str, ...] = (),
    replace_configs: bool = False,
    leaders: Mapping[int, int] | None = None,
) -> Call[int]:
    """Grows partitions, changes config overrides and/or places partitions on brokers (`leaders`) in
    one script. The reply is the old partition count; raises UnknownTopic or PartitionsNotIncreasing."""
    fields: list[Any] = []
    for key, value in (set_configs or {}).items():
        fields += [_CONFIG_PREFIX + key, value]
    fields += _leader_fields(leaders or {})
    deletes = [_CONFIG_PREFIX + k for k in delete_configs]

    def old_count(reply: Any) -> int:
        if reply == -1:
            raise UnknownTopic(name)
        if reply == -2:
            raise PartitionsNotIncreasing(name)
        return int(reply)

    replace = "1" if replace_configs else "0"
    args = [name, partitions, replace, ks.topics_channel, len(deletes), *deletes, *fields]
    return script("topic_update", [ks.topic(name), ks.topic_names], args, old_count)
