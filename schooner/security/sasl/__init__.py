"""SASL mechanisms, server side, without I/O: PLAIN (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512
(RFC 5802, RFC 7677). mechanism.py says how the broker drives one."""

from __future__ import annotations

from ..scram import MECHANISMS as SCRAM_MECHANISMS
from .mechanism import (
    Challenge,
    Credentials,
    NeedCredentials,
    SaslFailure,
    ServerMechanism,
    Step,
    Success,
)
from .plain import PlainServer
from .scram_server import ScramServer

# Every mechanism this package serves; the broker offers those of sasl_enabled_mechanisms among them.
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)


def server_for(name: str) -> ServerMechanism:
    """A new exchange of the named mechanism. KeyError for a mechanism not served here."""
    if name == "PLAIN":
        return PlainServer()
    if name in SCRAM_MECHANISMS:
        return ScramServer(name)
    raise KeyError(name)


__all__ = [
    "MECHANISMS",
    "Challenge",
    "Credentials",
    "NeedCredentials",
    "PlainServer",
    "SaslFailure",
    "ScramServer",
    "ServerMechanism",
    "Step",
    "Success",
    "server_for",
]
