"""The docs describe what the code does: these tests pin the tables to the code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey
from schooner.storage.keys import Keyspace
from schooner.storage.topics.config import CONFIG_DEFS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_compatibility_table_matches_advertised_versions() -> None:
    text = (DOCS / "compatibility.md").read_text()
    rows = re.findall(r"^\| ([A-Z_]+) \| (\d+) \| (\d+) \| (\d+) \|", text, re.M)
    documented = {int(key): (int(lo), int(hi)) for name, key, lo, hi in rows}
    assert documented == {int(k): v for k, v in SUPPORTED_VERSIONS.items()}
    assert all(ApiKey(int(key)).name == name for name, key, _, _ in rows)


def test_key_layout_examples_are_the_keys_the_code_builds() -> None:
    text = (DOCS / "key-layout.md").read_text()
    ks = Keyspace("schooner")
    for key in [
        ks.stream("orders", 0),
        ks.partition_state("orders", 0),
        ks.time_index("orders", 0),
        ks.producers("orders", 0),
        ks.compaction_keys("orders", 0),
        ks.tombstones("orders", 0),
        ks.compactor("orders", 0),
        ks.archiver("orders", 0),
        ks.compaction_aborts("orders", 0),
        ks.topic("orders"),
        ks.topic_names,
        ks.topic_ids,
        ks.cluster,
        ks.brokers,
        ks.broker_id_counter,
        ks.producer_id_counter,
        ks.appended_channel,
        ks.appended_shard_channel("orders", 0),
        ks.topics_channel,
        ks.quota_entities,
        ks.quota_entity("user=alice,client-id=app-1"),
        ks.txn_open("orders", 0),
        ks.aborted("orders", 0),
        ks.transaction("orders-writer"),
        ks.transaction_ids,
        ks.group_txn_offsets("payments"),
        ks.acl_bindings,
        ks.acl_version,
        ks.acls_channel,
        ks.users,
    ]:
        assert f"`{key}`" in text, key
    assert "`schooner:broker:<id>`" in text and ks.broker(7) == "schooner:broker:7"


def test_configuration_lists_every_effective_topic_config() -> None:
    text = (DOCS / "configuration.md").read_text()
    for name, definition in CONFIG_DEFS.items():
        if definition.effective:
            assert f"| `{name}` | `{definition.default}` |" in text, name


def test_readme_python_tour_runs(broker, capsys) -> None:
    readme = (DOCS.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    tour = blocks[0].replace("127.0.0.1:9092", broker.bootstrap)
    exec(compile(tour, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 10 and all("order" in line for line in lines)


def test_readme_share_consumer_tour_runs(broker, capsys) -> None:
    readme = (DOCS.parent / "README.md").read_text()
    blocks = [
        b.replace("127.0.0.1:9092", broker.bootstrap)
        for b in re.findall(r"```python\n(.*?)```", readme, re.S)
    ]
    assert "ShareConsumer" in blocks[1]
    exec(compile(blocks[0], "README.md", "exec"), {})
    capsys.readouterr()
    exec(compile(blocks[1], "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 10 and all(" 1 b'order " in line for line in lines), lines


def test_readme_avro_tour_runs(registry_broker: Any, capsys: Any) -> None:
    readme = (DOCS.parent / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "AvroSerializer" in b]
    broker, url = registry_broker
    tour = block.replace("127.0.0.1:9092", broker.bootstrap).replace("http://127.0.0.1:8081", url)
    exec(compile(tour, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["{'id': 0, 'amount': 0.0}", "{'id': 1, 'amount': 2.5}", "{'id': 2, 'amount': 5.0}"]


@pytest.fixture
def registry_broker(broker_factory: Any) -> tuple[Any, str]:
    from schooner.storage.redis.embedded import free_port

    port = free_port()
    return broker_factory(schema_registry_port=port), f"http://127.0.0.1:{port}"


def test_group_keys_are_documented() -> None:
    text = (DOCS / "key-layout.md").read_text()
    ks = Keyspace("schooner")
    for key in (ks.group("payments"), ks.group_offsets("payments"), ks.group_ids):
        assert f"`{key}`" in text, key


def test_configuration_lists_every_broker_setting() -> None:
    import dataclasses

    from schooner.config import Settings

    text = (DOCS / "configuration.md").read_text()
    for f in dataclasses.fields(Settings):
        if f.name != "explicit":  # which settings the operator gave: filled in by load(), not a setting
            assert f"| `{f.name}` |" in text, f.name


def test_operations_has_failure_modes_for_every_fault() -> None:
    text = (DOCS / "operations.md").read_text()
    section = text[text.index("## Failure modes") :]
    for fault in (
        "redis-server dies",
        "out of memory",
        "evict",
        "stalls",
        "cut",
        "SIGTERM",
        "SIGKILL",
        "mutated",
    ):
        assert fault in section, fault


def test_quota_entity_ids_in_key_layout_are_the_ids_the_code_builds() -> None:
    from schooner.storage.quotas import entity_id

    text = (DOCS / "key-layout.md").read_text()
    section = text[text.index("## Client quotas") :]
    for entity in [
        (("user", "alice"),),
        (("user", None),),
        (("user", "alice"), ("client-id", None)),
        (("client-id", "app,1"),),
        (("ip", "10.0.0.1"),),
        (("ip", None),),
    ]:
        assert f"`{entity_id(entity)}`" in section, entity


def test_compatibility_describes_what_unserved_apis_get() -> None:
    from schooner.protocol.unsupported import __doc__ as rule

    text = (DOCS / "compatibility.md").read_text()
    section = text[text.index("### APIs the broker does not serve") : text.index("## Clients tested")]
    assert "`UNSUPPORTED_VERSION` (35)" in section and "schooner/protocol/unsupported.py" in section
    assert rule is not None and "UNSUPPORTED_VERSION" in rule
    for closing in ("outside the table's range", "no schema for", "cannot be parsed", "KIP-511"):
        assert closing in section, closing
