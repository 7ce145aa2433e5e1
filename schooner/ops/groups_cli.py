"""`schooner groups`: classic, consumer and share groups through the Kafka protocol (list, describe, lag,
reset-offsets, delete). With --redis-url or --data-dir, list, describe and lag read Redis instead
(groups_redis.py): exact record counts on timestamp-encoded topics, and lag as time."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from . import groups_redis
from .client_options import ClientSettings, with_client_options
from .kafka import groups as kafka_groups
from .kafka.consume import parse_timestamp
from .kafka.groups import Group, OffsetChange, PartitionLag, ResetSpec
from .output import emit, with_output_option
from .redis_options import redis_url_of

F = TypeVar("F", bound=Callable[..., Any])


def _with_output(fn: F) -> F:
    """--output table|json, and --json as its alias (older scripts use it)."""
    fn = click.option("--json", "as_json", is_flag=True, help="Same as --output json.")(fn)
    return with_output_option(fn)


def _with_redis_side(fn: F) -> F:
    """Optional: read Redis instead of asking a broker (no environment variables here, so that a
    deployment's SCHOONER_REDIS_URL does not switch the command's source unasked)."""
    fn = click.option(
        "--keyspace",
        envvar="SCHOONER_KEYSPACE",
        default="schooner",
        show_default=True,
        help="With --redis-url or --data-dir.",
    )(fn)
    fn = click.option("--data-dir", help="Read the Redis of the embedded broker keeping its data here.")(fn)
    return click.option("--redis-url", help="Read this Redis instead of asking a broker.")(fn)


def _redis(redis_url: str | None, data_dir: str | None) -> str | None:
    return redis_url_of(redis_url, data_dir or ".data") if (redis_url or data_dir) else None


@click.group()
def groups() -> None:
    """Classic, consumer and share groups: list, describe, lag, reset offsets, delete."""


@groups.command("list")
@_with_redis_side
@_with_output
@with_client_options
def list_groups(
    client: ClientSettings,
    redis_url: str | None,
    data_dir: str | None,
    keyspace: str,
    output: str,
    as_json: bool,
) -> None:
    """Every group with its type and state."""
    output = "json" if as_json else output
    url = _redis(redis_url, data_dir)
    if url:
        groups_redis.list_groups(url, keyspace, output)
        return
    rows = [{"group": g.group_id, "type": g.type, "state": g.state} for g in kafka_groups.list_groups(client)]
    emit(rows, ["group", "type", "state"], output)


@groups.command("describe")
@click.argument("group_id")
@_with_redis_side
@_with_output
@with_client_options
def describe(
    client: ClientSettings,
    group_id: str,
    redis_url: str | None,
    data_dir: str | None,
    keyspace: str,
    output: str,
    as_json: bool,
) -> None:
    """The group's type, state, epoch and members (id, client id, host, assignment), then per partition
    the committed offset (a share group's share-partition start offset), the end offset and the lag."""
    output = "json" if as_json else output
    url = _redis(redis_url, data_dir)
    if url:
        groups_redis.describe(url, keyspace, group_id, output)
        return
    group = kafka_groups.describe_group(client, group_id)
    if output == "json":
        click.echo(json.dumps(_group_json(group)))
        return
    epoch = "-" if group.epoch is None else group.epoch
    click.echo(
        f"GROUP {group.group_id}  TYPE {group.type}  STATE {group.state}  EPOCH {epoch}  "
        f"MEMBERS {len(group.members)}"
    )
    if group.members:
        click.echo()
        emit(
            [_member_json(m) for m in group.members],
            ["member_id", "client_id", "host", "assignment"],
            "table",
        )
    click.echo()
    _emit_partitions(group.partitions, group.type, "table")


@groups.command("lag")
@click.argument("group_id")
@_with_redis_side
@_with_output
@with_client_options
def lag(
    client: ClientSettings,
    group_id: str,
    redis_url: str | None,
    data_dir: str | None,
    keyspace: str,
    output: str,
    as_json: bool,
) -> None:
    """Per partition: committed offset (share groups: start offset), end offset and lag. JSON: one
    object per partition per line. With --redis-url or --data-dir: lag counted in records and in time."""
    output = "json" if as_json else output
    url = _redis(redis_url, data_dir)
    if url:
        groups_redis.lag(url, keyspace, group_id, output)
        return
    rows = kafka_groups.group_lag(client, group_id)
    if output == "json":
        for row in rows:
            click.echo(json.dumps(_partition_json(row)))
        return
    _emit_partitions(rows, "", "table")


@groups.command("reset-offsets")
@click.argument("group_id")
@click.option("--to-earliest", "to_earliest", is_flag=True, help="The first offset of each partition.")
@click.option("--to-latest", "to_latest", is_flag=True, help="The end of each partition.")
@click.option("--to-offset", type=int, metavar="N", help="Offset N (kept within each partition's range).")
@click.option(
    "--to-datetime", metavar="ISO", help="The first record at or after this time (local if no zone)."
)
@click.option("--shift-by", type=int, metavar="N", help="N records forward (negative: back).")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC[:PARTITION]", help="Repeatable.")
@click.option("--all-topics", is_flag=True, help="Every partition where the group has offsets.")
@click.option("--execute", is_flag=True, help="Do it; without this, only print the plan.")
@with_output_option
@with_client_options
def reset_offsets(
    client: ClientSettings,
    group_id: str,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
    topics: tuple[str, ...],
    all_topics: bool,
    execute: bool,
    output: str,
) -> None:
    """Moves an inactive group's offsets (a share group's start offsets). Prints the plan; changes
    nothing unless --execute."""
    spec = _spec(to_earliest, to_latest, to_offset, to_datetime, shift_by)
    if bool(topics) == all_topics:
        raise click.UsageError("give --topic TOPIC[:PARTITION] (repeatable) or --all-topics")
    kind, changes = kafka_groups.plan_reset(client, group_id, spec, None if all_topics else _topics(topics))
    rows = [_change_json(c) for c in changes]
    emit(rows, ["topic", "partition", "current", "new"], output)
    if execute:
        kafka_groups.execute_reset(client, group_id, kind, changes)
    if output != "json":
        done = "offsets reset" if execute else "dry run: nothing changed (add --execute to reset)"
        click.echo(done, err=True)


@groups.command("delete-offsets")
@click.argument("group_id")
@click.option("--topic", "topics", multiple=True, required=True, metavar="TOPIC", help="Repeatable.")
@with_client_options
def delete_offsets(client: ClientSettings, group_id: str, topics: tuple[str, ...]) -> None:
    """Drops an inactive share group's share partitions of these topics (it starts over there per
    share.auto.offset.reset)."""
    kafka_groups.delete_share_offsets(client, group_id, list(topics))
    click.echo(f"deleted the share offsets of {', '.join(topics)} for group {group_id}")


@groups.command("delete")
@click.argument("group_id")
@with_client_options
def delete(client: ClientSettings, group_id: str) -> None:
    """Deletes an empty group (classic, consumer or share) and its offsets."""
    kafka_groups.delete_group(client, group_id)
    click.echo(f"deleted group {group_id}")


def _spec(
    to_earliest: bool, to_latest: bool, to_offset: int | None, to_datetime: str | None, shift_by: int | None
) -> ResetSpec:
    given = [
        ResetSpec("earliest") if to_earliest else None,
        ResetSpec("latest") if to_latest else None,
        ResetSpec("offset", to_offset) if to_offset is not None else None,
        ResetSpec("timestamp", _millis(to_datetime)) if to_datetime is not None else None,
        ResetSpec("shift", shift_by) if shift_by is not None else None,
    ]
    chosen = [s for s in given if s is not None]
    if len(chosen) != 1:
        raise click.UsageError(
            "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by"
        )
    if chosen[0].kind == "offset" and chosen[0].value < 0:
        raise click.BadParameter("an offset is not negative", param_hint="--to-offset")
    return chosen[0]


def _millis(text: str) -> int:
    try:
        return parse_timestamp(text)  # a naive time is local
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO date and time (2025-01-31T12:00:00)", param_hint="--to-datetime"
        ) from None


def _topics(specs: tuple[str, ...]) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for spec in specs:
        name, sep, partition = spec.rpartition(":") if ":" in spec else (spec, "", "")
        if not name or (sep and not partition.isdigit()):
            raise click.BadParameter(f"{spec!r} is not TOPIC or TOPIC:PARTITION", param_hint="--topic")
        out.append((name, int(partition) if sep else None))
    return out


def _member_json(m: kafka_groups.Member) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "client_id": m.client_id,
        "host": m.host,
        "assignment": ", ".join(f"{t}:{p}" for t, p in m.assignment),
    }


def _partition_json(p: PartitionLag) -> dict[str, Any]:
    return {
        "topic": p.topic,
        "partition": p.partition,
        "committed": p.committed,
        "end_offset": p.end_offset,
        "lag": p.records,
    }


def _group_json(g: Group) -> dict[str, Any]:
    return {
        "group": g.group_id,
        "type": g.type,
        "state": g.state,
        "epoch": g.epoch,
        "members": [{**_member_json(m), "assignment": [[t, p] for t, p in m.assignment]} for m in g.members],
        "partitions": [_partition_json(p) for p in g.partitions],
    }


def _change_json(c: OffsetChange) -> dict[str, Any]:
    return {"topic": c.topic, "partition": c.partition, "current": c.current, "new": c.target}


def _emit_partitions(rows: tuple[PartitionLag, ...] | list[PartitionLag], kind: str, output: str) -> None:
    committed = "START OFFSET" if kind == kafka_groups.SHARE else "COMMITTED"
    emit(
        [_partition_json(p) for p in rows],
        ["topic", "partition", "committed", "end_offset", "lag"],
        output,
        headers={"committed": committed, "end_offset": "END OFFSET"},
    )
