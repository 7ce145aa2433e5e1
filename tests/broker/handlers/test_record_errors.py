"""KIP-467: a Produce refused for some of its records names them in record_errors, with a message each,
and says why in error_message; a client then knows which records were invalid."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from confluent_kafka import KafkaError, Producer
from kio.schema.errors import ErrorCode

from schooner.protocol.records import BatchBuilder
from tests import wire

KEYLESS = {3, 13, 23, 33, 43, 53, 63, 73, 83, 93}


def _batch() -> bytes:
    builder = BatchBuilder(0, 0)
    stamp = int(time.time() * 1000)
    for i in range(100):
        builder.append(i, stamp, None if i in KEYLESS else b"k%d" % i, b"v", [])
    return builder.build()


def test_keyless_records_on_a_compacted_topic_are_named(broker: Any) -> None:
    broker.call(broker.broker.ctx.topics.create("compacted", 1, {"cleanup.policy": "compact"}))
    response = wire.call(broker.port, wire.produce_request("compacted", _batch()))
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == ErrorCode.invalid_record
    assert {e.batch_index for e in partition.record_errors} == KEYLESS
    assert all("without a key" in (e.batch_index_error_message or "") for e in partition.record_errors)
    assert partition.error_message is not None and "10 of the batch's 100 records" in partition.error_message


def test_librdkafka_fails_only_the_named_records(broker: Any) -> None:
    broker.call(broker.broker.ctx.topics.create("compacted", 1, {"cleanup.policy": "compact"}))
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 100, "retries": 0})
    outcome: dict[int, Any] = {}
    for i in range(100):
        producer.produce(
            "compacted",
            key=None if i in KEYLESS else b"k%d" % i,
            value=b"v",
            partition=0,
            on_delivery=lambda err, msg, i=i: outcome.__setitem__(i, err and err.code()),
        )
    assert producer.flush(20) == 0
    assert {i for i, code in outcome.items() if code == KafkaError.INVALID_RECORD} == KEYLESS
    # The batch is refused whole, as in Kafka: the others fail as "a different record was invalid".
    others = KafkaError._INVALID_DIFFERENT_RECORD
    assert Counter(outcome.values()) == {KafkaError.INVALID_RECORD: 10, others: 90}
