"""DeleteRecords: moves partitions' log start offsets forward (on a tiered topic, in the cold tier too)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from ...protocol.messages import make, sibling
from ...protocol.request_types import DeleteRecordsRequest
from ...protocol.response_types import DeleteRecordsResponse, response_for
from ...security.acls import AclOperation
from ...storage.cold.errors import ColdStoreError
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, resolve_topic

HIGH_WATERMARK = -1


async def handle_delete_records(
    ctx: BrokerContext, body: DeleteRecordsRequest, scope: RequestScope
) -> DeleteRecordsResponse:
    resp = response_for(body)
    topics = []
    for requested in body.topics:
        topic = await resolve_topic(ctx, scope, requested.name, op=AclOperation.DELETE)
        partitions = []
        for p in requested.partitions:
            code, low = await _delete_before(ctx, topic, p.partition_index, p.offset)
            partitions.append(
                make(
                    sibling(resp, "DeleteRecordsPartitionResult"),
                    partition_index=p.partition_index,
                    low_watermark=low,
                    error_code=code,
                )
            )
        topics.append(
            make(sibling(resp, "DeleteRecordsTopicResult"), name=requested.name, partitions=tuple(partitions))
        )
    return make(resp, throttle_time=NO_THROTTLE, topics=tuple(topics))


async def _delete_before(
    ctx: BrokerContext, topic: Topic | ErrorCode, partition: int, offset: int
) -> tuple[ErrorCode, int]:
    """Removes the records below the offset; returns the error and the new low watermark (log start)."""
    if isinstance(topic, ErrorCode):
        return topic, -1
    if not 0 <= partition < topic.partitions:
        return ErrorCode.unknown_topic_or_partition, -1
    try:
        bounds = await ctx.store.bounds(topic, partition)
        if offset == HIGH_WATERMARK:
            offset = bounds.high_watermark
        if offset < 0 or offset > bounds.high_watermark:
            return ErrorCode.offset_out_of_range, -1
        cold_start = None
        if topic.remote_storage and ctx.tiering.available:  # the cold tier first: it holds the oldest
            cold_start = await ctx.tiering.delete_records(topic, partition, offset)
        if offset <= bounds.log_start_offset:
            low = bounds.log_start_offset if cold_start is None else min(cold_start, bounds.log_start_offset)
            return ErrorCode.none, low
        ctx.data.recent.forget(topic, partition)  # fetches read what is left from Redis
        return ErrorCode.none, await ctx.store.delete_records(topic, partition, offset)
    except (*STORAGE_ERRORS, ColdStoreError):
        return LOG_UNAVAILABLE, -1
