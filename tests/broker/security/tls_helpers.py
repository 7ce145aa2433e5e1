"""Helpers for the TLS tests: brokers with SSL listeners made from the test certificates, client settings
for each client library, raw TLS sockets, and the principals of a broker's open connections."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from tests.certs import KEY_PASSWORD, Certs, Pair
from tests.conftest import RunningBroker

# Every client names the mapped principal with this: "CN=alice,OU=clients,O=Schooner" -> "alice".
CN_RULE = "RULE:^CN=([^,]*),OU=clients,O=Schooner$/$1/L, DEFAULT"


def tls_broker(
    factory: Callable[..., Any], certs: Certs, listeners: tuple[str, ...] = ("SSL",), **overrides: Any
) -> RunningBroker:
    """A broker with these listeners and the test CA's certificates. A listener given as a protocol alone
    listens on a free port of 127.0.0.1."""
    settings: dict[str, Any] = {
        "listeners": [item if "://" in item else f"{item}://127.0.0.1:0" for item in listeners],
        "ssl_certfile": str(certs.broker.cert),
        "ssl_keyfile": str(certs.broker.key),
        "ssl_cafile": str(certs.ca),
        **overrides,
    }
    return factory(**settings)  # type: ignore[no-any-return]


def bootstrap(b: RunningBroker, protocol: str = "SSL") -> str:
    return f"127.0.0.1:{b.broker.port_of(protocol)}"


def confluent_tls(certs: Certs, client: Pair | None = None, encrypted: bool = False) -> dict[str, Any]:
    """confluent-kafka (librdkafka) settings: the broker is verified with the test CA; `client` adds a
    client certificate (alice's with her encrypted key and its password when `encrypted`)."""
    conf: dict[str, Any] = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca)}
    if client is not None:
        conf["ssl.certificate.location"] = str(client.cert)
        conf["ssl.key.location"] = str(certs.alice_encrypted_key if encrypted else client.key)
        if encrypted:
            conf["ssl.key.password"] = KEY_PASSWORD
    return conf


def kafka_python_tls(certs: Certs, client: Pair | None = None, encrypted: bool = False) -> dict[str, Any]:
    conf: dict[str, Any] = {"security_protocol": "SSL", "ssl_cafile": str(certs.ca)}
    if client is not None:
        conf["ssl_certfile"] = str(client.cert)
        conf["ssl_keyfile"] = str(certs.alice_encrypted_key if encrypted else client.key)
        if encrypted:
            conf["ssl_password"] = KEY_PASSWORD
    return conf


def aiokafka_tls(certs: Certs, client: Pair | None = None) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    context = create_ssl_context(
        cafile=str(certs.ca),
        certfile=str(client.cert) if client else None,
        keyfile=str(client.key) if client else None,
    )
    return {"security_protocol": "SSL", "ssl_context": context}


def kcat_tls(certs: Certs) -> list[str]:
    return ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={certs.ca}"]


def refusal(bootstrap_servers: str, conf: dict[str, Any], wait: float = 15) -> tuple[KafkaError, set[str]]:
    """What confluent-kafka reports when the broker will not have it: the error of a metadata request,
    and the names of the errors its error callback was given until all brokers were down."""
    seen: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": bootstrap_servers, "error_cb": seen.append, **conf})
    deadline = time.monotonic() + wait
    # librdkafka's metadata call waits its whole timeout for a usable broker, then fails with the last
    # connection error: asked in rounds of 1 s until one has been seen rather than once for 5 s.
    while True:
        try:
            producer.list_topics(timeout=1)
        except KafkaException as exc:
            failure = exc.args[0]
        else:
            raise AssertionError("the broker answered a client it should have refused")
        if failure.code() != KafkaError._TIMED_OUT or time.monotonic() > deadline:
            break
    while time.monotonic() < deadline and not any(e.code() == KafkaError._ALL_BROKERS_DOWN for e in seen):
        producer.poll(0.2)
    return failure, {e.name() for e in seen}


def principals(b: RunningBroker, protocol: str = "SSL") -> set[str]:
    """The principals of the broker's open connections on one listener."""

    async def read() -> set[str]:
        return {s.principal for s in b.broker.sessions() if s.listener.protocol == protocol}

    return b.call(read())  # type: ignore[no-any-return]


def expect_principals(b: RunningBroker, expected: set[str], *clients: Any, protocol: str = "SSL") -> None:
    """Waits until the principals of the broker's open connections are `expected`, asking Metadata with
    each confluent-kafka client before each look: librdkafka opens and drops connections as it learns
    the brokers, so a look right after one request may find a connection gone or not yet open."""

    def seen() -> set[str]:
        for client in clients:
            client.list_topics(timeout=10)
        return principals(b, protocol)

    wait_for(lambda: seen() == expected)


def tls_socket(port: int, certs: Certs, client: Pair | None = None) -> ssl.SSLSocket:
    """A raw TLS connection to the broker (for wire-level requests), verifying it with the test CA."""
    context = ssl.create_default_context(cafile=str(certs.ca))
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def wait_for(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
