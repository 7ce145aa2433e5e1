"""The dispatch table: one handler per served API, named after it, taking that API's request types and
answering its response types."""

from __future__ import annotations

from typing import get_args, get_type_hints

from schooner.broker.dispatch import HANDLERS
from schooner.broker.net.session import RequestScope
from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type, response_type
from schooner.protocol.messages import NoResponse


def test_every_served_api_has_a_handler_named_after_it() -> None:
    assert set(HANDLERS) == set(SUPPORTED_VERSIONS)
    for api, handler in HANDLERS.items():
        assert handler.__name__ == f"handle_{ApiKey(api).name.lower()}"


def test_each_handler_takes_exactly_the_versions_its_api_decodes_to() -> None:
    """The table cannot say this to mypy (it is keyed by a runtime value), so it is checked here."""
    for api, handler in HANDLERS.items():
        body = get_type_hints(handler)["body"]
        low, high = SUPPORTED_VERSIONS[api]
        served = {request_type(api, version) for version in range(low, high + 1)}
        assert (set(get_args(body)) or {body}) == served, handler.__name__


def test_each_handler_returns_its_apis_response_and_takes_the_request_scope() -> None:
    for api, handler in HANDLERS.items():
        hints = get_type_hints(handler)
        assert hints["scope"] is RequestScope, handler.__name__
        low, high = SUPPORTED_VERSIONS[api]
        answers = {response_type(api, version) for version in range(low, high + 1)}
        returned = set(get_args(hints["return"])) or {hints["return"]}
        assert returned - {NoResponse} == answers, handler.__name__
