"""The message browser (by partition from an offset or a time, the newest, or by key) and the produce form."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..kafka import KafkaFailure
from . import kafka_messages as km
from .context import kafka, registry
from .render import done, number, page, shown, templates

STARTS = ("newest", "offset", "timestamp", "key")
MAX_LIMIT = 500


def _query(request: Request) -> dict[str, Any]:
    q = request.query_params
    start = q.get("start", "newest")
    fmt = q.get("format", "auto")
    return {
        "topic": q.get("topic", ""),
        "partition": q.get("partition", "0"),
        "start": start if start in STARTS else "newest",
        "value": q.get("value", ""),
        "key": q.get("key", ""),
        "limit": q.get("limit", "50"),
        "format": fmt if fmt in km.FORMATS else "auto",
    }


def _records(request: Request, q: dict[str, Any]) -> list[km.Record]:
    side = kafka(request)
    decoder = registry(request).decode  # schema-encoded keys and values, decoded (raw when it cannot)
    limit = min(number(q["limit"], "limit", 1), MAX_LIMIT)
    topic = q["topic"]
    if q["start"] == "key":
        meta = side.topic(topic)
        everywhere = q["partition"] in ("", "all")
        parts = [p.id for p in meta.partitions] if everywhere else [number(q["partition"], "partition", 0)]
        return km.search_key(side, topic, parts, q["key"], limit, q["format"], decoder)
    partition = number(q["partition"] or "0", "partition", 0)
    return km.browse(side, topic, partition, q["start"], q["value"], limit, q["format"], decoder)


async def browser(request: Request) -> Response:
    q = _query(request)
    side = kafka(request)
    names = [t.name for t in await run_in_threadpool(side.topics)]
    records = await run_in_threadpool(_records, request, q) if q["topic"] else None
    return page(request, "messages.html", title="Messages", q=q, topics=names, records=records,
                key_window=km.KEY_WINDOW)  # fmt: skip


async def records_fragment(request: Request) -> Response:
    """The result table alone, for htmx to swap in; a refusal shows in its place."""
    q = _query(request)
    try:
        records = await run_in_threadpool(_records, request, q) if q["topic"] else []
        error = None
    except KafkaFailure as exc:
        records, error = [], shown(exc)
    return templates.TemplateResponse(request, "_records.html", {"records": records, "error": error, "q": q})


async def produce(request: Request) -> Response:
    form = await request.form()
    topic = str(form.get("topic", "")).strip()
    if not topic:
        raise KafkaFailure("give the topic to produce to")
    raw_partition = str(form.get("partition", "")).strip()
    partition = number(raw_partition, "partition", 0) if raw_partition else None
    key = str(form.get("key", "")) or None
    value = str(form.get("value", ""))
    headers = km.parse_headers(str(form.get("headers", "")))
    sent_partition, offset = await run_in_threadpool(
        km.produce, kafka(request), topic, partition, key, value, headers
    )
    where = urlencode({"topic": topic, "partition": sent_partition, "start": "offset", "value": offset})
    return done(f"/messages?{where}", f"produced to {topic}:{sent_partition} at offset {offset}")


routes = [
    Route("/messages", browser, methods=["GET"]),
    Route("/messages/records", records_fragment, methods=["GET"]),
    Route("/messages/produce", produce, methods=["POST"]),
]
