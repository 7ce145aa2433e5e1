"""The client side of SCRAM (security/sasl/scram_client.py) against the server side: both hashes log
in and verify the server; a server that does not know the password, or that does not extend the
client's nonce, is refused."""

from __future__ import annotations

import pytest

from schooner.security.sasl import Challenge, ScramServer, Success
from schooner.security.sasl.mechanism import SaslFailure
from schooner.security.sasl.scram_client import ScramClient, plain_token
from schooner.security.scram import make_credential


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_logs_in_and_verifies_the_server(mechanism: str) -> None:
    client, server = ScramClient(mechanism, "a,l=ice", "pw"), ScramServer(mechanism)
    server.step(client.first())
    challenge = server.resume({mechanism: make_credential(mechanism, "pw")})
    assert isinstance(challenge, Challenge)
    done = server.step(client.final(challenge.data))
    assert isinstance(done, Success) and done.user == "a,l=ice"
    client.verify(done.data)


def test_refuses_a_server_without_the_password() -> None:
    mechanism = "SCRAM-SHA-256"
    client = ScramClient(mechanism, "alice", "pw")
    impostor = ScramServer(mechanism)
    impostor.step(client.first())
    challenge = impostor.resume({mechanism: make_credential(mechanism, "other")})
    assert isinstance(challenge, Challenge)
    client.final(challenge.data)
    with pytest.raises(SaslFailure, match="server's signature is wrong"):
        client.verify(b"v=" + b"A" * 44)


def test_refuses_a_nonce_that_is_not_an_extension_of_its_own() -> None:
    client = ScramClient("SCRAM-SHA-512", "alice", "pw", nonce="abc")
    client.first()
    with pytest.raises(SaslFailure, match="nonce"):
        client.final(b"r=xyz123,s=c2FsdA==,i=4096")
    assert plain_token("u", "p") == b"\0u\0p"
