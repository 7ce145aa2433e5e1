"""Each fault kind of the nemesis, injected once on a small single-Redis deployment: its effect is seen
while it holds, the deployment serves again after the heal, and the history records it. And the plan
is seeded: the same seed gives the same faults."""

from __future__ import annotations

import random
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.deployment import Deployment, DeploymentSpec, metadata_brokers, probe_produce
from chaos.history import History, read_history
from chaos.nemesis import ActiveFault, Nemesis, PlannedFault, supported_kinds
from tests.broker.helpers import wait

pytestmark = pytest.mark.xdist_group("chaos")

HOLD = 1.5
TIERED = "tiered"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with Deployment(DeploymentSpec(tmp_path_factory.mktemp("chaos"), redis="single", brokers=2)) as d:
        admin = AdminClient({"bootstrap.servers": d.bootstrap})
        config = {"remote.storage.enable": "true", "local.retention.ms": "1"}
        admin.create_topics([NewTopic(TIERED, 1, 1, config=config)])[TIERED].result(20)
        yield d


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    h = History(tmp_path / "history.jsonl")
    yield h
    h.close()


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def produce_fails(bootstrap: str) -> bool:
    return probe_produce(bootstrap, 2.0) is not None


def redis_direct(d: Deployment) -> redis.Redis:
    node = d.redis_nodes[0]
    return redis.Redis(port=node.port, password=node.password, socket_timeout=2)


def archived_objects(d: Deployment) -> int:
    o = d.cold_store_options
    s3 = boto3.client("s3", endpoint_url=o["endpoint"], region_name=o["region"],
                      aws_access_key_id=o["access_key_id"],
                      aws_secret_access_key=o["secret_access_key"])  # fmt: skip
    return int(s3.list_objects_v2(Bucket=o["bucket"]).get("KeyCount", 0))


def produce_tiered(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(TIERED, b"r%d" % i)
    assert producer.flush(30) == 0


def broker_of(d: Deployment, fault: ActiveFault) -> int:
    return int(fault.target.removeprefix("broker-"))


def see_broker_kill(d: Deployment, fault: ActiveFault) -> None:
    b = d.brokers[broker_of(d, fault)]
    assert not b.alive
    assert metadata_brokers(b.proxy.port, 1.0) is None  # the proxy finds nothing behind it


def see_broker_pause(d: Deployment, fault: ActiveFault) -> None:
    i = broker_of(d, fault)
    assert d.brokers[i].paused and d.brokers[i].alive
    assert metadata_brokers(d.brokers[i].proxy.port, 1.0) is None  # accepted by the kernel, never answered
    # Past the session, the other broker no longer lists the frozen one.
    other = d.brokers[1 - i]
    wait(
        lambda: metadata_brokers(other.proxy.port, 1.0) == 1, fault.hold, "the paused broker leaves Metadata"
    )


def see_redis_kill(d: Deployment, fault: ActiveFault) -> None:
    with pytest.raises(redis.ConnectionError):
        redis_direct(d).ping()
    assert produce_fails(d.bootstrap)


def see_client_link_stall(d: Deployment, fault: ActiveFault) -> None:
    b = d.brokers[broker_of(d, fault)]
    assert not refused(b.proxy.port)  # connections are accepted, then nothing comes back
    assert metadata_brokers(b.proxy.port, 1.0) is None
    assert metadata_brokers(d.brokers[1 - b.index].proxy.port, 1.0) == 2  # the other link flows


def see_client_link_cut(d: Deployment, fault: ActiveFault) -> None:
    b = d.brokers[broker_of(d, fault)]
    assert refused(b.proxy.port)
    assert produce_fails(b.proxy.address)  # a client with only this broker to bootstrap from


def see_redis_link_stall(d: Deployment, fault: ActiveFault) -> None:
    assert redis_direct(d).ping()  # redis-server is fine: only the brokers' path to it is frozen
    assert produce_fails(d.bootstrap)


def see_redis_link_cut(d: Deployment, fault: ActiveFault) -> None:
    assert refused(d.redis_proxies[0].port)
    assert produce_fails(d.bootstrap)


def see_redis_memory_full(d: Deployment, fault: ActiveFault) -> None:
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        redis_direct(d).set("chaos-oom", b"x" * 1000)
    assert produce_fails(d.bootstrap)


def see_cold_store_cut(d: Deployment, fault: ActiveFault) -> None:
    assert d.s3_proxy is not None and refused(d.s3_proxy.port)
    before = archived_objects(d)
    produce_tiered(d.bootstrap, 50)  # the hot tier takes records while the cold one is away
    assert archived_objects(d) == before


EFFECTS: dict[str, Callable[[Deployment, ActiveFault], None]] = {
    "broker_kill": see_broker_kill,
    "broker_pause": see_broker_pause,
    "redis_kill": see_redis_kill,
    "client_link_stall": see_client_link_stall,
    "client_link_cut": see_client_link_cut,
    "redis_link_stall": see_redis_link_stall,
    "redis_link_cut": see_redis_link_cut,
    "redis_memory_full": see_redis_memory_full,
    "cold_store_cut": see_cold_store_cut,
}


@pytest.mark.parametrize("kind", list(EFFECTS))
def test_fault_has_its_effect_then_heals_and_is_recorded(
    deployment: Deployment, history: History, kind: str
) -> None:
    nemesis = Nemesis(deployment, history, random.Random(1), kinds=[kind], recovery_bound=60)
    archived_before = archived_objects(deployment)
    seen: list[str] = []

    def observe(fault: ActiveFault) -> None:
        EFFECTS[kind](deployment, fault)
        seen.append(fault.target)

    value = nemesis.run_fault(PlannedFault(kind, 1, 0.0, HOLD), observe)
    assert seen == [value["target"]]
    assert value["kind"] == kind
    assert value["healed"] >= HOLD
    if kind == "broker_pause":
        assert value["healed"] >= deployment.session_s  # frozen past the broker session
    assert value["recovered"] is not None and value["recovered"] < 60
    assert deployment.serves(10) is None
    [op] = read_history(history.path)
    assert (op.process, op.f, op.status) == ("nemesis", "fault", "ok")
    assert op.value == value and op.end - op.start >= value["healed"] + value["recovered"] - 0.01
    if kind == "cold_store_cut":  # the archiver rode the cut out: what came in meanwhile goes up now
        wait(lambda: archived_objects(deployment) > archived_before, 30, "archiving resumes")


def test_the_nemesis_thread_injects_heals_and_records_until_stopped(
    deployment: Deployment, history: History
) -> None:
    nemesis = Nemesis(deployment, history, random.Random(5), kinds=["client_link_stall", "client_link_cut"],
                      interval=(0.1, 0.3), duration=(0.3, 0.6))  # fmt: skip
    nemesis.start()
    wait(lambda: len(nemesis.faults) >= 2, 60, "two faults injected and healed")
    nemesis.stop()
    assert not nemesis.errors
    ops = [op for op in read_history(history.path) if op.f == "fault"]
    assert [op.value for op in ops] == nemesis.faults
    assert all(op.value["recovered"] is not None for op in ops)
    assert all(b.proxy.state == "flowing" for b in deployment.brokers)
    assert deployment.serves(10) is None


def test_the_same_seed_gives_the_same_plan(deployment: Deployment, history: History) -> None:
    def plan(seed: int, kinds: list[str] | None = None) -> list[PlannedFault]:
        return Nemesis(deployment, history, random.Random(seed), kinds=kinds).plan(30)

    assert plan(42) == plan(42)
    assert plan(42) != plan(43)
    assert sorted(supported_kinds(deployment.spec)) == sorted(EFFECTS)  # every kind is tested above
    kinds = len(EFFECTS)
    dealt = plan(42)
    for first in range(0, kinds * (len(dealt) // kinds), kinds):  # each round deals every kind once
        assert sorted(f.kind for f in dealt[first : first + kinds]) == sorted(EFFECTS)
    assert [f.kind for f in dealt[:kinds]] != [f.kind for f in plan(43)[:kinds]]  # in a shuffled order
    assert {f.kind for f in plan(42, ["broker_kill", "redis_kill"])} == {"broker_kill", "redis_kill"}
    assert all(5 <= f.wait <= 15 and 1 <= f.hold <= 5 for f in plan(7))
    with pytest.raises(ValueError, match="redis_failover"):
        Nemesis(deployment, history, random.Random(1), kinds=["redis_failover"])  # a cluster's only
