"""Topic metadata: one hash per topic, a set of names, and a hash from topic id to name."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import scripts
from .keys import Keyspace
from .offsets import DEFAULT_SEQUENCE_BITS
from .topic_config import SEQUENCE_BITS, TRIM_APPROXIMATE, effective

_CONFIG_PREFIX = "config."


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
    sequence_bits: int
    overrides: Mapping[str, str]
    configs: Mapping[str, str] = field(default_factory=dict)  # effective values

    @property
    def retention_ms(self) -> int:
        return int(self.configs["retention.ms"])

    @property
    def retention_bytes(self) -> int:
        return int(self.configs["retention.bytes"])

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
    def compression_type(self) -> str:
        return self.configs["compression.type"]


def decode_topic(raw: Mapping[bytes, bytes], defaults: Mapping[str, str]) -> Topic:
    values = {k.decode(): v.decode() for k, v in raw.items()}
    overrides = {k[len(_CONFIG_PREFIX) :]: v for k, v in values.items() if k.startswith(_CONFIG_PREFIX)}
    bits = int(values.get("sequence_bits", DEFAULT_SEQUENCE_BITS))
    configs = effective(overrides, defaults)
    configs[SEQUENCE_BITS] = str(bits)
    return Topic(
        name=values["name"],
        id=uuid.UUID(values["id"]),
        partitions=int(values["partitions"]),
        sequence_bits=bits,
        overrides=overrides,
        configs=configs,
    )


async def create(
    redis: Any,
    ks: Keyspace,
    name: str,
    partitions: int,
    overrides: Mapping[str, str],
    defaults: Mapping[str, str],
) -> Topic:
    """One script registers the topic; then one pipeline stamps each partition with the topic id."""
    topic_id = uuid.uuid4()
    overrides = dict(overrides)
    bits = int(overrides.pop(SEQUENCE_BITS, defaults.get(SEQUENCE_BITS, DEFAULT_SEQUENCE_BITS)))
    fields: list[Any] = [
        "partitions",
        partitions,
        "sequence_bits",
        bits,
        "created_ms",
        int(time.time() * 1000),
    ]
    for key, value in overrides.items():
        fields += [_CONFIG_PREFIX + key, value]
    created = await scripts.run(
        redis, "topic_create", [ks.topic(name), ks.topic_names, ks.topic_ids], [name, str(topic_id), *fields]
    )
    if not created:
        raise TopicExists(name)
    await stamp_partitions(redis, ks, name, topic_id, range(partitions))
    return decode_topic(
        {
            b"name": name.encode(),
            b"id": str(topic_id).encode(),
            b"partitions": str(partitions).encode(),
            b"sequence_bits": str(bits).encode(),
            **{(_CONFIG_PREFIX + k).encode(): v.encode() for k, v in overrides.items()},
        },
        defaults,
    )


async def stamp_partitions(
    redis: Any, ks: Keyspace, name: str, topic_id: uuid.UUID, partitions: range
) -> None:
    """Writes the topic id into each partition's state hash; the append script refuses any other id."""
    async with redis.pipeline(transaction=False) as pipe:
        for p in partitions:
            pipe.hset(ks.partition_state(name, p), "topic_id", str(topic_id))
        await pipe.execute()


async def load(redis: Any, ks: Keyspace, name: str, defaults: Mapping[str, str]) -> Topic | None:
    raw = await redis.hgetall(ks.topic(name))
    return decode_topic(raw, defaults) if raw else None


async def load_all(redis: Any, ks: Keyspace, defaults: Mapping[str, str]) -> list[Topic]:
    names = sorted(n.decode() for n in await redis.smembers(ks.topic_names))
    if not names:
        return []
    async with redis.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.hgetall(ks.topic(name))
        raws = await pipe.execute()
    return [decode_topic(raw, defaults) for raw in raws if raw]


async def name_of(redis: Any, ks: Keyspace, topic_id: uuid.UUID) -> str | None:
    name = await redis.hget(ks.topic_ids, str(topic_id))
    return name.decode() if name else None


async def delete(redis: Any, ks: Keyspace, name: str, expected_id: uuid.UUID | None = None) -> None:
    """Unregisters the topic in one script (only if it still has expected_id), then unlinks its keys."""
    count = await scripts.run(
        redis,
        "topic_delete",
        [ks.topic(name), ks.topic_names, ks.topic_ids],
        [name, str(expected_id) if expected_id else ""],
    )
    if count < 0:
        raise UnknownTopic(name)
    keys = [key for p in range(int(count)) for key in ks.partition_keys(name, p)]
    for start in range(0, len(keys), 300):
        async with redis.pipeline(transaction=False) as pipe:
            for key in keys[start : start + 300]:
                pipe.unlink(key)
            await pipe.execute()


async def update(
    redis: Any,
    ks: Keyspace,
    name: str,
    *,
    partitions: int = 0,
    set_configs: Mapping[str, str] | None = None,
    delete_configs: list[str] | tuple[str, ...] = (),
    replace_configs: bool = False,
) -> int:
    """Grows partitions and/or changes config overrides in one script. Returns the old partition count."""
    fields: list[Any] = []
    for key, value in (set_configs or {}).items():
        fields += [_CONFIG_PREFIX + key, value]
    deletes = [_CONFIG_PREFIX + k for k in delete_configs]
    old = await scripts.run(
        redis,
        "topic_update",
        [ks.topic(name), ks.topic_names],
        [name, partitions, "1" if replace_configs else "0", len(deletes), *deletes, *fields],
    )
    if old == -1:
        raise UnknownTopic(name)
    if old == -2:
        raise PartitionsNotIncreasing(name)
    return int(old)
