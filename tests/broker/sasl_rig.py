"""SASL test setup: users put straight into the users hash, and client settings for each library."""

from __future__ import annotations

import socket
import subprocess
import time
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest as AuthenticateV2
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest as HandshakeV1

from schooner.security.scram import make_credential
from schooner.storage.keys import Keyspace
from schooner.storage.redis.calls import run_sync
from schooner.storage.redis.client import connect_sync
from schooner.storage.security.users import User, put_user
from tests.security.scram_client import ScramClient
from tests.wire import connect, exchange

SASL_LISTENER = "SASL_PLAINTEXT://127.0.0.1:0"
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_user(
    redis_url: str,
    keyspace: str,
    name: str,
    password: str,
    mechanisms: tuple[str, ...] = SCRAM,
    tenant: str | None = None,
) -> User:
    user = User(name, tenant, {m: make_credential(m, password, iterations=4096) for m in mechanisms})
    redis = connect_sync(redis_url)
    try:
        run_sync(redis, put_user(Keyspace(keyspace), user))
    finally:
        redis.close()
    return user


def sasl_bootstrap(running: Any) -> str:
    return f"127.0.0.1:{running.broker.port_of('SASL_PLAINTEXT')}"


def confluent_conf(mechanism: str, user: str, password: str, **extra: Any) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def python_conf(mechanism: str, user: str, password: str) -> dict[str, Any]:
    """kafka-python and aiokafka spell their settings alike."""
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


def confluent_errors(bootstrap: str, conf: dict[str, Any], timeout: float = 15) -> list[Any]:
    """The errors a confluent-kafka producer reports (error_cb) while it tries to connect."""
    from confluent_kafka import Producer

    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "error_cb": errors.append, **conf})
    deadline = time.monotonic() + timeout
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.flush(0)
    return errors


def kcat_sasl(
    bootstrap: str, mechanism: str, user: str, password: str, *args: str, stdin: bytes | None = None
) -> Any:
    """kcat over SASL_PLAINTEXT; the finished process (its return code and output)."""
    sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanism={mechanism}",
            "-X", f"sasl.username={user}", "-X", f"sasl.password={password}"]  # fmt: skip
    return subprocess.run(
        ["kcat", "-b", bootstrap, *sasl, *args], input=stdin, capture_output=True, timeout=60
    )


def sessions(running: Any) -> list[Any]:
    """The sessions of the broker's open client connections."""
    return running.broker.sessions()  # type: ignore[no-any-return]


def one(sock: socket.socket, body: Any) -> Any:
    (response,) = exchange(sock, [body])
    return response


def scram_login(sock: socket.socket, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> Any:
    """A full SCRAM exchange with SaslAuthenticate v2; the last response."""
    assert one(sock, HandshakeV1(mechanism=mechanism)).error_code == ErrorCode.none
    client = ScramClient(mechanism, user, password, "wirenonce")
    first = one(sock, AuthenticateV2(auth_bytes=client.first()))
    assert first.error_code == ErrorCode.none, first.error_message
    last = one(sock, AuthenticateV2(auth_bytes=client.final(first.auth_bytes)))
    assert last.error_code == ErrorCode.none, last.error_message
    assert client.verify(last.auth_bytes)
    return last


def sasl_call(running: Any, body: Any, user: str = "admin", password: str = "admin-secret") -> Any:
    """One request on a new connection of the SASL listener, logged in with SCRAM first."""
    with connect(running.broker.port_of("SASL_PLAINTEXT")) as sock:
        scram_login(sock, user, password)
        return one(sock, body)
