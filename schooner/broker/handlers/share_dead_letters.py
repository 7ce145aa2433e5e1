"""Dead-letter topic of a share group (KIP-1191's errors.deadletterqueue.topic.name).

A record archived for its delivery count, or rejected, is written by the share scripts as a dead letter
in the MQ library's format, atomically with its archiving (storage/share/partition.py). When the group
names a dead-letter topic, the broker then also appends a record there, for Kafka clients: headers that
say where it came from and why, plus the original key, value and headers when
errors.deadletterqueue.copy.record.enable is true. This second write is not atomic with the first: a
broker that dies between them leaves the MQ dead letter without its topic copy.
"""

from __future__ import annotations

import logging
import time

from ...coordinators.groups.share.config import ShareGroupConfig
from ...storage.log.append import RecordBatch
from ...storage.log.entry import Header, Record, parse_fields
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import STORAGE_ERRORS, topic_for_write

log = logging.getLogger(__name__)

# Schooner's header names (KIP-1191 leaves the broker to describe the record's context).
ORIGIN_TOPIC = "dlq.origin.topic"
ORIGIN_PARTITION = "dlq.origin.partition"
ORIGIN_OFFSET = "dlq.origin.offset"
GROUP = "dlq.group.id"


async def copy_to_topic(
    ctx: BrokerContext,
    scope: RequestScope,
    group: str,
    config: ShareGroupConfig,
    topic: Topic,
    partition: int,
    ids: list[bytes],
) -> None:
    """Appends one record per dead-lettered entry to the group's dead-letter topic (created with the
    default partition count if it does not exist). Failures are logged: the MQ dead letter stays."""
    if not ids or not config.dlq_topic:
        return
    try:
        target = await topic_for_write(ctx, scope, config.dlq_topic, authorize=False)
        if target is None:
            log.warning("share group %s: dead-letter topic %r cannot be created", group, config.dlq_topic)
            return
        records = []
        for entry_id in ids:
            offset = topic.offsets.offset_of_id(entry_id)
            headers: list[Header] = [
                (ORIGIN_TOPIC, topic.name.encode()),
                (ORIGIN_PARTITION, str(partition).encode()),
                (ORIGIN_OFFSET, str(offset).encode()),
                (GROUP, group.encode()),
            ]
            key = value = None
            if config.dlq_copy_record:
                read = await ctx.store.read(topic, partition, offset, 1, False)
                if read.entries and read.entries[0][0] == entry_id:
                    _, key, value, original = parse_fields(read.entries[0][1])
                    headers = original + headers
            records.append(Record(int(time.time() * 1000), key, value, headers))
        await ctx.store.append(target, partition % target.partitions, RecordBatch(records))
    except STORAGE_ERRORS as exc:
        log.warning("share group %s: dead letters not copied to %s: %s", group, config.dlq_topic, exc)
