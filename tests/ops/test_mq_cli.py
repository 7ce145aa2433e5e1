"""`schooner mq`: groups, pending entries (with the lease owner), dead letters listed, replayed (one, all,
to another topic) and deleted, made by real schooner.mq producers and consumers; bad input fails in
one line."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from click.testing import CliRunner
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.mq import Admin, Consumer, ConsumerConfig, DeadLetter, Message, Producer
from schooner.ops.cli import main
from tests.clients import confluent_consume


def _mq(broker: Any, *args: str) -> Any:
    return CliRunner().invoke(
        main, ["mq", *args, "--redis-url", broker.redis_url, "--keyspace", broker.settings.keyspace]
    )


def _json(broker: Any, *args: str) -> Any:
    result = _mq(broker, *args, "--output", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _topics(broker: Any, *names: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result(10)


def _wait(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_groups_pending_and_dead_letters(broker: Any) -> None:
    _topics(broker, "mq-orders", "mq-parking")
    url, ks = broker.redis_url, broker.settings.keyspace
    producer = Producer(url, keyspace=ks)
    for i in range(4):
        producer.send("mq-orders", b"bad-%d" % i, partition=i % 2)
    admin = Admin(url, keyspace=ks)

    def refuse(message: Message) -> DeadLetter:
        return DeadLetter("Invalid", f"order {message.value!r} has no total")

    config = ConsumerConfig(start="earliest")
    with Consumer(url, "mq-orders", "billing", refuse, keyspace=ks, config=config):
        _wait(lambda: admin.dead_letter_count("mq-orders") == 4, "four dead letters")

    letters = _json(broker, "dlq", "list", "mq-orders")
    assert sorted((d["partition"], d["offset"]) for d in letters) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert {d["group"] for d in letters} == {"billing"} and all(d["attempts"] == 1 for d in letters)
    assert all(d["reason"].startswith("Invalid: order b'bad-") for d in letters)
    table = _mq(broker, "dlq", "list", "mq-orders")
    assert table.exit_code == 0 and letters[0]["id"] in table.output and "AGE (s)" in table.output

    # one letter back to its partition, for billing; one to another topic; one deleted; one left
    first, second, third, fourth = (d["id"] for d in letters)
    assert _mq(broker, "dlq", "replay", "mq-orders", first).exit_code == 0
    moved = _mq(broker, "dlq", "replay", "mq-orders", second, "--to-topic", "mq-parking")
    assert moved.exit_code == 0, moved.output
    deleted = _mq(broker, "dlq", "delete", "mq-orders", third)
    assert deleted.exit_code == 0 and "deleted 1" in deleted.output
    assert [d["id"] for d in _json(broker, "dlq", "list", "mq-orders")] == [fourth]
    parked = confluent_consume(broker.bootstrap, "mq-parking", 1)
    (parked_value,) = [m.value().decode() for m in parked]
    assert f"b'{parked_value}'" in next(d["reason"] for d in letters if d["id"] == second)

    # the replayed letter comes back to billing, which now holds it unacked: pending, with the lease
    seen: list[bytes] = []
    release = threading.Event()

    def hold(message: Message) -> None:
        seen.append(message.value or b"")
        release.wait(30)

    with Consumer(url, "mq-orders", "billing", hold, keyspace=ks, config=config) as consumer:
        _wait(lambda: len(seen) == 1, "the replayed letter delivered again")
        (row,) = _json(broker, "pending", "mq-orders", "billing")
        assert row["partition"] == letters[0]["partition"] and row["deliveries"] == 1
        assert row["lease_owner"] == consumer.member_id and row["idle_ms"] >= 0
        (group,) = _json(broker, "groups", "mq-orders")
        assert group == {"group": "billing", "members": 1, "pending": 1, "lag": 1, "share": False}
        release.set()
    assert seen[0].startswith(b"bad-")
    assert _json(broker, "pending", "mq-orders", "billing") == []

    # --all, with a progress bar on stderr, takes the rest back
    everything = _mq(broker, "dlq", "replay", "mq-orders", "--all")
    assert everything.exit_code == 0 and "replayed 1 dead letter(s)" in everything.output
    assert _json(broker, "dlq", "list", "mq-orders") == []
    admin.close()


def test_bad_input_is_one_line(broker: Any, tmp_path: Any) -> None:
    _topics(broker, "mq-bad", partitions=1)
    unknown = _mq(broker, "groups", "mq-nowhere")
    assert unknown.exit_code == 1 and unknown.output.strip() == "Error: no topic mq-nowhere"
    letter = _mq(broker, "dlq", "replay", "mq-bad", "0:1-1")
    assert letter.exit_code == 1 and letter.output.strip() == "Error: no dead letter 0:1-1 on topic mq-bad"
    malformed = _mq(broker, "dlq", "replay", "mq-bad", "not-an-id")
    assert malformed.exit_code == 2 and "not a dead-letter id" in malformed.output
    neither = _mq(broker, "dlq", "replay", "mq-bad")
    assert neither.exit_code == 2 and "give one dead-letter id or --all" in neither.output
    group = _mq(broker, "pending", "mq-bad", "nobody")
    assert group.exit_code == 1 and "no MQ group nobody on topic mq-bad" in group.output
    down = CliRunner().invoke(main, ["mq", "groups", "mq-bad", "--redis-url", "redis://127.0.0.1:1/0"])
    assert down.exit_code == 1 and down.output.startswith("Error: Redis failed:")
    assert "Traceback" not in down.output and len(down.output.strip().splitlines()) == 1
