"""DescribeProducers (KIP-664): the producers each partition remembers, with their open transactions."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ...protocol.messages import make, sibling
from ...protocol.request_types import DescribeProducersRequest
from ...protocol.response_types import DescribeProducersResponse, response_for
from ...security.acls import AclOperation
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, resolve_topic

# Coordinators here have no epochs (their state is in Redis, not in a log they lead).
NO_COORDINATOR_EPOCH = -1
NO_TRANSACTION = -1


async def handle_describe_producers(
    ctx: BrokerContext, body: DescribeProducersRequest, scope: RequestScope
) -> DescribeProducersResponse:
    resp = response_for(body)
    topics = []
    for requested in body.topics:
        topic = await resolve_topic(ctx, scope, requested.name, op=AclOperation.READ)
        partitions = tuple([await _describe(ctx, resp, topic, p) for p in requested.partition_indexes])
        topics.append(make(sibling(resp, "TopicResponse"), name=requested.name, partitions=partitions))
    return make(resp, throttle_time=NO_THROTTLE, topics=tuple(topics))


async def _describe(
    ctx: BrokerContext, resp: type[DescribeProducersResponse], topic: Topic | ErrorCode, partition: int
) -> Entity:
    def answer(code: ErrorCode, message: str | None = None, producers: tuple[Entity, ...] = ()) -> Entity:
        return make(
            sibling(resp, "PartitionResponse"),
            partition_index=partition,
            error_code=code,
            error_message=message,
            active_producers=producers,
        )

    if isinstance(topic, ErrorCode):
        return answer(topic)
    if not 0 <= partition < topic.partitions:
        return answer(ErrorCode.unknown_topic_or_partition, f"{topic.name} has no partition {partition}")
    try:
        states = await ctx.store.producer_states(topic, partition)
        open_at = {t.producer_id: t.first_offset for t in await ctx.store.open_transactions(topic, partition)}
    except STORAGE_ERRORS as exc:
        return answer(LOG_UNAVAILABLE, f"Redis is unavailable: {exc}")
    return answer(
        ErrorCode.none,
        producers=tuple(
            make(
                sibling(resp, "ProducerState"),
                producer_id=s.producer_id,
                producer_epoch=s.producer_epoch,
                last_sequence=s.last_sequence,
                last_timestamp=s.last_append_ms,
                coordinator_epoch=NO_COORDINATOR_EPOCH,
                current_txn_start_offset=open_at.get(s.producer_id, NO_TRANSACTION),
            )
            for s in states
        ),
    )
