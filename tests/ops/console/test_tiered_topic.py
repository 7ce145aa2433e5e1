"""The console's topic page of a tiered topic, in headless chromium: besides its offsets, where Redis
starts, how far the cold tier goes, the records archived, and the cold-tier table's format and modes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.ops.client_options import ClientSettings

from .rig import open_page, shot

N = 200


def test_a_tiered_topic_shows_its_two_tiers(
    broker_factory: Any, console_factory: Any, page: Any, shots: Path, tmp_path: Path, redis_client: Any
) -> None:
    broker = broker_factory(cold_store_url=str(tmp_path / "cold"), archive_interval_ms=150)
    # Key mode schema_id_prefix: the records have no key, so there is nothing to decode.
    configs = {
        "remote.storage.enable": "true",
        "local.retention.ms": "1000",
        "schooner.table.key.mode": "schema_id_prefix",
    }
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("archived", 1, 1, config=configs)])["archived"].result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(N):
        producer.produce("archived", b"v%d" % i, partition=0)
    assert producer.flush(15) == 0
    stream = f"{broker.settings.keyspace}:stream:{{archived:0}}"
    deadline = time.monotonic() + 30
    while redis_client.xlen(stream) > 0:  # archived, then trimmed from Redis
        assert time.monotonic() < deadline
        time.sleep(0.1)

    console = console_factory(ClientSettings(broker.bootstrap), broker.redis_url)
    open_page(page, f"{console.url}/topics/archived", "Topic archived")
    heads = page.locator("table").first.locator("thead th").all_inner_texts()
    assert heads[-3:] == ["In Redis from", "Archived below", "Cold records"]
    cells = page.locator("table").first.locator("tbody tr").first.locator("td").all_inner_texts()
    # Earliest 0 (the cold tier), latest N; Redis from N; archived below N; N records in the cold tier.
    assert [cells[i] for i in (0, 2, 3, 4)] == ["0", "0", str(N), str(N)]
    assert cells[-3:] == [str(N), str(N), str(N)]
    table = page.locator("#topic-table").inner_text()
    assert table == "Table: delta (key schema_id_prefix, value raw)", table
    shot(page, shots, "topic-tiered")
