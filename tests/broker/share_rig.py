"""Share consumers (confluent-kafka's ShareConsumer, librdkafka 2.16) driven from threads, one per
consumer as the client requires, for tests/broker/test_share_consumer*.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

T = 10  # seconds for one client call


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(T)


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """Group configs by IncrementalAlterConfigs on the GROUP resource; names with dots as keywords
    are written with underscores (share_auto_offset_reset -> share.auto.offset.reset)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(T)


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        producer.produce(topic, value=v, partition=partition)
    assert producer.flush(T) == 0


@dataclass
class Delivery:
    consumer: str
    value: bytes
    partition: int
    offset: int
    delivery_count: int
    at: float


# What the handler decides for a record: an AcknowledgeType, or None to hold it (never acknowledged).
Decide = Callable[[Delivery], Any]


@dataclass
class ShareRunner:
    """One ShareConsumer polling in its own thread, acknowledging explicitly by decide()."""

    name: str
    bootstrap: str
    group: str
    topics: list[str]
    decide: Decide = lambda d: AcknowledgeType.ACCEPT
    deliveries: list[Delivery] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop_polling: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    close_when_stopped: bool = True
    consumer: Any = None  # kept here so a consumer that stops polling without closing stays alive

    def start(self) -> ShareRunner:
        threading.Thread(target=self._run, name=f"share-{self.name}", daemon=True).start()
        return self

    def _run(self) -> None:
        consumer = self.consumer = ShareConsumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "share.acknowledgement.mode": "explicit",
            }
        )
        try:
            consumer.subscribe(self.topics)
            while not self.stop_polling.is_set():
                for msg in consumer.poll(0.2):
                    if msg.error():
                        self.errors.append(str(msg.error()))
                        continue
                    d = Delivery(
                        self.name,
                        msg.value(),
                        msg.partition(),
                        msg.offset(),
                        msg.delivery_count(),
                        time.time(),
                    )
                    self.deliveries.append(d)
                    verdict = self.decide(d)
                    if verdict is None:
                        self.stop_polling.set()  # holding records: it must not poll again
                    else:
                        consumer.acknowledge(msg, verdict)
                if not self.stop_polling.is_set():
                    consumer.commit_async()
            if not self.close_when_stopped:
                return  # a consumer that just stops: it holds its records until their locks run out
            consumer.commit_sync(T)
        except Exception as exc:  # reported by the test, which asserts errors == []
            self.errors.append(repr(exc))
        finally:
            if self.close_when_stopped:
                consumer.close()
            self.closed.set()

    def stop(self) -> None:
        self.stop_polling.set()
        assert self.closed.wait(30), f"{self.name} did not stop"


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {seconds} s: {what}")
