"""The per-API request unions name exactly the versions the broker advertises."""

from __future__ import annotations

from typing import get_args

from schooner.protocol import request_types
from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type


def _members(alias: object) -> set[object]:
    return set(get_args(alias)) or {alias}  # a one-version API is the class itself


def test_each_api_has_a_union_of_the_versions_served() -> None:
    for api, (low, high) in SUPPORTED_VERSIONS.items():
        name = request_type(api, low).__name__
        alias = getattr(request_types, name, None)
        assert alias is not None, f"request_types.py has no {name} for {ApiKey(api).name}"
        served = {request_type(api, version) for version in range(low, high + 1)}
        assert _members(alias) == served, f"{name} differs from SUPPORTED_VERSIONS {low}..{high}"


def test_no_alias_for_an_api_not_served() -> None:
    served = {request_type(api, low).__name__ for api, (low, _) in SUPPORTED_VERSIONS.items()}
    declared = {name for name in vars(request_types) if name.endswith("Request")}
    assert declared == served
