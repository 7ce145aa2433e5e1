"""`schooner groups`: lag as a record count (not an offset difference) and as time; share groups in
`list` and `describe`, with each share partition's start offset, in-flight, archived and dead-lettered
counts and lag (share partitions made by raw ShareFetch and ShareAcknowledge requests)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.ops.cli import main
from schooner.storage.groups import state
from schooner.storage.keys import Keyspace
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.redis.client import connect_sync
from tests.broker.helpers import share_acknowledge, share_fetch
from tests.clients import Rec, confluent_produce

ACCEPT, REJECT = 1, 3


@pytest.mark.both_encodings
def test_lag_counts_records_not_offsets(broker, offset_encoding: str) -> None:
    for i in range(3):  # three batches: timestamp-encoded offsets jump between them
        confluent_produce(broker.bootstrap, "lagging", [Rec(None, b"%d-%d" % (i, j)) for j in range(4)])
        time.sleep(0.02)
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "slow", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("lagging", 0, -2)])
    seen = []
    while len(seen) < 5:
        m = consumer.poll(5)
        if m is not None and not m.error():
            seen.append(m)
    consumer.commit(message=seen[4], asynchronous=False)  # five of twelve consumed
    consumer.close()
    time.sleep(0.2)

    args = ["groups", "lag", "slow", "--redis-url", broker.redis_url, "--keyspace", broker.settings.keyspace]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.output.splitlines()]
    assert row["committed"] == seen[4].offset() + 1
    assert row["lag_records"] == 7 and row["exact"]
    if offset_encoding == "dense":  # offsets count records
        assert row["end_offset"] - row["committed"] == 7
    else:  # the offset difference would mislead
        assert row["end_offset"] - row["committed"] > 7
    assert row["lag_seconds"] >= 0.2
    table = CliRunner().invoke(main, args)
    assert "lagging" in table.output and " 7 " in table.output
    listed = CliRunner().invoke(
        main, ["groups", "list", "--redis-url", broker.redis_url, "--keyspace", broker.settings.keyspace]
    )
    (line,) = [line for line in listed.output.splitlines() if line.startswith("slow ")]
    assert line.split()[-1] == "classic"
    described = CliRunner().invoke(main, ["groups", "describe", "slow", *args[3:], "--json"])
    assert described.exit_code == 0, described.output
    group = json.loads(described.output)
    assert group["type"] == "classic" and [p["lag_records"] for p in group["partitions"]] == [7]


def _cli(broker: Any, *args: str) -> Any:
    return CliRunner().invoke(
        main, ["groups", *args, "--redis-url", broker.redis_url, "--keyspace", broker.settings.keyspace]
    )


def test_share_groups_in_list_and_describe(broker: Any) -> None:
    name, group = "cli-share", "cli-sg"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(10)
    topic_id = broker.call(broker.broker.ctx.topics.load(name)).id
    assert share_fetch(broker.port, group, topic_id, "m1", 0) == []  # starts at the end (latest)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(6):
        producer.produce(name, value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0
    assert share_fetch(broker.port, group, topic_id, "m1", 1, max_records=3) == [0, 1, 2]
    share_acknowledge(broker.port, group, topic_id, "m1", 2, 0, 0, ACCEPT)
    share_acknowledge(broker.port, group, topic_id, "m1", 3, 1, 1, REJECT)

    # 2 in flight, 3-5 to come; 1 archived; partition 1 never fetched
    described = _cli(broker, "describe", group, "--json")
    assert described.exit_code == 0, described.output
    assert json.loads(described.output) == {
        "group": group, "type": "share", "state": "Empty", "generation": 0, "members": 0,
        "partitions": [
            {"topic": name, "partition": 0, "start_offset": 2, "in_flight": 1, "archived": 1,
             "dead_lettered": 0, "lag": 4},
            {"topic": name, "partition": 1, "start_offset": None, "in_flight": None, "archived": None,
             "dead_lettered": None, "lag": None},
        ],
    }  # fmt: skip
    table = _cli(broker, "describe", group)
    assert table.exit_code == 0, table.output
    assert "TYPE share" in table.output
    rows = [line.split() for line in table.output.splitlines() if line.startswith(name)]
    assert rows == [[name, "0", "2", "1", "1", "0", "4"], [name, "1", "-", "-", "-", "-", "-"]]

    # `list` reads the group index, where the share-group coordinator saves its groups (type share):
    # saved here as it would, since that coordinator lands separately
    client = connect_sync(broker.redis_url)
    ks = Keyspace(broker.settings.keyspace)
    claimed = run_sync(client, state.claim(ks, group, 999))
    saved = {
        "type": "share",
        "state": "Stable",
        "generation": 3,
        "members": json.dumps([{"member_id": "m1"}]),
    }
    assert drive_sync(client, state.save(ks, group, 999, claimed["owner_epoch"], saved))
    listed = _cli(broker, "list")
    (line,) = [line.split() for line in listed.output.splitlines() if line.startswith(group)]
    assert line == [group, "Stable", "3", "1", "share"]
    assert json.loads(_cli(broker, "describe", group, "--json").output)["members"] == 1

    missing = _cli(broker, "describe", "cli-nobody")
    assert missing.exit_code == 1 and "no group cli-nobody" in missing.output
