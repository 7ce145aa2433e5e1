"""Kafka's internal topics, `__consumer_offsets` and `__transaction_state`, as clients expect to see them.

Kafka keeps committed offsets and transaction state in these two logs. Schooner keeps them in Redis hashes
(docs/key-layout.md), so here the topics are a view, never stored: Metadata lists them marked internal
(clients such as aiokafka and kafka-python leave them out of subscriptions by that flag), with Kafka's
default partition counts; reads find them empty; writes, deletion and changes are refused as Kafka
refuses them for clients. Above all, no request can create an ordinary topic of either name.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from ...storage.offsets import DEFAULT_SEQUENCE_BITS, DENSE, codec_for
from ...storage.topics.config import OFFSET_ENCODING, SEQUENCE_BITS, effective
from ...storage.topics.metadata import Topic

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
# Kafka's defaults: offsets.topic.num.partitions and transaction.state.log.num.partitions.
PARTITIONS = {CONSUMER_OFFSETS: 50, TRANSACTION_STATE: 50}
NAMES = tuple(PARTITIONS)
# Both are compacted logs in Kafka; DescribeConfigs says so.
_OVERRIDES = {"cleanup.policy": "compact"}
# Ids fixed by name, so that every broker of every deployment gives the same one.
_ID_NAMESPACE = uuid.UUID("6f1c1f64-3c8e-4d55-9a55-1b8f0c2e7a31")
# Computed once: a Fetch by topic id looks here first, and uuid5 hashes (SHA-1) on every call.
_IDS = {name: uuid.uuid5(_ID_NAMESPACE, name) for name in NAMES}
_NAMES_BY_ID = {topic_id: name for name, topic_id in _IDS.items()}

READ_ONLY = "internal topic: Schooner keeps committed offsets and transactions in Redis, not in this log"


def is_internal(name: str | None) -> bool:
    return name in PARTITIONS


def internal_topic(name: str | None, defaults: Mapping[str, str]) -> Topic | None:
    """The internal topic of that name (with the deployment's topic defaults), or None."""
    if name is None or name not in PARTITIONS:
        return None
    configs = effective(_OVERRIDES, defaults)
    configs[SEQUENCE_BITS] = str(DEFAULT_SEQUENCE_BITS)
    configs[OFFSET_ENCODING] = DENSE
    return Topic(
        name=name,
        id=_IDS[name],
        partitions=PARTITIONS[name],
        offsets=codec_for(DENSE, DEFAULT_SEQUENCE_BITS),
        overrides=dict(_OVERRIDES),
        configs=configs,
    )


def internal_topic_by_id(topic_id: uuid.UUID | None, defaults: Mapping[str, str]) -> Topic | None:
    return internal_topic(_NAMES_BY_ID.get(topic_id), defaults) if topic_id is not None else None


def internal_topics(defaults: Mapping[str, str]) -> list[Topic]:
    return [t for t in (internal_topic(name, defaults) for name in NAMES) if t is not None]
