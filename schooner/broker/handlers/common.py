"""Helpers that several handlers share."""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from ...storage.redis.calls import StorageError
from ...storage.topics.config import InvalidConfig, valid_topic_name
from ...storage.topics.metadata import Topic
from ..context import BrokerContext

NO_THROTTLE = datetime.timedelta(0)

# Redis unreachable or refusing writes: a retriable Kafka error, never UNKNOWN_SERVER_ERROR.
STORAGE_ERRORS = (StorageError, OSError)
STORAGE_ERROR_CODE = ErrorCode.kafka_storage_error


async def topic_for_write(ctx: BrokerContext, name: str) -> Topic | None:
    """The topic, created with the default partition count when auto-creation is on."""
    topic = await ctx.topic(name)
    if topic is None and ctx.settings.auto_create_topics and valid_topic_name(name):
        from ...storage.topics.metadata import TopicExists

        try:
            topic = await ctx.create_topic(name, ctx.settings.default_partitions, {})
        except TopicExists:
            ctx.forget_topic(name)
            topic = await ctx.topic(name)
        except InvalidConfig:
            return None
    return topic
