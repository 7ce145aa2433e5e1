"""CreateAcls, DescribeAcls, DeleteAcls: the broker has no authorizer, so each answers SECURITY_DISABLED.

That is what a Kafka broker without `authorizer.class.name` answers: every creation and every delete
filter gets the error, and DescribeAcls gets it at the top level. Clients report it as "security
disabled" rather than as a broken connection, and tools that manage ACLs can tell why nothing changed.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ...protocol.messages import make, response_module_of
from ...protocol.request_types import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from ..context import BrokerContext
from .common import NO_THROTTLE

NO_AUTHORIZER = "No authorizer is configured on the broker: ACLs are neither stored nor enforced"


async def handle_create_acls(ctx: BrokerContext, body: CreateAclsRequest) -> ResponsePayload:
    mod = response_module_of(body)
    results = tuple(
        make(mod.AclCreationResult, error_code=ErrorCode.security_disabled, error_message=NO_AUTHORIZER)
        for _ in body.creations
    )
    return make(mod.CreateAclsResponse, throttle_time=NO_THROTTLE, results=results)


async def handle_describe_acls(ctx: BrokerContext, body: DescribeAclsRequest) -> ResponsePayload:
    mod = response_module_of(body)
    return make(
        mod.DescribeAclsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.security_disabled,
        error_message=NO_AUTHORIZER,
        resources=(),
    )


async def handle_delete_acls(ctx: BrokerContext, body: DeleteAclsRequest) -> ResponsePayload:
    mod = response_module_of(body)
    results = tuple(
        make(
            mod.DeleteAclsFilterResult,
            error_code=ErrorCode.security_disabled,
            error_message=NO_AUTHORIZER,
            matching_acls=(),
        )
        for _ in body.filters
    )
    return make(mod.DeleteAclsResponse, throttle_time=NO_THROTTLE, filter_results=results)
