"""Topics through the Kafka protocol (confluent-kafka's AdminClient): each call returns plain data (dicts
and lists) for the CLI to print, and raises KafkaFailure with one sentence when it cannot be done."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    TopicMetadata,
)

from ..client_options import ClientSettings
from . import KafkaFailure, admin_client, describe, failure, no_answer, result
from .tiers import tier_offsets


class HasMetadata(Protocol):
    """AdminClient, Producer and Consumer all answer list_topics."""

    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> ClusterMetadata: ...

    def poll(self, timeout: float = ...) -> Any: ...


def cluster(client: HasMetadata, settings: ClientSettings) -> ClusterMetadata:
    """Metadata of every topic. Asking for all of them, never for one by name, so that looking a topic
    up does not create it on a broker with auto_create_topics on."""
    try:
        return client.list_topics(timeout=settings.timeout_s)
    except KafkaException as exc:
        client.poll(0)  # serves the error callback: a refused login is only reported there
        raise failure(exc, settings) from None


def topic_metadata(client: HasMetadata, topic: str, settings: ClientSettings) -> TopicMetadata:
    """One topic's metadata; an unknown topic is a KafkaFailure rather than a client that waits for it
    to appear."""
    found = cluster(client, settings).topics.get(topic)
    if found is None or (found.error is not None and found.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
        raise KafkaFailure(f"no topic {topic!r} at {settings.bootstrap_servers}", "UNKNOWN_TOPIC_OR_PART")
    if found.error is not None:
        raise KafkaFailure(f"topic {topic!r}: {describe(found.error)}", str(found.error.name()))
    return found


def partitions_of(client: HasMetadata, topic: str, settings: ClientSettings) -> list[int]:
    """The topic's partition numbers (KafkaFailure for an unknown topic)."""
    return sorted(topic_metadata(client, topic, settings).partitions)


def list_topics(settings: ClientSettings) -> list[dict[str, Any]]:
    """Every topic: name, partition count and replication factor, by name."""
    meta = cluster(admin_client(settings), settings)
    rows = []
    for name, topic in sorted(meta.topics.items()):
        replicas = max((len(p.replicas) for p in topic.partitions.values()), default=0)
        rows.append({"topic": name, "partitions": len(topic.partitions), "replication_factor": replicas})
    return rows


def _one(futures: Mapping[Any, Any], settings: ClientSettings, tolerated: int | None = None) -> bool:
    """Waits for the single future of an admin call: True when it succeeded, False when it failed with
    the `tolerated` error code (TOPIC_ALREADY_EXISTS for --if-not-exists, ...)."""
    (future,) = futures.values()
    try:
        future.result(timeout=settings.timeout_s + 5)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if tolerated is not None and isinstance(error, KafkaError) and error.code() == tolerated:
            return False
        raise failure(exc, settings) from None
    except TimeoutError:
        raise no_answer(settings) from None
    return True


def create(
    settings: ClientSettings,
    name: str,
    partitions: int,
    configs: Mapping[str, str],
    if_not_exists: bool = False,
    admin: AdminClient | None = None,
) -> bool:
    """Creates the topic; False when it was there already and `if_not_exists` was given."""
    admin = admin or admin_client(settings)
    new = NewTopic(name, num_partitions=partitions, config=dict(configs))
    futures = admin.create_topics([new], request_timeout=settings.timeout_s)
    return _one(futures, settings, KafkaError.TOPIC_ALREADY_EXISTS if if_not_exists else None)


def delete(
    settings: ClientSettings, name: str, if_exists: bool = False, admin: AdminClient | None = None
) -> bool:
    """Deletes the topic; False when there was none and `if_exists` was given."""
    admin = admin or admin_client(settings)
    futures = admin.delete_topics([name], request_timeout=settings.timeout_s)
    if not _one(futures, settings, KafkaError.UNKNOWN_TOPIC_OR_PART):
        if if_exists:
            return False
        raise KafkaFailure(f"no topic {name!r} at {settings.bootstrap_servers}", "UNKNOWN_TOPIC_OR_PART")
    return True


def offsets_at(
    admin: AdminClient, settings: ClientSettings, partitions: Iterable[tuple[str, int]], spec: Any
) -> dict[tuple[str, int], int]:
    """ListOffsets of each (topic, partition) at OffsetSpec.earliest(), latest() or for_timestamp(ms);
    -1 where no record is at or after a timestamp."""
    wanted = {TopicPartition(t, p): spec for t, p in partitions}
    if not wanted:
        return {}
    futures = admin.list_offsets(wanted, request_timeout=settings.timeout_s)
    return {(tp.topic, tp.partition): result(f, settings).offset for tp, f in futures.items()}


def offsets(
    admin: AdminClient, settings: ClientSettings, topic: str, partitions: Sequence[int]
) -> dict[int, tuple[int, int]]:
    """Per partition: (earliest offset, latest offset), the latest being the high watermark."""
    tps = [(topic, p) for p in partitions]
    low = offsets_at(admin, settings, tps, OffsetSpec.earliest())
    high = offsets_at(admin, settings, tps, OffsetSpec.latest())
    return {p: (low[(topic, p)], high[(topic, p)]) for p in partitions}


def describe_topic(settings: ClientSettings, name: str, all_configs: bool = False) -> dict[str, Any]:
    """The topic's partitions (leader, replicas, earliest and latest offsets) and its configs: those
    set on the topic itself (not the broker's defaults for topics), or every one with `all_configs`."""
    admin = admin_client(settings)
    meta = cluster(admin, settings)
    numbers = partitions_of(admin, name, settings)
    topic = meta.topics[name]
    ends = offsets(admin, settings, name, numbers)
    partitions = [
        {
            "partition": p,
            "leader": topic.partitions[p].leader,
            "replicas": list(topic.partitions[p].replicas),
            "isr": list(topic.partitions[p].isrs),
            "earliest": ends[p][0],
            "latest": ends[p][1],
            "records": ends[p][1] - ends[p][0],
        }
        for p in numbers
    ]
    every = topic_configs(admin, settings, name)
    configs = [
        {k: v for k, v in c.items() if k in ("name", "value", "source", "read_only")}
        for c in every
        if all_configs or c["source"] == ConfigSource.DYNAMIC_TOPIC_CONFIG.name
    ]
    tiered = any(c["name"] == "remote.storage.enable" and c["value"] == "true" for c in every)
    if tiered:
        # Earliest is the cold tier's start; Redis holds from the local start, and the cold tier up to
        # (not including) the first offset pending upload.
        for entry, (local, pending) in zip(
            partitions, tier_offsets(settings, name, numbers).values(), strict=True
        ):
            entry["local_earliest"] = local
            entry["pending_upload"] = pending
    return {"topic": name, "tiered": tiered, "partitions": partitions, "configs": configs}


def topic_configs(admin: AdminClient, settings: ClientSettings, name: str) -> list[dict[str, Any]]:
    """Every config of the topic (DescribeConfigs), by name: its value, source (DYNAMIC_TOPIC_CONFIG
    for one set on the topic), and whether it is a default, read-only or sensitive."""
    (future,) = admin.describe_configs(
        [ConfigResource("topic", name)], request_timeout=settings.timeout_s
    ).values()
    entries: dict[str, ConfigEntry] = result(future, settings)
    return [
        {
            "name": key,
            "value": entry.value,
            "source": ConfigSource(entry.source).name,
            "read_only": bool(entry.is_read_only),
            "is_default": bool(entry.is_default),
            "sensitive": bool(entry.is_sensitive),
        }
        for key, entry in sorted(entries.items())
    ]


def alter(
    settings: ClientSettings,
    name: str,
    set_configs: Mapping[str, str],
    delete_configs: Sequence[str],
    partitions: int | None,
    admin: AdminClient | None = None,
) -> list[str]:
    """Sets and deletes topic configs (IncrementalAlterConfigs: other configs stay as they are) and
    raises the partition count (CreatePartitions); returns what changed, one phrase each."""
    admin = admin or admin_client(settings)
    partitions_of(admin, name, settings)  # an unknown topic fails before anything changes
    done: list[str] = []
    changes = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_configs.items()]
    changes += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete_configs]
    if changes:
        resource = ConfigResource("topic", name, incremental_configs=changes)
        _one(admin.incremental_alter_configs([resource], request_timeout=settings.timeout_s), settings)
        done += [f"{k}={v}" for k, v in set_configs.items()]
        done += [f"{k} back to its default" for k in delete_configs]
    if partitions is not None:
        more = NewPartitions(name, partitions)
        _one(admin.create_partitions([more], request_timeout=settings.timeout_s), settings)
        done.append(f"{partitions} partitions")
    return done
