"""DescribeClientQuotas and AlterClientQuotas (KIP-546): quotas are kept in Redis, under the base
keyspace (they are deployment-wide), and enforced by every broker (broker/access/quotas.py).

The rules (entity types and combinations, quota keys, match types, `strict`) are Kafka's and live in
storage/quotas.py beside the keys; these handlers map them to the wire. An alter publishes a notice
(quotas_alter.lua), so every broker reloads its quotas at once; this one reloads before it answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Protocol

from kio.schema.errors import ErrorCode

from ...protocol.messages import make, sibling
from ...protocol.request_types import AlterClientQuotasRequest, DescribeClientQuotasRequest
from ...protocol.response_types import AlterClientQuotasResponse, DescribeClientQuotasResponse, response_for
from ...security.acls import AclOperation
from ...storage import quotas
from ...storage.quotas import InvalidQuota, QuotaChange, UnknownEntityType
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import ADMIN_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, may_administer_deployment


class _EntityData(Protocol):
    @property
    def entity_type(self) -> str: ...
    @property
    def entity_name(self) -> str | None: ...


class _OpData(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> float: ...
    @property
    def remove(self) -> bool: ...


class _EntryData(Protocol):
    """An AlterClientQuotas entry of either version."""

    @property
    def entity(self) -> Sequence[_EntityData]: ...
    @property
    def ops(self) -> Sequence[_OpData]: ...


async def handle_describe_client_quotas(
    ctx: BrokerContext, body: DescribeClientQuotasRequest, scope: RequestScope
) -> DescribeClientQuotasResponse:
    resp = response_for(body)
    if not await may_administer_deployment(ctx, scope, AclOperation.DESCRIBE_CONFIGS):
        return _describe_failed(resp, ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    try:
        wanted = quotas.filter_of(
            ((c.entity_type, c.match_type, c.match) for c in body.components), body.strict
        )
    except InvalidQuota as exc:
        return _describe_failed(resp, ErrorCode.invalid_request, str(exc))
    except UnknownEntityType as exc:  # Kafka answers an unknown entity type so
        return _describe_failed(resp, ErrorCode.unsupported_version, str(exc))
    try:
        stored = await ctx.store.client_quotas(ctx.access.quotas.base)
    except STORAGE_ERRORS as exc:
        return _describe_failed(resp, ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}")
    entries = tuple(
        make(
            sibling(resp, "EntryData"),
            entity=tuple(
                make(sibling(resp, "EntityData"), entity_type=t, entity_name=name) for t, name in entity
            ),
            values=tuple(make(sibling(resp, "ValueData"), key=k, value=v) for k, v in sorted(values.items())),
        )
        for entity, values in sorted(stored.items(), key=lambda item: quotas.entity_id(item[0]))
        if wanted.matches(entity)
    )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        entries=entries,
    )


def _describe_failed(
    resp: type[DescribeClientQuotasResponse], code: ErrorCode, message: str
) -> DescribeClientQuotasResponse:
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        entries=None,  # as Kafka answers a failed describe
    )


async def handle_alter_client_quotas(
    ctx: BrokerContext, body: AlterClientQuotasRequest, scope: RequestScope
) -> AlterClientQuotasResponse:
    resp = response_for(body)
    requested: Sequence[_EntryData] = body.entries
    outcomes: list[tuple[ErrorCode, str | None]] = []
    changes: list[QuotaChange] = []
    allowed = await may_administer_deployment(ctx, scope, AclOperation.ALTER_CONFIGS)
    for entry in requested:
        if not allowed:
            outcomes.append((ErrorCode.cluster_authorization_failed, "Cluster authorization failed."))
            continue
        try:
            change = _change_of(entry)
            if any(c.entity == change.entity for c in changes):
                raise InvalidQuota(f"Ignoring duplicate entity {quotas.entity_id(change.entity)}")
        except InvalidQuota as exc:
            outcomes.append((ErrorCode.invalid_request, str(exc)))
            continue
        changes.append(change)
        outcomes.append((ErrorCode.none, None))
    if changes and not body.validate_only:
        try:
            await ctx.store.alter_client_quotas(ctx.access.quotas.base, changes)
        except STORAGE_ERRORS as exc:
            failed = (ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}")
            outcomes = [failed if code == ErrorCode.none else (code, m) for code, m in outcomes]
        else:
            with contextlib.suppress(*STORAGE_ERRORS):  # the background reload tries again
                await ctx.access.quotas.reload()  # in force here before the client hears of it
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        entries=tuple(
            make(
                sibling(resp, "EntryData"),
                error_code=code,
                error_message=message,
                entity=tuple(
                    make(sibling(resp, "EntityData"), entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity
                ),
            )
            for entry, (code, message) in zip(requested, outcomes, strict=True)
        ),
    )


def _change_of(entry: _EntryData) -> QuotaChange:
    """The entry's change, checked by Kafka's rules; raises InvalidQuota. A key that does not apply to
    the entity is refused in a removal too, so a typo is reported rather than ignored."""
    entity = quotas.entity_of((e.entity_type, e.entity_name) for e in entry.entity)
    set_values: dict[str, float] = {}
    remove: list[str] = []
    for op in entry.ops:
        if op.key in set_values or op.key in remove:
            raise InvalidQuota(f"Duplicate quota key {op.key} not updating quota for this entity")
        quotas.check_key(entity, op.key)
        if op.remove:
            remove.append(op.key)
        else:
            quotas.check_value(entity, op.key, op.value)
            set_values[op.key] = op.value
    return QuotaChange(entity, set_values, tuple(remove))
