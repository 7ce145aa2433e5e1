"""InitProducerId: idempotent producers get an id from a cluster-wide counter in Redis; transactional
ones get theirs from the transaction coordinator, which fences the id's earlier producers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from ...coordinators.transactions import Producer, TransactionError
from ...protocol.messages import make
from ...protocol.request_types import InitProducerIdRequest
from ...protocol.response_types import InitProducerIdResponse, response_for
from ...security.acls import AclOperation as Op
from ...security.acls import ResourceType as Resource
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import NO_THROTTLE, PRODUCER_IDS_UNAVAILABLE, STORAGE_ERRORS

MAX_EPOCH = 32767
PRODUCER_FENCED_FROM = 4  # KIP-588


async def handle_init_producer_id(
    ctx: BrokerContext, body: InitProducerIdRequest, scope: RequestScope
) -> InitProducerIdResponse:
    resp = response_for(body)

    def reply(code: ErrorCode, pid: int = -1, epoch: int = -1) -> InitProducerIdResponse:
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=code,
            producer_id=pid,
            producer_epoch=epoch,
            ongoing_txn_producer_id=-1,
            ongoing_txn_producer_epoch=-1,
        )

    current_pid = getattr(body, "producer_id", -1)
    current_epoch = getattr(body, "producer_epoch", -1)
    if body.transactional_id == "":
        return reply(ErrorCode.invalid_request)  # as Kafka: an empty id is no transactional id
    if body.transactional_id is not None:
        if not await ctx.access.authorizer.allowed(
            Op.WRITE, Resource.TRANSACTIONAL_ID, body.transactional_id, scope
        ):
            return reply(ErrorCode.transactional_id_authorization_failed)
        current = Producer(current_pid, current_epoch) if current_pid >= 0 else None
        timeout_ms = int(body.transaction_timeout.total_seconds() * 1000)
        try:
            got = await ctx.transactions.init_producer(body.transactional_id, timeout_ms, current)
        except TransactionError as exc:
            code = exc.code
            if code == ErrorCode.producer_fenced and body.__version__ < PRODUCER_FENCED_FROM:
                code = ErrorCode.invalid_producer_epoch
            return reply(code)
        except STORAGE_ERRORS:
            return reply(ErrorCode.coordinator_not_available)
        return reply(ErrorCode.none, got.producer_id, got.producer_epoch)
    # Kafka (KIP-679): an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on a topic.
    if not await ctx.access.authorizer.allowed_on_cluster(
        Op.IDEMPOTENT_WRITE, scope
    ) and not await ctx.access.authorizer.allowed_any(Op.WRITE, Resource.TOPIC, scope):
        return reply(ErrorCode.cluster_authorization_failed)
    try:
        if current_pid >= 0 and 0 <= current_epoch < MAX_EPOCH - 1:
            # KIP-360: an idempotent producer bumps its epoch to reset its sequence numbers.
            return reply(ErrorCode.none, current_pid, current_epoch + 1)
        return reply(ErrorCode.none, await ctx.store.next_producer_id(), 0)
    except STORAGE_ERRORS:
        return reply(PRODUCER_IDS_UNAVAILABLE)
