"""`schooner topics describe` of a tiered topic: the whole log's earliest offset (the cold tier's start),
where Redis starts (local_earliest), the first offset not archived yet (pending_upload), and the cold-tier
table's format and key and value modes."""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Producer

from tests.broker.tiering.conftest import hot_state, tiered
from tests.ops.cli_rig import schooner, text

N = 300


def test_describe_shows_both_tiers(tiered_broker: Any, redis_client: Any) -> None:
    b = ("-b", tiered_broker.bootstrap)
    # Key mode schema_id_prefix: the records have no key, so there is nothing to decode.
    tiered("views", tiered_broker.bootstrap, **{"schooner.table.key.mode": "schema_id_prefix"})
    producer = Producer({"bootstrap.servers": tiered_broker.bootstrap})
    for i in range(N):
        producer.produce("views", b"v%d" % i, partition=0)
    assert producer.flush(15) == 0
    ks = tiered_broker.settings.keyspace
    deadline = time.monotonic() + 30
    while hot_state(redis_client, ks, "views")[1].get("archived_end") != str(N) or (
        hot_state(redis_client, ks, "views")[0] > 0
    ):
        assert time.monotonic() < deadline, hot_state(redis_client, ks, "views")
        time.sleep(0.1)
    described = json.loads(schooner("topics", "describe", "views", "-o", "json", *b).stdout)
    assert described["tiered"] is True
    (p,) = described["partitions"]
    # All archived and gone from Redis: the log still starts at 0, Redis at its end.
    assert (p["earliest"], p["local_earliest"], p["pending_upload"], p["latest"]) == (0, N, N, N)
    assert described["table"] == {"format": "delta", "key_mode": "schema_id_prefix", "value_mode": "raw"}
    table = text(schooner("topics", "describe", "views", *b).stdout)
    header = next(line.split() for line in table.splitlines() if "LOCAL_EARLIEST" in line)
    assert header[3:7] == ["EARLIEST", "LOCAL_EARLIEST", "PENDING_UPLOAD", "LATEST"]
    assert any(line.split()[3:7] == ["0", str(N), str(N), str(N)] for line in table.splitlines()), table
    assert "table: delta (key schema_id_prefix, value raw)" in table.splitlines(), table
