"""Brokers cache topics for long (topic_cache.TOPIC_CACHE_SECONDS) and drop a cached topic when its scripts
publish a change: a change made through broker A shows at once on broker B, well under the TTL.
On one Redis and on a Redis Cluster."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from schooner.broker.metadata.topic_cache import TOPIC_CACHE_SECONDS
from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests.wire import call, fetch_request

T = 10
AT_ONCE = 3.0  # seconds: a notice takes milliseconds; without one B would answer from its cache for 30 s


@pytest.fixture(params=["one-redis", "cluster"])
def two_brokers(request: pytest.FixtureRequest, broker_factory: Callable[..., Any]) -> tuple[Any, Any]:
    server = request.getfixturevalue("redis_server" if request.param == "one-redis" else "redis_cluster")
    return broker_factory(redis_url=server.url), broker_factory(redis_url=server.url)


def _at_once(check: Callable[[], bool], what: str) -> float:
    """Polls check until it holds; fails after AT_ONCE seconds. Returns how long it took."""
    assert AT_ONCE * 5 < TOPIC_CACHE_SECONDS
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < AT_ONCE, what
        time.sleep(0.02)
    return time.monotonic() - start


# B is asked with raw requests on its own port: an admin client would send them to any broker it knows.
def _retention_ms(port: int, topic: str) -> str:
    describe = request_type(ApiKey.DESCRIBE_CONFIGS, 4)
    resource = make(sibling(describe, "DescribeConfigsResource"), resource_type=2, resource_name=topic,
                    configuration_keys=("retention.ms",))  # fmt: skip
    body = make(describe, resources=(resource,), include_synonyms=False, include_documentation=False)
    (result,) = call(port, body).results
    assert result.error_code == ErrorCode.none
    return str(result.configs[0].value)


def _partitions(port: int, topic: str) -> int:
    body = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    (found,) = call(port, body).topics
    assert found.error_code == ErrorCode.none
    return len(found.partitions)


def _fetch_error(port: int, topic: str) -> ErrorCode:
    return ErrorCode(call(port, fetch_request(topic, 0)).responses[0].partitions[0].error_code)


def test_config_change_through_a_shows_on_b_at_once(two_brokers) -> None:
    a, b = two_brokers
    on_a = AdminClient({"bootstrap.servers": a.bootstrap})
    on_a.create_topics([NewTopic("configs", 1, 1, config={"retention.ms": "1000000"})])["configs"].result(T)
    assert _retention_ms(b.port, "configs") == "1000000"  # B has it cached now
    change = ConfigEntry("retention.ms", "2000000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, "configs", incremental_configs=[change])
    for done in on_a.incremental_alter_configs([resource]).values():
        done.result(T)
    _at_once(lambda: _retention_ms(b.port, "configs") == "2000000", "B shows the new retention.ms")


def test_partitions_added_through_a_show_on_b_at_once(two_brokers) -> None:
    a, b = two_brokers
    on_a = AdminClient({"bootstrap.servers": a.bootstrap})
    on_a.create_topics([NewTopic("grows", 2, 1)])["grows"].result(T)
    assert _partitions(b.port, "grows") == 2
    on_a.create_partitions([NewPartitions("grows", 5)], request_timeout=T)["grows"].result(T)
    _at_once(lambda: _partitions(b.port, "grows") == 5, "B lists five partitions")


def test_topic_deleted_and_created_through_a_shows_on_b_at_once(two_brokers) -> None:
    a, b = two_brokers
    on_a = AdminClient({"bootstrap.servers": a.bootstrap})
    on_a.create_topics([NewTopic("doomed", 1, 1)])["doomed"].result(T)
    assert _fetch_error(b.port, "doomed") == ErrorCode.none  # cached on B
    on_a.delete_topics(["doomed"], request_timeout=T)["doomed"].result(T)
    _at_once(lambda: _fetch_error(b.port, "doomed") == ErrorCode.unknown_topic_or_partition, "B: deleted")
    # B has now cached that the topic does not exist; creating it through A clears that too.
    assert _fetch_error(b.port, "doomed") == ErrorCode.unknown_topic_or_partition
    on_a.create_topics([NewTopic("doomed", 1, 1)])["doomed"].result(T)
    _at_once(lambda: _fetch_error(b.port, "doomed") == ErrorCode.none, "B: created again")
