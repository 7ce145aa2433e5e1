"""SASL test setup: users put straight into the users hash, and client settings for each library."""

from __future__ import annotations

from typing import Any

from schooner.security.scram import make_credential
from schooner.storage.keys import Keyspace
from schooner.storage.redis.calls import run_sync
from schooner.storage.redis.client import connect_sync
from schooner.storage.security.users import User, put_user

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
