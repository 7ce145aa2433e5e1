"""The coordinating broker is killed with SIGKILL: the group re-forms on another broker, losing nothing."""

from __future__ import annotations

import json
import struct
import time
from collections import Counter

import redis

from schooner.storage.keys import Keyspace
from tests.broker.helpers import committed, fill, saved_group, wait
from tests.group_clients import GroupMember


def _assigned_partitions(assignment: bytes) -> list[tuple[str, int]]:
    """Topic partitions in a ConsumerProtocolAssignment (version, [topic, [partition]], user data)."""
    if len(assignment) < 6:
        return []
    (count,) = struct.unpack_from(">i", assignment, 2)
    pos, out = 6, []
    for _ in range(count):
        (n,) = struct.unpack_from(">h", assignment, pos)
        topic = assignment[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        (k,) = struct.unpack_from(">i", assignment, pos)
        pos += 4
        for _ in range(k):
            out.append((topic, struct.unpack_from(">i", assignment, pos)[0]))
            pos += 4
    return out


def test_coordinator_killed_mid_group(broker_factory, redis_client: redis.Redis, keyspace: str) -> None:
    brokers = [broker_factory(process=True) for _ in range(3)]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    ks = Keyspace(keyspace)
    produced = fill(bootstrap, "ha", 6, 200)
    members = [GroupMember("confluent", bootstrap, "survivors", "ha", pace=0.05) for _ in range(2)]
    for m in members:
        m.start()
    wait(lambda: sum(len(m.consumed) for m in members) > 200, 60, "the group consumes")

    state = saved_group(redis_client, ks, "survivors")
    owner = int(state["owner"])
    generation = int(state["generation"])
    before = committed(redis_client, ks, "survivors")
    victim = next(b for b in brokers if str(b.port) in redis_client.hget(ks.broker(owner), "port").decode())
    victim.kill()

    seen_generations: dict[int, list[tuple[str, int]]] = {}
    deadline = time.monotonic() + 120
    while len({c for m in members for c in m.consumed}) < len(produced):
        assert time.monotonic() < deadline, "the group did not finish after the coordinator died"
        state = saved_group(redis_client, ks, "survivors")
        if state.get("state") == "Stable":
            owned = [
                tp
                for member in json.loads(state["members"])
                for tp in _assigned_partitions(__import__("base64").b64decode(member["assignment"]))
            ]
            seen_generations[int(state["generation"])] = owned
        time.sleep(0.2)
    for m in members:
        m.stop_event.set()
        m.join(30)

    after = committed(redis_client, ks, "survivors")
    assert all(after.get(tp, -1) >= offset for tp, offset in before.items()), (before, after)
    # The members' leaving (or, were it lost, their sessions' end) reaches the new coordinator after
    # close() returns: the generation moves on there, but not necessarily by now.
    wait(
        lambda: int(saved_group(redis_client, ks, "survivors")["generation"]) > generation,
        30,
        "the group moves on a generation",
    )
    final = saved_group(redis_client, ks, "survivors")
    assert int(final["owner"]) != owner and int(final["generation"]) > generation
    for gen, owned in seen_generations.items():
        assert len(owned) == len(set(owned)), f"a partition owned twice in generation {gen}"
    counts = Counter(c for m in members for c in m.consumed)
    assert set(counts) == produced  # at least once: none lost
