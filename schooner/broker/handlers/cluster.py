"""DescribeCluster: the cluster id, the controller and the live brokers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ...protocol.messages import make, response_module_of
from ...protocol.request_types import DescribeClusterRequest
from ...security.acls import CLUSTER_NAME, OPERATIONS_OMITTED, AclOperation, ResourceType
from ..context import BrokerContext
from .common import NO_THROTTLE, STORAGE_ERRORS

BROKERS_ENDPOINT = 1
CONTROLLERS_ENDPOINT = 2


async def handle_describe_cluster(ctx: BrokerContext, body: DescribeClusterRequest) -> ResponsePayload:
    mod = response_module_of(body)
    code, message = ErrorCode.none, None
    endpoint_type = getattr(body, "endpoint_type", BROKERS_ENDPOINT)
    if endpoint_type != BROKERS_ENDPOINT:
        code = ErrorCode.unsupported_endpoint_type
        message = f"Endpoint type {endpoint_type} is not served: there are no separate controllers."
    elif not await ctx.authorizer.allowed_on_cluster(AclOperation.DESCRIBE):
        code = ErrorCode.cluster_authorization_failed
        message = "The principal may not DESCRIBE the cluster."
    try:
        brokers = await ctx.live_brokers() if code == ErrorCode.none else []
    except STORAGE_ERRORS:
        brokers = [ctx.me]
    return make(
        mod.DescribeClusterResponse,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=ctx.cluster_id,
        controller_id=ctx.controller_id(brokers),
        brokers=tuple(
            make(
                mod.DescribeClusterBroker,
                broker_id=b.broker_id,
                host=b.host,
                port=b.port,
                rack=b.rack,
                is_fenced=False,
            )
            for b in brokers
        ),
        cluster_authorized_operations=(
            await ctx.authorizer.operations(ResourceType.CLUSTER, CLUSTER_NAME)
            if body.include_cluster_authorized_operations and code == ErrorCode.none
            else OPERATIONS_OMITTED
        ),
    )
