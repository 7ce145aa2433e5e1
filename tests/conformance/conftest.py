"""Each conformance test gets both brokers as Peers: the session's Apache Kafka and a Schooner broker."""

from __future__ import annotations

from typing import Any

import pytest

from apache_kafka import ApacheKafka
from tests.conformance.peers import Peer, ready_coordinators


@pytest.fixture(scope="session")
def kafka(reference_kafka: ApacheKafka) -> Peer:
    peer = Peer("kafka", reference_kafka.port, reference_kafka.bootstrap)
    ready_coordinators(peer)
    return peer


@pytest.fixture
def schooner(broker_factory: Any) -> Peer:
    broker = broker_factory(authorizer=True, allow_everyone_if_no_acl_found=True)
    return Peer("schooner", broker.port, broker.bootstrap, broker.broker_id)
