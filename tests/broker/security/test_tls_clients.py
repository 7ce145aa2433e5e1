"""Kafka clients over the SSL listener, verifying the broker with the test CA; clients that do not speak
TLS, and TLS handshakes that never finish, are closed while everyone else is served."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.certs import Certs
from tests.clients import (
    SAMPLE,
    Rec,
    aiokafka_consume,
    aiokafka_produce,
    as_rec,
    confluent_consume,
    confluent_produce,
    kafka_python_consume,
    kafka_python_produce,
    kcat,
)
from tests.wire import is_closed

from .tls_helpers import (
    aiokafka_tls,
    bootstrap,
    confluent_tls,
    expect_principals,
    kafka_python_tls,
    kcat_tls,
    refusal,
    tls_broker,
)

# kafka-python cannot send a header with a null value.
SENDABLE = [Rec(r.key, r.value, tuple(h for h in r.headers if h[1] is not None)) for r in SAMPLE]


def test_confluent_kafka_over_ssl(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs)
    conf = confluent_tls(certs)
    confluent_produce(bootstrap(b), "tls-confluent", SAMPLE, **conf)
    got = confluent_consume(bootstrap(b), "tls-confluent", len(SAMPLE), **conf)
    assert [as_rec(m.key(), m.value(), m.headers()) for m in got] == SAMPLE


def test_kafka_python_over_ssl(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs)
    conf = kafka_python_tls(certs)
    kafka_python_produce(bootstrap(b), "tls-kafka-python", SENDABLE, **conf)
    got = kafka_python_consume(bootstrap(b), "tls-kafka-python", len(SENDABLE), **conf)
    assert [as_rec(m.key, m.value, m.headers) for m in got] == SENDABLE


def test_aiokafka_over_ssl(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs)
    aiokafka_produce(bootstrap(b), "tls-aiokafka", SAMPLE, **aiokafka_tls(certs))
    got = aiokafka_consume(bootstrap(b), "tls-aiokafka", len(SAMPLE), **aiokafka_tls(certs))
    assert [as_rec(m.key, m.value, m.headers) for m in got] == SAMPLE


def test_kcat_over_ssl(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs)
    tls = kcat_tls(certs)
    kcat("-b", bootstrap(b), *tls, "-P", "-t", "tls-kcat", "-p", "0", stdin=b"one\ntwo\nthree\n")
    out = kcat("-b", bootstrap(b), *tls, "-C", "-t", "tls-kcat", "-o", "beginning", "-c", "3", "-e")
    assert out.split() == ["one", "two", "three"]


def test_without_client_auth_a_client_certificate_is_not_asked_for(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs, ssl_client_auth="none")
    conf = confluent_tls(certs, certs.alice)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap(b), **conf})
    expect_principals(b, {"User:ANONYMOUS"}, producer)


def test_a_plaintext_client_on_the_ssl_listener_is_refused(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs, listeners=("SSL", "PLAINTEXT"))
    failure, reported = refusal(bootstrap(b), {})
    assert failure.name() == "_TRANSPORT"
    assert "_ALL_BROKERS_DOWN" in reported
    # The broker serves on, on both listeners.
    confluent_produce(bootstrap(b), "after-plain", SAMPLE[:1], **confluent_tls(certs))
    confluent_produce(bootstrap(b, "PLAINTEXT"), "after-plain", SAMPLE[:1])
    assert len(confluent_consume(bootstrap(b, "PLAINTEXT"), "after-plain", 2)) == 2


# The start of a TLS 1.2 ClientHello record that announces 512 bytes and sends 8 of them.
PARTIAL_HELLO = bytes.fromhex("1603010200010001fc0303")


@pytest.mark.parametrize("sent", [b"", PARTIAL_HELLO], ids=["silent", "partial-hello"])
def test_an_unfinished_handshake_is_closed_after_the_timeout(
    broker_factory: Any, certs: Certs, sent: bytes
) -> None:
    b = tls_broker(broker_factory, certs, ssl_handshake_timeout_ms=3000)
    port = b.broker.port_of("SSL")
    stalled = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
    for sock in stalled:
        sock.sendall(sent)
    for sock in stalled:  # still open: the broker waits for the handshake...
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(1)
    # ...and serves a real client meanwhile.
    conf = confluent_tls(certs)
    confluent_produce(bootstrap(b), "while-stalled", SAMPLE, **conf)
    assert len(confluent_consume(bootstrap(b), "while-stalled", len(SAMPLE), **conf)) == len(SAMPLE)
    for sock in stalled:
        assert is_closed(sock)  # within is_closed's 10 s: the 3 s handshake timeout closed it
        sock.close()


def test_garbage_instead_of_a_handshake_is_closed(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs, ssl_handshake_timeout_ms=60_000)
    sock = socket.create_connection(("127.0.0.1", b.broker.port_of("SSL")), timeout=10)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: schooner\r\n\r\n" + bytes(range(256)))
    assert is_closed(sock)  # long before the minute of the handshake timeout
    sock.close()
    confluent_produce(bootstrap(b), "after-garbage", SAMPLE[:1], **confluent_tls(certs))
