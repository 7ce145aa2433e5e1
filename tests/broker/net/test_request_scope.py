"""A request's scope is the handler's third argument: what a handler reads of who asks comes from it,
with no context variable to set (session.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from schooner.broker.access.quotas import fetch_byte_cap
from schooner.broker.net.endpoints import on_listener
from schooner.broker.net.refusals import RepeatFilter, refused
from schooner.broker.net.session import RequestScope, Session
from schooner.config import Listener
from schooner.security.quotas import ClientLimits, QuotaWindow, WindowConfig
from schooner.storage.cluster import BrokerInfo

SSL = Listener("SSL", "0.0.0.0", 9093)


def _scope(**session: Any) -> RequestScope:
    return RequestScope(Session(SSL, "10.0.0.7", port=5000, **session), "app", "/10.0.0.7")


def test_the_caller_and_tenant_are_the_sessions() -> None:
    scope = _scope(principal="User:alice", tenant="acme")
    assert (scope.caller.principal, scope.caller.host) == ("User:alice", "10.0.0.7")
    assert scope.tenant == "acme"


def test_endpoints_are_those_of_the_scopes_listener() -> None:
    both = BrokerInfo(1, "h", 9092, endpoints={"PLAINTEXT": ("h", 9092), "SSL": ("h", 9093)})
    plain_only = BrokerInfo(2, "p", 9092)
    assert on_listener([both, plain_only], _scope()) == [(both, "h", 9093)]


def test_fetch_max_bytes_is_capped_by_the_scopes_limits_only() -> None:
    config = WindowConfig(samples=11, sample_seconds=1.0)
    limits = ClientLimits(None, QuotaWindow(config, 100.0), None, config)
    assert fetch_byte_cap(1 << 20, None) == 1 << 20
    assert fetch_byte_cap(1 << 20, limits) == 1000  # 100 bytes/s over 10 whole samples


def test_a_refusal_names_the_scopes_client(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from schooner.broker.net import refusals

    monkeypatch.setattr(refusals, "REPEATS", RepeatFilter())
    log = logging.getLogger("test.scope")
    with caplog.at_level(logging.INFO, logger="test.scope"):
        refused(log, "PRODUCE", "why", scope=_scope(principal="User:bob"))
    (record,) = caplog.records
    assert record.client_id == "app"  # type: ignore[attr-defined]
    assert record.peer == "10.0.0.7:5000"  # type: ignore[attr-defined]
    assert record.principal == "User:bob"  # type: ignore[attr-defined]
