"""API key -> handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol.apis import ApiKey
from ..protocol.messages import Request
from .context import BrokerContext
from .handlers import (
    admin_configs,
    admin_records,
    admin_topics,
    api_versions,
    cluster,
    fetch,
    list_offsets,
    metadata,
    produce,
    producer_ids,
)
from .handlers.groups import classic as groups
from .handlers.groups import consumer as consumer_groups
from .handlers.groups import offsets

HandlerFn = Callable[[BrokerContext, Any], Awaitable[Any]]

HANDLERS: dict[int, HandlerFn] = {
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: list_offsets.handle_leader_epoch,
    ApiKey.INIT_PRODUCER_ID: producer_ids.handle,
    ApiKey.CREATE_TOPICS: admin_topics.handle_create,
    ApiKey.DELETE_TOPICS: admin_topics.handle_delete,
    ApiKey.CREATE_PARTITIONS: admin_topics.handle_create_partitions,
    ApiKey.DELETE_RECORDS: admin_records.handle_delete_records,
    ApiKey.DESCRIBE_CONFIGS: admin_configs.handle_describe,
    ApiKey.ALTER_CONFIGS: admin_configs.handle_alter,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: admin_configs.handle_incremental_alter,
    ApiKey.DESCRIBE_CLUSTER: cluster.handle_describe_cluster,
    ApiKey.FIND_COORDINATOR: groups.handle_find_coordinator,
    ApiKey.JOIN_GROUP: groups.handle_join,
    ApiKey.SYNC_GROUP: groups.handle_sync,
    ApiKey.HEARTBEAT: groups.handle_heartbeat,
    ApiKey.LEAVE_GROUP: groups.handle_leave,
    ApiKey.DESCRIBE_GROUPS: groups.handle_describe,
    ApiKey.LIST_GROUPS: groups.handle_list,
    ApiKey.DELETE_GROUPS: groups.handle_delete,
    ApiKey.OFFSET_COMMIT: offsets.handle_commit,
    ApiKey.OFFSET_FETCH: offsets.handle_fetch,
    ApiKey.OFFSET_DELETE: offsets.handle_delete,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.handle_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.handle_describe,
}


def dispatcher(ctx: BrokerContext) -> Callable[[Request], Awaitable[Any]]:
    async def handle(request: Request) -> Any:
        return await HANDLERS[request.header.api_key](ctx, request.body)

    return handle
