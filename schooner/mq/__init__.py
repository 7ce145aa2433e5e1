"""schooner.mq: partitioned consumer groups on Schooner's topics, with leases, retries and dead letters.

Producers and consumers talk to Redis directly; the topics and partitions are the broker's, so Kafka
clients and this library read and write the same records. See docs/mq.md.
"""

from .admin import Admin
from .consumer import AsyncConsumer, Consumer
from .engine import ConsumerConfig
from .handlers import SUCCESS, DeadLetter, Fail, Outcome, Retry, RetryPolicy, Success
from .message import Message
from .metrics import Metrics, metrics_for
from .partitioner import Partitioner, murmur2, partition_for_key
from .producer import AsyncProducer, OutgoingMessage, Producer, Sent

__all__ = [
    "SUCCESS",
    "Admin",
    "AsyncConsumer",
    "AsyncProducer",
    "Consumer",
    "ConsumerConfig",
    "DeadLetter",
    "Fail",
    "Message",
    "Metrics",
    "OutgoingMessage",
    "Outcome",
    "Partitioner",
    "Producer",
    "Retry",
    "RetryPolicy",
    "Sent",
    "Success",
    "metrics_for",
    "murmur2",
    "partition_for_key",
]
