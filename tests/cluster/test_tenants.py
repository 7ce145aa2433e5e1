"""Tenants on a Redis Cluster: a tenant's long-polling fetch is woken through the sharded channel of the
tenant's own partition, and two tenants' partitions of one name stay apart."""

from __future__ import annotations

import threading
from typing import Any

from kio.schema.errors import ErrorCode

from schooner.storage.topic_partition import TopicPartition
from tests.broker.helpers import wait
from tests.broker.tenant_rig import create_topic, fetch, produce, serve
from tests.wire import fetch_request


def test_a_tenants_fetch_is_woken_through_its_own_sharded_channel(cluster_broker: Any) -> None:
    for tenant in ("a", "b"):
        assert create_topic(cluster_broker, tenant, "orders", 1) == ErrorCode.none
    answer: list[Any] = []
    waiting = threading.Thread(
        target=lambda: answer.append(serve(cluster_broker, "a", fetch_request("orders", 0, max_wait_ms=8000)))
    )
    waiting.start()
    notices = cluster_broker.broker.upkeeps["a"].sharded_notices
    assert notices is not None and notices is not cluster_broker.broker.sharded_notices
    wait(lambda: TopicPartition("orders", 0) in notices.subscribed, 10, "a's fetch waits on a's partition")
    produce(cluster_broker, "b", "orders", [b"b's"])  # the other tenant's partition of that name: no wake
    produce(cluster_broker, "a", "orders", [b"a's"])
    waiting.join(10)
    assert answer and answer[0].responses[0].partitions[0].records
    # The broker's own append wakes its fetch at once; its notice comes round through Redis after.
    wait(lambda: notices.heard[TopicPartition("orders", 0)] >= 1, 5, "a's channel carries the notice")
    assert fetch(cluster_broker, "b", "orders").high_watermark == 1  # b's own record only
