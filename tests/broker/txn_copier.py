"""A consume-transform-produce app with exactly-once (confluent-kafka transactions), run as its own
process by tests/broker/handlers/test_transactions.py, which kills it with SIGKILL mid-run.

Usage: python -m tests.broker.txn_copier BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer


def main(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,  # the killed member leaves the group sooner
        }
    )
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    )
    producer.init_transactions(30)
    consumer.subscribe([source])
    while True:
        batch = consumer.consume(50, 0.5)
        batch = [m for m in batch if not m.error()]
        if not batch:
            continue
        producer.begin_transaction()
        for m in batch:
            producer.produce(sink, key=m.key(), value=b"copy-" + m.value(), partition=m.partition())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        print("committed", len(batch), flush=True)
        time.sleep(0.02)  # slow enough that the test's kill lands mid-run


if __name__ == "__main__":
    main(*sys.argv[1:6])
