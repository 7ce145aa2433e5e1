"""The overview page: the brokers, Redis memory and version, and throughput over time."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .context import console_of, kafka
from .render import page, sampler_of


async def overview(request: Request) -> Response:
    side = kafka(request)
    console = console_of(request)
    cluster = await run_in_threadpool(side.cluster)
    topic_list = await run_in_threadpool(side.topics)
    group_list = await run_in_threadpool(side.groups)
    redis_info = await run_in_threadpool(console.redis.info) if console.redis is not None else None
    sampler = sampler_of(request)
    return page(
        request,
        "overview.html",
        title="Overview",
        cluster=cluster,
        topic_count=len(topic_list),
        partition_count=sum(len(t.partitions) for t in topic_list),
        group_count=len(group_list),
        redis=redis_info,
        throughput=sampler.throughput(),
        sample_error=sampler.error,
        interval=console.settings.sample_interval_s,
    )


routes = [Route("/", overview)]
