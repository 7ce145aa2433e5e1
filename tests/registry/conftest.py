"""A broker with its schema registry on a free port, and an HTTP client for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from schooner.storage.redis.embedded import free_port


@dataclass
class Registry:
    broker: Any  # the RunningBroker or ProcessBroker serving it
    url: str

    def client(self, **options: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **options)


@pytest.fixture
def registry_factory(broker_factory: Callable[..., Any]) -> Callable[..., Registry]:
    def make(**overrides: Any) -> Registry:
        port = free_port()
        if overrides.get("process"):
            overrides["SCHOONER_SCHEMA_REGISTRY_PORT"] = str(port)
        else:
            overrides["schema_registry_port"] = port
        return Registry(broker_factory(**overrides), f"http://127.0.0.1:{port}")

    return make


@pytest.fixture
def registry(registry_factory: Callable[..., Registry]) -> Registry:
    return registry_factory()


@pytest.fixture
def http(registry: Registry) -> Iterator[httpx.Client]:
    with registry.client() as client:
        yield client
