"""The MQ library's side (schooner.mq): its topics and groups with pending entries, leases and lag, and
dead letters (browse, replay to their origin, delete). All read from Redis: without the Redis side the
pages say so."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..kafka import KafkaFailure
from .context import console_of
from .kafka_messages import show
from .redis_data import RedisSide
from .render import done, page

NO_REDIS = ("The MQ views read Redis: start the console with --config (the broker's config file) or "
            "--redis-url.")  # fmt: skip


def _redis(request: Request) -> RedisSide | None:
    return console_of(request).redis


async def mq_list(request: Request) -> Response:
    redis = _redis(request)
    found = await run_in_threadpool(redis.mq_topics) if redis is not None else []
    return page(
        request, "mq.html", title="MQ groups", mq_topics=found, no_redis=NO_REDIS if redis is None else None
    )


def _topic_view(redis: RedisSide, topic: str) -> dict[str, Any]:
    try:
        groups = redis.mq_groups(topic)
    except LookupError as exc:  # UnknownTopic
        raise KafkaFailure(f"no topic {topic}: {exc}", "UNKNOWN_TOPIC") from None
    pending = {g.stats.name: redis.pending(topic, g.stats.name) for g in groups}
    letters = [(d, show(d.key), show(d.value)) for d in redis.dead_letters(topic)]
    return {"groups": groups, "pending": pending, "letters": letters}


async def mq_topic(request: Request) -> Response:
    topic = request.path_params["topic"]
    redis = _redis(request)
    if redis is None:
        return page(request, "mq.html", title="MQ groups", mq_topics=[], no_redis=NO_REDIS)
    view = await run_in_threadpool(_topic_view, redis, topic)
    return page(request, "mq_topic.html", title=f"MQ topic {topic}", topic=topic, **view)


async def _letters(request: Request) -> tuple[str, RedisSide, list[str]]:
    """The topic, the Redis side and the dead letters chosen in the form of a replay or delete."""
    redis = _redis(request)
    if redis is None:
        raise KafkaFailure(NO_REDIS)
    form = await request.form()
    ids = [str(v) for v in form.getlist("letter_id") if str(v)]
    if not ids:
        raise KafkaFailure("choose a dead letter")
    return request.path_params["topic"], redis, ids


async def replay(request: Request) -> Response:
    topic, redis, ids = await _letters(request)
    replayed = [i for i in ids if await run_in_threadpool(redis.replay, topic, i)]
    return done(f"/mq/{topic}", f"replayed {len(replayed)} dead letter(s) to their partition")


async def delete(request: Request) -> Response:
    topic, redis, ids = await _letters(request)
    deleted = await run_in_threadpool(redis.delete_letters, topic, ids)
    return done(f"/mq/{topic}", f"deleted {deleted} dead letter(s)")


routes = [
    Route("/mq", mq_list, methods=["GET"]),
    Route("/mq/{topic}", mq_topic, methods=["GET"]),
    Route("/mq/{topic}/dead-letters/replay", replay, methods=["POST"]),
    Route("/mq/{topic}/dead-letters/delete", delete, methods=["POST"]),
]
