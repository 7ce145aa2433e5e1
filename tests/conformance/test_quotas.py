"""Client quotas: the throttle time Kafka puts in an over-quota Produce answer, Schooner puts there too
(both with Kafka's default windows: 11 samples of a second, a first burst spread over ten)."""

from __future__ import annotations

import time

import pytest

from tests.broker.quota_helpers import Client, set_quotas, throttle_ms
from tests.conformance.peers import Peer, create_topic, unique
from tests.wire import produce_request

KB = b"x" * 1000


def _throttles(peer: Peer, topic: str, client_id: str) -> list[float]:
    create_topic(peer, topic)
    set_quotas(peer.port, [("client-id", client_id)], producer_byte_rate=10_000)
    # Kafka applies a quota change through its metadata log, Schooner within a second (a broker polls):
    # a request before that is not counted.
    time.sleep(2)
    client = Client(peer.port, client_id)
    try:
        under = client.request(produce_request(topic, [KB] * 20))  # 20 kB over 10 s: under the rate
        over = client.request(produce_request(topic, [KB] * 400))  # 420 kB over 10 s: 42 kB/s
        return [throttle_ms(under), throttle_ms(over)]
    finally:
        client.close()


def test_an_over_quota_produce_is_throttled_as_kafka_throttles_it(kafka: Peer, schooner: Peer) -> None:
    topic, client_id = unique("quota"), unique("client")
    from_kafka, from_schooner = _throttles(kafka, topic, client_id), _throttles(schooner, topic, client_id)
    assert from_kafka[0] == from_schooner[0] == 0
    # (42 kB/s - 10 kB/s) / 10 kB/s over a 10 s window: about 32 s (measured: 32,366 and 32,407 ms);
    # each broker's clock starts the window at its own first request.
    assert from_kafka[1] > 10_000
    assert from_schooner[1] == pytest.approx(from_kafka[1], rel=0.05)
