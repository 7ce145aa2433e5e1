"""ListOffsets (earliest, latest, by timestamp, max timestamp, and tiered storage's earliest local,
latest tiered and earliest pending upload) and OffsetForLeaderEpoch.

Special timestamps, with the version that brought each (Kafka's ListOffsetsRequest.json): -3 (v7,
KIP-734), -4 earliest local (v8, KIP-405), -5 latest tiered (v9, KIP-1005), -6 earliest pending upload
(v11, KIP-1023). On a tiered topic (remote.storage.enable) earliest and timestamps reach the cold tier;
the local log is Redis.
"""

from __future__ import annotations

from collections import Counter

from kio.schema.errors import ErrorCode

from ...protocol.messages import make, sibling
from ...protocol.request_types import ListOffsetsRequest, OffsetForLeaderEpochRequest
from ...protocol.response_types import ListOffsetsResponse, OffsetForLeaderEpochResponse, response_for
from ...security.acls import AclOperation
from ...storage.cold.errors import ColdStoreError
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, resolve_topic

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
# Leader epochs never change here: Redis holds the only copy, so every partition stays at epoch 0.
LEADER_EPOCH = 0


async def handle_list_offsets(
    ctx: BrokerContext, body: ListOffsetsRequest, scope: RequestScope
) -> ListOffsetsResponse:
    resp = response_for(body)
    # read_committed (v2+): the latest offset is the last stable one, below any open transaction.
    committed = getattr(body, "isolation_level", 0) == 1
    # A partition named twice gets one answer, INVALID_REQUEST, as Kafka gives: which query wins is unsaid.
    named = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
    answered: set[tuple[str, int]] = set()
    topics = []
    for requested in body.topics:
        topic = await resolve_topic(ctx, scope, requested.name, op=AclOperation.DESCRIBE)
        partitions = []
        for p in requested.partitions:
            key = (requested.name, p.partition_index)
            if named[key] > 1:
                if key in answered:
                    continue
                answered.add(key)
                code, timestamp, offset = ErrorCode.invalid_request, -1, -1
            else:
                code, timestamp, offset = await _lookup(ctx, topic, p.partition_index, p.timestamp, committed)
            partitions.append(
                make(
                    sibling(resp, "ListOffsetsPartitionResponse"),
                    partition_index=p.partition_index,
                    error_code=code,
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=LEADER_EPOCH if offset >= 0 else -1,
                )
            )
        topics.append(
            make(sibling(resp, "ListOffsetsTopicResponse"), name=requested.name, partitions=tuple(partitions))
        )
    return make(resp, throttle_time=NO_THROTTLE, topics=tuple(topics))


async def _lookup(
    ctx: BrokerContext, topic: Topic | ErrorCode, partition: int, target: int, committed: bool
) -> tuple[ErrorCode, int, int]:
    if isinstance(topic, ErrorCode):
        return topic, -1, -1
    if not 0 <= partition < topic.partitions:
        return ErrorCode.unknown_topic_or_partition, -1, -1
    tiered = topic.remote_storage
    try:
        if target in (EARLIEST, EARLIEST_LOCAL, EARLIEST_PENDING_UPLOAD):
            start = (await ctx.store.bounds(topic, partition)).log_start_offset
            if not tiered and target == EARLIEST_PENDING_UPLOAD:
                return ErrorCode.none, -1, -1  # as Kafka: nothing is uploaded from a topic that is not tiered
            if tiered and target == EARLIEST:
                start = await ctx.tiering.earliest(topic, partition, start)
            elif tiered and target == EARLIEST_PENDING_UPLOAD:
                start = await ctx.tiering.earliest_pending_upload(topic, partition, start)
            return ErrorCode.none, -1, start
        if target == LATEST_TIERED:
            return ErrorCode.none, -1, await ctx.tiering.latest_tiered(topic, partition) if tiered else -1
        if target == LATEST and committed:
            _, stable = await ctx.store.stable_bounds(topic, partition)
            return ErrorCode.none, -1, stable
        if target == LATEST:
            b = await ctx.store.bounds(topic, partition)
            return ErrorCode.none, -1, b.high_watermark
        if target == MAX_TIMESTAMP:
            found = await ctx.store.max_timestamp(topic, partition)
        elif target >= 0:
            found = (
                await ctx.tiering.offset_for_timestamp(topic, partition, target)
                if tiered
                else await ctx.store.offset_for_timestamp(topic, partition, target)
            )
        else:
            return ErrorCode.invalid_request, -1, -1
    except (*STORAGE_ERRORS, ColdStoreError):
        return LOG_UNAVAILABLE, -1, -1
    if found is None:
        return ErrorCode.none, -1, -1
    offset, timestamp = found
    return ErrorCode.none, timestamp, offset


async def handle_offset_for_leader_epoch(
    ctx: BrokerContext, body: OffsetForLeaderEpochRequest, scope: RequestScope
) -> OffsetForLeaderEpochResponse:
    """Every partition has one epoch (0) whose end is the high watermark; no truncation ever happens."""
    resp = response_for(body)
    # Kafka: CLUSTER_ACTION on the cluster (followers), or else DESCRIBE on each topic.
    op = (
        None
        if await ctx.access.authorizer.allowed_on_cluster(AclOperation.CLUSTER_ACTION, scope)
        else AclOperation.DESCRIBE
    )
    topics = []
    for requested in body.topics:
        topic = await resolve_topic(ctx, scope, requested.topic, op=op)
        partitions = []
        for p in requested.partitions:
            code, epoch, end = ErrorCode.none, LEADER_EPOCH, -1
            if isinstance(topic, ErrorCode):
                code, epoch = topic, -1
            elif not 0 <= p.partition < topic.partitions:
                code, epoch = ErrorCode.unknown_topic_or_partition, -1
            else:
                try:
                    end = (await ctx.store.bounds(topic, p.partition)).high_watermark
                except STORAGE_ERRORS:
                    code, epoch = LOG_UNAVAILABLE, -1
            partitions.append(
                make(
                    sibling(resp, "EpochEndOffset"),
                    error_code=code,
                    partition=p.partition,
                    leader_epoch=epoch,
                    end_offset=end,
                )
            )
        topics.append(
            make(
                sibling(resp, "OffsetForLeaderTopicResult"),
                topic=requested.topic,
                partitions=tuple(partitions),
            )
        )
    return make(resp, throttle_time=NO_THROTTLE, topics=tuple(topics))
