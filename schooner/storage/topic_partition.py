"""The one key for a partition, everywhere: in storage, the broker's caches and the coordinators."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str  # the topic's name
    partition: int
