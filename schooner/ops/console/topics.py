"""Topics: the list, create and delete, a topic's partitions (offsets and sizes) and its configs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...storage.topics.config import TABLE_FORMAT, TABLE_KEY_MODE, TABLE_VALUE_MODE
from ..kafka import KafkaFailure
from .context import console_of, kafka, registry
from .registry_data import RegistryFailure
from .render import done, number, page, sampler_of


@dataclass(frozen=True)
class PartitionRow:
    id: int
    leader: int
    earliest: int
    latest: int
    size: int | None  # bytes, from Redis; None without the Redis side
    local_earliest: int | None = None  # a tiered topic's: where Redis starts (earlier: the cold tier)
    pending_upload: int | None = None  # a tiered topic's: the first offset not archived yet

    @property
    def records(self) -> int:
        return max(self.latest - self.earliest, 0)


def _sizes(request: Request, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int] | None:
    redis = console_of(request).redis
    return redis.sizes(tps) if redis is not None else None


def _schemas(request: Request, topic: str) -> tuple[list[str], str | None]:
    """The topic's subjects in the schema registry, or why they cannot be shown (the page shows anyway)."""
    try:
        return registry(request).topic_subjects(topic), None
    except RegistryFailure as exc:
        return [], exc.message


async def topic_list(request: Request) -> Response:
    side = kafka(request)
    metas = await run_in_threadpool(side.topics)
    tps = [(t.name, p.id) for t in metas if t.error is None for p in t.partitions]
    earliest = await run_in_threadpool(side.earliest, tps)
    latest = await run_in_threadpool(side.latest, tps)
    sizes = await run_in_threadpool(_sizes, request, tps)
    rows = []
    for t in metas:
        mine = [(t.name, p.id) for p in t.partitions]
        records = sum(max(latest.get(tp, 0) - earliest.get(tp, 0), 0) for tp in mine)
        size = sum(sizes.get(tp, 0) for tp in mine) if sizes is not None else None
        rows.append({"name": t.name, "partitions": len(t.partitions), "records": records, "size": size,
                     "error": t.error})  # fmt: skip
    return page(request, "topics.html", title="Topics", topics=rows)


def _configs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                raise KafkaFailure(f"config line {line!r} is not key=value")
            out[key.strip()] = value.strip()
    return out


async def create_topic(request: Request) -> Response:
    form = await request.form()
    name = str(form.get("name", "")).strip()
    if not name:
        raise KafkaFailure("give the topic a name")
    partitions = number(form.get("partitions", "1"), "partitions", 1)
    configs = _configs(str(form.get("configs", "")))
    await run_in_threadpool(kafka(request).create_topic, name, partitions, configs)
    return done(f"/topics/{name}", f"created topic {name}")


async def topic_page(request: Request) -> Response:
    name = request.path_params["name"]
    side = kafka(request)
    meta = await run_in_threadpool(side.topic, name)
    tps = [(name, p.id) for p in meta.partitions]
    earliest = await run_in_threadpool(side.earliest, tps)
    latest = await run_in_threadpool(side.latest, tps)
    sizes = await run_in_threadpool(_sizes, request, tps)
    configs = await run_in_threadpool(side.topic_configs, name)
    tiered = any(c["name"] == "remote.storage.enable" and c["value"] == "true" for c in configs)
    table = _table(configs) if tiered else None
    ids = [p.id for p in meta.partitions]
    tiers = await run_in_threadpool(side.tiers, name, ids) if tiered else {}
    subjects, registry_note = await run_in_threadpool(_schemas, request, name)
    rows = [
        PartitionRow(p.id, p.leader, earliest[(name, p.id)], latest[(name, p.id)],
                     sizes.get((name, p.id)) if sizes is not None else None,
                     *tiers.get(p.id, (None, None)))
        for p in meta.partitions
    ]  # fmt: skip
    return page(
        request, "topic.html", title=f"Topic {name}", name=name, partitions=rows, configs=configs,
        throughput=sampler_of(request).throughput(name), tiered=tiered, table=table, subjects=subjects,
        registry_note=registry_note,
    )  # fmt: skip


TABLE_FORMAT_NAMES = {"delta": "Delta Lake", "iceberg": "Apache Iceberg"}


def _table(configs: list[dict[str, Any]]) -> dict[str, str]:
    """A tiered topic's cold-tier table, from its configs (schooner.table.*, fixed at creation)."""
    by_name = {c["name"]: c["value"] or "-" for c in configs}
    fmt = by_name.get(TABLE_FORMAT, "-")
    return {
        "format": fmt,
        "format_name": TABLE_FORMAT_NAMES.get(fmt, fmt),
        "key_mode": by_name.get(TABLE_KEY_MODE, "-"),
        "value_mode": by_name.get(TABLE_VALUE_MODE, "-"),
    }


async def delete_topic(request: Request) -> Response:
    name = request.path_params["name"]
    await run_in_threadpool(kafka(request).delete_topic, name)
    return done("/topics", f"deleted topic {name}")


async def alter_config(request: Request) -> Response:
    name = request.path_params["name"]
    form = await request.form()
    key = str(form.get("key", "")).strip()
    if not key:
        raise KafkaFailure("give the config's name")
    value = None if form.get("action") == "reset" else str(form.get("value", ""))
    await run_in_threadpool(kafka(request).alter_topic_config, name, key, value)
    what = f"reset {key} to its default" if value is None else f"set {key} = {value}"
    return done(f"/topics/{name}", what)


routes = [
    Route("/topics", topic_list, methods=["GET"]),
    Route("/topics", create_topic, methods=["POST"]),
    Route("/topics/{name}", topic_page, methods=["GET"]),
    Route("/topics/{name}/delete", delete_topic, methods=["POST"]),
    Route("/topics/{name}/config", alter_config, methods=["POST"]),
]
