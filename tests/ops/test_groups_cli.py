"""`schooner groups lag`: lag as a record count (not an offset difference) and as time."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, TopicPartition

from schooner.ops.cli import main
from tests.clients import Rec, confluent_produce


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
    assert "slow" in listed.output
