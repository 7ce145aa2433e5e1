"""SASL over TLS (the SASL_SSL listener): each client library logs in with SCRAM over a verified TLS
connection; a wrong password is refused; with a client certificate too, SASL names the principal."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError

from tests.broker.sasl_rig import add_user, confluent_errors
from tests.certs import Certs
from tests.clients import (
    Rec,
    aiokafka_consume,
    aiokafka_produce,
    confluent_consume,
    confluent_produce,
    kafka_python_consume,
    kafka_python_produce,
    kcat,
)

from .tls_helpers import (
    CN_RULE,
    aiokafka_tls,
    bootstrap,
    confluent_tls,
    kafka_python_tls,
    kcat_tls,
    principals,
    wait_for,
)
from .tls_helpers import tls_broker as make_tls_broker

RECORDS = [Rec(b"k", b"one"), Rec(b"k", b"two")]


@pytest.fixture
def sasl_ssl(broker_factory: Any, certs: Certs, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, "alice", "secret")
    return make_tls_broker(broker_factory, certs, listeners=("SASL_SSL",))


def confluent_sasl_ssl(certs: Certs, mechanism: str, password: str = "secret") -> dict[str, Any]:
    return {
        **confluent_tls(certs),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
    }


def python_sasl_ssl(tls: dict[str, Any], mechanism: str) -> dict[str, Any]:
    return {
        **tls,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "secret",
    }


MECHANISMS = ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_over_sasl_ssl(sasl_ssl: Any, certs: Certs, mechanism: str) -> None:
    conf = confluent_sasl_ssl(certs, mechanism)
    topic = f"sasl-ssl-{mechanism.lower()}"
    confluent_produce(bootstrap(sasl_ssl, "SASL_SSL"), topic, RECORDS, **conf)
    got = confluent_consume(bootstrap(sasl_ssl, "SASL_SSL"), topic, 2, **conf)
    assert [m.value() for m in got] == [b"one", b"two"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_over_sasl_ssl(sasl_ssl: Any, certs: Certs, mechanism: str) -> None:
    conf = python_sasl_ssl(kafka_python_tls(certs), mechanism)
    topic = f"sasl-ssl-kp-{mechanism.lower()}"
    kafka_python_produce(bootstrap(sasl_ssl, "SASL_SSL"), topic, RECORDS, **conf)
    got = kafka_python_consume(bootstrap(sasl_ssl, "SASL_SSL"), topic, 2, **conf)
    assert [m.value for m in got] == [b"one", b"two"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_over_sasl_ssl(sasl_ssl: Any, certs: Certs, mechanism: str) -> None:
    topic = f"sasl-ssl-aio-{mechanism.lower()}"
    aiokafka_produce(
        bootstrap(sasl_ssl, "SASL_SSL"), topic, RECORDS, **python_sasl_ssl(aiokafka_tls(certs), mechanism)
    )
    got = aiokafka_consume(
        bootstrap(sasl_ssl, "SASL_SSL"), topic, 2, **python_sasl_ssl(aiokafka_tls(certs), mechanism)
    )
    assert [m.value for m in got] == [b"one", b"two"]


def test_kcat_over_sasl_ssl(sasl_ssl: Any, certs: Certs) -> None:
    tls = [*kcat_tls(certs), "-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanism=SCRAM-SHA-256",
           "-X", "sasl.username=alice", "-X", "sasl.password=secret"]  # fmt: skip
    kcat("-b", bootstrap(sasl_ssl, "SASL_SSL"), *tls, "-P", "-t", "sasl-ssl-kcat", stdin=b"a\nb\n")
    out = kcat("-b", bootstrap(sasl_ssl, "SASL_SSL"), *tls, "-C", "-t", "sasl-ssl-kcat", "-c", "2", "-e")
    assert out.split() == ["a", "b"]


def test_a_wrong_password_over_sasl_ssl_is_refused(sasl_ssl: Any, certs: Certs) -> None:
    errors = confluent_errors(
        bootstrap(sasl_ssl, "SASL_SSL"), confluent_sasl_ssl(certs, "SCRAM-SHA-512", "wrong")
    )
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors


def test_sasl_names_the_principal_over_a_client_certificate(
    broker_factory: Any, certs: Certs, redis_server: Any, keyspace: str
) -> None:
    add_user(redis_server.url, keyspace, "carol", "pw", tenant="acme")
    running = make_tls_broker(
        broker_factory,
        certs,
        listeners=("SASL_SSL",),
        ssl_client_auth="required",
        ssl_principal_mapping_rules=CN_RULE,
    )
    from confluent_kafka import Producer

    conf = {
        **confluent_tls(certs, certs.alice),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "carol",
        "sasl.password": "pw",
    }
    producer = Producer({"bootstrap.servers": bootstrap(running, "SASL_SSL"), **conf})

    async def tenants() -> set[str | None]:
        return {s.tenant for s in running.broker.sessions()}

    def seen() -> tuple[set[str], set[str | None]]:
        # librdkafka opens and drops connections as it learns the brokers: look while one is in use.
        producer.list_topics(timeout=10)
        return principals(running, "SASL_SSL"), running.call(tenants())

    wait_for(lambda: seen() == ({"User:carol"}, {"acme"}))  # the login's user, not the certificate's
