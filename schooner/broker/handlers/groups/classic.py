"""Group APIs (classic protocol): FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups. The coordinator does the work; these map fields and errors."""

from __future__ import annotations

import datetime
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from ....coordinators.groups.classic.group import GroupState
from ....coordinators.groups.classic.model import Group
from ....coordinators.groups.coordinator import JoinRequest, NotCoordinator
from ....coordinators.groups.ownership import kind_of
from ....coordinators.groups.share.group import ShareGroup
from ....protocol.messages import make, sibling
from ....protocol.request_types import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    SyncGroupRequest,
)
from ....protocol.response_types import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    SyncGroupResponse,
    response_for,
)
from ....security.acls import OPERATIONS_OMITTED
from ....security.acls import AclOperation as Op
from ....security.acls import ResourceType as Resource
from ...context import BrokerContext
from ...net.endpoints import endpoint_for
from ...net.refusals import refused
from ...net.session import RequestScope
from ..common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS
from .share_state import forget_share_state

log = logging.getLogger(__name__)

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
UNKNOWN_OPERATIONS = OPERATIONS_OMITTED


class _Denied(Exception):
    """The principal may not use the group (GROUP_AUTHORIZATION_FAILED)."""


def _nullable_before(first_nullable: int, version: int, value: str | None) -> str | None:
    """Older versions have a non-null string where newer ones allow null."""
    return value if value is not None or version >= first_nullable else ""


def _ms(value: datetime.timedelta | int) -> int:
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


async def handle_find_coordinator(
    ctx: BrokerContext, body: FindCoordinatorRequest, scope: RequestScope
) -> FindCoordinatorResponse:
    resp = response_for(body)
    keys = list(body.coordinator_keys) if hasattr(body, "coordinator_keys") else [body.key]
    answers = []
    for key in keys:
        code, message, node = ErrorCode.none, None, None
        key_type = getattr(body, "key_type", KEY_TYPE_GROUP)
        if key_type not in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION):
            code, message = ErrorCode.invalid_request, f"unknown coordinator key type {key_type}"
            reason = f"coordinator key type {key_type} for {key!r} is not supported (0 group, 1 transaction)"
            refused(
                log, "FIND_COORDINATOR", reason, kind=f"key type {key_type}", key_type=key_type, scope=scope
            )
        elif key_type == KEY_TYPE_GROUP and not await ctx.access.authorizer.allowed(
            Op.DESCRIBE, Resource.GROUP, key, scope
        ):
            code = ErrorCode.group_authorization_failed
        elif key_type == KEY_TYPE_TRANSACTION and not await ctx.access.authorizer.allowed(
            Op.DESCRIBE, Resource.TRANSACTIONAL_ID, key, scope
        ):
            code = ErrorCode.transactional_id_authorization_failed
        else:
            coordinators = ctx.groups if key_type == KEY_TYPE_GROUP else ctx.transactions
            try:
                node = await coordinators.coordinator_for(key)
            except STORAGE_ERRORS:
                code = GROUPS_UNAVAILABLE
        address: tuple[int, str, int] | None = None
        if node is not None:
            where = endpoint_for(node, scope)
            if where is None:  # the coordinator has no listener like this request's (Kafka's answer)
                code = GROUPS_UNAVAILABLE
            else:
                address = (node.broker_id, *where)
        answers.append((key, code, message, address))
    if hasattr(body, "coordinator_keys"):
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            coordinators=tuple(
                make(
                    sibling(resp, "Coordinator"),
                    key=key,
                    node_id=address[0] if address else -1,
                    host=address[1] if address else "",
                    port=address[2] if address else -1,
                    error_code=code,
                    error_message=message,
                )
                for key, code, message, address in answers
            ),
        )
    _, code, message, address = answers[0]
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        node_id=address[0] if address else -1,
        host=address[1] if address else "",
        port=address[2] if address else -1,
    )


async def handle_join_group(
    ctx: BrokerContext, body: JoinGroupRequest, scope: RequestScope
) -> JoinGroupResponse:
    resp = response_for(body)
    version = body.__version__
    client_id, host = scope.client_id, scope.client_host
    session_ms = _ms(body.session_timeout)
    rebalance_ms = _ms(getattr(body, "rebalance_timeout", body.session_timeout))
    try:
        if not await ctx.access.authorizer.allowed(Op.READ, Resource.GROUP, body.group_id, scope):
            raise _Denied
        result = await ctx.groups.join(
            JoinRequest(
                group_id=body.group_id,
                member_id=body.member_id,
                instance_id=getattr(body, "group_instance_id", None),
                client_id=client_id,
                client_host=host,
                session_ms=session_ms,
                rebalance_ms=rebalance_ms,
                protocol_type=body.protocol_type,
                protocols=tuple((p.name, bytes(p.metadata)) for p in body.protocols),
                require_known_member=version >= 4,
            )
        )
        code, values = result.error, result
    except NotCoordinator:
        code, values = ErrorCode.not_coordinator, None
    except _Denied:
        code, values = ErrorCode.group_authorization_failed, None
    except STORAGE_ERRORS:
        code, values = GROUPS_UNAVAILABLE, None
    if code == ErrorCode.invalid_session_timeout:
        _log_session_refusal(ctx, scope, body.group_id, session_ms)
    members = tuple(
        make(sibling(resp, "JoinGroupResponseMember"), member_id=m, group_instance_id=i, metadata=md)
        for m, i, md in (values.members if values else [])
    )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        generation_id=values.generation if values else -1,
        protocol_type=values.protocol_type if values else None,
        protocol_name=_nullable_before(7, version, values.protocol_name if values else None),
        leader=values.leader if values else "",
        skip_assignment=values.skip_assignment if values else False,
        member_id=values.member_id if values else body.member_id,
        members=members,
    )


def _log_session_refusal(ctx: BrokerContext, scope: RequestScope, group_id: str, session_ms: int) -> None:
    """The client's consumer just fails its join; only the broker's log can say which bound it broke."""
    low, high = ctx.settings.group_min_session_ms, ctx.settings.group_max_session_ms
    reason = (
        f"group {group_id!r}: session timeout {session_ms} ms is outside the broker's bounds "
        f"[{low}, {high}] ms (group_min_session_ms, group_max_session_ms)"
    )
    error = "INVALID_SESSION_TIMEOUT"
    refused(log, "JOIN_GROUP", reason, kind="session timeout", group=group_id, error=error, scope=scope)


async def handle_sync_group(
    ctx: BrokerContext, body: SyncGroupRequest, scope: RequestScope
) -> SyncGroupResponse:
    resp = response_for(body)
    try:
        if not await ctx.access.authorizer.allowed(Op.READ, Resource.GROUP, body.group_id, scope):
            raise _Denied
        result = await ctx.groups.sync(
            body.group_id,
            body.generation_id,
            body.member_id,
            getattr(body, "group_instance_id", None),
            {a.member_id: bytes(a.assignment) for a in body.assignments},
        )
        code, protocol_type, protocol, assignment = (
            result.error, result.protocol_type, result.protocol_name, result.assignment
        )  # fmt: skip
    except NotCoordinator:
        code, protocol_type, protocol, assignment = ErrorCode.not_coordinator, None, None, b""
    except _Denied:
        code, protocol_type, protocol, assignment = ErrorCode.group_authorization_failed, None, None, b""
    except STORAGE_ERRORS:
        code, protocol_type, protocol, assignment = GROUPS_UNAVAILABLE, None, None, b""
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        protocol_type=protocol_type,
        protocol_name=protocol,
        assignment=assignment,
    )


async def handle_heartbeat(
    ctx: BrokerContext, body: HeartbeatRequest, scope: RequestScope
) -> HeartbeatResponse:
    resp = response_for(body)
    try:
        if not await ctx.access.authorizer.allowed(Op.READ, Resource.GROUP, body.group_id, scope):
            raise _Denied
        code = await ctx.groups.heartbeat(
            body.group_id, body.generation_id, body.member_id, getattr(body, "group_instance_id", None)
        )
    except _Denied:
        code = ErrorCode.group_authorization_failed
    except NotCoordinator:
        code = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        code = GROUPS_UNAVAILABLE
    return make(resp, throttle_time=NO_THROTTLE, error_code=code)


async def handle_leave_group(
    ctx: BrokerContext, body: LeaveGroupRequest, scope: RequestScope
) -> LeaveGroupResponse:
    resp = response_for(body)
    if hasattr(body, "members"):
        wanted = [(m.member_id, m.group_instance_id) for m in body.members]
    else:
        wanted = [(body.member_id, None)]
    code = ErrorCode.none
    errors: list[ErrorCode] = []
    try:
        if not await ctx.access.authorizer.allowed(Op.READ, Resource.GROUP, body.group_id, scope):
            raise _Denied
        errors = await ctx.groups.leave(body.group_id, wanted)
    except _Denied:
        code = ErrorCode.group_authorization_failed
    except NotCoordinator:
        code = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        code = GROUPS_UNAVAILABLE
    if not hasattr(body, "members") and errors:
        code = errors[0]
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        members=tuple(
            make(sibling(resp, "MemberResponse"), member_id=m, group_instance_id=i, error_code=e)
            for (m, i), e in zip(wanted, errors, strict=False)
        )
        if hasattr(body, "members")
        else (),
    )


async def handle_describe_groups(
    ctx: BrokerContext, body: DescribeGroupsRequest, scope: RequestScope
) -> DescribeGroupsResponse:
    resp = response_for(body)
    with_operations = bool(getattr(body, "include_authorized_operations", False))
    described = []
    for group_id in body.groups:
        values: dict[str, Any] = dict(
            error_code=ErrorCode.none,
            error_message=None,
            group_id=group_id,
            group_state=GroupState.DEAD.value,
            protocol_type="",
            protocol_data="",
            members=(),
            authorized_operations=UNKNOWN_OPERATIONS,
        )
        if not await ctx.access.authorizer.allowed(Op.DESCRIBE, Resource.GROUP, group_id, scope):
            values["error_code"] = ErrorCode.group_authorization_failed
            described.append(make(sibling(resp, "DescribedGroup"), **values))
            continue
        if with_operations:
            values["authorized_operations"] = await ctx.access.authorizer.operations(
                Resource.GROUP, group_id, scope
            )
        try:
            group = await ctx.groups.find(group_id)
            if group is None:
                described.append(
                    make(sibling(resp, "DescribedGroup"), **values)
                )  # never seen: Dead, as Kafka says
                continue
            if not isinstance(group, Group):
                # Kafka answers Dead for a consumer or share group here, and from v6 says why.
                if body.__version__ >= 6:
                    values["error_code"] = ErrorCode.group_id_not_found
                    values["error_message"] = f"Group {group_id} is not a classic group."
                described.append(make(sibling(resp, "DescribedGroup"), **values))
                continue
            # As Kafka: the protocol and each member's metadata only once Stable (in a rebalance they are
            # about to change); the assignment a member holds meanwhile is shown.
            stable = group.state == GroupState.STABLE
            values.update(
                group_state=group.state.value,
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol or "") if stable else "",
                members=tuple(
                    make(
                        sibling(resp, "DescribedGroupMember"),
                        member_id=m.member_id,
                        group_instance_id=m.instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata_for(group.protocol or "") if stable else b"",
                        member_assignment=m.assignment,
                    )
                    for m in group.members.values()
                ),
            )
        except NotCoordinator:
            values["error_code"] = ErrorCode.not_coordinator
        except STORAGE_ERRORS:
            values["error_code"] = GROUPS_UNAVAILABLE
        described.append(make(sibling(resp, "DescribedGroup"), **values))
    return make(resp, throttle_time=NO_THROTTLE, groups=tuple(described))


async def handle_list_groups(
    ctx: BrokerContext, body: ListGroupsRequest, scope: RequestScope
) -> ListGroupsResponse:
    """Every broker can answer for the whole deployment: group state is in Redis."""
    resp = response_for(body)
    states = {s.lower() for s in getattr(body, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(body, "types_filter", ()) or ()}
    try:
        ids = await ctx.store.group_ids()
        saved = await ctx.store.group_states(ids)
    except STORAGE_ERRORS:
        code = GROUPS_UNAVAILABLE
        return make(resp, throttle_time=NO_THROTTLE, error_code=code, groups=())
    # Kafka: DESCRIBE on the cluster shows every group; otherwise those the principal may describe.
    if not await ctx.access.authorizer.allowed_on_cluster(Op.DESCRIBE, scope):
        shown = await ctx.access.authorizer.allowed_names(Op.DESCRIBE, Resource.GROUP, ids, scope)
        ids = [i for i in ids if i in shown]
    listed = []
    for group_id in ids:
        loaded = ctx.groups.loaded(group_id)
        if loaded is not None:
            state = loaded.state.value
            kind = kind_of(loaded)
            protocol_type = (loaded.protocol_type or "") if isinstance(loaded, Group) else kind
        else:
            state = saved[group_id].get("state") or GroupState.EMPTY.value
            kind = saved[group_id].get("type") or "classic"
            protocol_type = saved[group_id].get("protocol_type") or ""
        if states and state.lower() not in states:
            continue
        if types and kind not in types:
            continue
        listed.append(
            make(
                sibling(resp, "ListedGroup"),
                group_id=group_id,
                protocol_type=protocol_type,
                group_state=state,
                group_type=kind,
            )
        )
    return make(resp, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=tuple(listed))


async def handle_delete_groups(
    ctx: BrokerContext, body: DeleteGroupsRequest, scope: RequestScope
) -> DeleteGroupsResponse:
    resp = response_for(body)
    results = []
    for group_id in body.groups_names:
        if not await ctx.access.authorizer.allowed(Op.DELETE, Resource.GROUP, group_id, scope):
            code = ErrorCode.group_authorization_failed
            results.append(make(sibling(resp, "DeletableGroupResult"), group_id=group_id, error_code=code))
            continue
        try:
            group = await ctx.groups.find(group_id)
            if group is None:
                results.append(
                    make(
                        sibling(resp, "DeletableGroupResult"),
                        group_id=group_id,
                        error_code=ErrorCode.group_id_not_found,
                    )
                )
                continue
            if group.members:
                code = ErrorCode.non_empty_group
            else:
                deleted = await ctx.store.delete_group(group_id)
                code = {1: ErrorCode.none, 0: ErrorCode.group_id_not_found}.get(
                    deleted, ErrorCode.non_empty_group
                )
                if deleted == 1:
                    ctx.groups.unload(group_id)
                    if isinstance(group, ShareGroup):
                        await forget_share_state(ctx, group_id)
        except NotCoordinator:
            code = ErrorCode.not_coordinator
        except STORAGE_ERRORS:
            code = GROUPS_UNAVAILABLE
        results.append(make(sibling(resp, "DeletableGroupResult"), group_id=group_id, error_code=code))
    return make(resp, throttle_time=NO_THROTTLE, results=tuple(results))
