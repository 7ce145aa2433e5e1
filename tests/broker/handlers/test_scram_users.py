"""DescribeUserScramCredentials and AlterUserScramCredentials through confluent-kafka's and
kafka-python's admin clients, and Kafka's error codes for each refusal (raw requests)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from schooner.storage.keys import Keyspace
from schooner.storage.redis.calls import run_sync
from schooner.storage.redis.client import connect_sync
from schooner.storage.security.users import get_user
from tests.broker.sasl_rig import (
    SASL_LISTENER,
    add_user,
    confluent_conf,
    confluent_errors,
    python_conf,
    sasl_bootstrap,
    sasl_call,
)
from tests.clients import Rec, confluent_produce, kafka_python_produce

ADMIN = ("admin", "admin-secret")  # the admin clients log in as this user


@pytest.fixture
def running(broker_factory: Any, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, *ADMIN)
    return broker_factory(listeners=[SASL_LISTENER])


def admin(running: Any) -> AdminClient:
    return AdminClient(
        {"bootstrap.servers": sasl_bootstrap(running), **confluent_conf("SCRAM-SHA-256", *ADMIN)}
    )


def code_of(future: Any) -> int:
    with pytest.raises(KafkaException) as raised:
        future.result(15)
    return int(raised.value.args[0].code())


def test_confluent_kafka_creates_describes_and_deletes_a_user_who_then_logs_in(running: Any) -> None:
    client = admin(running)
    futures = client.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw1"
            ),
            UserScramCredentialUpsertion(
                "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"pw2"
            ),
        ]
    )
    assert {user: f.result(15) for user, f in futures.items()} == {"alice": None, "bob": None}
    described = client.describe_user_scram_credentials().result(15)
    del described["admin"]
    assert {
        user: [(i.mechanism, i.iterations) for i in d.scram_credential_infos] for user, d in described.items()
    } == {"alice": [(ScramMechanism.SCRAM_SHA_256, 4096)], "bob": [(ScramMechanism.SCRAM_SHA_512, 8192)]}
    # The stored credential is the one the password derives: alice logs in with SCRAM and with PLAIN.
    for mechanism in ("SCRAM-SHA-256", "PLAIN"):
        conf = confluent_conf(mechanism, "alice", "pw1")
        (delivered,) = confluent_produce(sasl_bootstrap(running), "users", [Rec(b"k", b"v")], **conf)
        assert delivered.error() is None
    (refused,) = confluent_errors(sasl_bootstrap(running), confluent_conf("SCRAM-SHA-512", "alice", "pw1"))[
        :1
    ]
    assert refused.code() == KafkaError._AUTHENTICATION  # alice has no SCRAM-SHA-512 credential
    deleted = client.alter_user_scram_credentials(
        [UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_256)]
    )
    assert deleted["alice"].result(15) is None
    (gone,) = client.describe_user_scram_credentials(["alice"]).values()
    assert code_of(gone) == KafkaError.RESOURCE_NOT_FOUND


def test_confluent_kafka_gets_kafkas_error_codes(running: Any) -> None:
    client = admin(running)
    (unknown,) = client.describe_user_scram_credentials(["nobody"]).values()
    assert code_of(unknown) == KafkaError.RESOURCE_NOT_FOUND
    futures = client.alter_user_scram_credentials(
        [
            UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_256),
            UserScramCredentialUpsertion(
                "few", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"pw"
            ),
            UserScramCredentialUpsertion(
                "many", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 20000), b"pw"
            ),
        ]
    )
    assert code_of(futures["nobody"]) == KafkaError.RESOURCE_NOT_FOUND
    assert code_of(futures["few"]) == KafkaError.UNACCEPTABLE_CREDENTIAL
    assert code_of(futures["many"]) == KafkaError.UNACCEPTABLE_CREDENTIAL


def test_kafka_python_creates_a_user_who_then_logs_in(running: Any) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import ScramMechanism as KPMechanism
    from kafka.admin import UserScramCredentialUpsertion as KPUpsertion

    client = KafkaAdminClient(
        bootstrap_servers=sasl_bootstrap(running), **python_conf("SCRAM-SHA-512", *ADMIN)
    )
    try:
        result = client.alter_user_scram_credentials([KPUpsertion("carol", KPMechanism.SCRAM_SHA_512, "pw3")])
        assert result == {"carol": None}
        described = client.describe_user_scram_credentials(["carol"])
        assert described["carol"]["error"] is None
        assert [i["mechanism"] for i in described["carol"]["credential_infos"]] == [KPMechanism.SCRAM_SHA_512]
    finally:
        client.close()
    sent = kafka_python_produce(
        sasl_bootstrap(running), "kp-users", [Rec(b"k", b"v")], **python_conf("SCRAM-SHA-512", "carol", "pw3")
    )
    assert sent[0].offset == 0


def test_an_alteration_keeps_the_users_tenant(running: Any, redis_server: Any, keyspace: str) -> None:
    add_user(redis_server.url, keyspace, "dave", "old", mechanisms=("SCRAM-SHA-256",), tenant="acme")
    client = admin(running)  # kept: futures fail once their client is gone
    futures = client.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"new"
            )
        ]
    )
    assert futures["dave"].result(15) is None
    redis = connect_sync(redis_server.url)
    user = run_sync(redis, get_user(Keyspace(keyspace), "dave"))
    redis.close()
    assert user is not None and user.tenant == "acme"
    assert sorted(user.credentials) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]


def upsertion(name: str, mechanism: int = 1, iterations: int = 4096, salted: bytes | None = None) -> Any:
    digest = "sha256" if mechanism != 2 else "sha512"
    salted = salted if salted is not None else hashlib.pbkdf2_hmac(digest, b"pw", b"salt", 4096)
    return ScramCredentialUpsertion(
        name=name, mechanism=i8(mechanism), iterations=i32(iterations), salt=b"salt", salted_password=salted
    )


def test_alter_refusals_have_kafkas_codes(running: Any, redis_server: Any, keyspace: str) -> None:
    add_user(redis_server.url, keyspace, "erin", "pw", mechanisms=("SCRAM-SHA-256",))
    response = sasl_call(
        running,
        AlterUserScramCredentialsRequest(
            deletions=(
                ScramCredentialDeletion(name="twice", mechanism=i8(1)),
                ScramCredentialDeletion(name="erin", mechanism=i8(2)),  # erin has only SCRAM-SHA-256
            ),
            upsertions=(
                upsertion("twice", mechanism=2),
                upsertion("md5", mechanism=0),
                upsertion("sha3", mechanism=3),
                upsertion("lazy", iterations=4095),
                upsertion("slow", iterations=16385),
                upsertion(""),
                upsertion("short", salted=b"too short"),
                upsertion("fine"),
            ),
        ),
    )
    codes = {r.user: r.error_code for r in response.results}
    assert codes == {
        "twice": ErrorCode.duplicate_resource,
        "erin": ErrorCode.resource_not_found,
        "md5": ErrorCode.unsupported_sasl_mechanism,
        "sha3": ErrorCode.unsupported_sasl_mechanism,
        "lazy": ErrorCode.unacceptable_credential,
        "slow": ErrorCode.unacceptable_credential,
        "": ErrorCode.unacceptable_credential,
        "short": ErrorCode.unacceptable_credential,
        "fine": ErrorCode.none,
    }
    assert all(r.error_message for r in response.results if r.error_code != ErrorCode.none)
    redis = connect_sync(redis_server.url)
    ks = Keyspace(keyspace)
    assert run_sync(redis, get_user(ks, "twice")) is None  # none of a refused user's changes is made
    erin = run_sync(redis, get_user(ks, "erin"))
    redis.close()
    assert erin is not None and sorted(erin.credentials) == ["SCRAM-SHA-256"]


def test_describe_a_user_named_twice_is_a_duplicate(running: Any, redis_server: Any, keyspace: str) -> None:
    add_user(redis_server.url, keyspace, "fay", "pw")
    response = sasl_call(
        running,
        DescribeUserScramCredentialsRequest(
            users=(UserName(name="fay"), UserName(name="fay"), UserName(name="x"))
        ),
    )
    codes = {r.user: r.error_code for r in response.results}
    assert codes == {"fay": ErrorCode.duplicate_resource, "x": ErrorCode.resource_not_found}
    everyone = sasl_call(running, DescribeUserScramCredentialsRequest(users=None))
    (admin_user, fay) = everyone.results
    assert admin_user.user == "admin"
    assert fay.user == "fay" and {(c.mechanism, c.iterations) for c in fay.credential_infos} == {
        (1, 4096),
        (2, 4096),
    }
