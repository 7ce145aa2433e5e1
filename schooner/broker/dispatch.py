"""API key -> handler, and the client quotas around it (broker/access/quotas.py sets every response's
throttle_time_ms, so handlers answer NO_THROTTLE; Produce alone may throttle a tiered topic's producer
for Redis memory, and a quota then adds its own).

A handler takes the broker context, its API's request (the union of versions in
protocol/request_types.py) and the request's scope (session.py: who asks, and the client's quota
windows), and returns its API's response (protocol/response_types.py), or NO_RESPONSE when none is
due. A request of an API with no handler (decoded only when kio has its schema) gets
UNSUPPORTED_VERSION in its own response (protocol/unsupported.py).

The context is the session's tenant's (broker/tenants.py): handlers read ctx.ks and ctx.store, so a
tenant's requests see its own keyspace and nothing else. The APIs of DEPLOYMENT_APIS get the
deployment's context whatever the session: users live there, not in any tenant's keyspace.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

from ..protocol.apis import ApiKey, api_name
from ..protocol.messages import Answer, Request
from ..protocol.unsupported import unsupported_response
from .context import BrokerContext
from .handlers.acls import handle_create_acls, handle_delete_acls, handle_describe_acls
from .handlers.admin_cluster import (
    handle_alter_partition_reassignments,
    handle_alter_replica_log_dirs,
    handle_describe_log_dirs,
    handle_elect_leaders,
    handle_list_partition_reassignments,
    handle_update_features,
)
from .handlers.admin_configs import (
    handle_alter_configs,
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from .handlers.admin_records import handle_delete_records
from .handlers.admin_topics import handle_create_partitions, handle_create_topics, handle_delete_topics
from .handlers.api_versions import handle_api_versions
from .handlers.cluster import handle_describe_cluster
from .handlers.fetch import handle_fetch
from .handlers.groups.classic import (
    handle_delete_groups,
    handle_describe_groups,
    handle_find_coordinator,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_list_groups,
    handle_sync_group,
)
from .handlers.groups.consumer import handle_consumer_group_describe, handle_consumer_group_heartbeat
from .handlers.groups.offsets import handle_offset_commit, handle_offset_delete, handle_offset_fetch
from .handlers.groups.share import handle_share_group_describe, handle_share_group_heartbeat
from .handlers.groups.streams import handle_streams_group_describe, handle_streams_group_heartbeat
from .handlers.list_offsets import handle_list_offsets, handle_offset_for_leader_epoch
from .handlers.metadata import handle_metadata
from .handlers.produce import handle_produce
from .handlers.producer_ids import handle_init_producer_id
from .handlers.producers import handle_describe_producers
from .handlers.quotas import handle_alter_client_quotas, handle_describe_client_quotas
from .handlers.sasl import handle_sasl_authenticate, handle_sasl_handshake
from .handlers.scram_users import (
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from .handlers.share_fetch import handle_share_acknowledge, handle_share_fetch
from .handlers.share_offsets import (
    handle_alter_share_group_offsets,
    handle_delete_share_group_offsets,
    handle_describe_share_group_offsets,
)
from .handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_describe_transactions,
    handle_end_txn,
    handle_list_transactions,
    handle_txn_offset_commit,
)
from .net.refusals import refused
from .net.session import RequestScope

log = logging.getLogger(__name__)

R = TypeVar("R")

# SaslHandshake, SaslAuthenticate (a re-authentication comes from a session that has its tenant),
# DescribeUserScramCredentials, AlterUserScramCredentials: by number, as they may have no handler here.
DEPLOYMENT_APIS = frozenset({17, 36, 50, 51})
Handler: TypeAlias = Callable[[BrokerContext, R, RequestScope], Awaitable[Answer]]

# Any stands for "the request type of this key's API", which a table keyed by a runtime value cannot
# state: decode_request builds the body from the key's own schemas, so it is one of the versions the
# handler takes (tests/broker/test_dispatch.py checks each handler's type against its API's versions).
HANDLERS: dict[int, Handler[Any]] = {
    ApiKey.API_VERSIONS: handle_api_versions,
    ApiKey.METADATA: handle_metadata,
    ApiKey.PRODUCE: handle_produce,
    ApiKey.FETCH: handle_fetch,
    ApiKey.LIST_OFFSETS: handle_list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: handle_offset_for_leader_epoch,
    ApiKey.INIT_PRODUCER_ID: handle_init_producer_id,
    ApiKey.CREATE_TOPICS: handle_create_topics,
    ApiKey.DELETE_TOPICS: handle_delete_topics,
    ApiKey.CREATE_PARTITIONS: handle_create_partitions,
    ApiKey.DELETE_RECORDS: handle_delete_records,
    ApiKey.DESCRIBE_CONFIGS: handle_describe_configs,
    ApiKey.ALTER_CONFIGS: handle_alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: handle_incremental_alter_configs,
    ApiKey.DESCRIBE_CLUSTER: handle_describe_cluster,
    ApiKey.FIND_COORDINATOR: handle_find_coordinator,
    ApiKey.JOIN_GROUP: handle_join_group,
    ApiKey.SYNC_GROUP: handle_sync_group,
    ApiKey.HEARTBEAT: handle_heartbeat,
    ApiKey.LEAVE_GROUP: handle_leave_group,
    ApiKey.DESCRIBE_GROUPS: handle_describe_groups,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.OFFSET_DELETE: handle_offset_delete,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: handle_consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: handle_consumer_group_describe,
    ApiKey.ALTER_REPLICA_LOG_DIRS: handle_alter_replica_log_dirs,
    ApiKey.DESCRIBE_LOG_DIRS: handle_describe_log_dirs,
    ApiKey.ELECT_LEADERS: handle_elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: handle_list_partition_reassignments,
    ApiKey.UPDATE_FEATURES: handle_update_features,
    ApiKey.DESCRIBE_PRODUCERS: handle_describe_producers,
    ApiKey.DESCRIBE_ACLS: handle_describe_acls,
    ApiKey.CREATE_ACLS: handle_create_acls,
    ApiKey.DELETE_ACLS: handle_delete_acls,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: handle_describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: handle_alter_client_quotas,
    ApiKey.ADD_PARTITIONS_TO_TXN: handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: handle_add_offsets_to_txn,
    ApiKey.END_TXN: handle_end_txn,
    ApiKey.TXN_OFFSET_COMMIT: handle_txn_offset_commit,
    ApiKey.DESCRIBE_TRANSACTIONS: handle_describe_transactions,
    ApiKey.LIST_TRANSACTIONS: handle_list_transactions,
    ApiKey.SHARE_FETCH: handle_share_fetch,
    ApiKey.SHARE_ACKNOWLEDGE: handle_share_acknowledge,
    ApiKey.SHARE_GROUP_HEARTBEAT: handle_share_group_heartbeat,
    ApiKey.SHARE_GROUP_DESCRIBE: handle_share_group_describe,
    ApiKey.STREAMS_GROUP_HEARTBEAT: handle_streams_group_heartbeat,
    ApiKey.STREAMS_GROUP_DESCRIBE: handle_streams_group_describe,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: handle_describe_share_group_offsets,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: handle_alter_share_group_offsets,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: handle_delete_share_group_offsets,
    ApiKey.SASL_HANDSHAKE: handle_sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: handle_sasl_authenticate,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: handle_alter_user_scram_credentials,
}


def dispatcher(
    ctx: BrokerContext, tenant_context: Callable[[str], BrokerContext] | None = None
) -> Callable[[Request, RequestScope], Awaitable[Answer]]:
    """Serves each request with the context of its session's tenant: tenant_context(name) (Tenants.context)
    for a session with a tenant, ctx (the deployment's) for one without. A session of a tenant that
    has no context (no tenant_context, or a name no tenant may have) is never served from another's:
    its handler raises, and the connection closes."""

    def context_of(api_key: int, scope: RequestScope) -> BrokerContext:
        tenant = scope.tenant
        if tenant is None or api_key in DEPLOYMENT_APIS:
            return ctx
        if tenant_context is None:
            raise LookupError(f"no context for the tenant {tenant!r}")
        return tenant_context(tenant)

    quotas = ctx.access.quotas  # deployment-wide: one for every tenant
    book = quotas.book

    async def handle(request: Request, scope: RequestScope) -> Answer:
        handler = HANDLERS.get(request.header.api_key)
        if handler is None:  # an API kio knows that this broker does not serve: see protocol/unsupported.py
            _refuse_unserved(request, scope)
            return unsupported_response(request.body)
        served = context_of(request.header.api_key, scope)
        if book.active:  # some client quota is configured: throttle_time_ms is set here (access/quotas.py)
            return await quotas.serve(handler, served, request, scope)
        return await handler(served, request.body, scope)

    return handle


# -- logs ---------------------------------------------------------------------------------------------
def _refuse_unserved(request: Request, scope: RequestScope) -> None:
    header = request.header
    reason = (
        f"v{header.api_version} of an API this broker does not serve (ApiVersions does not advertise it); "
        "answered UNSUPPORTED_VERSION"
    )
    refused(log, api_name(header.api_key), reason, kind="unserved", scope=scope, api_key=header.api_key,
            api_version=header.api_version)  # fmt: skip
