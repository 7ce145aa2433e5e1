"""A primary of the cluster fails under acks=all production: SIGKILLed mid-stream, its replica takes
over, the producer rides it out on retriable errors, and no acknowledged record is lost or doubled
(nor renumbered under a new epoch).
And acks=all does wait for the replica: one stopped with SIGSTOP holds its primary's acknowledgements.

The measured figures are printed (pytest -s) for docs/operations.md's "Running on Redis Cluster".
"""

from __future__ import annotations

import os
import signal
import statistics
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.storage.keys import Keyspace
from tests.broker.helpers import wait
from tests.cluster.helpers import (
    NumberedProducer,
    check_stored,
    cluster_client,
    owners,
    producer_epochs,
    replica_of,
    stored_numbers,
    wait_promoted,
)
from tests.wire import call, produce_request

PARTITIONS = 12


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)


@pytest.mark.parametrize("victim_kind", ["data", "meta"])
def test_a_primary_killed_under_acks_all_production_loses_no_acknowledged_record(
    cluster_factory, broker_factory, keyspace, victim_kind: str
) -> None:
    """victim_kind "data": a primary with partitions of the topic but not its metadata (the {meta}
    slot), so the other primaries' partitions go on at once; "meta": the primary with both, so every
    produce waits for the failover once the broker's topic cache (1 s) is stale."""
    cluster = cluster_factory()
    broker = broker_factory(redis_url=cluster.url)
    topic = "failover"
    _create(broker.bootstrap, topic, PARTITIONS)
    ks = Keyspace(keyspace)
    client = cluster_client(cluster)
    placed = owners(client, ks, topic, PARTITIONS)
    assert len(set(placed.values())) == 3, placed  # the partitions are spread over every primary
    meta = client.get_node_from_key(ks.topic(topic)).port
    victim = meta if victim_kind == "meta" else min(port for port in placed.values() if port != meta)
    assert victim in placed.values()
    victim_partitions = {p for p, port in placed.items() if port == victim}

    producer = NumberedProducer(broker.bootstrap, topic, PARTITIONS)
    producer.start()
    wait(lambda: len(producer.acked) > 2000, 30, "the producer gets going")
    acked_before = len(producer.acked)
    killed_at = time.monotonic()
    cluster.node_for_port(victim).kill()
    promoted_at = wait_promoted(cluster, victim)
    wait(lambda: producer.acked and producer.acked[-1][3] > promoted_at + 3, 60, "production goes on")
    wait(
        lambda: producer.acked_after(killed_at, victim_partitions) is not None,
        60,
        "the killed primary's partitions are acknowledged again",
    )
    time.sleep(1)
    producer.finish()

    recovered = producer.acked_after(killed_at, victim_partitions)
    others = set(range(PARTITIONS)) - victim_partitions
    others_waited = producer.longest_wait(others, killed_at)  # at most, for a record produced after the kill
    assert recovered is not None
    now = owners(client, ks, topic, PARTITIONS)
    assert victim not in now.values() and len(set(now.values())) == 3, now
    assert all(now[p] != placed[p] for p in victim_partitions)  # they moved to the replica
    lost, duplicated = check_stored(producer, stored_numbers(client, ks, topic, PARTITIONS))
    # Batches sent after a failed one were held back until it came again (broker/partitions/retry_order.py),
    # so the producer never saw a sequence gap and kept its numbering: a renumbering can store twice.
    epochs = producer_epochs(client, ks, topic, PARTITIONS)
    client.close()
    assert epochs == {0}, f"the producer renumbered its records (epochs {sorted(epochs)})"
    print(
        f"\nfailover of a {victim_kind} primary: {len(producer.acked)} records acknowledged "
        f"({acked_before} before the kill), "
        f"lost {lost}, duplicated {duplicated}; replica promoted {promoted_at - killed_at:.2f} s after the "
        f"kill; first acknowledged produce to the killed primary's partitions {recovered:.2f} s after it "
        f"(records to the other primaries' partitions waited at most {others_waited:.2f} s); "
        f"records sent again {producer.resent}; "
        f"longest wait for an ack {max(t - producer.sent_at[n] for _, _, n, t in producer.acked):.2f} s"
        f"\nproducer errors: {sorted(set(producer.client_errors))[:6]}"
    )
    assert producer.resent > 0, "the producer never had to retry: the kill went unnoticed"
    # Bounded by the node timeout (2 s) and the election; well under a minute even on a loaded machine.
    assert recovered < 30
    if victim_kind == "data":
        # They did not wait for the failover: records to them sent during the outage were acknowledged
        # during it, the typical one far sooner than the victim's partitions came back. Measured against
        # those in the same run, not against the clock, and by the median, not the longest wait: a busy
        # machine stretches every ack and stalls some (CI runs saw longest waits of 1.83 s beside 4.12 s,
        # and 2.69 s beside 4.46 s).
        outage = [
            t - producer.sent_at[n]
            for p, _, n, t in producer.acked
            if p in others and killed_at <= producer.sent_at[n] and t < killed_at + recovered
        ]
        assert outage, "no record to the other primaries' partitions was acknowledged during the outage"
        assert statistics.median(outage) < recovered / 2, (
            statistics.median(outage),
            others_waited,
            recovered,
        )


def _produce(port: int, topic: str, partition: int, value: bytes) -> tuple[ErrorCode, float]:
    started = time.monotonic()
    response = call(port, produce_request(topic, [value], partition=partition, acks=-1, timeout_ms=30_000))
    return ErrorCode(response.responses[0].partition_responses[0].error_code), time.monotonic() - started


def test_acks_all_waits_for_the_replica(cluster_factory, broker_factory, keyspace) -> None:
    """With a primary's replica stopped, acks=all to that primary's partitions answers
    NOT_ENOUGH_REPLICAS_AFTER_APPEND (after the WAIT timeout); other primaries' partitions are not held
    up; once the replica runs again the same produce succeeds."""
    cluster = cluster_factory()
    broker = broker_factory(redis_url=cluster.url)
    topic = "waits"
    _create(broker.bootstrap, topic, PARTITIONS)
    client = cluster_client(cluster)
    placed = owners(client, Keyspace(keyspace), topic, PARTITIONS)
    client.close()
    primary = sorted(set(placed.values()))[0]
    stalled = min(p for p, port in placed.items() if port == primary)
    healthy = min(p for p, port in placed.items() if port != primary)
    for p in (stalled, healthy):  # warm: the topic cached, the lanes open, the replica count known
        assert _produce(broker.port, topic, p, b"warm")[0] == ErrorCode.none

    replica = cluster.node_for_port(replica_of(cluster, primary))
    assert replica.pid is not None
    os.kill(replica.pid, signal.SIGSTOP)
    try:
        code, seconds = _produce(broker.port, topic, stalled, b"stalled")
        other, other_seconds = _produce(broker.port, topic, healthy, b"healthy")
        again, _ = _produce(broker.port, topic, stalled, b"stalled again")
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    assert code == ErrorCode.not_enough_replicas_after_append, code
    assert again == ErrorCode.not_enough_replicas_after_append, again
    assert seconds >= 4, seconds  # it waited (ACKS_ALL_TIMEOUT_MS, 5 s) before giving up
    assert other == ErrorCode.none and other_seconds < 2, (other, other_seconds)
    resumed, resumed_seconds = _produce(broker.port, topic, stalled, b"resumed")
    assert resumed == ErrorCode.none, resumed
    print(
        f"\nacks=all with the replica stopped: {code.name} after {seconds:.2f} s; another primary's "
        f"partition answered in {other_seconds:.3f} s; after SIGCONT {resumed_seconds:.3f} s"
    )
