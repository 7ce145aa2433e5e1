"""SASL on the wire, with raw requests: the gate before authentication, the frame limit, failures that
close the connection, SaslHandshake v0's bare tokens, a replayed SCRAM client-final, and KIP-368's
deadline. Another client keeps working through each refusal."""

from __future__ import annotations

import logging
import socket
import struct
import time
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v0.request import SaslAuthenticateRequest as AuthenticateV0
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest as AuthenticateV1
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest as AuthenticateV2
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as HandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest as HandshakeV1

from tests.broker.sasl_rig import (
    SASL_LISTENER,
    add_user,
    confluent_conf,
    one,
    sasl_bootstrap,
    scram_login,
    sessions,
)
from tests.clients import Rec, confluent_produce
from tests.security.scram_client import ScramClient
from tests.wire import connect, is_closed, read_frame

METADATA = MetadataRequest(
    topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
)


@pytest.fixture
def users(redis_server: Any, keyspace: str) -> None:
    add_user(redis_server.url, keyspace, "alice", "secret")
    add_user(redis_server.url, keyspace, "bob", "hunter2", tenant="blue")


@pytest.fixture
def sasl_broker(broker_factory: Any, users: None) -> Any:
    return broker_factory(listeners=[SASL_LISTENER])


def sasl_socket(running: Any) -> socket.socket:
    return connect(running.broker.port_of("SASL_PLAINTEXT"))


def logged_in(running: Any) -> socket.socket:
    """Another client's connection, authenticated before a refusal, to see that it keeps working."""
    sock = sasl_socket(running)
    scram_login(sock, "bob", "hunter2", "SCRAM-SHA-512")
    return sock


def still_serving(running: Any, topic: str, other: socket.socket | None = None) -> None:
    """The other client's connection still answers, and a new confluent-kafka producer gets a record in."""
    if other is not None:
        with other:
            assert one(other, METADATA).brokers
    conf = confluent_conf("SCRAM-SHA-512", "alice", "secret")
    (delivered,) = confluent_produce(sasl_bootstrap(running), topic, [Rec(b"k", b"v")], **conf)
    assert delivered.error() is None


def test_api_versions_is_served_before_authentication_and_lists_the_sasl_apis(sasl_broker: Any) -> None:
    with sasl_socket(sasl_broker) as sock:
        response = one(sock, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert ranges[17] == (0, 1) and ranges[36] == (0, 2) and ranges[50] == (0, 0) and ranges[51] == (0, 0)


def test_a_request_before_authentication_closes_the_connection(
    sasl_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="schooner")
    other = logged_in(sasl_broker)
    with sasl_socket(sasl_broker) as sock:
        sock.sendall(_encode(METADATA))
        assert read_frame(sock) is None
    refused = [r for r in caplog.records if "before SASL authentication" in r.getMessage()]
    assert refused and refused[0].levelno == logging.INFO and refused[0].exc_info is None
    still_serving(sasl_broker, "after-early-request", other)


def test_unsupported_mechanism_gets_the_enabled_list_then_the_connection_closes(
    broker_factory: Any, users: None
) -> None:
    running = broker_factory(listeners=[SASL_LISTENER], sasl_enabled_mechanisms=["SCRAM-SHA-512", "GSSAPI"])
    with sasl_socket(running) as sock:
        response = one(sock, HandshakeV1(mechanism="PLAIN"))
        assert response.error_code == ErrorCode.unsupported_sasl_mechanism
        assert response.mechanisms == ("SCRAM-SHA-512",)  # GSSAPI is not served here
        assert is_closed(sock)


def test_an_oversized_frame_before_authentication_closes_at_once(broker_factory: Any, users: None) -> None:
    running = broker_factory(listeners=[SASL_LISTENER], sasl_max_receive_bytes=2048)
    other = logged_in(running)
    with sasl_socket(running) as sock:
        sock.sendall(struct.pack(">i", 2049))  # only the size: the broker must not wait for the body
        assert is_closed(sock)
    with sasl_socket(running) as sock:  # up to the limit is read
        assert one(sock, HandshakeV1(mechanism="PLAIN")).error_code == ErrorCode.none
    with other:
        assert one(other, METADATA).brokers
    # Authenticated, a client may send larger frames again (max_request_bytes).
    conf = confluent_conf("SCRAM-SHA-512", "alice", "secret")
    (delivered,) = confluent_produce(sasl_bootstrap(running), "big", [Rec(b"k", b"x" * 100_000)], **conf)
    assert delivered.error() is None


def test_a_garbage_sasl_token_fails_with_a_message_then_closes(sasl_broker: Any) -> None:
    other = logged_in(sasl_broker)
    for mechanism, garbage in [("SCRAM-SHA-256", b"\x00\xff garbage"), ("PLAIN", b"no separators")]:
        with sasl_socket(sasl_broker) as sock:
            assert one(sock, HandshakeV1(mechanism=mechanism)).error_code == ErrorCode.none
            response = one(sock, AuthenticateV2(auth_bytes=garbage))
            assert response.error_code == ErrorCode.sasl_authentication_failed
            assert response.error_message.startswith("Authentication failed")
            assert is_closed(sock)
    still_serving(sasl_broker, "after-garbage-token", other)


def test_a_frame_that_is_no_request_closes_the_connection(sasl_broker: Any) -> None:
    other = logged_in(sasl_broker)
    with sasl_socket(sasl_broker) as sock:
        sock.sendall(struct.pack(">i", 6) + b"\xde\xad\xbe\xef\x00\x01")
        assert is_closed(sock)
    still_serving(sasl_broker, "after-garbage-frame", other)


def test_sasl_authenticate_without_a_handshake_is_an_illegal_state(sasl_broker: Any) -> None:
    with sasl_socket(sasl_broker) as sock:
        response = one(sock, AuthenticateV2(auth_bytes=b"\0alice\0secret"))
        assert response.error_code == ErrorCode.illegal_sasl_state
        assert is_closed(sock)


def test_a_second_handshake_during_an_exchange_is_an_illegal_state(sasl_broker: Any) -> None:
    with sasl_socket(sasl_broker) as sock:
        assert one(sock, HandshakeV1(mechanism="PLAIN")).error_code == ErrorCode.none
        assert one(sock, HandshakeV1(mechanism="PLAIN")).error_code == ErrorCode.illegal_sasl_state
        assert is_closed(sock)


def test_a_replayed_scram_client_final_fails(sasl_broker: Any) -> None:
    client = ScramClient("SCRAM-SHA-256", "alice", "secret", "replaynonce")
    with sasl_socket(sasl_broker) as sock:
        assert one(sock, HandshakeV1(mechanism="SCRAM-SHA-256")).error_code == ErrorCode.none
        first = one(sock, AuthenticateV2(auth_bytes=client.first()))
        recorded = client.final(first.auth_bytes)
        assert one(sock, AuthenticateV2(auth_bytes=recorded)).error_code == ErrorCode.none
        # The same client-final again on the authenticated connection: no exchange is under way.
        replayed = one(sock, AuthenticateV2(auth_bytes=recorded))
        assert replayed.error_code == ErrorCode.illegal_sasl_state
        assert is_closed(sock)
    with sasl_socket(sasl_broker) as sock:  # a new exchange has a new server nonce
        assert one(sock, HandshakeV1(mechanism="SCRAM-SHA-256")).error_code == ErrorCode.none
        assert one(sock, AuthenticateV2(auth_bytes=client.first())).error_code == ErrorCode.none
        response = one(sock, AuthenticateV2(auth_bytes=recorded))
        assert response.error_code == ErrorCode.sasl_authentication_failed
        assert "nonce" in response.error_message
        assert is_closed(sock)


def test_handshake_v0_takes_bare_tokens(sasl_broker: Any) -> None:
    with sasl_socket(sasl_broker) as sock:  # PLAIN: one token, an empty one back
        assert one(sock, HandshakeV0(mechanism="PLAIN")).error_code == ErrorCode.none
        sock.sendall(_bare(b"\0alice\0secret"))
        assert read_frame(sock) == b""
        assert one(sock, METADATA).brokers
    with sasl_socket(sasl_broker) as sock:  # SCRAM: two tokens, two answers
        assert one(sock, HandshakeV0(mechanism="SCRAM-SHA-512")).error_code == ErrorCode.none
        client = ScramClient("SCRAM-SHA-512", "bob", "hunter2", "barenonce")
        sock.sendall(_bare(client.first()))
        server_first = read_frame(sock)
        assert server_first is not None and server_first.startswith(b"r=barenonce")
        sock.sendall(_bare(client.final(server_first)))
        server_final = read_frame(sock)
        assert server_final is not None and client.verify(server_final)
        assert one(sock, METADATA).brokers
    with sasl_socket(sasl_broker) as sock:  # a failure gets no answer: the connection closes
        assert one(sock, HandshakeV0(mechanism="PLAIN")).error_code == ErrorCode.none
        sock.sendall(_bare(b"\0alice\0wrong"))
        assert read_frame(sock) is None


def test_sasl_authenticate_v0_and_v1_log_in(sasl_broker: Any) -> None:
    for body in (AuthenticateV0, AuthenticateV1):
        with sasl_socket(sasl_broker) as sock:
            assert one(sock, HandshakeV1(mechanism="PLAIN")).error_code == ErrorCode.none
            assert one(sock, body(auth_bytes=b"alice\0alice\0secret")).error_code == ErrorCode.none
            assert one(sock, METADATA).brokers


def test_success_makes_the_session_the_users(sasl_broker: Any) -> None:
    with sasl_socket(sasl_broker) as sock:
        last = scram_login(sock, "bob", "hunter2", "SCRAM-SHA-512")
        assert last.session_lifetime.total_seconds() == 0  # connections_max_reauth_ms is 0
        (session,) = [s for s in sessions(sasl_broker) if s.authenticated]
        found = (session.principal, session.tenant, session.mechanism, session.reauth_deadline)
        assert found == ("User:bob", "blue", "SCRAM-SHA-512", None)
        assert session.sasl is None


def test_plaintext_listener_refuses_a_handshake_and_stays_open(broker_factory: Any, users: None) -> None:
    running = broker_factory(listeners=["PLAINTEXT://127.0.0.1:0", SASL_LISTENER])
    with connect(running.broker.port_of("PLAINTEXT")) as sock:
        response = one(sock, HandshakeV1(mechanism="PLAIN"))
        assert (response.error_code, response.mechanisms) == (ErrorCode.illegal_sasl_state, ())
        assert (
            one(sock, AuthenticateV2(auth_bytes=b"\0alice\0secret")).error_code
            == ErrorCode.illegal_sasl_state
        )
        assert one(sock, METADATA).brokers


def test_kip_368_a_request_after_the_deadline_closes_the_connection(broker_factory: Any, users: None) -> None:
    running = broker_factory(listeners=[SASL_LISTENER], connections_max_reauth_ms=3000)
    with sasl_socket(running) as sock:
        started = time.monotonic()
        last = scram_login(sock, "alice", "secret")
        assert last.session_lifetime.total_seconds() == 3
        assert one(sock, METADATA).brokers
        time.sleep(max(0.0, started + 2.0 - time.monotonic()))
        again = scram_login(sock, "alice", "secret")  # re-authentication starts a new session
        renewed = time.monotonic()
        assert again.session_lifetime.total_seconds() == 3
        time.sleep(max(0.0, started + 3.2 - time.monotonic()))  # past the first deadline only
        assert one(sock, METADATA).brokers
        time.sleep(max(0.0, renewed + 3.2 - time.monotonic()))  # past the second one
        sock.sendall(_encode(METADATA))
        assert read_frame(sock) is None


def test_kip_368_reauthentication_as_another_user_fails_and_closes(broker_factory: Any, users: None) -> None:
    running = broker_factory(listeners=[SASL_LISTENER], connections_max_reauth_ms=60_000)
    with sasl_socket(running) as sock:
        scram_login(sock, "alice", "secret")
        assert one(sock, HandshakeV1(mechanism="SCRAM-SHA-256")).error_code == ErrorCode.none
        client = ScramClient("SCRAM-SHA-256", "bob", "hunter2", "othernonce")
        first = one(sock, AuthenticateV2(auth_bytes=client.first()))
        response = one(sock, AuthenticateV2(auth_bytes=client.final(first.auth_bytes)))
        assert response.error_code == ErrorCode.sasl_authentication_failed
        assert "User:alice" in response.error_message
        assert is_closed(sock)


def test_kip_368_reauthentication_with_another_mechanism_fails(broker_factory: Any, users: None) -> None:
    running = broker_factory(listeners=[SASL_LISTENER], connections_max_reauth_ms=60_000)
    with sasl_socket(running) as sock:
        scram_login(sock, "alice", "secret")
        assert one(sock, HandshakeV1(mechanism="PLAIN")).error_code == ErrorCode.none
        response = one(sock, AuthenticateV2(auth_bytes=b"\0alice\0secret"))
        assert response.error_code == ErrorCode.sasl_authentication_failed
        assert "SCRAM-SHA-256" in response.error_message
        assert is_closed(sock)


def _encode(body: Any) -> bytes:
    from tests.wire import encode_request

    return encode_request(body)


def _bare(token: bytes) -> bytes:
    return struct.pack(">i", len(token)) + token
