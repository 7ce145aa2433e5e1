"""DescribeCluster: the cluster id, the controller and the live brokers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from ...protocol.messages import make, sibling
from ...protocol.request_types import DescribeClusterRequest
from ...protocol.response_types import DescribeClusterResponse, response_for
from ...security.acls import CLUSTER_NAME, OPERATIONS_OMITTED, AclOperation, ResourceType
from ..context import BrokerContext
from ..net.endpoints import on_listener
from ..net.session import RequestScope
from .common import NO_THROTTLE, STORAGE_ERRORS

BROKERS_ENDPOINT = 1
CONTROLLERS_ENDPOINT = 2


async def handle_describe_cluster(
    ctx: BrokerContext, body: DescribeClusterRequest, scope: RequestScope
) -> DescribeClusterResponse:
    resp = response_for(body)
    code, message = ErrorCode.none, None
    endpoint_type = getattr(body, "endpoint_type", BROKERS_ENDPOINT)
    if endpoint_type != BROKERS_ENDPOINT:
        code = ErrorCode.unsupported_endpoint_type
        message = f"Endpoint type {endpoint_type} is not served: there are no separate controllers."
    elif not await ctx.access.authorizer.allowed_on_cluster(AclOperation.DESCRIBE, scope):
        code = ErrorCode.cluster_authorization_failed
        message = "The principal may not DESCRIBE the cluster."
    try:
        live = await ctx.cluster.live_brokers()
    except STORAGE_ERRORS:
        live = [ctx.me]
    # The brokers with the request's listener; none for a principal that may not describe the cluster.
    reachable = (on_listener(live, scope) or on_listener([ctx.me], scope)) if code == ErrorCode.none else []
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=ctx.cluster_id,
        controller_id=ctx.cluster.controller_id([b for b, _, _ in reachable]),
        brokers=tuple(
            make(
                sibling(resp, "DescribeClusterBroker"),
                broker_id=b.broker_id,
                host=host,
                port=port,
                rack=b.rack,
                is_fenced=False,
            )
            for b, host, port in reachable
        ),
        cluster_authorized_operations=(
            await ctx.access.authorizer.operations(ResourceType.CLUSTER, CLUSTER_NAME, scope)
            if body.include_cluster_authorized_operations and code == ErrorCode.none
            else OPERATIONS_OMITTED
        ),
    )
