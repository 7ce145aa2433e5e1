"""The client security flags of `schooner topics`, `produce` and `consume` against a SASL_PLAINTEXT
listener: a SCRAM user creates a topic, produces and consumes; a wrong password is one line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.broker.sasl_rig import SASL_LISTENER, add_user, confluent_conf, sasl_bootstrap
from tests.clients import confluent_consume
from tests.ops.cli_rig import refused, schooner, text


@pytest.fixture
def sasl_broker(broker_factory: Any, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, "alice", "secret", tenant=None)
    return broker_factory(listeners=[SASL_LISTENER])


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_user_creates_produces_and_consumes(sasl_broker: Any, mechanism: str) -> None:
    login = ("-b", sasl_bootstrap(sasl_broker), "--security-protocol", "SASL_PLAINTEXT",
             "--sasl-mechanism", mechanism, "--sasl-username", "alice")  # fmt: skip
    password = {"SCHOONER_SASL_PASSWORD": "secret"}  # from the environment, as the help advises
    created = schooner("topics", "create", "secured", "-p", "2", *login, **password)
    assert created.returncode == 0, text(created.stderr)
    listed = json.loads(schooner("topics", "list", "-o", "json", *login, **password).stdout)
    assert {"topic": "secured", "partitions": 2, "replication_factor": 1} in listed

    sent = schooner("produce", "secured", "-K", "=", "-H", "via=sasl", "-p", "1", *login,
                    stdin=b"k1=v1\nk2=\xff\xfe\n", **password)  # fmt: skip
    assert sent.returncode == 0, text(sent.stderr)
    read = schooner("consume", "secured", "--from-beginning", "--exit", "-f", "json", *login, **password)
    assert read.returncode == 0, text(read.stderr)
    records = [json.loads(line) for line in text(read.stdout).splitlines()]
    assert [(r["partition"], r["key"], r["value"]) for r in records] == [(1, "k1", "v1"), (1, "k2", "//4=")]
    assert records[1]["value_encoding"] == "base64"
    # A plain client with the same login reads the same records.
    conf = confluent_conf(mechanism, "alice", "secret")
    got = confluent_consume(sasl_bootstrap(sasl_broker), "secured", 2, partition=1, **conf)
    assert [(m.key(), m.value(), m.headers()) for m in got] == [
        (b"k1", b"v1", [("via", b"sasl")]), (b"k2", b"\xff\xfe", [("via", b"sasl")]),
    ]  # fmt: skip


def test_a_wrong_password_is_one_line(sasl_broker: Any) -> None:
    login = ("-b", sasl_bootstrap(sasl_broker), "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism",
             "SCRAM-SHA-256", "--sasl-username", "alice", "--sasl-password", "wrong")  # fmt: skip
    refused(schooner("topics", "list", *login), "authentication failed")
    refused(schooner("consume", "any", "--exit", *login), "authentication failed")
    refused(schooner("produce", "any", *login, stdin=b"x\n"), "authentication failed")
