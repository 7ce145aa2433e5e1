"""The CLI on a Redis Cluster: `schooner broker --redis-url` naming one node of the cluster, `schooner
groups list/describe/lag` of a classic group whose commits cover partitions on every primary and of a
share group, and `schooner topics repair` of a partition stopped by a plain `XADD *`."""

from __future__ import annotations

import json
import uuid
from typing import Any

import redis
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.ops.cli import main
from schooner.storage.keys import Keyspace
from tests.broker.helpers import share_fetch
from tests.broker.share_rig import set_group_configs
from tests.clients import Rec, confluent_consume, confluent_produce
from tests.cluster.helpers import primaries_of

PARTITIONS = 12
T = 10


def _cli(url: str, ks: Keyspace, *args: str) -> Any:
    result = CliRunner().invoke(main, [*args, "--redis-url", url, "--keyspace", ks.prefix])
    assert result.exit_code == 0, result.output
    return result


def test_groups_list_describe_and_lag(
    broker_factory: Any, redis_cluster: Any, cluster_client: redis.RedisCluster, ks: Keyspace
) -> None:
    # The broker as a user starts it: `schooner broker --redis-url` with the address of one node.
    url = f"redis://127.0.0.1:{redis_cluster.nodes[-1].port}"
    broker = broker_factory(process=True, redis_url=url)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for name in ("cli-t", "cli-share"):
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(T)
    assert len(primaries_of(cluster_client, [ks.stream("cli-t", p) for p in range(PARTITIONS)])) == 3
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        for i in range(4):
            producer.produce("cli-t", value=b"%d" % i, partition=p)
    for i in range(5):
        producer.produce("cli-share", value=b"v%d" % i, partition=0)
    assert producer.flush(T) == 0
    group = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "cli-g", "enable.auto.commit": False}
    )
    group.commit(offsets=[TopicPartition("cli-t", p, p % 4) for p in range(PARTITIONS)], asynchronous=False)
    group.close()

    rows = [
        json.loads(line) for line in _cli(url, ks, "groups", "lag", "cli-g", "--json").output.splitlines()
    ]
    assert [(r["topic"], r["partition"], r["committed"], r["lag_records"]) for r in rows] == [
        ("cli-t", p, p % 4, 4 - p % 4) for p in range(PARTITIONS)
    ]
    described = json.loads(_cli(url, ks, "groups", "describe", "cli-g", "--json").output)
    assert described["type"] == "classic" and len(described["partitions"]) == PARTITIONS
    assert sum(p["lag_records"] for p in described["partitions"]) == sum(4 - p % 4 for p in range(PARTITIONS))

    # A share group with records in flight on partition 0, and no share partition elsewhere.
    topic_id = uuid.UUID(cluster_client.hget(ks.topic("cli-share"), "id").decode())
    set_group_configs(broker.bootstrap, "cli-sg", share_auto_offset_reset="earliest")
    assert share_fetch(broker.port, "cli-sg", topic_id, "m1", 0, max_records=3) == [0, 1, 2]
    shares = json.loads(_cli(url, ks, "groups", "describe", "cli-sg", "--json").output)
    assert shares["type"] == "share" and len(shares["partitions"]) == PARTITIONS
    first, *rest = shares["partitions"]
    assert (first["start_offset"], first["in_flight"], first["lag"]) == (0, 3, 5)
    assert all(p["in_flight"] is None for p in rest)

    listed = _cli(url, ks, "groups", "list").output.splitlines()
    assert [line.split()[-1] for line in listed if line.startswith("cli-g ")] == ["classic"]


def test_topics_repair(cluster_broker: Any, cluster_client: redis.RedisCluster, ks: Keyspace) -> None:
    bootstrap = cluster_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the result arrives
    admin.create_topics([NewTopic("fixme", 3, 1)])["fixme"].result(T)
    for p in range(3):
        confluent_produce(bootstrap, "fixme", [Rec(b"k", b"v%d" % i) for i in range(2)], partition=p)
    for p in (0, 2):  # two partitions stopped by a plain writer's `XADD *`, on their own primaries
        cluster_client.xadd(ks.stream("fixme", p), {"value": b"with star"})
    result = _cli(cluster_broker.redis_url, ks, "topics", "repair", "fixme")
    assert result.output.count("1 entries given offsets; the log now ends at 3") == 2, result.output
    for p in range(3):
        confluent_produce(bootstrap, "fixme", [Rec(None, b"after")], partition=p)
    for p in range(3):
        middle = [(2, b"with star")] if p != 1 else []
        expected = [(0, b"v0"), (1, b"v1"), *middle, (2 + len(middle), b"after")]
        got = confluent_consume(bootstrap, "fixme", len(expected), partition=p)
        assert [(m.offset(), m.value()) for m in got] == expected
