"""ClusterView (broker/metadata/cluster_view.py): which brokers the deployment's Metadata names. A Redis
that refuses writes (out of memory) stops every broker's registration renewals at once; the brokers keep
naming each other meanwhile and for a session after, instead of each naming only itself."""

from __future__ import annotations

import time

import pytest
import redis
from kio.schema.metadata.v12.request import MetadataRequest

from tests.broker.helpers import wait
from tests.wire import call

pytestmark = pytest.mark.single_redis  # it fills the one server

HEARTBEAT_MS, SESSION_MS = 200, 1000


def _named(port: int) -> list[int]:
    request = MetadataRequest(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    return sorted(b.node_id for b in call(port, request).brokers)


def _refuse_writes(client: redis.Redis) -> None:
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", str(used - 100_000))


def test_brokers_keep_naming_each_other_while_redis_refuses_writes(broker_factory, full_redis) -> None:
    brokers = [broker_factory(heartbeat_ms=HEARTBEAT_MS, session_ms=SESSION_MS) for _ in range(2)]
    both = sorted(b.broker_id for b in brokers)
    wait(lambda: all(_named(b.port) == both for b in brokers), 10, "both brokers registered")
    _refuse_writes(full_redis)
    full_until = time.monotonic() + 3 * SESSION_MS / 1000  # every registration has lapsed in Redis
    seen = []
    while time.monotonic() < full_until:
        seen.append([_named(b.port) for b in brokers])
        time.sleep(0.1)
    full_redis.config_set("maxmemory", 0)
    back_until = time.monotonic() + 2 * SESSION_MS / 1000
    while time.monotonic() < back_until:
        seen.append([_named(b.port) for b in brokers])
        time.sleep(0.1)
    assert all(named == [both, both] for named in seen), [n for n in seen if n != [both, both]][:3]


def test_a_broker_that_stops_renewing_leaves_the_others_metadata(broker_factory) -> None:
    """The grace is for trouble the reading broker sees too: a broker gone while Redis answers well
    leaves Metadata once its registration lapses."""
    staying = broker_factory(heartbeat_ms=HEARTBEAT_MS, session_ms=SESSION_MS)
    leaving = broker_factory(
        process=True, SCHOONER_HEARTBEAT_MS=str(HEARTBEAT_MS), SCHOONER_SESSION_MS=str(SESSION_MS)
    )
    wait(lambda: len(_named(staying.port)) == 2, 10, "both brokers registered")
    leaving.kill()
    wait(lambda: _named(staying.port) == [staying.broker_id], 10, "the killed broker leaves Metadata")
