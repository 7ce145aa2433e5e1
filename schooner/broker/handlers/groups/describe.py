"""ConsumerGroupDescribe and ShareGroupDescribe: one way to describe an epoch-based group of either kind.

Both check DESCRIBE on the group, find it through the kind's coordinator, and answer its state, epochs,
assignor and members; a member's assignments name their topics (a topic deleted since is looked up by
id). The kinds differ only in the fields a member has besides the common ones, which consumer.py and
share.py pass in.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ....coordinators.groups.coordinator import NotCoordinator
from ....coordinators.groups.modern.coordinator import Refusal
from ....coordinators.groups.modern.group import Assignment, EpochGroup, EpochMember
from ....protocol.messages import make, sibling
from ....protocol.response_types import ConsumerGroupDescribeResponse, ShareGroupDescribeResponse
from ....security.acls import OPERATIONS_OMITTED, ResourceType
from ....security.acls import AclOperation as Op
from ...context import BrokerContext
from ...net.session import RequestScope
from ..common import GROUPS_UNAVAILABLE, STORAGE_ERRORS

# The response whose DescribedGroup a group kind's describe builds.
DescribeResponse = ConsumerGroupDescribeResponse | ShareGroupDescribeResponse
M = TypeVar("M", bound=EpochMember)

Described = Callable[[Assignment], Awaitable[Entity]]  # an assignment as the response's Assignment
MemberFields = Callable[[M, Described], Awaitable[dict[str, Any]]]  # a kind's own fields of a member


def undescribed(group_id: str, **values: Any) -> dict[str, Any]:
    """The DescribedGroup's fields for a group that is not described (Kafka's "Dead" defaults)."""
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": group_id,
        "group_state": "Dead",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "members": (),
        "authorized_operations": OPERATIONS_OMITTED,
        **values,
    }


async def describe_refusal(
    ctx: BrokerContext, scope: RequestScope, group_id: str, values: dict[str, Any], with_operations: bool
) -> bool:
    """Kafka's check of a KIP-848 or share group describe: DESCRIBE on the group. Fills `values` (the
    DescribedGroup's) with the error, or with the authorized operations when they are asked for."""
    if not await ctx.access.authorizer.allowed(Op.DESCRIBE, ResourceType.GROUP, group_id, scope):
        values.update(
            error_code=ErrorCode.group_authorization_failed,
            error_message=f"The principal may not DESCRIBE group {group_id!r}.",
        )
        return True
    if with_operations:
        values["authorized_operations"] = await ctx.access.authorizer.operations(
            ResourceType.GROUP, group_id, scope
        )
    return False


async def describe_group(
    ctx: BrokerContext,
    scope: RequestScope,
    group_id: str,
    resp: type[DescribeResponse],
    with_operations: bool,
    find: Callable[[str], Awaitable[EpochGroup[M] | Refusal]],
    member_fields: MemberFields[M] | None = None,
) -> Entity:
    """One DescribedGroup: `find` is the kind's coordinator's lookup (the group, or why not)."""
    values = undescribed(group_id)
    if await describe_refusal(ctx, scope, group_id, values, with_operations):
        return make(sibling(resp, "DescribedGroup"), **values)
    try:
        found = await find(group_id)
        if isinstance(found, Refusal):
            values.update(error_code=found.error, error_message=found.message)
            return make(sibling(resp, "DescribedGroup"), **values)
        async with found.lock:
            values.update(
                group_state=found.state.value,
                group_epoch=found.group_epoch,
                assignment_epoch=found.assignment_epoch,
                assignor_name=found.assignor,
                members=tuple(await _members(ctx, found, resp, member_fields)),
            )
    except NotCoordinator:
        values["error_code"] = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        values["error_code"] = GROUPS_UNAVAILABLE
    return make(sibling(resp, "DescribedGroup"), **values)


async def _members(
    ctx: BrokerContext,
    group: EpochGroup[M],
    resp: type[DescribeResponse],
    member_fields: MemberFields[M] | None,
) -> list[Entity]:
    names = {info.id: name for name, info in group.topics.items()}

    async def assignment(parts: Assignment) -> Entity:
        rows = []
        for topic_id, partitions in sorted(parts.items()):
            name = names.get(topic_id)
            if name is None:  # a topic deleted since: look the id up, else leave the name empty
                found = await ctx.topics.by_id(uuid.UUID(topic_id))
                name = found.name if found else ""
            rows.append(
                make(
                    sibling(resp, "TopicPartitions"),
                    topic_id=uuid.UUID(topic_id),
                    topic_name=name,
                    partitions=tuple(sorted(partitions)),
                )
            )
        return make(sibling(resp, "Assignment"), topic_partitions=tuple(rows))

    out = []
    for m in group.members.values():
        fields: dict[str, Any] = dict(
            member_id=m.member_id,
            rack_id=m.rack_id,
            member_epoch=m.epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=m.subscribed,
            assignment=await assignment(m.assigned),
        )
        if member_fields is not None:
            fields.update(await member_fields(m, assignment))
        out.append(make(sibling(resp, "Member"), **fields))
    return out
