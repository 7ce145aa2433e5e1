"""The coordinator of a KIP-848 group is killed with SIGKILL: another broker loads the group from Redis
and keeps serving its members (same members, same epochs), losing no committed offset."""

from __future__ import annotations

import json
import time
from collections import Counter

import redis

from schooner.storage.keys import Keyspace
from tests.broker.helpers import committed, fill, saved_group, wait
from tests.group_clients import ConsumerProtocolMember

TIMINGS = {"SCHOONER_CONSUMER_GROUP_HEARTBEAT_MS": "300", "SCHOONER_CONSUMER_GROUP_SESSION_MS": "10000"}


def _owned(members: list[dict]) -> list[tuple[str, int]]:  # type: ignore[type-arg]
    """Every partition some member holds (assigned, or still being revoked), once per holder."""
    return [
        (topic, p)
        for m in members
        for part in ("assigned", "revoking")
        for topic, partitions in m[part].items()
        for p in partitions
    ]


def test_coordinator_killed_mid_group(broker_factory, redis_client: redis.Redis, keyspace: str) -> None:
    brokers = [broker_factory(process=True, **TIMINGS) for _ in range(3)]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    ks = Keyspace(keyspace)
    produced = fill(bootstrap, "ha848", 6, 300)
    members = [ConsumerProtocolMember(bootstrap, "survivors848", "ha848", pace=0.2) for _ in range(2)]
    for m in members:
        m.start()
    wait(lambda: sum(len(m.consumed) for m in members) > 200, 60, "the group consumes")
    wait(
        lambda: saved_group(redis_client, ks, "survivors848").get("state") == "Stable",
        30,
        "the group settles",
    )

    state = saved_group(redis_client, ks, "survivors848")
    owner, epoch = int(state["owner"]), int(state["group_epoch"])
    member_epochs = {m["member_id"]: m["epoch"] for m in json.loads(state["members"])}
    before = committed(redis_client, ks, "survivors848")
    victim = next(b for b in brokers if str(b.port) in redis_client.hget(ks.broker(owner), "port").decode())
    victim.kill()
    at_kill = len({c for m in members for c in m.consumed})
    assert at_kill < len(produced) / 2  # most of the work needs the next coordinator

    deadline = time.monotonic() + 120
    snapshots = 0
    while len({c for m in members for c in m.consumed}) < len(produced):
        assert time.monotonic() < deadline, "the group did not finish after the coordinator died"
        owned = _owned(json.loads(saved_group(redis_client, ks, "survivors848")["members"]))
        assert len(owned) == len(set(owned)), f"a partition held by two members: {owned}"
        snapshots += 1
        time.sleep(0.1)
    final = saved_group(redis_client, ks, "survivors848")
    for m in members:
        m.finish()
    assert all(m.error is None for m in members), [m.error for m in members]

    after = committed(redis_client, ks, "survivors848")
    assert all(after.get(tp, -1) >= offset for tp, offset in before.items()), (before, after)
    assert int(final["owner"]) != owner and snapshots > 0
    # The new coordinator served the members it loaded: nobody rejoined, nothing was reassigned.
    assert int(final["group_epoch"]) == epoch
    assert {m["member_id"]: m["epoch"] for m in json.loads(final["members"])} == member_epochs
    counts = Counter(c for m in members for c in m.consumed)
    assert set(counts) == produced and max(counts.values()) == 1
