"""`schooner topics`: chores on topics, run straight against Redis."""

from __future__ import annotations

import click

from ..storage.keys import Keyspace
from ..storage.log.repair import renumber
from ..storage.redis.calls import drive_sync, run_sync, text
from ..storage.redis.client import connect_sync
from ..storage.topics import metadata
from .redis_options import redis_url_of, with_redis_options


@click.group()
def topics() -> None:
    """Topic chores that need Redis rather than a Kafka client."""


@topics.command("repair")
@click.argument("topic")
@click.option("--partition", type=int, help="Only this partition (default: every one that needs it).")
@with_redis_options
def repair(topic: str, partition: int | None, redis_url: str | None, data_dir: str, keyspace: str) -> None:
    """Gives offsets to entries that a plain `XADD key *` added to a dense topic.

    Such an entry stops produce to its partition (KAFKA_STORAGE_ERROR). Stop the partition's plain
    Redis writers first; brokers may keep running. See docs/key-layout.md.
    """
    redis = connect_sync(redis_url_of(redis_url, data_dir))
    ks = Keyspace(keyspace)
    found = run_sync(redis, metadata.load(ks, topic, {}))
    if found is None:
        raise click.UsageError(f"no topic {topic!r} in keyspace {keyspace!r}")
    if not found.offsets.dense:
        raise click.UsageError(f"{topic} uses the timestamp encoding, where '*' entries are valid")
    for p in [partition] if partition is not None else range(found.partitions):
        foreign = redis.hget(ks.partition_state(topic, p), "foreign_id")
        tail = redis.xrevrange(ks.stream(topic, p), count=1)
        if foreign is None and not (tail and not text(tail[0][0]).startswith("0-")):
            click.echo(f"{topic}-{p}: nothing to repair")
            continue
        done = drive_sync(redis, renumber(ks, found, p))
        click.echo(
            f"{topic}-{p}: {done.moved} entries given offsets; the log now ends at {done.high_watermark}"
        )
