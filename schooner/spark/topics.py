"""Creating the topics a pipeline writes to, straight in storage (no broker needed)."""

from __future__ import annotations

from collections.abc import Mapping

from ..storage.keys import Keyspace
from ..storage.redis import client
from ..storage.redis.calls import drive_sync, run_sync
from ..storage.topics import metadata
from ..storage.topics.metadata import Topic, TopicExists
from .options import connection


def ensure_topic(
    options: Mapping[str, str], name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
) -> Topic:
    """The topic `name`, created with `partitions` and topic configs if it does not exist yet.

    options carry redis.url and keyspace, as the data source's options do.
    """
    url, keyspace = connection(options)
    ks = Keyspace(keyspace)
    redis = client.connect_sync(url)
    try:
        found = run_sync(redis, metadata.load(ks, name, {}))
        if found is not None:
            return found
        try:
            return drive_sync(redis, metadata.create(ks, name, partitions, dict(configs or {}), {}))
        except TopicExists:  # created by another process meanwhile
            found = run_sync(redis, metadata.load(ks, name, {}))
            assert found is not None
            return found
    finally:
        redis.close()
