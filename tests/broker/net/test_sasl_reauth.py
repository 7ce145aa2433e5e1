"""KIP-368 with a real client: confluent-kafka re-authenticates on its open connection before each
session expires, and keeps producing across several re-authentications."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.broker.sasl_rig import SASL_LISTENER, add_user, confluent_conf, sasl_bootstrap
from tests.clients import confluent_consume

LIFETIME_MS = 1500


def test_confluent_kafka_keeps_producing_across_reauthentications(
    broker_factory: Any, redis_server: Any, keyspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="schooner")
    add_user(redis_server.url, keyspace, "alice", "secret")
    running = broker_factory(listeners=[SASL_LISTENER], connections_max_reauth_ms=LIFETIME_MS)
    bootstrap = sasl_bootstrap(running)
    conf = confluent_conf("SCRAM-SHA-512", "alice", "secret")
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "error_cb": errors.append, **conf})
    delivered: list[Any] = []
    deadlines: dict[Any, set[float]] = {}  # connection -> the session deadlines seen on it
    end = time.monotonic() + 4 * LIFETIME_MS / 1000
    sent = 0
    while time.monotonic() < end:
        producer.produce(
            "reauth", f"m{sent}".encode(), on_delivery=lambda err, msg: delivered.append(err or msg)
        )
        sent += 1
        producer.poll(0.1)
        for conn in list(running.broker._clients._open.values()):
            if conn.session.reauth_deadline is not None:
                deadlines.setdefault(conn, set()).add(conn.session.reauth_deadline)
    assert producer.flush(30) == 0
    assert not errors, errors
    assert all(hasattr(d, "offset") for d in delivered) and len(delivered) == sent
    # One connection lived through the test and got a new session at least three times.
    lasting = [
        c for c, seen in deadlines.items() if len(seen) >= 4 and c in running.broker._clients._open.values()
    ]
    assert lasting, {id(c): sorted(seen) for c, seen in deadlines.items()}
    assert not [r for r in caplog.records if "session expired" in r.getMessage()]
    got = confluent_consume(bootstrap, "reauth", sent, **conf)
    assert [m.value() for m in got] == [f"m{i}".encode() for i in range(sent)]
