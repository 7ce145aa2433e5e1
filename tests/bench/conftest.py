"""The benchmark modules' endpoints on the test's redis-server and broker."""

from __future__ import annotations

import os

import pytest

from bench.servers import Endpoints
from schooner.storage.keys import Keyspace


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The benchmarks read one redis-server's CPU time (its pid): not for make test-cluster."""
    for item in items:
        if item.path.is_relative_to(os.path.dirname(__file__)):
            item.add_marker(pytest.mark.single_redis)


@pytest.fixture
def endpoints(broker, redis_server, keyspace: str) -> Endpoints:
    """The test's broker runs in this process, so its CPU is counted as this process's."""
    assert redis_server.pid is not None
    return Endpoints(
        redis_url=redis_server.url,
        redis_port=redis_server.port,
        broker_port=broker.port,
        keyspace=Keyspace(keyspace),
        broker_pid=os.getpid(),
        redis_pid=redis_server.pid,
    )
