"""Client quotas with real clients: a producer and a consumer held to their byte rates (within 20% over a
run of a few seconds, as the issue asks), the throttle time they report, and a client without a quota
on the same broker going at full speed meanwhile.

The broker keeps 2 samples of 1 s (quota_window_num=2): a client's first burst is then one second's
worth, so a short run measures the steady rate rather than the burst. Batches are small (16 kB) next to
the quotas, so no single request decides the rate.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from kafka import KafkaProducer

from tests.broker.quota_helpers import set_quotas
from tests.broker.share_rig import set_group_configs

WINDOW = {"quota_window_num": 2, "quota_window_size_seconds": 1}
RUN_SECONDS = 6.0
QUOTA = 100_000  # bytes a second
VALUE = b"v" * 1000


@dataclass
class Throttles:
    """The throttle times librdkafka reports in its statistics (per broker, per interval)."""

    seen: list[int] = field(default_factory=list)

    def __call__(self, stats_json: str) -> None:
        for broker in json.loads(stats_json)["brokers"].values():
            if broker["throttle"]["cnt"]:
                self.seen.append(broker["throttle"]["max"])


def _client_config(bootstrap: str, client_id: str, throttles: Throttles) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "statistics.interval.ms": 200,
        "stats_cb": throttles,
    }


def _produce_for(bootstrap: str, client_id: str, topic: str, seconds: float, throttles: Throttles) -> float:
    """Produces 1 kB records as fast as the producer will take them; the rate of acknowledged bytes."""
    producer = Producer(
        {
            **_client_config(bootstrap, client_id, throttles),
            "linger.ms": 5,
            "batch.size": 16_384,
            "queue.buffering.max.kbytes": 256,
        }
    )
    acked = [0]

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked[0] += len(msg.value())

    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        try:
            producer.produce(topic, value=VALUE, partition=0, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    rate = acked[0] / elapsed
    producer.purge(in_queue=True, in_flight=True)  # what a throttled broker holds is not waited for
    producer.flush(1)
    return rate


@pytest.mark.parametrize(
    "entity", [[("client-id", "held-producer")], [("user", None)]], ids=["client-id", "default-user"]
)
def test_a_producer_is_held_to_its_byte_rate(
    broker_factory: Callable[..., Any], entity: list[tuple[str, str | None]]
) -> None:
    broker = broker_factory(**WINDOW)
    set_quotas(broker.port, entity, producer_byte_rate=QUOTA)
    if entity[0][0] == "user":  # every user's default: give the unlimited client its own, higher quota
        set_quotas(broker.port, [("user", None), ("client-id", "free-producer")], producer_byte_rate=1e12)
    free: dict[str, Any] = {}

    def free_producer() -> None:
        time.sleep(RUN_SECONDS / 3)  # while the held producer is being throttled
        throttles = Throttles()
        free["rate"] = _produce_for(broker.bootstrap, "free-producer", "quota-free", 1.5, throttles)
        free["throttles"] = throttles.seen

    other = threading.Thread(target=free_producer)
    other.start()
    throttles = Throttles()
    rate = _produce_for(broker.bootstrap, "held-producer", "quota-held", RUN_SECONDS, throttles)
    other.join(30)
    assert QUOTA * 0.8 <= rate <= QUOTA * 1.2, rate
    assert throttles.seen and max(throttles.seen) > 0  # librdkafka heard throttle_time_ms
    # The client without a quota was not slowed: no throttle, and many times the held one's rate.
    assert free["throttles"] == [] and free["rate"] > 5 * QUOTA, free


def test_kafka_python_reports_the_throttle_time(broker_factory: Callable[..., Any]) -> None:
    broker = broker_factory(**WINDOW)
    set_quotas(broker.port, [("client-id", "held-kafka-python")], producer_byte_rate=10_000)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="held-kafka-python")
    for _ in range(15):
        producer.send("quota-kafka-python", VALUE)
    producer.flush(30)
    assert producer.metrics()["producer-metrics"]["throttle-time-max"] > 0
    producer.close()


def _fill(bootstrap: str, topic: str, nbytes: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "filler", "linger.ms": 20})
    for _ in range(nbytes // len(VALUE)):
        while True:
            try:
                producer.produce(topic, value=VALUE, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(30) == 0


def test_a_consumer_is_held_to_its_byte_rate(broker_factory: Callable[..., Any]) -> None:
    broker = broker_factory(**WINDOW)
    _fill(broker.bootstrap, "quota-consume", int(QUOTA * (RUN_SECONDS + 4)))
    set_quotas(broker.port, [("client-id", "held-consumer")], consumer_byte_rate=QUOTA)
    throttles = Throttles()
    consumer = Consumer(
        {
            **_client_config(broker.bootstrap, "held-consumer", throttles),
            "group.id": "quota-consumer",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 16_384,
        }
    )
    consumer.assign([TopicPartition("quota-consume", 0, 0)])
    got, started = 0, None
    while started is None or time.monotonic() - started < RUN_SECONDS:
        msg = consumer.poll(0.1)
        if msg is None or msg.error():
            continue
        started = started or time.monotonic()
        got += len(msg.value())
    rate = got / (time.monotonic() - started)
    consumer.close()
    assert QUOTA * 0.8 <= rate <= QUOTA * 1.2, rate
    assert throttles.seen and max(throttles.seen) > 0


def test_a_share_consumer_is_throttled_by_its_byte_rate(broker_factory: Callable[..., Any]) -> None:
    broker = broker_factory(**WINDOW)
    _fill(broker.bootstrap, "quota-share", 30_000)
    set_quotas(broker.port, [("client-id", "held-share")], consumer_byte_rate=20_000)
    set_group_configs(broker.bootstrap, "quota-share-group", share_auto_offset_reset="earliest")
    throttles = Throttles()
    consumer = ShareConsumer(
        {**_client_config(broker.bootstrap, "held-share", throttles), "group.id": "quota-share-group"}
    )
    consumer.subscribe(["quota-share"])
    got, deadline = 0, time.monotonic() + 20
    while not throttles.seen and time.monotonic() < deadline:
        got += sum(len(m.value()) for m in consumer.poll(0.2) if not m.error())
    consumer.close()
    assert got and throttles.seen and max(throttles.seen) > 0
