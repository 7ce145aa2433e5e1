"""Leases and fair shares: expiry and takeover, a late joiner's share within one renew period, hand-off."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import Admin, Consumer, ConsumerConfig, Message, OutgoingMessage, Producer
from schooner.storage.keys import Keyspace
from schooner.storage.redis import calls
from schooner.storage.topics import metadata

from .conftest import wait_until

RENEW_S = 0.6
CONFIG = ConsumerConfig(start="earliest", lease_ms=1800, renew_ms=int(RENEW_S * 1000), poll_ms=10)


def start(url: str, ks: Keyspace, handler: Any, name: str, config: ConsumerConfig = CONFIG) -> Consumer:
    return Consumer(
        url, "orders", "g", handler, keyspace=ks, config=config, registry=CollectorRegistry(), member_id=name
    ).start()


def owners(admin: Admin) -> list[str | None]:
    return [o.member for o in admin.owners("orders", "g")]


def test_a_member_that_joins_later_gets_its_share_within_one_renew_period(
    url: str, ks: Keyspace, make_topic: Any
) -> None:
    make_topic("orders", 6)
    admin = Admin(url, keyspace=ks)
    first = start(url, ks, lambda m: None, "a")
    members = [first]
    try:
        wait_until(lambda: first.partitions == list(range(6)))
        for joiner, share in (("b", 3), ("c", 2)):
            joined = time.monotonic()
            member = start(url, ks, lambda m: None, joiner)
            members.append(member)
            wait_until(lambda member=member, share=share: len(member.partitions) == share, timeout=5)
            took = time.monotonic() - joined
            assert took <= RENEW_S * 1.1 + 0.25, took  # one renew period, plus the joiner's quick look
        wait_until(lambda: sorted(Counter(owners(admin)).values()) == [2, 2, 2])
        assert set(owners(admin)) == {"a", "b", "c"}
        assert sorted(admin.members("orders", "g")) == ["a", "b", "c"]
    finally:
        for member in members:
            member.stop()


def test_lease_expiry_hands_a_dead_members_partitions_and_pending_entries_over(
    url: str, ks: Keyspace, redis: Any, make_topic: Any
) -> None:
    make_topic("orders", 2)
    Producer(url, keyspace=ks, registry=CollectorRegistry()).send_batch(
        "orders", [OutgoingMessage(b"%d" % i, partition=i % 2) for i in range(20)]
    )
    admin = Admin(url, keyspace=ks)
    # A member that reads a batch and dies without a word: its engine simply stops being driven.
    handled: list[bytes | None] = []
    dead = Consumer(url, "orders", "g", lambda m: None, keyspace=ks, config=CONFIG, member_id="dead",
                    registry=CollectorRegistry())  # fmt: skip
    engine = dead._engine(calls.run_sync(redis, metadata.load(ks, "orders", {})))
    dead.drive(engine.start())
    dead.drive(engine.fetch())  # claims: nothing pending yet
    dead.drive(engine.fetch())  # reads both partitions' entries; none handled
    assert sum(len(s.buffer) for s in engine.owned.values()) == 20
    died = time.monotonic()
    assert {p.consumer for p in admin.pending("orders", "g")} == {"dead"}
    heir = start(url, ks, lambda m: handled.append(m.value), "heir")
    try:
        wait_until(lambda: heir.partitions == [0, 1], timeout=5)
        took = time.monotonic() - died
        # Not before the lease lapsed (exclusive ownership), and soon after.
        assert CONFIG.lease_ms / 1000 - 0.1 <= took <= CONFIG.lease_ms / 1000 + RENEW_S + 0.5, took
        wait_until(lambda: len(handled) == 20)
        assert sorted(handled) == sorted(b"%d" % i for i in range(20))
        wait_until(lambda: admin.pending("orders", "g") == [])
        assert owners(admin) == ["heir", "heir"]
        # Were the dead member to wake up, its lease checks would stop it reading.
        assert dead.drive(engine.fetch()) is False and engine.partitions == []
    finally:
        heir.stop()
        dead.redis.close()


def test_graceful_stop_hands_partitions_off_and_nothing_is_handled_twice(
    url: str, ks: Keyspace, make_topic: Any
) -> None:
    make_topic("orders", 4)
    Producer(url, keyspace=ks, registry=CollectorRegistry()).send_batch(
        "orders", [OutgoingMessage(b"%d" % i, key=b"%d" % i) for i in range(3000)]
    )
    seen: Counter[bytes] = Counter()
    lock = threading.Lock()

    def handler(m: Message) -> None:
        time.sleep(0.0002)
        with lock:
            seen[m.value or b""] += 1

    admin = Admin(url, keyspace=ks)
    a = start(url, ks, handler, "a")
    b: Consumer | None = None
    try:
        wait_until(lambda: sum(seen.values()) > 300)
        b = start(url, ks, handler, "b")  # joins mid-run: a hands two partitions over
        wait_until(lambda: len(b.partitions) == 2, timeout=5)
        a.stop()  # graceful: b takes everything within a renew period
        stopped = time.monotonic()
        wait_until(lambda: b.partitions == [0, 1, 2, 3], timeout=5)
        assert time.monotonic() - stopped <= RENEW_S * 1.1 + 0.25
        wait_until(lambda: sum(seen.values()) >= 3000)
        time.sleep(0.3)
        assert len(seen) == 3000 and set(seen.values()) == {1}  # exactly once through both hand-offs
        assert owners(admin) == ["b"] * 4
    finally:
        a.stop()
        if b is not None:
            b.stop()
