"""`schooner groups`: consumer groups and their lag, read straight from Redis."""

from __future__ import annotations

import json

import click

from ..storage.groups import commits, state
from ..storage.groups.lag import partition_lag
from ..storage.keys import Keyspace
from ..storage.redis.calls import drive_sync, run_sync
from ..storage.redis.client import connect_sync
from ..storage.topics import metadata
from .redis_options import redis_url_of, with_redis_options


@click.group()
def groups() -> None:
    """Consumer groups: list them, and show their lag per partition."""


@groups.command("list")
@with_redis_options
def list_groups(redis_url: str | None, data_dir: str, keyspace: str) -> None:
    """Every group with its state, generation and member count."""
    redis = connect_sync(redis_url_of(redis_url, data_dir))
    ks = Keyspace(keyspace)
    click.echo(f"{'GROUP':30} {'STATE':20} {'GENERATION':>10} {'MEMBERS':>7}")
    for group_id in run_sync(redis, state.list_ids(ks)):
        saved = run_sync(redis, state.load_state(ks, group_id))
        members = len(json.loads(saved.get("members") or "[]"))
        click.echo(
            f"{group_id:30} {saved.get('state', 'Empty'):20} {saved.get('generation', '0'):>10} {members:>7}"
        )


@groups.command("lag")
@click.argument("group_id")
@with_redis_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per partition.")
def lag(group_id: str, redis_url: str | None, data_dir: str, keyspace: str, as_json: bool) -> None:
    """Per partition: committed offset, end offset, lag in records, and how old the oldest unread record is.

    On dense topics lag is end offset - committed offset; on timestamp-encoded ones, whose offsets
    have gaps, the records are counted.
    """
    redis = connect_sync(redis_url_of(redis_url, data_dir))
    ks = Keyspace(keyspace)
    committed = drive_sync(redis, commits.fetch(ks, group_id))
    topics = {t.name: t for t in drive_sync(redis, metadata.load_all(ks, {}))}
    rows = []
    for (topic_name, partition), c in sorted(committed.items()):
        topic = topics.get(topic_name)
        if topic is None:
            continue
        rows.append(drive_sync(redis, partition_lag(ks, topic, partition, c.offset)))
    if as_json:
        for r in rows:
            click.echo(json.dumps({"topic": r.topic, "partition": r.partition, "committed": r.committed,
                                   "end_offset": r.end_offset, "lag_records": r.records, "exact": r.exact,
                                   "lag_seconds": round(r.seconds, 3)}))  # fmt: skip
        return
    header = ("TOPIC", "PART", "COMMITTED", "END OFFSET", "LAG (records)", "LAG (time)")
    click.echo("{:24} {:>4} {:>20} {:>20} {:>14} {:>11}".format(*header))
    for r in rows:
        records = f"{r.records}" if r.exact else f">={r.records}"
        click.echo(
            f"{r.topic:24} {r.partition:>4} {r.committed if r.committed is not None else '-':>20} "
            f"{r.end_offset:>20} {records:>14} {r.seconds:>10.1f}s"
        )
