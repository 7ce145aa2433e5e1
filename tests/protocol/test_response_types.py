"""The per-API response unions mirror the request unions, and response_for() answers each version."""

from __future__ import annotations

from typing import get_args

from schooner.protocol import request_types, response_types
from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type, response_type
from schooner.protocol.response_types import response_for


def _members(alias: object) -> set[object]:
    return set(get_args(alias)) or {alias}  # a one-version API is the class itself


def test_each_api_has_a_union_of_the_response_versions_served() -> None:
    for api, (low, high) in SUPPORTED_VERSIONS.items():
        name = response_type(api, low).__name__
        alias = getattr(response_types, name, None)
        assert alias is not None, f"response_types.py has no {name} for {ApiKey(api).name}"
        served = {response_type(api, version) for version in range(low, high + 1)}
        assert _members(alias) == served, f"{name} differs from SUPPORTED_VERSIONS {low}..{high}"


def test_one_response_alias_per_request_alias() -> None:
    requests = {name[: -len("Request")] for name in vars(request_types) if name.endswith("Request")}
    responses = {name[: -len("Response")] for name in vars(response_types) if name.endswith("Response")}
    assert requests == responses


def test_response_for_answers_each_version_with_its_own_class() -> None:
    for api, (low, high) in SUPPORTED_VERSIONS.items():
        for version in range(low, high + 1):
            cls = request_type(api, version)
            assert response_for(cls.__new__(cls)) is response_type(api, version)
