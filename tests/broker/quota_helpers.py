"""Setting client quotas and speaking the raw wire as a named client, for tests/broker/test_quotas*.py."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.alter_client_quotas.v1.request import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)

from tests.wire import call, connect, decode_response, encode_request, read_frame

Entity = Sequence[tuple[str, str | None]]  # (entity type, name or None for <default>)


def set_quotas(port: int, entity: Entity, **values: float | None) -> None:
    """AlterClientQuotas on one entity: a value sets its key, None removes it."""
    request = AlterClientQuotasRequest(
        entries=(
            EntryData(
                entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity),
                ops=tuple(
                    OpData(key=key, value=value or 0.0, remove=value is None) for key, value in values.items()
                ),
            ),
        ),
        validate_only=False,
    )
    response = call(port, request)
    assert [e.error_code for e in response.entries] == [0], response


class Client:
    """One connection, as one client id; requests numbered in order."""

    def __init__(self, port: int, client_id: str) -> None:
        self.sock: socket.socket = connect(port)
        self.client_id = client_id
        self._next = 0

    def send(self, body: Any) -> int:
        correlation = self._next
        self._next += 1
        self.sock.sendall(encode_request(body, correlation_id=correlation, client_id=self.client_id))
        return correlation

    def receive(self, body: Any) -> Any:
        """The response to `body` (sent earlier, and the oldest still unanswered)."""
        frame = read_frame(self.sock)
        assert frame is not None, "connection closed"
        flexible = body.__flexible__ and body.__api_key__ != 18
        _, response = decode_response(frame, body.__api_key__, body.__version__, flexible)
        return response

    def request(self, body: Any) -> Any:
        self.send(body)
        return self.receive(body)

    def close(self) -> None:
        self.sock.close()


def throttle_ms(response: Any) -> float:
    return float(response.throttle_time.total_seconds() * 1000)


def eventually(check: Callable[[], bool], seconds: float, what: str, pause: float = 0.02) -> float:
    """Waits until check() holds; returns how long that took."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s: {what}"
        time.sleep(pause)
    return time.monotonic() - started
