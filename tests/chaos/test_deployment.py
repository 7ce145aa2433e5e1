"""A chaos deployment starts, serves Kafka clients through its proxies, archives to its cold store
through the S3 proxy, and stops without leaving a process behind; a cluster one survives a primary's
failover injected by the nemesis, the old primary rejoining as a replica."""

from __future__ import annotations

import os
import random
from pathlib import Path

import boto3
import pytest
import redis
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.deployment import Deployment, DeploymentSpec
from chaos.history import History, read_history
from chaos.nemesis import Nemesis, PlannedFault
from tests.broker.helpers import wait

pytestmark = pytest.mark.xdist_group("chaos")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _create(bootstrap: str, topic: str, partitions: int, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(20)


def _produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors: list[object] = []
    for i, value in enumerate(values):
        producer.produce(
            topic, value, partition=i % partitions, on_delivery=lambda e, m: e and errors.append(e)
        )
    assert producer.flush(30) == 0
    assert not errors, errors


def _consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        wait(lambda: _poll_into(consumer, got) >= count, 30, f"{count} records consumed")
    finally:
        consumer.close()
    return got


def _poll_into(consumer: Consumer, got: list[bytes]) -> int:
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        got.append(message.value())
    return len(got)


def _objects(options: dict[str, str]) -> int:
    s3 = boto3.client("s3", endpoint_url=options["endpoint"], region_name=options["region"],
                      aws_access_key_id=options["access_key_id"],
                      aws_secret_access_key=options["secret_access_key"])  # fmt: skip
    return int(s3.list_objects_v2(Bucket=options["bucket"]).get("KeyCount", 0))


def test_single_redis_deployment_serves_through_its_proxies_and_stops_every_process(tmp_path: Path) -> None:
    deployment = Deployment(DeploymentSpec(tmp_path, redis="single", brokers=2))
    with deployment:
        bootstrap = deployment.bootstrap
        proxy_ports = {b.proxy.port for b in deployment.brokers}
        broker_ports = {b.port for b in deployment.brokers}
        # Metadata sends clients to the proxies, never to the brokers' own ports.
        listed = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).brokers
        assert {b.port for b in listed.values()} == proxy_ports
        assert not proxy_ports & broker_ports
        # The brokers reach Redis through its proxy.
        assert all(b.log_path.exists() for b in deployment.brokers)
        assert deployment.redis_proxies[0].port != deployment.redis_nodes[0].port

        _create(bootstrap, "plain", 4)
        values = [b"v%d" % i for i in range(40)]
        _produce(bootstrap, "plain", values, 4)
        assert sorted(_consume_all(bootstrap, "plain", 40)) == sorted(values)

        # Tiered: the archiver writes to the S3 store through its proxy.
        before = _objects(deployment.cold_store_options)
        _create(bootstrap, "tiered", 2, **{"remote.storage.enable": "true", "local.retention.ms": "1"})
        _produce(bootstrap, "tiered", [b"t%d" % i for i in range(20)], 2)
        wait(lambda: _objects(deployment.cold_store_options) > before, 30, "records archived to S3")

        client = redis.Redis.from_url(deployment.redis_url)
        assert client.config_get("appendonly")["appendonly"] == "yes"
        client.close()

        # A broker restarted comes back on its port, behind the same proxy.
        deployment.restart_broker(1)
        deployment.wait_healthy(30)
        pids = list(deployment.pids)
    assert len(pids) == 2 + 1 + 1 + 1  # brokers, redis-server, moto, the restarted broker
    assert [pid for pid in pids if _alive(pid)] == []


def test_cluster_deployment_serves_and_rides_a_primary_failover(tmp_path: Path) -> None:
    deployment = Deployment(DeploymentSpec(tmp_path, redis="cluster", brokers=3, cold_store=False))
    with deployment:
        assert deployment.cluster is not None
        # CLUSTER SLOTS names the proxies, so the brokers (and the replicas) go through them.
        client = redis.Redis.from_url(deployment.redis_url, decode_responses=True)
        slots = client.execute_command("CLUSTER", "SLOTS")
        client.close()
        announced = {int(entry[2][1]) for entry in slots}
        assert announced <= {p.port for p in deployment.redis_proxies}

        bootstrap = deployment.bootstrap
        _create(bootstrap, "spread", 6)
        values = [b"a%d" % i for i in range(30)]
        _produce(bootstrap, "spread", values, 6)

        history = History(tmp_path / "history.jsonl")
        nemesis = Nemesis(deployment, history, random.Random(3), kinds=["redis_failover"])
        primaries = deployment.primaries()
        value = nemesis.run_fault(PlannedFault("redis_failover", 0, 0.0, 1.0))
        history.close()
        victim = int(value["target"].removeprefix("redis-"))
        assert victim == primaries[0]
        assert value["recovered"] is not None and value["promoted"] > 0
        # The old primary rejoined as a replica; another node holds its slots.
        assert victim not in deployment.primaries() and len(deployment.primaries()) == 3
        node = deployment.redis_nodes[victim]
        role = redis.Redis(port=node.port, decode_responses=True).execute_command("ROLE")[0]
        assert role == "slave"
        [op] = read_history(tmp_path / "history.jsonl")
        assert op.f == "fault" and op.value["kind"] == "redis_failover"

        more = [b"b%d" % i for i in range(30)]
        _produce(bootstrap, "spread", more, 6)
        assert sorted(_consume_all(bootstrap, "spread", 60)) == sorted(values + more)
        pids = list(deployment.pids)
    assert len(pids) == 6 + 3 + 1  # nodes, brokers, the restarted node
    assert [pid for pid in pids if _alive(pid)] == []
