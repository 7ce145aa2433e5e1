"""Mutual TLS: client certificates checked against ssl_cafile (ssl_client_auth requested or required), and
the principal a verified certificate's subject maps to through ssl_principal_mapping_rules."""

from __future__ import annotations

import ssl
from typing import Any

import pytest
from confluent_kafka import Producer
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from tests.certs import Certs
from tests.clients import SAMPLE, aiokafka_produce, confluent_consume, confluent_produce, kafka_python_produce
from tests.wire import exchange

from .tls_helpers import (
    CN_RULE,
    aiokafka_tls,
    bootstrap,
    confluent_tls,
    expect_principals,
    kafka_python_tls,
    principals,
    refusal,
    tls_broker,
    tls_socket,
)

ALICE_DN = "CN=alice,OU=clients,O=Schooner"


def required(factory: Any, certs: Certs, **overrides: Any) -> Any:
    return tls_broker(factory, certs, ssl_client_auth="required", **overrides)


def test_alice_is_let_in_as_her_mapped_principal(broker_factory: Any, certs: Certs) -> None:
    b = required(broker_factory, certs, ssl_principal_mapping_rules=CN_RULE)
    conf = confluent_tls(certs, certs.alice)
    producer = Producer({"bootstrap.servers": bootstrap(b), **conf})
    producer.produce("mtls", b"from alice", partition=0)
    assert producer.flush(10) == 0
    expect_principals(b, {"User:alice"}, producer)  # her connections, open while the producer lives
    assert [m.value() for m in confluent_consume(bootstrap(b), "mtls", 1, **conf)] == [b"from alice"]


def test_the_default_rule_names_the_whole_subject(broker_factory: Any, certs: Certs) -> None:
    b = required(broker_factory, certs)
    producer = Producer({"bootstrap.servers": bootstrap(b), **confluent_tls(certs, certs.bob)})
    expect_principals(b, {"User:CN=bob,OU=clients,O=Schooner"}, producer)


def test_an_encrypted_client_key_with_its_password(broker_factory: Any, certs: Certs) -> None:
    b = required(broker_factory, certs, ssl_principal_mapping_rules=CN_RULE)
    confluent_produce(
        bootstrap(b), "encrypted-key", SAMPLE, **confluent_tls(certs, certs.alice, encrypted=True)
    )
    kafka_python_produce(
        bootstrap(b), "encrypted-key", SAMPLE[:1], **kafka_python_tls(certs, certs.alice, True)
    )
    conf = confluent_tls(certs, certs.alice, encrypted=True)
    assert len(confluent_consume(bootstrap(b), "encrypted-key", len(SAMPLE) + 1, **conf)) == len(SAMPLE) + 1


def test_aiokafka_with_a_client_certificate(broker_factory: Any, certs: Certs) -> None:
    b = required(broker_factory, certs, ssl_principal_mapping_rules=CN_RULE)
    aiokafka_produce(bootstrap(b), "aiokafka-mtls", SAMPLE, **aiokafka_tls(certs, certs.alice))
    conf = confluent_tls(certs, certs.bob)
    assert len(confluent_consume(bootstrap(b), "aiokafka-mtls", len(SAMPLE), **conf)) == len(SAMPLE)


@pytest.mark.parametrize("who", ["mallory", "no certificate"])
def test_refused_clients_see_the_connection_fail(broker_factory: Any, certs: Certs, who: str) -> None:
    """mallory's certificate is signed by another CA; the other client has none. With TLS 1.3 the client
    has finished its side of the handshake when the broker rejects it, so librdkafka sees the connection
    closed: a transport failure, then all brokers down."""
    b = required(broker_factory, certs, ssl_principal_mapping_rules=CN_RULE)
    client = certs.mallory if who == "mallory" else None
    failure, reported = refusal(bootstrap(b), confluent_tls(certs, client))
    assert failure.name() == "_TRANSPORT"
    assert "_ALL_BROKERS_DOWN" in reported
    assert principals(b) == set()
    # Alice still gets in.
    confluent_produce(bootstrap(b), "still-serving", SAMPLE[:1], **confluent_tls(certs, certs.alice))


def test_requested_client_auth_lets_clients_without_a_certificate_in(
    broker_factory: Any, certs: Certs
) -> None:
    b = tls_broker(broker_factory, certs, ssl_client_auth="requested", ssl_principal_mapping_rules=CN_RULE)
    anonymous = Producer({"bootstrap.servers": bootstrap(b), **confluent_tls(certs)})
    expect_principals(b, {"User:ANONYMOUS"}, anonymous)
    alice = Producer({"bootstrap.servers": bootstrap(b), **confluent_tls(certs, certs.alice)})
    expect_principals(b, {"User:ANONYMOUS", "User:alice"}, anonymous, alice)
    # A certificate that is sent is still checked.
    failure, _ = refusal(bootstrap(b), confluent_tls(certs, certs.mallory))
    assert failure.name() == "_TRANSPORT"


def test_a_subject_no_rule_maps_is_refused(broker_factory: Any, certs: Certs, caplog: Any) -> None:
    rules = "RULE:^CN=([^,]*),OU=admins,O=Schooner$/$1/"  # alice is in OU=clients
    b = required(broker_factory, certs, ssl_principal_mapping_rules=rules)
    failure, _ = refusal(bootstrap(b), confluent_tls(certs, certs.alice))
    assert failure.name() == "_TRANSPORT"
    assert f"no ssl_principal_mapping_rules rule applies to '{ALICE_DN}'" in caplog.text


def test_the_sasl_ssl_listener_asks_no_certificate_even_when_ssl_requires_one(
    broker_factory: Any, certs: Certs
) -> None:
    """As in Kafka (KIP-684), ssl_client_auth is the SSL listener's: a SASL_SSL client logs in instead,
    so one without a certificate gets through TLS, and is ANONYMOUS until it authenticates."""
    b = tls_broker(
        broker_factory,
        certs,
        listeners=("SASL_SSL", "SSL"),
        ssl_client_auth="required",
        ssl_principal_mapping_rules=CN_RULE,
    )
    with tls_socket(b.broker.port_of("SASL_SSL"), certs) as sock:
        (versions,) = exchange(
            sock, [ApiVersionsRequest(client_software_name="t", client_software_version="1")]
        )
        assert versions.error_code == ErrorCode.none
        assert principals(b, "SASL_SSL") == {"User:ANONYMOUS"}
    # The SSL listener still demands one: with TLS 1.3 the refusal shows on the first read, as a TLS
    # alert or a closed connection.
    with (
        tls_socket(b.broker.port_of("SSL"), certs) as sock,
        pytest.raises((ssl.SSLError, OSError, AssertionError)),
    ):
        exchange(sock, [ApiVersionsRequest(client_software_name="t", client_software_version="1")])
