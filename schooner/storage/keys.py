"""Every Redis key Schooner uses is built here, and nowhere else. docs/key-layout.md describes them.

All keys of one partition share the hash tag {topic:partition}, so one script can touch them
atomically on Redis Cluster. Topic names are limited to [a-zA-Z0-9._-], so they cannot break a tag.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keyspace:
    prefix: str = "schooner"

    # -- the log ----------------------------------------------------------------------------------
    def stream(self, topic: str, partition: int) -> str:
        """The partition's log: one entry per record."""
        return f"{self.prefix}:stream:{{{topic}:{partition}}}"

    def partition_state(self, topic: str, partition: int) -> str:
        """Hash: last assigned ID, running max timestamp, byte totals, producer (idempotence) state."""
        return f"{self.prefix}:pstate:{{{topic}:{partition}}}"

    def time_index(self, topic: str, partition: int) -> str:
        """Sorted set: batch start ID scored by the highest record timestamp seen up to that batch."""
        return f"{self.prefix}:tindex:{{{topic}:{partition}}}"

    def partition_keys(self, topic: str, partition: int) -> list[str]:
        return [
            self.stream(topic, partition),
            self.partition_state(topic, partition),
            self.time_index(topic, partition),
        ]

    # -- topics: all metadata keys share the tag {meta}, so create and delete are one script ---------
    def topic(self, name: str) -> str:
        """Hash: id, name, partitions, sequence_bits, created_ms and config.<name> for each override."""
        return f"{self.prefix}:{{meta}}:topic:{name}"

    @property
    def topic_names(self) -> str:
        """Set of all topic names."""
        return f"{self.prefix}:{{meta}}:topics"

    @property
    def topic_ids(self) -> str:
        """Hash: topic id (UUID text) -> topic name."""
        return f"{self.prefix}:{{meta}}:topic-ids"

    # -- cluster ----------------------------------------------------------------------------------
    @property
    def cluster(self) -> str:
        """Hash: cluster_id."""
        return f"{self.prefix}:cluster"

    @property
    def brokers(self) -> str:
        """Sorted set: broker id scored by the time (ms) its registration lapses."""
        return f"{self.prefix}:brokers"

    def broker(self, broker_id: int) -> str:
        """Hash: host, port, rack, started_ms of one broker process."""
        return f"{self.prefix}:broker:{broker_id}"

    @property
    def broker_id_counter(self) -> str:
        return f"{self.prefix}:broker-id-seq"

    @property
    def producer_id_counter(self) -> str:
        return f"{self.prefix}:producer-id-seq"

    @property
    def appended_channel(self) -> str:
        """Pub/sub channel: append.lua publishes "topic:partition" here, so every broker wakes its fetches."""
        return f"{self.prefix}:appended"
