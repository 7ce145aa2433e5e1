"""Helpers that several handlers share: finding a request's topic, and (from broker/outages.py) what a
Redis failure is answered with in each family of APIs."""

from __future__ import annotations

import datetime
import logging
import time
import uuid

from kio.schema.errors import ErrorCode

from ...security.acls import AclOperation, ResourceType
from ...storage.topics.config import InvalidConfig, valid_topic_name
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..metadata.internal_topics import READ_ONLY, internal_topic, internal_topic_by_id, is_internal
from ..net.refusals import refused
from ..net.session import RequestScope
from ..outages import ADMIN_UNAVAILABLE as ADMIN_UNAVAILABLE
from ..outages import APPEND_UNANSWERED as APPEND_UNANSWERED
from ..outages import GROUPS_UNAVAILABLE as GROUPS_UNAVAILABLE
from ..outages import LOG_UNAVAILABLE as LOG_UNAVAILABLE
from ..outages import PRODUCER_IDS_UNAVAILABLE as PRODUCER_IDS_UNAVAILABLE
from ..outages import STORAGE_ERRORS as STORAGE_ERRORS

log = logging.getLogger(__name__)

NO_THROTTLE = datetime.timedelta(0)


def long_poll_deadline(ctx: BrokerContext, max_wait: datetime.timedelta) -> float:
    """When a Fetch's or ShareFetch's wait ends (time.monotonic()): max_wait, at most fetch_max_wait_cap_ms.
    A longer wait outlasts the client's own request timeout: it would be answered to nobody."""
    return time.monotonic() + min(max_wait.total_seconds(), ctx.settings.fetch_max_wait_cap_ms / 1000)


async def resolve_topic(
    ctx: BrokerContext,
    scope: RequestScope,
    name: str | None,
    topic_id: uuid.UUID | None = None,
    unavailable: ErrorCode = LOG_UNAVAILABLE,
    op: AclOperation | None = None,
) -> Topic | ErrorCode:
    """A request's topic: by name, or by id when the request names none (the versions with topic ids).
    Kafka's internal topics are found too (metadata/internal_topics.py), and refused (INVALID_TOPIC_EXCEPTION)
    to a WRITE or DELETE. A Kafka code when there is no such topic, or `unavailable` when Redis cannot
    say. With `op`, the request's principal must be allowed it on the topic (TOPIC_AUTHORIZATION_FAILED
    otherwise); a name is checked before it is looked up, so a denied client cannot learn which topics
    exist."""
    if (
        op is not None
        and name is not None
        and not await ctx.access.authorizer.allowed(op, ResourceType.TOPIC, name, scope)
    ):
        return ErrorCode.topic_authorization_failed
    internal = internal_topic(name, ctx.topic_defaults) or (
        internal_topic_by_id(topic_id, ctx.topic_defaults) if name is None else None
    )
    if internal is not None:
        if op is not None and not await ctx.access.authorizer.allowed(
            op, ResourceType.TOPIC, internal.name, scope
        ):
            return ErrorCode.topic_authorization_failed
        # Kafka refuses clients' appends to (and record deletions from) internal topics this way.
        return ErrorCode.invalid_topic_exception if op in _CHANGES else internal
    try:
        if name is None:
            found = await ctx.topics.by_id(topic_id) if topic_id is not None else None
            if found is None:
                return ErrorCode.unknown_topic_id
            if op is not None and not await ctx.access.authorizer.allowed(
                op, ResourceType.TOPIC, found.name, scope
            ):
                return ErrorCode.topic_authorization_failed
            return found
        found = await ctx.topics.load(name)
        return found if found is not None else ErrorCode.unknown_topic_or_partition
    except STORAGE_ERRORS:
        return unavailable


_CHANGES = (AclOperation.WRITE, AclOperation.DELETE)


async def resolve_partition(
    ctx: BrokerContext,
    scope: RequestScope,
    name: str | None,
    index: int,
    topic_id: uuid.UUID | None = None,
    op: AclOperation | None = None,
) -> Topic | ErrorCode:
    """resolve_topic, and UNKNOWN_TOPIC_OR_PARTITION when the topic has no partition `index`."""
    topic = await resolve_topic(ctx, scope, name, topic_id, op=op)
    if isinstance(topic, Topic) and not 0 <= index < topic.partitions:
        return ErrorCode.unknown_topic_or_partition
    return topic


async def may_administer_deployment(ctx: BrokerContext, scope: RequestScope, operation: AclOperation) -> bool:
    """Users and client quotas belong to the whole deployment, not to a tenant: only a principal outside
    every tenant may touch them (whatever the tenant's own ACLs grant), and with the authorizer on only
    with the operation on the cluster."""
    if scope.tenant is not None:
        return False
    return await ctx.access.authorizer.allowed_on_cluster(operation, scope)


async def all_topics(ctx: BrokerContext) -> list[Topic]:
    """Every topic, fresh from Redis (and so into the cache)."""
    return await ctx.topics.all()


async def may_create_topic(ctx: BrokerContext, scope: RequestScope, name: str) -> bool:
    """Kafka's rule for creating a topic: CREATE on the cluster, or else on the topic."""
    return await ctx.access.authorizer.allowed_on_cluster(
        AclOperation.CREATE, scope
    ) or await ctx.access.authorizer.allowed(AclOperation.CREATE, ResourceType.TOPIC, name, scope)


def refuse_illegal_name(scope: RequestScope, name: str, api: str) -> None:
    """Logs an auto-creation refused for the topic's name (the client hears INVALID_TOPIC_EXCEPTION)."""
    reason = f"topic {name!r} not auto-created: the name is illegal (1 to 249 of [a-zA-Z0-9._-])"
    refused(log, api, reason, topic=name, error="INVALID_TOPIC_EXCEPTION", scope=scope)


async def topic_for_write(
    ctx: BrokerContext, scope: RequestScope, name: str, authorize: bool = True, api: str = "METADATA"
) -> Topic | None:
    """The topic, created with the default partition count when auto-creation is on (and, unless the
    broker writes on its own behalf, the request's principal may create it). `api` names the request
    in the log line of a refused auto-creation."""
    if is_internal(name):  # never written, never created (a leftover stored one included)
        reason = f"topic {name!r} is an {READ_ONLY}"
        refused(log, api, reason, topic=name, error="INVALID_TOPIC_EXCEPTION", scope=scope)
        return None
    topic = await ctx.topics.load(name)
    if topic is not None or not ctx.settings.auto_create_topics:
        return topic
    if not valid_topic_name(name):
        refuse_illegal_name(scope, name, api)
        return None
    if not authorize or await may_create_topic(ctx, scope, name):
        from ...storage.topics.metadata import TopicExists

        try:
            topic = await ctx.topics.create(name, ctx.settings.default_partitions, {})
        except TopicExists:
            topic = await ctx.topics.load(name)
        except InvalidConfig as exc:
            reason = f"topic {name!r} not auto-created: the topic defaults are invalid: {exc}"
            refused(log, api, reason, topic=name, error="INVALID_CONFIG", scope=scope)
            return None
    return topic
