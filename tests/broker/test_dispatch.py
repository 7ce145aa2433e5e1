"""The dispatch table: one handler per served API, named after it."""

from __future__ import annotations

from schooner.broker.dispatch import HANDLERS
from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey


def test_every_served_api_has_a_handler_named_after_it() -> None:
    assert set(HANDLERS) == set(SUPPORTED_VERSIONS)
    for api, handler in HANDLERS.items():
        assert handler.__name__ == f"handle_{ApiKey(api).name.lower()}"
