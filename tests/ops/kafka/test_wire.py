"""The CLI's wire client (schooner/ops/kafka/wire.py) against a real broker: SCRAM-SHA-256/512 and PLAIN
over SASL_PLAINTEXT and over SASL_SSL (TLS verified with the test CA), FindCoordinator, ListGroups with a
types filter and ShareGroupDescribe; a wrong password, an untrusted certificate and a closed port each
give one sentence. The `schooner groups` commands then log in the same way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.ops.cli import main
from schooner.ops.client_options import ClientSettings
from schooner.ops.kafka import KafkaFailure
from schooner.ops.kafka.wire import WireClient
from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make
from tests.broker.sasl_rig import SASL_LISTENER, add_user, sasl_bootstrap
from tests.broker.security.tls_helpers import bootstrap, tls_broker
from tests.certs import Certs

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]


@pytest.fixture
def sasl_broker(broker_factory: Any, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, "alice", "secret")
    return broker_factory(listeners=[SASL_LISTENER])


@pytest.fixture
def sasl_ssl_broker(broker_factory: Any, certs: Certs, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, "alice", "secret")
    return tls_broker(broker_factory, certs, listeners=("SASL_SSL",))


def _share_groups(settings: ClientSettings, group: str) -> tuple[list[str], Any]:
    """ListGroups filtered to share groups, and ShareGroupDescribe of `group` from its coordinator."""
    with WireClient(settings) as wire:
        listed = wire.any_broker().call(
            make(request_type(ApiKey.LIST_GROUPS, 5), states_filter=(), types_filter=("share",))
        )
        coordinator = wire.coordinator(group)
        body = make(
            request_type(ApiKey.SHARE_GROUP_DESCRIBE, 1),
            group_ids=(group,),
            include_authorized_operations=False,
        )
        (described,) = coordinator.call(body).groups
    return [g.group_id for g in listed.groups], described


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_plaintext(sasl_broker: Any, mechanism: str) -> None:
    settings = ClientSettings(
        bootstrap_servers=sasl_bootstrap(sasl_broker),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username="alice",
        sasl_password="secret",
    )
    listed, described = _share_groups(settings, "w-nobody")
    assert "w-nobody" not in listed
    assert described.error_code == ErrorCode.group_id_not_found

    wrong = ClientSettings(**{**settings.__dict__, "sasl_password": "nope"})
    with pytest.raises(KafkaFailure, match="^authentication failed: ") as failed:
        _share_groups(wrong, "w-nobody")
    assert "\n" not in str(failed.value)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256"])
def test_sasl_ssl_with_a_share_group_and_the_cli(sasl_ssl_broker: Any, certs: Certs, mechanism: str) -> None:
    address = bootstrap(sasl_ssl_broker, "SASL_SSL")
    settings = ClientSettings(
        bootstrap_servers=address,
        security_protocol="SASL_SSL",
        sasl_mechanism=mechanism,
        sasl_username="alice",
        sasl_password="secret",
        ssl_cafile=str(certs.ca),
    )
    conf = settings.librdkafka()
    topic, group = f"w-{mechanism.lower()}", f"w-{mechanism.lower()}-g"
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    consumer = ShareConsumer({**conf, "group.id": group, "log_level": 0})
    consumer.subscribe([topic])
    try:
        for _ in range(100):  # polled on this thread, as the client requires, until the group has it
            consumer.poll(0.1)
            if group in _share_groups(settings, group)[0]:
                break
        listed, described = _share_groups(settings, group)
        assert group in listed
        assert described.error_code == ErrorCode.none and len(described.members) == 1
    finally:
        consumer.close()

    flags = [
        "-b",
        address,
        "--security-protocol",
        "SASL_SSL",
        "--sasl-mechanism",
        mechanism,
        "--sasl-username",
        "alice",
        "--ssl-cafile",
        str(certs.ca),
    ]
    cli = CliRunner(env={"SCHOONER_SASL_PASSWORD": "secret"})
    result = cli.invoke(main, ["groups", "list", *flags, "-o", "json"])
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.output), list)
    missing = cli.invoke(main, ["groups", "describe", "w-nobody", *flags])
    assert (missing.exit_code, missing.output.strip()) == (1, "Error: no group w-nobody")

    untrusted = ClientSettings(**{**settings.__dict__, "ssl_cafile": str(certs.other_ca)})
    with pytest.raises(
        KafkaFailure, match=f"^TLS handshake with {address} failed: TLS: CERTIFICATE_VERIFY_FAILED"
    ):
        _share_groups(untrusted, group)


def test_a_closed_port_is_one_sentence() -> None:
    with pytest.raises(KafkaFailure, match=r"^no broker answered at 127\.0\.0\.1:1 \(Connection refused\)$"):
        WireClient(ClientSettings(bootstrap_servers="127.0.0.1:1")).any_broker()
