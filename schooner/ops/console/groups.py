"""Consumer groups (classic and KIP-848) and share groups: the list, a group's members, assignments and
lag per partition (with its history as a chart), and resetting a group's committed offsets."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import OffsetSpec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .context import console_of, kafka
from .kafka_data import TP, BrokerError, GroupRow, KafkaSide
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


async def group_list(request: Request) -> Response:
    rows = await run_in_threadpool(kafka(request).groups)
    redis = console_of(request).redis
    if redis is not None:  # librdkafka lists no share group: the coordinators' saved state does
        saved = await run_in_threadpool(redis.group_types)
        listed = {g.id for g in rows}
        shares = [
            GroupRow(g, kind, st) for g, (kind, st) in saved.items() if kind == "share" and g not in listed
        ]
        rows = sorted(rows + shares, key=lambda g: g.id)
    return page(request, "groups.html", title="Groups", groups=rows)


def _lag_rows(side: KafkaSide, group_id: str, owners: dict[TP, str]) -> list[LagRow]:
    committed = side.committed(group_id)
    tps = sorted(set(committed) | set(owners))
    ends = side.latest(tps)
    return [LagRow(t, p, committed.get((t, p)), ends.get((t, p), 0), owners.get((t, p))) for t, p in tps]


async def group_page(request: Request) -> Response:
    group_id = request.path_params["group"]
    redis = console_of(request).redis
    shared = await run_in_threadpool(redis.share_group, group_id) if redis is not None else None
    if shared is not None:
        return page(request, "share_group.html", title=f"Share group {group_id}", group=shared)
    side = kafka(request)
    detail = await run_in_threadpool(side.describe_group, group_id)
    owners = {tp: m.client_id or m.member_id for m in detail.members for tp in m.assignment}
    rows = await run_in_threadpool(_lag_rows, side, group_id, owners)
    names, data = sampler_of(request).lag(group_id)
    return page(
        request, "group.html", title=f"Group {group_id}", group=detail, rows=rows,
        total_lag=sum(r.lag or 0 for r in rows), series=names, chart=data,
    )  # fmt: skip


def _targets(side: KafkaSide, group_id: str, topic: str, to: str, value: str) -> dict[TP, int]:
    tps = [(topic, p.id) for p in side.topic(topic).partitions] if topic else sorted(side.committed(group_id))
    if not tps:
        raise BrokerError("the group has no committed offsets: name a topic")
    if to == "earliest":
        return side.earliest(tps)
    if to == "latest":
        return side.latest(tps)
    if to == "offset":
        offset = number(value, "offset", 0)
        return {tp: offset for tp in tps}
    at = side.offsets(tps, OffsetSpec.for_timestamp(parse_time_ms(value)))
    ends = side.latest(tps)
    return {tp: (o if o >= 0 else ends[tp]) for tp, o in at.items()}  # no record after: the end


def _reset(side: KafkaSide, group_id: str, topic: str, to: str, value: str) -> int:
    detail = side.describe_group(group_id)
    if detail.members:  # Kafka refuses to move a live group's offsets; say so before it does
        raise BrokerError(
            f"the group has {len(detail.members)} active member(s): stop its consumers before resetting",
            "NON_EMPTY_GROUP",
        )
    targets = _targets(side, group_id, topic, to, value)
    side.reset_offsets(group_id, targets)
    return len(targets)


async def reset_offsets(request: Request) -> Response:
    group_id = request.path_params["group"]
    form = await request.form()
    to = str(form.get("to", ""))
    if to not in RESETS:
        raise BrokerError(f"reset to one of {', '.join(RESETS)}")
    topic = str(form.get("topic", "")).strip()
    value = str(form.get("value", "")).strip()
    count = await run_in_threadpool(_reset, kafka(request), group_id, topic, to, value)
    return done(f"/groups/{group_id}", f"reset {count} partition(s) to {to} {value}".strip())


routes = [
    Route("/groups", group_list, methods=["GET"]),
    Route("/groups/{group}", group_page, methods=["GET"]),
    Route("/groups/{group}/reset", reset_offsets, methods=["POST"]),
]
