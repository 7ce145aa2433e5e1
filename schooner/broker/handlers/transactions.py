"""The transactional APIs: AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
DescribeTransactions and ListTransactions. The coordinator (coordinators/transactions.py)
holds the rules; these turn requests into its calls and its errors into each version's codes."""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol

from kio.schema.add_partitions_to_txn.v4.request import AddPartitionsToTxnRequest as BrokerBatchV4
from kio.schema.add_partitions_to_txn.v5.request import AddPartitionsToTxnRequest as BrokerBatchV5
from kio.schema.errors import ErrorCode

from ...coordinators.transactions import Producer, TransactionError
from ...protocol.messages import make, sibling
from ...protocol.request_types import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    ListTransactionsRequest,
    TxnOffsetCommitRequest,
)
from ...protocol.response_types import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    DescribeTransactionsResponse,
    EndTxnResponse,
    ListTransactionsResponse,
    TxnOffsetCommitResponse,
    response_for,
)
from ...security.acls import AclOperation as Op
from ...security.acls import ResourceType as Resource
from ...storage.topic_partition import TopicPartition
from ...storage.transactions.state import STATES
from ..context import BrokerContext
from ..net.session import RequestScope
from ..partitions.sequencer import group_offsets
from .common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS

# KIP-588: fencing answers PRODUCER_FENCED from these versions on, INVALID_PRODUCER_EPOCH before.
_FENCED_FROM = {"AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2, "TxnOffsetCommit": 3}
# Transactions v2 (KIP-890 part 2): EndTxn v5 moves the epoch on; TxnOffsetCommit v5 joins the group.
END_TXN_BUMPS_FROM = 5
TXN_OFFSET_COMMIT_JOINS_FROM = 5


class _TxnTopic(Protocol):
    """A topic of an AddPartitionsToTxn request, in either shape (a client's, or a broker's batch)."""

    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[int]: ...


# One transaction of an AddPartitionsToTxn: id, producer id and epoch, topics, verify only.
_TxnAdd = tuple[str, int, int, Sequence[_TxnTopic], bool]


def _fenced(api: str, version: int) -> ErrorCode:
    return ErrorCode.producer_fenced if version >= _FENCED_FROM[api] else ErrorCode.invalid_producer_epoch


async def _attempt(call: Awaitable[Any]) -> tuple[ErrorCode, Any]:
    try:
        return ErrorCode.none, await call
    except TransactionError as exc:
        return exc.code, None
    except STORAGE_ERRORS:
        return GROUPS_UNAVAILABLE, None


async def _txn_denial(
    ctx: BrokerContext, scope: RequestScope, transactional_id: str, group_id: str | None = None
) -> ErrorCode | None:
    """Kafka's checks of a transactional request: WRITE on the id, then READ on the group (if any)."""
    if not await ctx.access.authorizer.allowed(Op.WRITE, Resource.TRANSACTIONAL_ID, transactional_id, scope):
        return ErrorCode.transactional_id_authorization_failed
    if group_id is not None and not await ctx.access.authorizer.allowed(
        Op.READ, Resource.GROUP, group_id, scope
    ):
        return ErrorCode.group_authorization_failed
    return None


async def handle_add_partitions_to_txn(
    ctx: BrokerContext, body: AddPartitionsToTxnRequest, scope: RequestScope
) -> AddPartitionsToTxnResponse:
    resp = response_for(body)
    version = body.__version__
    # v4+ batches are brokers verifying produce requests: Kafka lets only a cluster member send them.
    if version > 3 and not await ctx.access.authorizer.allowed_on_cluster(Op.CLUSTER_ACTION, scope):
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            results_by_transaction=(),
        )
    # v0-v3: one transaction from a client; v4+: a batch of them (Kafka brokers verifying produce).
    # The two shapes share no fields: each branch reads its own.
    batch: list[_TxnAdd]
    if isinstance(body, BrokerBatchV4 | BrokerBatchV5):
        batch = [
            (t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only)
            for t in body.transactions
        ]
    else:
        batch = [(body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
                  body.v3_and_below_producer_epoch, body.v3_and_below_topics, False)]  # fmt: skip
    results: list[tuple[str, Sequence[_TxnTopic], dict[tuple[str, int], ErrorCode]]] = []
    for transactional_id, pid, epoch, topics, verify_only in batch:
        wanted: list[tuple[str, int]] = [(t.name, p) for t in topics for p in t.partitions]
        codes: dict[tuple[str, int], ErrorCode] = {}
        # A client (v0-v3) needs WRITE on the id and the topics; a broker's batch was checked above.
        denial = await _txn_denial(ctx, scope, transactional_id) if version <= 3 else None
        names = {n for n, _ in wanted}
        writable = (
            await ctx.access.authorizer.allowed_names(Op.WRITE, Resource.TOPIC, names, scope)
            if version <= 3
            else names
        )
        for name, p in wanted:
            if denial is not None:
                codes[(name, p)] = denial
            elif name not in writable:
                codes[(name, p)] = ErrorCode.topic_authorization_failed
        if not codes:
            for name, p in wanted:
                topic = await ctx.topics.load(name)
                if topic is None or not 0 <= p < topic.partitions:
                    codes[(name, p)] = ErrorCode.unknown_topic_or_partition
        if codes:  # Kafka adds none when one is unknown or denied, and says so for the rest
            for key in wanted:
                codes.setdefault(key, ErrorCode.operation_not_attempted)
        else:
            producer = Producer(pid, epoch)
            tps = [TopicPartition(n, p) for n, p in wanted]
            if verify_only:
                call = ctx.transactions.verify_produce(transactional_id, producer, tps, implicit=False)
            else:
                call = ctx.transactions.add(
                    transactional_id, producer, tps, fenced=_fenced("AddPartitionsToTxn", version)
                )
            code, _ = await _attempt(call)
            codes = dict.fromkeys(wanted, code)
        results.append((transactional_id, topics, codes))

    def topic_results(
        topics: Sequence[_TxnTopic], codes: dict[tuple[str, int], ErrorCode]
    ) -> tuple[Any, ...]:
        return tuple(
            make(
                sibling(resp, "AddPartitionsToTxnTopicResult"),
                name=t.name,
                results_by_partition=tuple(
                    make(
                        sibling(resp, "AddPartitionsToTxnPartitionResult"),
                        partition_index=p,
                        partition_error_code=codes[(t.name, p)],
                    )
                    for p in t.partitions
                ),
            )
            for t in topics
        )

    if version <= 3:
        _, topics, codes = results[0]
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            results_by_topic_v3_and_below=topic_results(topics, codes),
        )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        results_by_transaction=tuple(
            make(
                sibling(resp, "AddPartitionsToTxnResult"),
                transactional_id=tid,
                topic_results=topic_results(topics, codes),
            )
            for tid, topics, codes in results
        ),
    )


async def handle_add_offsets_to_txn(
    ctx: BrokerContext, body: AddOffsetsToTxnRequest, scope: RequestScope
) -> AddOffsetsToTxnResponse:
    resp = response_for(body)
    producer = Producer(body.producer_id, body.producer_epoch)
    code = await _txn_denial(ctx, scope, body.transactional_id, body.group_id)
    if code is None:
        code, _ = await _attempt(
            ctx.transactions.add(
                body.transactional_id,
                producer,
                group=body.group_id,
                fenced=_fenced("AddOffsetsToTxn", body.__version__),
            )
        )
    return make(resp, throttle_time=NO_THROTTLE, error_code=code)


async def handle_txn_offset_commit(
    ctx: BrokerContext, body: TxnOffsetCommitRequest, scope: RequestScope
) -> TxnOffsetCommitResponse:
    """Offsets wait beside the group until the transaction ends (storage/transactions/offsets.py)."""
    async with ctx.data.sequencer.claim(group_offsets(body.group_id)):  # in the order received, as commits
        return await _txn_offset_commit(ctx, scope, body)


async def _txn_offset_commit(
    ctx: BrokerContext, scope: RequestScope, body: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    resp = response_for(body)
    version = body.__version__
    producer = Producer(body.producer_id, body.producer_epoch)
    # The group must be in the transaction, or its offsets would never be settled: v5 joins it
    # (transactions v2), older versions have sent AddOffsetsToTxn, which this also accepts.
    # Kafka's order: WRITE on the id and READ on the group refuse the whole request; a topic the
    # principal may not read is refused alone, and the coordinator sees only the readable ones.
    denial = await _txn_denial(ctx, scope, body.transactional_id, body.group_id)
    readable = await ctx.access.authorizer.allowed_names(
        Op.READ, Resource.TOPIC, {t.name for t in body.topics}, scope
    )
    code = denial or ErrorCode.none
    if denial is None and (readable or not body.topics):
        code, _ = await _attempt(
            ctx.transactions.add(
                body.transactional_id,
                producer,
                group=body.group_id,
                fenced=_fenced("TxnOffsetCommit", version),
                implicit=version >= TXN_OFFSET_COMMIT_JOINS_FROM,
            )
        )
    to_stage: dict[TopicPartition, tuple[int, int, str | None]] = {}
    codes: dict[tuple[str, int], ErrorCode] = {}
    for t in body.topics:
        topic = await ctx.topics.load(t.name) if code == ErrorCode.none and t.name in readable else None
        for p in t.partitions:
            if denial is None and t.name not in readable:
                codes[(t.name, p.partition_index)] = ErrorCode.topic_authorization_failed
            elif code != ErrorCode.none:
                codes[(t.name, p.partition_index)] = code
            elif topic is None or not 0 <= p.partition_index < topic.partitions:
                codes[(t.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                epoch = getattr(p, "committed_leader_epoch", -1)
                to_stage[TopicPartition(t.name, p.partition_index)] = (
                    p.committed_offset,
                    epoch,
                    p.committed_metadata,
                )
                codes[(t.name, p.partition_index)] = ErrorCode.none
    if to_stage:
        try:
            await ctx.store.stage_txn_offsets(body.group_id, body.producer_id, to_stage)
        except STORAGE_ERRORS:
            for tp in to_stage:
                codes[(tp.topic, tp.partition)] = GROUPS_UNAVAILABLE
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            make(
                sibling(resp, "TxnOffsetCommitResponseTopic"),
                name=t.name,
                partitions=tuple(
                    make(
                        sibling(resp, "TxnOffsetCommitResponsePartition"),
                        partition_index=p.partition_index,
                        error_code=codes[(t.name, p.partition_index)],
                    )
                    for p in t.partitions
                ),
            )
            for t in body.topics
        ),
    )


async def handle_end_txn(ctx: BrokerContext, body: EndTxnRequest, scope: RequestScope) -> EndTxnResponse:
    resp = response_for(body)
    version = body.__version__
    code, result = ErrorCode.transactional_id_authorization_failed, None
    if await _txn_denial(ctx, scope, body.transactional_id) is None:
        code, result = await _attempt(
            ctx.transactions.end(
                body.transactional_id,
                Producer(body.producer_id, body.producer_epoch),
                body.committed,
                bump=version >= END_TXN_BUMPS_FROM,
                fenced=_fenced("EndTxn", version),
            )
        )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        producer_id=result.producer_id if result else -1,
        producer_epoch=result.producer_epoch if result else -1,
    )


async def handle_describe_transactions(
    ctx: BrokerContext, body: DescribeTransactionsRequest, scope: RequestScope
) -> DescribeTransactionsResponse:
    resp = response_for(body)
    states = []
    for transactional_id in body.transactional_ids:
        if await ctx.access.authorizer.allowed(
            Op.DESCRIBE, Resource.TRANSACTIONAL_ID, transactional_id, scope
        ):
            code, s = await _attempt(ctx.transactions.state_of(transactional_id))
        else:
            code, s = ErrorCode.transactional_id_authorization_failed, None
        if code == ErrorCode.none and s is None:
            code = ErrorCode.transactional_id_not_found
        topics: dict[str, list[int]] = {}
        for key in s.partitions if s else ():
            name, _, p = key.rpartition(":")
            topics.setdefault(name, []).append(int(p))
        # Kafka leaves out the partitions of topics the principal may not describe.
        shown = await ctx.access.authorizer.allowed_names(Op.DESCRIBE, Resource.TOPIC, topics, scope)
        topics = {n: ps for n, ps in topics.items() if n in shown}
        states.append(
            make(
                sibling(resp, "TransactionState"),
                error_code=code,
                transactional_id=transactional_id,
                transaction_state=s.state if s else "",
                transaction_timeout=datetime.timedelta(milliseconds=s.timeout_ms if s else 0),
                transaction_start_time=_time(s.started_ms if s else -1),
                producer_id=s.producer_id if s else -1,
                producer_epoch=s.producer_epoch if s else -1,
                topics=tuple(
                    make(sibling(resp, "TopicData"), topic=n, partitions=tuple(ps))
                    for n, ps in topics.items()
                ),
            )
        )
    return make(resp, throttle_time=NO_THROTTLE, transaction_states=tuple(states))


def _time(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(max(ms, 0) / 1000, tz=datetime.UTC)


async def handle_list_transactions(
    ctx: BrokerContext, body: ListTransactionsRequest, scope: RequestScope
) -> ListTransactionsResponse:
    """Every transactional id (state is shared by all brokers, so each one lists them all)."""
    resp = response_for(body)
    state_filters = set(body.state_filters)
    unknown = tuple(f for f in body.state_filters if f not in STATES)
    pids = set(body.producer_id_filters)
    duration = getattr(body, "duration_filter", -1)
    pattern = getattr(body, "transactional_id_pattern", None)
    matcher = re.compile(pattern) if pattern else None
    now = int(time.time() * 1000)
    found = []
    code = ErrorCode.none
    try:
        ids = await ctx.transactions.all_ids()
        shown = await ctx.access.authorizer.allowed_names(Op.DESCRIBE, Resource.TRANSACTIONAL_ID, ids, scope)
        for transactional_id in ids:
            if transactional_id not in shown:
                continue
            s = await ctx.transactions.state_of(transactional_id)
            if s is None:
                continue
            if state_filters and s.state not in state_filters:
                continue
            if pids and s.producer_id not in pids:
                continue
            if duration >= 0 and (s.started_ms < 0 or now - s.started_ms < duration):
                continue
            if matcher is not None and not matcher.fullmatch(transactional_id):
                continue
            found.append((transactional_id, s))
    except STORAGE_ERRORS:
        code, found = GROUPS_UNAVAILABLE, []
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        unknown_state_filters=unknown,
        transaction_states=tuple(
            make(
                sibling(resp, "TransactionState"),
                transactional_id=t,
                producer_id=s.producer_id,
                transaction_state=s.state,
            )
            for t, s in found
        ),
    )
