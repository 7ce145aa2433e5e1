"""SASL_PLAINTEXT with real clients: each library logs in with SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN,
then produces and consumes; a wrong password and an unknown user are refused with the library's own
authentication error."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError

from tests.broker.helpers import wait
from tests.broker.sasl_rig import (
    SASL_LISTENER,
    add_user,
    confluent_conf,
    confluent_errors,
    kcat_sasl,
    python_conf,
    sasl_bootstrap,
    sessions,
)
from tests.clients import (
    Rec,
    aiokafka_consume,
    aiokafka_produce,
    confluent_consume,
    confluent_produce,
    kafka_python_consume,
    kafka_python_produce,
)

MECHANISMS = ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]
REFUSED = "Authentication failed: invalid user name or password"
# A wrong password for a real user, and a user that does not exist.
BAD_LOGINS = [("alice", "wrong"), ("nobody", "secret")]


@pytest.fixture
def sasl_broker(broker_factory: Any, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, "alice", "secret", tenant=None)
    return broker_factory(listeners=[SASL_LISTENER])


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_produces_and_consumes(sasl_broker: Any, mechanism: str) -> None:
    bootstrap = sasl_bootstrap(sasl_broker)
    conf = confluent_conf(mechanism, "alice", "secret")
    records = [Rec(b"k", f"v{i}".encode()) for i in range(3)]
    confluent_produce(bootstrap, "conf", records, **conf)
    got = confluent_consume(bootstrap, "conf", 3, **conf)
    assert [m.value() for m in got] == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_produces_and_consumes(sasl_broker: Any, mechanism: str) -> None:
    bootstrap = sasl_bootstrap(sasl_broker)
    conf = python_conf(mechanism, "alice", "secret")
    kafka_python_produce(bootstrap, "kp", [Rec(b"k", b"one"), Rec(b"k", b"two")], **conf)
    got = kafka_python_consume(bootstrap, "kp", 2, **conf)
    assert [m.value for m in got] == [b"one", b"two"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_produces_and_consumes(sasl_broker: Any, mechanism: str) -> None:
    bootstrap = sasl_bootstrap(sasl_broker)
    conf = python_conf(mechanism, "alice", "secret")
    aiokafka_produce(bootstrap, "aio", [Rec(b"k", b"one"), Rec(b"k", b"two")], **conf)
    got = aiokafka_consume(bootstrap, "aio", 2, **conf)
    assert [m.value for m in got] == [b"one", b"two"]


def test_kcat_with_scram_sha_256(sasl_broker: Any) -> None:
    bootstrap = sasl_bootstrap(sasl_broker)
    produced = kcat_sasl(bootstrap, "SCRAM-SHA-256", "alice", "secret", "-P", "-t", "kc", stdin=b"a\nb\n")
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = kcat_sasl(bootstrap, "SCRAM-SHA-256", "alice", "secret", "-C", "-t", "kc", "-e", "-f", "%s\n")
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout.decode().split() == ["a", "b"]


@pytest.mark.parametrize("user,password", BAD_LOGINS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_is_refused(sasl_broker: Any, mechanism: str, user: str, password: str) -> None:
    errors = confluent_errors(sasl_bootstrap(sasl_broker), confluent_conf(mechanism, user, password))
    assert errors, "no error reported"
    assert errors[0].code() == KafkaError._AUTHENTICATION, errors[0]
    assert REFUSED in errors[0].str()


@pytest.mark.parametrize("user,password", BAD_LOGINS)
def test_kafka_python_is_refused(
    sasl_broker: Any, caplog: pytest.LogCaptureFixture, user: str, password: str
) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    caplog.set_level(logging.ERROR, logger="kafka")
    # kafka-python retries until its bootstrap times out, and logs each connection's failure.
    with pytest.raises(KafkaTimeoutError):
        KafkaProducer(
            bootstrap_servers=sasl_bootstrap(sasl_broker),
            bootstrap_timeout_ms=2000,
            **python_conf("SCRAM-SHA-512", user, password),
        )
    lost = [r.getMessage() for r in caplog.records if "Connection lost" in r.getMessage()]
    assert lost and all("SaslAuthenticationFailedError" in f and REFUSED in f for f in lost), lost


@pytest.mark.parametrize("user,password", BAD_LOGINS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_is_refused(sasl_broker: Any, mechanism: str, user: str, password: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.conn import create_conn
    from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed

    port = sasl_broker.broker.port_of("SASL_PLAINTEXT")

    async def run() -> None:
        with pytest.raises(SaslAuthenticationFailed, match=REFUSED) as raised:
            await create_conn("127.0.0.1", port, **python_conf(mechanism, user, password))
        assert raised.value.errno == 58
        producer = AIOKafkaProducer(
            bootstrap_servers=sasl_bootstrap(sasl_broker), **python_conf(mechanism, user, password)
        )
        try:
            with pytest.raises(KafkaConnectionError):
                await producer.start()
        finally:
            await producer.stop()

    asyncio.run(run())


@pytest.mark.parametrize("user,password", BAD_LOGINS)
def test_kcat_is_refused(sasl_broker: Any, user: str, password: str) -> None:
    done = kcat_sasl(sasl_bootstrap(sasl_broker), "SCRAM-SHA-256", user, password, "-L", "-m", "5")
    assert done.returncode != 0
    assert f"SASL authentication error: {REFUSED}" in done.stderr.decode()


def test_a_tenant_user_gets_its_tenant_on_the_session(
    broker_factory: Any, redis_server: Any, keyspace: str
) -> None:
    add_user(redis_server.url, keyspace, "carol", "pw", tenant="acme")
    running = broker_factory(listeners=[SASL_LISTENER])
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(
        {"bootstrap.servers": sasl_bootstrap(running), **confluent_conf("PLAIN", "carol", "pw")}
    )

    def logged_in() -> set[tuple[str, str | None, str | None]]:
        # librdkafka opens and drops connections as it learns the brokers: look while one is in use.
        admin.list_topics(timeout=10)
        return {(s.principal, s.tenant, s.mechanism) for s in sessions(running) if s.authenticated}

    wait(lambda: logged_in() == {("User:carol", "acme", "PLAIN")}, 20, "carol's session, in tenant acme")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_pinned_to_an_old_broker_uses_bare_tokens(sasl_broker: Any, mechanism: str) -> None:
    """api_version (0, 10, 1) caps SaslHandshake at v0: the tokens then go in bare frames (as kafka-python
    2.0.2 always sends them), which Kafka 4 still serves."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=sasl_bootstrap(sasl_broker),
        api_version=(0, 10, 1),
        **python_conf(mechanism, "alice", "secret"),
    )
    try:
        sent = producer.send("old", b"bare").get(10)
    finally:
        producer.close()
    got = kafka_python_consume(
        sasl_bootstrap(sasl_broker), "old", 1, **python_conf(mechanism, "alice", "secret")
    )
    assert sent.offset == 0 and [m.value for m in got] == [b"bare"]
