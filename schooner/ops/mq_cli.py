"""`schooner mq`: the MQ library's groups, pending entries and dead letters (schooner.mq.Admin).

The MQ library sits on storage, not on the broker, so these commands read and write Redis
(--redis-url or the embedded broker's --data-dir), like the library itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..mq.admin import SORTS, Admin
from ..storage.topics.metadata import UnknownTopic
from .output import emit, with_output_option
from .redis_options import redis_url_of, with_redis_options


@contextmanager
def _admin(redis_url: str | None, data_dir: str, keyspace: str) -> Iterator[Admin]:
    admin = Admin(redis_url_of(redis_url, data_dir), keyspace=keyspace)
    try:
        yield admin
    except UnknownTopic as exc:
        raise click.ClickException(f"no topic {exc.args[0] if exc.args else ''}".strip()) from None
    except LookupError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        admin.close()


@click.group()
def mq() -> None:
    """MQ groups, their pending entries, and dead letters (read from Redis)."""


@mq.command("groups")
@click.argument("topic")
@with_redis_options
@with_output_option
def groups(topic: str, redis_url: str | None, data_dir: str, keyspace: str, output: str) -> None:
    """The topic's MQ groups: live members, entries pending (delivered, not acked) and lag (not acked)."""
    with _admin(redis_url, data_dir, keyspace) as admin:
        rows = []
        for g in admin.groups(topic):
            try:
                lag: int | None = sum(p.messages for p in admin.lag(topic, g.name))
            except LookupError:  # missing on some partition: no single number
                lag = None
            pending = sum(p.pending for p in g.partitions if p is not None)
            rows.append(
                {"group": g.name, "members": len(g.members), "pending": pending, "lag": lag, "share": g.share}
            )
    emit(rows, ["group", "members", "pending", "lag", "share"], output)


@mq.command("pending")
@click.argument("topic")
@click.argument("group")
@click.option("--partition", type=int, help="Only this partition.")
@click.option("--sort", type=click.Choice(SORTS), default="idle", show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@with_redis_options
@with_output_option
def pending(
    topic: str,
    group: str,
    partition: int | None,
    sort: str,
    limit: int,
    redis_url: str | None,
    data_dir: str,
    keyspace: str,
    output: str,
) -> None:
    """Entries delivered to the group and not acked yet: who holds the partition's lease, the consumer
    the entry went to, how long it has been idle and how often it was delivered."""
    with _admin(redis_url, data_dir, keyspace) as admin:
        if group not in {g.name for g in admin.groups(topic)}:
            raise click.ClickException(f"no MQ group {group} on topic {topic}")
        owners = {o.partition: o.member for o in admin.owners(topic, group)}
        found = admin.pending(topic, group, partition=partition, sort=sort, limit=limit)
    rows = [
        {
            "partition": m.partition,
            "offset": m.offset,
            "lease_owner": owners.get(m.partition),
            "consumer": m.consumer,
            "idle_ms": m.idle_ms,
            "deliveries": m.deliveries,
        }
        for m in found
    ]
    emit(rows, ["partition", "offset", "lease_owner", "consumer", "idle_ms", "deliveries"], output)


@mq.group("dlq")
def dlq() -> None:
    """Dead letters: list, replay, delete."""


@dlq.command("list")
@click.argument("topic")
@click.option("--partition", type=int, help="Only this partition.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@with_redis_options
@with_output_option
def dlq_list(
    topic: str,
    partition: int | None,
    limit: int,
    redis_url: str | None,
    data_dir: str,
    keyspace: str,
    output: str,
) -> None:
    """The oldest dead letters first: id (for replay and delete), where it came from, why, how often
    it was tried, and how long ago it last failed."""
    with _admin(redis_url, data_dir, keyspace) as admin:
        letters = admin.dead_letters(topic, partition=partition, limit=limit)
    now = time.time() * 1000
    rows = [
        {
            "id": d.letter_id,
            "partition": d.origin_partition,
            "offset": d.origin_offset,
            "group": d.group,
            "reason": f"{d.error_type}: {d.error_message}" if d.error_message else d.error_type,
            "attempts": d.attempts,
            "age_s": round(max(now - d.last_failure_ms, 0) / 1000, 1),
        }
        for d in letters
    ]
    emit(
        rows,
        ["id", "partition", "offset", "group", "reason", "attempts", "age_s"],
        output,
        headers={"age_s": "AGE (s)"},
    )


@dlq.command("replay")
@click.argument("topic")
@click.argument("letter_id", required=False)
@click.option("--all", "replay_all", is_flag=True, help="Every dead letter of the topic.")
@click.option("--to-topic", help="Append to this topic instead (the letter is then deleted).")
@with_redis_options
@with_output_option
def dlq_replay(
    topic: str,
    letter_id: str | None,
    replay_all: bool,
    to_topic: str | None,
    redis_url: str | None,
    data_dir: str,
    keyspace: str,
    output: str,
) -> None:
    """Puts dead letters back: on their original partition, for the group that gave up on them, or on
    --to-topic as new records."""
    ids = _ids(letter_id, replay_all)
    with _admin(redis_url, data_dir, keyspace) as admin:
        if to_topic is not None:
            admin.topic(to_topic)  # an unknown target fails before anything moves
        if ids is None:
            ids = _all_ids(admin, topic)
            replayed = _with_progress(admin, topic, ids, to_topic, show=output != "json")
        else:
            if not admin.replay(topic, ids[0], to_topic=to_topic):
                raise click.ClickException(f"no dead letter {ids[0]} on topic {topic}")
            replayed = ids
    if output == "json":
        emit([{"id": i} for i in replayed], ["id"], output)
    else:
        click.echo(f"replayed {len(replayed)} dead letter(s) to {to_topic or topic}")


@dlq.command("delete")
@click.argument("topic")
@click.argument("letter_ids", nargs=-1)
@click.option("--all", "delete_all", is_flag=True, help="Every dead letter of the topic.")
@with_redis_options
def dlq_delete(
    topic: str,
    letter_ids: tuple[str, ...],
    delete_all: bool,
    redis_url: str | None,
    data_dir: str,
    keyspace: str,
) -> None:
    """Deletes dead letters by id, or all of them."""
    if bool(letter_ids) == delete_all:
        raise click.UsageError("give dead-letter ids or --all")
    for letter_id in letter_ids:
        _check_id(letter_id)
    with _admin(redis_url, data_dir, keyspace) as admin:
        admin.topic(topic)
        deleted = (
            admin.purge_dead_letters(topic)
            if delete_all
            else admin.delete_dead_letters(topic, list(letter_ids))
        )
    if not delete_all and deleted < len(letter_ids):
        raise click.ClickException(f"deleted {deleted} of {len(letter_ids)}: the others were not there")
    click.echo(f"deleted {deleted} dead letter(s)")


def _ids(letter_id: str | None, every: bool) -> list[str] | None:
    if bool(letter_id) == every:
        raise click.UsageError("give one dead-letter id or --all")
    if letter_id is None:
        return None
    _check_id(letter_id)
    return [letter_id]


def _check_id(letter_id: str) -> None:
    partition, sep, entry = letter_id.partition(":")
    if not (sep and partition.isdigit() and entry):
        raise click.BadParameter(f"{letter_id!r} is not a dead-letter id (PARTITION:ENTRY-ID)")


def _all_ids(admin: Admin, topic: str) -> list[str]:
    """Every letter's id, oldest first, paging through each partition's dead-letter stream."""
    t = admin.topic(topic)
    ids: list[str] = []
    for p in range(t.partitions):
        seen: set[str] = set()
        while True:
            page = [
                d
                for d in admin.dead_letters(topic, partition=p, limit=len(seen) + 1000)
                if d.letter_id not in seen
            ]
            if not page:
                break
            seen.update(d.letter_id for d in page)
            ids += [d.letter_id for d in page]
    return ids


def _with_progress(admin: Admin, topic: str, ids: list[str], to_topic: str | None, show: bool) -> list[str]:
    done: list[str] = []
    columns: Any = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), disable=not show, transient=False) as progress:
        task = progress.add_task("replay", total=len(ids))
        for letter_id in ids:
            if admin.replay(topic, letter_id, to_topic=to_topic):
                done.append(letter_id)
            progress.advance(task)
    return done
