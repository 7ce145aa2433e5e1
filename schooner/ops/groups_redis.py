"""`schooner groups list|describe|lag` read straight from Redis (with --redis-url or --data-dir): exact
record counts on timestamp-encoded topics, lag as time, and share partitions' in-flight, archived and
dead-lettered counts, which the Kafka protocol does not tell."""

from __future__ import annotations

import json

import click

from ..storage.blocking_store import BlockingStore
from ..storage.groups.lag import PartitionLag


def list_groups(redis_url: str, keyspace: str, output: str) -> None:
    """Every group with its state, generation (a share or consumer group's epoch), member count and type."""
    store = BlockingStore.connect(redis_url, keyspace)
    rows = []
    for group_id in store.group_ids():
        saved = store.group_state(group_id)
        rows.append({"group": group_id, "state": saved.get("state", "Empty"),
                     "generation": int(saved.get("generation") or 0),
                     "members": len(json.loads(saved.get("members") or "[]")),
                     "type": saved.get("type") or "classic"})  # fmt: skip
    if output == "json":
        click.echo(json.dumps(rows))
        return
    click.echo(f"{'GROUP':30} {'STATE':20} {'GENERATION':>10} {'MEMBERS':>7} TYPE")
    for r in rows:
        click.echo(f"{r['group']:30} {r['state']:20} {r['generation']:>10} {r['members']:>7} {r['type']}")


def lag(redis_url: str, keyspace: str, group_id: str, output: str) -> None:
    """Per partition: committed offset, end offset, lag in records, and how old the oldest unread record is.

    On dense topics lag is end offset - committed offset; on timestamp-encoded ones, whose offsets
    have gaps, the records are counted. JSON: one object per partition per line.
    """
    rows = _lag_rows(BlockingStore.connect(redis_url, keyspace), group_id)
    if output == "json":
        for r in rows:
            click.echo(json.dumps(_lag_json(r)))
        return
    _echo_lag_table(rows)


def describe(redis_url: str, keyspace: str, group_id: str, output: str) -> None:
    """The group's type, state and members, then per partition: for a share group the share-partition
    start offset, the records in flight, archived and dead-lettered, and the lag (records in flight or
    not yet delivered); for a classic or consumer group what `lag` shows.
    """
    store = BlockingStore.connect(redis_url, keyspace)
    saved = store.group_state(group_id)
    share_topics = store.share_topics(group_id)
    kind = saved.get("type") or ("share" if share_topics else None)
    lags = [] if kind == "share" else _lag_rows(store, group_id)
    kind = kind or ("classic" if lags else None)
    if kind is None:  # a hash without a type is only a coordinator's claim on the id
        raise click.ClickException(f"no group {group_id}")
    summary = {
        "group": group_id,
        "type": kind,
        "state": saved.get("state") or "Empty",
        "generation": int(saved.get("generation") or 0),
        "members": len(json.loads(saved.get("members") or "[]")),
    }
    shares = _share_rows(store, group_id, share_topics) if kind == "share" else []
    if output == "json":
        rows = shares if kind == "share" else [_lag_json(r) for r in lags]
        click.echo(json.dumps({**summary, "partitions": rows}))
        return
    click.echo("  ".join(f"{k.upper()} {v}" for k, v in summary.items()))
    click.echo()
    if kind != "share":
        _echo_lag_table(lags)
        return
    line = "{:24} {:>4} {:>20} {:>10} {:>10} {:>12} {:>12}"
    click.echo(line.format("TOPIC", "PART", "START OFFSET", "IN FLIGHT", "ARCHIVED", "DEAD LETTERS", "LAG"))
    for r in shares:
        cells = [r[k] for k in ("start_offset", "in_flight", "archived", "dead_lettered", "lag")]
        click.echo(line.format(r["topic"], r["partition"], *("-" if c is None else c for c in cells)))


def _lag_rows(store: BlockingStore, group_id: str) -> list[PartitionLag]:
    committed = store.committed_offsets(group_id)
    topics = {t.name: t for t in store.topics()}
    rows = []
    for (topic_name, partition), c in sorted(committed.items()):
        topic = topics.get(topic_name)
        if topic is not None:
            rows.append(store.partition_lag(topic, partition, c.offset))
    return rows


def _lag_json(r: PartitionLag) -> dict[str, object]:
    return {"topic": r.topic, "partition": r.partition, "committed": r.committed, "end_offset": r.end_offset,
            "lag_records": r.records, "exact": r.exact, "lag_seconds": round(r.seconds, 3)}  # fmt: skip


def _echo_lag_table(rows: list[PartitionLag]) -> None:
    header = ("TOPIC", "PART", "COMMITTED", "END OFFSET", "LAG (records)", "LAG (time)")
    click.echo("{:24} {:>4} {:>20} {:>20} {:>14} {:>11}".format(*header))
    for r in rows:
        records = f"{r.records}" if r.exact else f">={r.records}"
        click.echo(
            f"{r.topic:24} {r.partition:>4} {r.committed if r.committed is not None else '-':>20} "
            f"{r.end_offset:>20} {records:>14} {r.seconds:>10.1f}s"
        )


def _share_rows(store: BlockingStore, group_id: str, names: list[str]) -> list[dict[str, object]]:
    """Every partition of the topics where the group has share partitions; None where it has none."""
    wanted = set(names)
    topics = [t for t in store.topics() if t.name in wanted]
    partitions = [(t, p) for t in sorted(topics, key=lambda t: t.name) for p in range(t.partitions)]
    states = store.share_states(partitions, group_id)
    rows: list[dict[str, object]] = []
    for (t, p), st in zip(partitions, states, strict=True):
        row: dict[str, object] = {"topic": t.name, "partition": p, "start_offset": None, "in_flight": None,
                                  "archived": None, "dead_lettered": None, "lag": None}  # fmt: skip
        if st is not None:
            row.update(start_offset=st.start_offset, in_flight=st.in_flight, archived=st.archived,
                       dead_lettered=st.dead_lettered, lag=None if st.lag < 0 else st.lag)  # fmt: skip
        rows.append(row)
    return rows
