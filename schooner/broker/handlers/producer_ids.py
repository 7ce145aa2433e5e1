"""InitProducerId for idempotent producers (no transactional id): a cluster-wide counter in Redis."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ...protocol.messages import make, response_module_of
from ...protocol.request_types import InitProducerIdRequest
from ..context import BrokerContext
from .common import NO_THROTTLE, PRODUCER_IDS_UNAVAILABLE, STORAGE_ERRORS

MAX_EPOCH = 32767


async def handle_init_producer_id(ctx: BrokerContext, body: InitProducerIdRequest) -> ResponsePayload:
    mod = response_module_of(body)

    def reply(code: ErrorCode, pid: int = -1, epoch: int = -1) -> ResponsePayload:
        return make(
            mod.InitProducerIdResponse,
            throttle_time=NO_THROTTLE,
            error_code=code,
            producer_id=pid,
            producer_epoch=epoch,
            ongoing_txn_producer_id=-1,
            ongoing_txn_producer_epoch=-1,
        )

    if body.transactional_id is not None:
        # Transactions are a later milestone; a transactional producer gets a clear, fatal answer.
        return reply(ErrorCode.transactional_id_authorization_failed)
    current_pid = getattr(body, "producer_id", -1)
    current_epoch = getattr(body, "producer_epoch", -1)
    try:
        if current_pid >= 0 and 0 <= current_epoch < MAX_EPOCH - 1:
            # KIP-360: an idempotent producer bumps its epoch to reset its sequence numbers.
            return reply(ErrorCode.none, current_pid, current_epoch + 1)
        return reply(ErrorCode.none, await ctx.store.next_producer_id(), 0)
    except STORAGE_ERRORS:
        return reply(PRODUCER_IDS_UNAVAILABLE)
