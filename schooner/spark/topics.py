"""Creating the topics a pipeline writes to, straight in storage (no broker needed)."""

from __future__ import annotations

from collections.abc import Mapping

from ..storage.blocking_store import BlockingStore
from ..storage.topics.metadata import Topic, TopicExists
from .options import connection


def ensure_topic(
    options: Mapping[str, str], name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
) -> Topic:
    """The topic `name`, created with `partitions` and topic configs if it does not exist yet.

    options carry redis.url and keyspace, as the data source's options do.
    """
    url, keyspace = connection(options)
    store = BlockingStore.connect(url, keyspace)
    try:
        found = store.topic(name)
        if found is not None:
            return found
        try:
            return store.create_topic(name, partitions, configs or {})
        except TopicExists:  # created by another process meanwhile
            found = store.topic(name)
            assert found is not None
            return found
    finally:
        store.close()
