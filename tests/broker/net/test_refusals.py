"""A refused request is said at INFO with the client id, the peer, the API and the reason
(broker/net/refusals.py), and repeats of one (reason, client) are suppressed with a count."""

from __future__ import annotations

import datetime
import logging
import socket
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from kio.schema.describe_topic_partitions.v0.request import DescribeTopicPartitionsRequest, TopicRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from schooner.broker.net import refusals
from schooner.broker.net.refusals import RepeatFilter
from tests.broker.sasl_rig import SASL_LISTENER, add_user, confluent_conf, sasl_bootstrap
from tests.wire import connect, decode_response, encode_request, is_closed, read_frame


@pytest.fixture(autouse=True)
def fresh_repeats(monkeypatch: pytest.MonkeyPatch) -> Iterator[RepeatFilter]:
    """Each test starts with no refusal remembered (another test's could suppress its first line)."""
    repeats = RepeatFilter()
    monkeypatch.setattr(refusals, "REPEATS", repeats)
    yield repeats


def _refusals(caplog: pytest.LogCaptureFixture, api: str) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if getattr(r, "api", None) == api and r.getMessage().startswith("refused")
    ]


def _send(sock: socket.socket, body: Any, client_id: str, correlation_id: int = 1) -> Any:
    sock.sendall(encode_request(body, correlation_id=correlation_id, client_id=client_id))
    frame = read_frame(sock)
    assert frame is not None, "connection closed"
    return decode_response(frame, body.__api_key__, body.__version__, body.__flexible__)[1]


def test_a_topic_refused_for_its_config_is_logged(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "bad-config-admin"})
    futures = admin.create_topics([NewTopic("refused-config", 1, config={"retention.ms": "soon"})])
    with pytest.raises(Exception, match="retention.ms"):
        futures["refused-config"].result(30)
    (record,) = _refusals(caplog, "CREATE_TOPICS")
    assert record.levelno == logging.INFO
    assert record.name == "schooner.broker.handlers.admin_topics"
    assert record.client_id == "bad-config-admin"  # type: ignore[attr-defined]
    assert record.peer.startswith("127.0.0.1:")  # type: ignore[attr-defined]
    assert record.topic == "refused-config"  # type: ignore[attr-defined]
    assert record.error == "INVALID_CONFIG"  # type: ignore[attr-defined]
    assert "retention.ms" in record.reason  # type: ignore[attr-defined]
    assert "bad-config-admin" in record.getMessage() and "retention.ms" in record.getMessage()


def test_a_topic_refused_for_its_name_is_logged(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "bad-name-admin"})
    futures = admin.create_topics([NewTopic("no spaces allowed", 1)])
    with pytest.raises(Exception, match="illegal"):
        futures["no spaces allowed"].result(30)
    (record,) = _refusals(caplog, "CREATE_TOPICS")
    assert record.error == "INVALID_TOPIC_EXCEPTION"  # type: ignore[attr-defined]
    assert "no spaces allowed" in record.getMessage()


def test_an_auto_create_refused_for_its_name_is_logged(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    request = MetadataRequest(
        topics=(MetadataRequestTopic(name="bad name!", topic_id=uuid.UUID(int=0)),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    with connect(broker.port) as sock:
        response = _send(sock, request, "raw-writer")
    assert response.topics[0].error_code == ErrorCode.invalid_topic_exception
    (record,) = _refusals(caplog, "METADATA")
    assert record.name == "schooner.broker.handlers.common"
    assert record.client_id == "raw-writer" and record.error == "INVALID_TOPIC_EXCEPTION"  # type: ignore[attr-defined]
    assert "'bad name!' not auto-created" in record.getMessage()


def test_an_unserved_api_is_logged_and_answered(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    request = DescribeTopicPartitionsRequest(topics=(TopicRequest(name="t"),))
    with connect(broker.port) as sock:
        response = _send(sock, request, "prober")
        assert response.topics[0].error_code == ErrorCode.unsupported_version
    (record,) = _refusals(caplog, "DESCRIBE_TOPIC_PARTITIONS")
    assert record.name == "schooner.broker.dispatch"
    assert record.client_id == "prober" and record.api_key == 75  # type: ignore[attr-defined]
    assert "does not advertise" in record.reason  # type: ignore[attr-defined]


def _raw_frame(api_key: int, version: int, client_id: str) -> bytes:
    """A request header (v1) and no body: enough for the broker to see the API and version."""
    name = client_id.encode()
    payload = struct.pack(">hhih", api_key, version, 7, len(name)) + name
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize(
    ("api_key", "version", "api", "said"),
    [
        (9999, 0, "api key 9999", "not served by this broker"),  # no such API at all
        (3, 99, "METADATA", "version 99 is not supported"),  # a served API at a version not advertised
    ],
)
def test_an_unknown_api_or_version_is_logged_then_closed(
    broker: Any, caplog: pytest.LogCaptureFixture, api_key: int, version: int, api: str, said: str
) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    with connect(broker.port) as sock:
        sock.sendall(_raw_frame(api_key, version, "newer-client"))
        assert is_closed(sock)
    (record,) = _refusals(caplog, api)
    assert record.name == "schooner.broker.net.connection"
    assert record.client_id == "newer-client" and record.api_version == version  # type: ignore[attr-defined]
    assert said in record.getMessage()


def test_find_coordinator_for_an_unknown_key_type_is_logged(
    broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    with connect(broker.port) as sock:
        response = _send(sock, FindCoordinatorRequest(key_type=5, coordinator_keys=("g",)), "odd-finder")
    assert response.coordinators[0].error_code == ErrorCode.invalid_request
    (record,) = _refusals(caplog, "FIND_COORDINATOR")
    assert record.client_id == "odd-finder" and record.key_type == 5  # type: ignore[attr-defined]
    assert "key type 5" in record.getMessage()


def test_a_join_refused_for_its_session_timeout_is_logged(
    broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    join = JoinGroupRequest(
        group_id="short-lived",
        session_timeout=datetime.timedelta(milliseconds=10),  # below group_min_session_ms (6000)
        rebalance_timeout=datetime.timedelta(milliseconds=10),
        member_id="",
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )
    with connect(broker.port) as sock:
        response = _send(sock, join, "hasty-joiner")
    assert response.error_code == ErrorCode.invalid_session_timeout
    (record,) = _refusals(caplog, "JOIN_GROUP")
    assert record.levelno == logging.INFO
    assert record.client_id == "hasty-joiner" and record.group == "short-lived"  # type: ignore[attr-defined]
    assert record.error == "INVALID_SESSION_TIMEOUT"  # type: ignore[attr-defined]
    assert "10 ms" in record.reason and "6000" in record.reason  # type: ignore[attr-defined]


def test_repeats_are_suppressed_then_counted(
    broker: Any, caplog: pytest.LogCaptureFixture, fresh_repeats: RepeatFilter
) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    fresh_repeats.interval = 3600.0  # no line goes out again while the test sends
    request = FindCoordinatorRequest(key_type=5, coordinator_keys=("g",))
    with connect(broker.port) as sock:
        for i in range(20):
            _send(sock, request, "flooder", correlation_id=i)
        _send(sock, request, "someone-else", correlation_id=20)  # another client: its own first line
        assert [r.client_id for r in _refusals(caplog, "FIND_COORDINATOR")] == ["flooder", "someone-else"]  # type: ignore[attr-defined]
        fresh_repeats.interval = 0.0  # the window has passed
        _send(sock, request, "flooder", correlation_id=21)
    last = _refusals(caplog, "FIND_COORDINATOR")[-1]
    assert last.client_id == "flooder" and last.suppressed == 19  # type: ignore[attr-defined]
    assert "19 more like it suppressed" in last.getMessage()


def test_the_repeat_filter_admits_one_line_per_key_and_interval() -> None:
    repeats = RepeatFilter(interval=5.0)
    key = ("log", "API", "reason", "client", "host")
    assert repeats.admit(key, 100.0) == 0
    assert repeats.admit(key, 101.0) is None
    assert repeats.admit(key, 104.9) is None
    assert repeats.admit(("log", "API", "reason", "other", "host"), 102.0) == 0
    assert repeats.admit(key, 105.0) == 2
    assert repeats.admit(key, 111.0) == 0


def test_a_record_too_large_is_logged(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("small-records", 1, config={"max.message.bytes": "1000"})])[
        "small-records"
    ].result(30)
    caplog.set_level(logging.INFO, logger="schooner.broker")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "big-writer", "retries": 0})
    errors: list[Any] = []
    producer.produce("small-records", b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert errors and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    (record,) = _refusals(caplog, "PRODUCE")
    assert record.client_id == "big-writer" and record.error == "MESSAGE_TOO_LARGE"  # type: ignore[attr-defined]
    assert record.topic == "small-records" and record.partition == 0  # type: ignore[attr-defined]
    assert "max.message.bytes=1000" in record.getMessage()


def test_an_invalid_config_in_alter_configs_is_logged(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "alterer"})
    admin.create_topics([NewTopic("altered", 1)])["altered"].result(30)
    caplog.set_level(logging.INFO, logger="schooner.broker")
    entry = ConfigEntry("cleanup.policy", "sometimes", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "altered", incremental_configs=[entry])
    with pytest.raises(Exception, match="cleanup.policy"):
        admin.incremental_alter_configs([resource])[resource].result(30)
    (record,) = _refusals(caplog, "INCREMENTAL_ALTER_CONFIGS")
    assert record.client_id == "alterer" and record.error == "INVALID_CONFIG"  # type: ignore[attr-defined]
    assert "cleanup.policy" in record.getMessage()


def test_a_served_request_logs_nothing(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="schooner.broker")
    with connect(broker.port) as sock:
        _send(sock, MetadataRequest(topics=None, include_topic_authorized_operations=False), "good-client")
    assert not [r for r in caplog.records if r.getMessage().startswith("refused")]


def test_a_failed_sasl_login_is_logged(
    broker_factory: Any, redis_server: Any, keyspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    add_user(redis_server.url, keyspace, "alice", "secret")
    running = broker_factory(listeners=[SASL_LISTENER])
    caplog.set_level(logging.INFO, logger="schooner.broker")
    conf = confluent_conf("SCRAM-SHA-256", "alice", "wrong", **{"client.id": "bad-login"})
    admin = AdminClient({"bootstrap.servers": sasl_bootstrap(running), **conf})
    with pytest.raises(Exception):  # noqa: B017 (librdkafka reports it as a failed request)
        admin.list_topics(timeout=5)
    records = _refusals(caplog, "SASL_AUTHENTICATE")
    assert records, "no refusal logged"
    assert records[0].client_id == "bad-login"  # type: ignore[attr-defined]
    assert "SASL authentication failed" in records[0].getMessage()
    assert "closing the connection" in records[0].getMessage()
