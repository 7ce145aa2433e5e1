"""CreateAcls, DescribeAcls, DeleteAcls: Kafka's ACL management, over the bindings in Redis.

With `authorizer = false` each answers SECURITY_DISABLED, as a Kafka broker without
`authorizer.class.name` does: every creation and every delete filter gets the error, and DescribeAcls
gets it at the top level. Clients report it as "security disabled", and tools can tell why nothing
changed.

With the authorizer on, CreateAcls and DeleteAcls need ALTER on the cluster and DescribeAcls DESCRIBE
(CLUSTER_AUTHORIZATION_FAILED otherwise). A creation or filter Kafka would refuse gets INVALID_REQUEST
with Kafka's message (security/acls.py checks them), the others of the request go ahead. A binding
deleted by several filters of one request is reported under the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ...protocol.messages import make, sibling
from ...protocol.request_types import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from ...protocol.response_types import (
    CreateAclsResponse,
    DeleteAclsResponse,
    DescribeAclsResponse,
    response_for,
)
from ...security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    InvalidAcl,
    binding_from_wire,
    filter_from_wire,
)
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import ADMIN_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS

NO_AUTHORIZER = "No authorizer is configured on the broker: ACLs are neither stored nor enforced"
NOT_AUTHORIZED = "The principal is not authorized to {} the cluster's ACLs"

Answer = tuple[ErrorCode, str | None]


def _filter(f: Any) -> AclFilter:
    """A DescribeAclsRequest or DeleteAclsFilter as a filter; raises InvalidAcl."""
    return filter_from_wire(
        f.resource_type_filter,
        f.resource_name_filter,
        f.pattern_type_filter,
        f.principal_filter,
        f.host_filter,
        f.operation,
        f.permission_type,
    )


async def handle_create_acls(
    ctx: BrokerContext, body: CreateAclsRequest, scope: RequestScope
) -> CreateAclsResponse:
    resp = response_for(body)
    answers = await _create(ctx, scope, body.creations)
    results = tuple(
        make(sibling(resp, "AclCreationResult"), error_code=c, error_message=m) for c, m in answers
    )
    return make(resp, throttle_time=NO_THROTTLE, results=results)


async def _create(ctx: BrokerContext, scope: RequestScope, creations: Sequence[Any]) -> list[Answer]:
    if not ctx.access.authorizer.enabled:
        return [(ErrorCode.security_disabled, NO_AUTHORIZER)] * len(creations)
    if not await ctx.access.authorizer.allowed_on_cluster(AclOperation.ALTER, scope):
        return [(ErrorCode.cluster_authorization_failed, NOT_AUTHORIZED.format("alter"))] * len(creations)
    answers: list[Answer] = []
    valid: list[tuple[int, AclBinding]] = []
    for c in creations:
        try:
            binding = binding_from_wire(
                c.resource_type,
                c.resource_name,
                c.resource_pattern_type,
                c.principal,
                c.host,
                c.operation,
                c.permission_type,
            )
        except InvalidAcl as exc:
            answers.append((ErrorCode.invalid_request, str(exc)))
            continue
        valid.append((len(answers), binding))
        answers.append((ErrorCode.none, None))
    if valid:
        try:
            await ctx.access.authorizer.create(b for _, b in valid)
        except STORAGE_ERRORS as exc:
            for i, _ in valid:
                answers[i] = (ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}")
    return answers


async def handle_describe_acls(
    ctx: BrokerContext, body: DescribeAclsRequest, scope: RequestScope
) -> DescribeAclsResponse:
    resp = response_for(body)

    def answer(
        code: ErrorCode, message: str | None, resources: tuple[Entity, ...] = ()
    ) -> DescribeAclsResponse:
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=code,
            error_message=message,
            resources=resources,
        )

    if not ctx.access.authorizer.enabled:
        return answer(ErrorCode.security_disabled, NO_AUTHORIZER)
    if not await ctx.access.authorizer.allowed_on_cluster(AclOperation.DESCRIBE, scope):
        return answer(ErrorCode.cluster_authorization_failed, NOT_AUTHORIZED.format("describe"))
    try:
        wanted = _filter(body)
    except InvalidAcl as exc:
        return answer(ErrorCode.invalid_request, str(exc))
    try:
        bindings = (await ctx.access.authorizer.bindings()).matching(wanted)
    except STORAGE_ERRORS as exc:
        return answer(ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}")
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for b in bindings:
        grouped.setdefault((b.resource_type, b.name, b.pattern_type), []).append(b)
    resources = tuple(
        make(
            sibling(resp, "DescribeAclsResource"),
            resource_type=rtype,
            resource_name=name,
            pattern_type=pattern,
            acls=tuple(
                make(
                    sibling(resp, "AclDescription"),
                    principal=b.principal,
                    host=b.host,
                    operation=int(b.operation),
                    permission_type=int(b.permission),
                )
                for b in found
            ),
        )
        for (rtype, name, pattern), found in grouped.items()
    )
    return answer(ErrorCode.none, None, resources)


async def handle_delete_acls(
    ctx: BrokerContext, body: DeleteAclsRequest, scope: RequestScope
) -> DeleteAclsResponse:
    resp = response_for(body)

    def result(code: ErrorCode, message: str | None, deleted: Sequence[AclBinding] = ()) -> Entity:
        return make(
            sibling(resp, "DeleteAclsFilterResult"),
            error_code=code,
            error_message=message,
            matching_acls=tuple(
                make(
                    sibling(resp, "DeleteAclsMatchingAcl"),
                    error_code=ErrorCode.none,
                    error_message=None,
                    resource_type=int(b.resource_type),
                    resource_name=b.name,
                    pattern_type=int(b.pattern_type),
                    principal=b.principal,
                    host=b.host,
                    operation=int(b.operation),
                    permission_type=int(b.permission),
                )
                for b in deleted
            ),
        )

    def every(code: ErrorCode, message: str) -> DeleteAclsResponse:
        results = tuple(result(code, message) for _ in body.filters)
        return make(resp, throttle_time=NO_THROTTLE, filter_results=results)

    if not ctx.access.authorizer.enabled:
        return every(ErrorCode.security_disabled, NO_AUTHORIZER)
    if not await ctx.access.authorizer.allowed_on_cluster(AclOperation.ALTER, scope):
        return every(ErrorCode.cluster_authorization_failed, NOT_AUTHORIZED.format("alter"))
    filters: list[AclFilter | str] = []
    for f in body.filters:
        try:
            filters.append(_filter(f))
        except InvalidAcl as exc:
            filters.append(str(exc))
    try:
        existing = await ctx.access.authorizer.bindings()
        claimed: set[AclBinding] = set()
        per_filter: list[list[AclBinding] | str] = []
        for wanted in filters:
            if isinstance(wanted, str):
                per_filter.append(wanted)
                continue
            found = [b for b in existing.matching(wanted) if b not in claimed]
            claimed.update(found)
            per_filter.append(found)
        if claimed:
            await ctx.access.authorizer.delete(claimed)
    except STORAGE_ERRORS as exc:
        return every(ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}")
    results = tuple(
        result(ErrorCode.invalid_request, outcome)
        if isinstance(outcome, str)
        else result(ErrorCode.none, None, outcome)
        for outcome in per_filter
    )
    return make(resp, throttle_time=NO_THROTTLE, filter_results=results)
