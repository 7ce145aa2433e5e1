"""The server side of PLAIN and SCRAM, driven by a client written from the RFCs (scram_client.py)."""

from __future__ import annotations

import base64

import pytest

from schooner.security.sasl import (
    Challenge,
    NeedCredentials,
    PlainServer,
    SaslFailure,
    ScramServer,
    Success,
    server_for,
)
from schooner.security.sasl.scram_server import decode_saslname, encode_saslname
from schooner.security.scram import ScramCredential, make_credential
from tests.security.scram_client import ScramClient

# RFC 7677, section 3: user "user", password "pencil", and the exchange's nonces, salt and messages.
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def credentials(mechanism: str, password: str = "pencil", **kw: object) -> dict[str, ScramCredential]:
    return {mechanism: make_credential(mechanism, password, **kw)}  # type: ignore[arg-type]


def run_scram(server: ScramServer, client: ScramClient, stored: dict[str, ScramCredential] | None) -> Success:
    asked = server.step(client.first())
    assert asked == NeedCredentials(client.user)
    challenge = server.resume(stored)
    assert isinstance(challenge, Challenge)
    done = server.step(client.final(challenge.data))
    assert isinstance(done, Success)
    return done


def test_rfc_7677_exchange_gives_the_published_messages() -> None:
    stored = {"SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "pencil", iterations=4096, salt=RFC_SALT)}
    server = ScramServer("SCRAM-SHA-256", nonce=RFC_SERVER_NONCE)
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", RFC_CLIENT_NONCE)
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert server.step(client.first()) == NeedCredentials("user")
    challenge = server.resume(stored)
    assert challenge == Challenge(
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert isinstance(challenge, Challenge)
    final = client.final(challenge.data)
    assert final == RFC_CLIENT_FINAL
    done = server.step(final)
    assert done == Success(RFC_SERVER_FINAL, "user")
    assert client.verify(RFC_SERVER_FINAL)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_succeeds_and_the_client_verifies_the_server(mechanism: str) -> None:
    client = ScramClient(mechanism, "alice", "s3cret", "clientnonce123")
    done = run_scram(ScramServer(mechanism), client, credentials(mechanism, "s3cret"))
    assert done.user == "alice"
    assert client.verify(done.data)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_wrong_password_fails(mechanism: str) -> None:
    server = ScramServer(mechanism)
    client = ScramClient(mechanism, "alice", "wrong", "n1")
    server.step(client.first())
    challenge = server.resume(credentials(mechanism, "s3cret"))
    assert isinstance(challenge, Challenge)
    with pytest.raises(SaslFailure, match="invalid user name or password"):
        server.step(client.final(challenge.data))


def test_scram_unknown_user_gets_a_stable_made_up_salt_and_fails_like_a_wrong_password() -> None:
    salts = []
    for _ in range(2):
        server = ScramServer("SCRAM-SHA-256")
        client = ScramClient("SCRAM-SHA-256", "nobody", "pw", "n1")
        server.step(client.first())
        challenge = server.resume(None)
        assert isinstance(challenge, Challenge)
        salts.append(challenge.data.split(b",")[1])
        with pytest.raises(SaslFailure, match="invalid user name or password"):
            server.step(client.final(challenge.data))
    assert salts[0] == salts[1]


def test_scram_user_with_only_the_other_mechanism_fails() -> None:
    server = ScramServer("SCRAM-SHA-512")
    client = ScramClient("SCRAM-SHA-512", "alice", "pencil", "n1")
    server.step(client.first())
    challenge = server.resume(credentials("SCRAM-SHA-256"))
    assert isinstance(challenge, Challenge)
    with pytest.raises(SaslFailure):
        server.step(client.final(challenge.data))


def test_scram_client_final_with_another_nonce_fails() -> None:
    server = ScramServer("SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "alice", "pencil", "n1")
    server.step(client.first())
    challenge = server.resume(credentials("SCRAM-SHA-256"))
    assert isinstance(challenge, Challenge)
    with pytest.raises(SaslFailure, match="nonce"):
        server.step(client.final(challenge.data, nonce="n1" + "x" * 32))


def test_scram_accepts_librdkafka_2_0s_nonce_but_nothing_else_around_the_combined_one() -> None:
    """librdkafka 2.0 sends the client nonce, then the combined nonce (Kafka accepts any nonce that ends
    with the combined one); the proof covers the message as sent."""
    for forged, accepted in [("n1{combined}", True), ("{combined}x", False), ("x{combined}y", False)]:
        server = ScramServer("SCRAM-SHA-256")
        client = ScramClient("SCRAM-SHA-256", "alice", "pencil", "n1")
        server.step(client.first())
        challenge = server.resume(credentials("SCRAM-SHA-256"))
        assert isinstance(challenge, Challenge)
        combined = challenge.data.decode().split(",")[0][2:]
        final = client.final(challenge.data, nonce=forged.format(combined=combined))
        if accepted:
            assert isinstance(server.step(final), Success)
        else:
            with pytest.raises(SaslFailure, match="nonce"):
                server.step(final)


def test_scram_client_final_replayed_into_a_new_exchange_fails() -> None:
    stored = credentials("SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "alice", "pencil", "n1")
    first = ScramServer("SCRAM-SHA-256")
    first.step(client.first())
    challenge = first.resume(stored)
    assert isinstance(challenge, Challenge)
    recorded = client.final(challenge.data)
    assert isinstance(first.step(recorded), Success)
    with pytest.raises(SaslFailure):  # the same exchange is over
        first.step(recorded)
    second = ScramServer("SCRAM-SHA-256")  # a fresh server nonce
    second.step(client.first())
    second.resume(stored)
    with pytest.raises(SaslFailure, match="nonce"):
        second.step(recorded)


def test_scram_user_names_are_escaped() -> None:
    assert encode_saslname("a,b=c") == "a=2Cb=3Dc"
    assert decode_saslname("a=2Cb=3Dc") == "a,b=c"
    for bad in ("a=2", "a=41", "a=", "a,b"):
        with pytest.raises(SaslFailure):
            decode_saslname(bad)
    client = ScramClient("SCRAM-SHA-256", "odd,name=x", "pencil", "n1")
    done = run_scram(ScramServer("SCRAM-SHA-256"), client, credentials("SCRAM-SHA-256"))
    assert done.user == "odd,name=x"


def test_scram_authzid_must_be_the_user() -> None:
    ok = ScramClient("SCRAM-SHA-256", "alice", "pencil", "n1", gs2_header="n,a=alice,")
    assert run_scram(ScramServer("SCRAM-SHA-256"), ok, credentials("SCRAM-SHA-256")).user == "alice"
    other = ScramClient("SCRAM-SHA-256", "alice", "pencil", "n1", gs2_header="n,a=bob,")
    with pytest.raises(SaslFailure, match="authorization id"):
        ScramServer("SCRAM-SHA-256").step(other.first())


@pytest.mark.parametrize(
    "message",
    [
        b"p=tls-unique,,n=alice,r=n1",  # channel binding
        b"y,,n=alice,r=n1",
        b"n,,m=ext,n=alice,r=n1",  # a mandatory extension
        b"n,,n=alice,r=n1,tokenauth=true",  # Kafka's delegation tokens
        b"n,,n=,r=n1",
        b"n,,n=alice,r=",
        b"n,,n=alice,r=a,b",
        b"n,,r=n1,n=alice",
        b"n,,n=alice",
        b"n=alice,r=n1",
        b"\xff\xfe",
        b"",
    ],
)
def test_scram_bad_client_first_fails(message: bytes) -> None:
    with pytest.raises(SaslFailure):
        ScramServer("SCRAM-SHA-256").step(message)


@pytest.mark.parametrize(
    "final",
    [
        b"c=biws,r={nonce}",  # no proof
        b"c=eSws,r={nonce},p=AAAA",  # "y,," as channel binding
        b"c=biws,r={nonce},p=not base64!",
        b"c=biws,r={nonce},p=AAAA",  # a proof of the wrong length
        b"r={nonce},c=biws,p=AAAA",
        b"garbage",
    ],
)
def test_scram_bad_client_final_fails(final: bytes) -> None:
    server = ScramServer("SCRAM-SHA-256")
    server.step(b"n,,n=alice,r=n1")
    challenge = server.resume(credentials("SCRAM-SHA-256"))
    assert isinstance(challenge, Challenge)
    nonce = challenge.data.decode().split(",")[0][2:]
    with pytest.raises(SaslFailure):
        server.step(final.replace(b"{nonce}", nonce.encode()))
    with pytest.raises(SaslFailure):  # a failed exchange stays failed
        server.step(b"c=biws,r=" + nonce.encode() + b",p=AAAA")


def test_scram_out_of_order_calls_fail() -> None:
    server = ScramServer("SCRAM-SHA-256")
    with pytest.raises(SaslFailure):
        server.resume(None)
    with pytest.raises(SaslFailure):
        server.step(b"n,,n=alice,r=n1")


def test_plain_checks_the_password_against_any_scram_credential() -> None:
    stored = {**credentials("SCRAM-SHA-256", "one"), **credentials("SCRAM-SHA-512", "two")}
    for password in ("one", "two"):
        server = PlainServer()
        assert server.step(f"\0alice\0{password}".encode()) == NeedCredentials("alice")
        assert server.resume(stored) == Success(b"", "alice")
    server = PlainServer()
    assert server.step(b"alice\0alice\0one") == NeedCredentials("alice")  # authzid = authcid
    assert server.resume(stored) == Success(b"", "alice")


@pytest.mark.parametrize("stored", [None, {}, credentials("SCRAM-SHA-256", "other")])
def test_plain_refuses_an_unknown_user_or_a_wrong_password(stored: dict[str, ScramCredential] | None) -> None:
    server = PlainServer()
    server.step(b"\0alice\0pencil")
    with pytest.raises(SaslFailure, match="invalid user name or password"):
        server.resume(stored)


@pytest.mark.parametrize(
    "token", [b"bob\0alice\0pw", b"\0\0pw", b"\0alice\0", b"alice\0pw", b"\0a\0b\0c", b"\0\xff\0pw", b""]
)
def test_plain_bad_tokens_fail(token: bytes) -> None:
    with pytest.raises(SaslFailure):
        PlainServer().step(token)


def test_plain_takes_one_token() -> None:
    server = PlainServer()
    server.step(b"\0alice\0pencil")
    server.resume(credentials("SCRAM-SHA-256"))
    with pytest.raises(SaslFailure):
        server.step(b"\0alice\0pencil")
    with pytest.raises(SaslFailure):
        server.resume(credentials("SCRAM-SHA-256"))


def test_server_for_names_each_mechanism() -> None:
    assert server_for("PLAIN").name == "PLAIN"
    assert server_for("SCRAM-SHA-512").name == "SCRAM-SHA-512"
    with pytest.raises(KeyError):
        server_for("GSSAPI")
