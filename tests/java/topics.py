"""Topics made and read back through confluent-kafka, for checking what a Java program wrote."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

T = 60


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(T)


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation: str = "read_uncommitted"
) -> list[tuple[int, int, str, str]]:
    """Every record of the topic, sorted (partition, offset, key, value); a missing key reads as ""."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": isolation,
                         "enable.partition.eof": True, "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        found, ended = [], set()
        while len(ended) < partitions:
            message = consumer.poll(T)
            assert message is not None, "no record within the timeout"
            if message.error():
                ended.add(message.partition())
                continue
            key, value = (message.key() or b"").decode(), message.value().decode()
            found.append((message.partition(), message.offset(), key, value))
        return sorted(found)
    finally:
        consumer.close()
