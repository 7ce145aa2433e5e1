"""Consumer groups (classic and KIP-848) and share groups: the list, a group's members, assignments and
lag per partition (with its history as a chart), and resetting a group's offsets. Share groups are
listed and described over the Kafka protocol (schooner/ops/kafka/groups.py); with the Redis side, a
share partition's page also shows its records in flight, archived and dead-lettered."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..kafka import groups as kafka_groups
from ..kafka.groups import SHARE, Group, ResetSpec
from .context import console_of, kafka
from .kafka_data import KafkaFailure, KafkaSide
from .kafka_messages import parse_time_ms
from .render import done, number, page, sampler_of

RESETS = ("earliest", "latest", "offset", "datetime")


@dataclass(frozen=True)
class LagRow:
    topic: str
    partition: int
    committed: int | None
    end: int
    owner: str | None

    @property
    def lag(self) -> int | None:
        return None if self.committed is None else max(self.end - self.committed, 0)


@dataclass(frozen=True)
class ShareRow:
    """A share partition: its start offset and lag (Kafka), and what Redis adds (None without it)."""

    topic: str
    partition: int
    start_offset: int | None
    lag: int | None
    in_flight: int | None = None
    archived: int | None = None
    dead_lettered: int | None = None


async def group_list(request: Request) -> Response:
    rows = await run_in_threadpool(kafka(request).groups)
    return page(request, "groups.html", title="Groups", groups=rows)


def _lag_rows(side: KafkaSide, group: Group) -> list[LagRow]:
    """Each partition the group has committed or a member owns, with its end offset and owner."""
    owners = {tp: m.client_id or m.member_id for m in group.members for tp in m.assignment}
    known = {(p.topic, p.partition): p for p in group.partitions}
    ends = {tp: p.end_offset or 0 for tp, p in known.items()}
    ends |= side.latest([tp for tp in owners if tp not in known])
    committed = {tp: p.committed for tp, p in known.items()}
    return [
        LagRow(t, p, committed.get((t, p)), ends.get((t, p), 0), owners.get((t, p)))
        for t, p in sorted(set(known) | set(owners))
    ]


def _share_rows(request: Request, group: Group) -> list[ShareRow]:
    redis = console_of(request).redis
    saved = redis.share_partitions(group.group_id) if redis is not None else []
    extra = {(r.topic, r.partition): r for r in saved}
    rows = []
    for p in group.partitions:
        more = extra.get((p.topic, p.partition))
        counts = (more.in_flight, more.archived, more.dead_lettered) if more is not None else (None,) * 3
        rows.append(ShareRow(p.topic, p.partition, p.committed, p.records, *counts))
    return rows


async def group_page(request: Request) -> Response:
    group_id = request.path_params["group"]
    side = kafka(request)
    group = await run_in_threadpool(side.describe_group, group_id)
    if group.type == SHARE:
        rows = await run_in_threadpool(_share_rows, request, group)
        return page(request, "share_group.html", title=f"Share group {group_id}", group=group, rows=rows)
    lag_rows = await run_in_threadpool(_lag_rows, side, group)
    names, data = sampler_of(request).lag(group_id)
    return page(
        request, "group.html", title=f"Group {group_id}", group=group, rows=lag_rows,
        total_lag=sum(r.lag or 0 for r in lag_rows), series=names, chart=data,
    )  # fmt: skip


def _spec(to: str, value: str) -> ResetSpec:
    if to == "offset":
        return ResetSpec("offset", number(value, "offset", 0))
    if to == "datetime":
        return ResetSpec("timestamp", parse_time_ms(value))
    return ResetSpec(to)


def _reset(side: KafkaSide, group_id: str, topic: str, to: str, value: str) -> int:
    """Kafka moves a group's offsets only while it has no active members: plan_reset says so first."""
    spec = _spec(to, value)
    topics: list[tuple[str, int | None]] | None = [(topic, None)] if topic else None
    kind, changes = kafka_groups.plan_reset(side.client, group_id, spec, topics)
    kafka_groups.execute_reset(side.client, group_id, kind, changes)
    return len(changes)


async def reset_offsets(request: Request) -> Response:
    group_id = request.path_params["group"]
    form = await request.form()
    to = str(form.get("to", ""))
    if to not in RESETS:
        raise KafkaFailure(f"reset to one of {', '.join(RESETS)}")
    topic = str(form.get("topic", "")).strip()
    value = str(form.get("value", "")).strip()
    count = await run_in_threadpool(_reset, kafka(request), group_id, topic, to, value)
    return done(f"/groups/{group_id}", f"reset {count} partition(s) to {to} {value}".strip())


routes = [
    Route("/groups", group_list, methods=["GET"]),
    Route("/groups/{group}", group_page, methods=["GET"]),
    Route("/groups/{group}/reset", reset_offsets, methods=["POST"]),
]
