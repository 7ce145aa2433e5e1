"""The MQ storage tests' fixtures (a blocking client, the keyspace, a two-partition topic "jobs")."""

from tests.storage.mq.conftest import ks, redis, run, topic

__all__ = ["ks", "redis", "run", "topic"]
