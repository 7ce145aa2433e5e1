"""SIGTERM is a graceful shutdown: in-flight requests are answered (acks=all included), the groups the
broker coordinates move to another broker at once, and clients go on without a session timeout."""

from __future__ import annotations

import threading
import time
from typing import Any

import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.storage.keys import Keyspace
from tests.broker.helpers import saved_group, wait
from tests.clients import confluent_consume
from tests.group_clients import GroupMember

SESSION_MS = 30000
PARTITIONS = 4


def test_sigterm_during_acks_all_production_loses_nothing_and_the_group_moves_at_once(
    broker_factory: Any, redis_client: redis.Redis, keyspace: str
) -> None:
    brokers = {i: broker_factory(process=True, SCHOONER_BROKER_ID=str(i)) for i in (1, 2)}
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("drain", PARTITIONS, 1)])["drain"].result(10)

    acked: list[tuple[int, int, bytes]] = []
    errors: list[Any] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 2}
        )

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                acked.append((msg.partition(), msg.offset(), msg.value()))
            else:
                errors.append(err)

        i = 0
        while not stop.is_set():
            producer.produce("drain", value=b"%07d" % i, partition=i % PARTITIONS, on_delivery=on_delivery)
            producer.poll(0)
            i += 1
            time.sleep(0.001)
        assert producer.flush(60) == 0

    member = GroupMember("confluent", bootstrap, "stays", "drain", **{"session.timeout.ms": SESSION_MS})
    member.start()
    producing = threading.Thread(target=produce)
    producing.start()
    ks = Keyspace(keyspace)
    try:
        wait(lambda: len(acked) > 1000 and len(member.consumed) > 500, 60, "production and consumption")
        group = saved_group(redis_client, ks, "stays")
        coordinator, generation = int(group["owner"]), int(group["generation"])
        victim = brokers[coordinator]
        consumed_before = len(member.consumed)
        acked_before = len(acked)
        stopped_at = time.monotonic()
        victim.process.terminate()  # SIGTERM
        victim.process.wait(60)
        assert victim.process.returncode == 0
        drained_in = time.monotonic() - stopped_at
        wait(lambda: len(acked) > acked_before + 500, 30, "production did not go on")
        wait(lambda: len(member.consumed) > consumed_before + 500, 30, "consumption did not go on")
        moved_in = time.monotonic() - stopped_at
    finally:
        stop.set()
        producing.join(90)
    wait(
        lambda: {(p, o) for _, p, o in member.consumed} >= {(p, o) for p, o, _ in acked},
        60,
        "the group did not catch up",
    )
    # Read before the member leaves (leaving starts a rebalance of its own).
    group = saved_group(redis_client, ks, "stays")
    member.stop_event.set()
    member.join(30)

    assert not errors, errors[:3]
    assert member.error is None
    # The new coordinator took the group over as it was: no rebalance, no session timeout waited out.
    assert int(group["owner"]) != coordinator
    assert int(group["generation"]) == generation
    assert moved_in < SESSION_MS / 1000 / 2
    stored = [
        m.value()
        for p in range(PARTITIONS)
        for m in confluent_consume(
            brokers[3 - coordinator].bootstrap, "drain", sum(a[0] == p for a in acked), p
        )
    ]
    assert sorted(stored) == sorted(v for _, _, v in acked), "an acknowledged record was lost or doubled"
    print(
        f"graceful stop: drained in {drained_in:.2f} s; {len(acked)} acknowledged, 0 lost, 0 duplicated; "
        f"producer and group went on {moved_in:.2f} s after SIGTERM (session {SESSION_MS} ms)"
    )
