"""docs/mq.md and the MQ section of docs/key-layout.md describe what the code does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import metrics_for
from schooner.storage.keys import Keyspace

from .conftest import wait_until

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_key_layout_lists_the_mq_keys_the_code_builds() -> None:
    text = (DOCS / "key-layout.md").read_text()
    section = text[text.index("## MQ library") :]
    ks = Keyspace("schooner")
    for key in [
        ks.mq_lease("orders", 0, "billing"),
        ks.mq_retries("orders", 0),
        ks.mq_retry_payloads("orders", 0),
        ks.mq_retry_mover("orders", 0),
        ks.mq_dead_letters("orders", 0),
        ks.mq_members("orders", "billing"),
        ks.mq_groups("orders"),
    ]:
        assert f"`{key}`" in section, key


def test_metric_table_matches_the_metrics_registered() -> None:
    text = (DOCS / "mq.md").read_text()
    documented = set(re.findall(r"^\| `(schooner_mq_\w+)` \|", text, re.M))
    registry = CollectorRegistry()
    metrics_for(registry)
    registered = {m.name + ("_total" if m.type == "counter" else "") for m in registry.collect()}
    assert documented == registered


def test_quick_start_runs(url: str, ks: Keyspace, make_topic: Any, capsys: Any) -> None:
    make_topic("orders", 3)
    block = re.findall(r"```python\n(.*?)```", (DOCS / "mq.md").read_text(), re.S)[0]
    code = block.replace('"redis://127.0.0.1:6379/0"', repr(url)).replace('"schooner"', repr(ks.prefix))
    code = code.replace("    ...  # handles", "    wait_until(lambda: len(handled()) == 1)  # handles")
    printed: list[str] = []

    def handled() -> list[str]:
        printed.extend(capsys.readouterr().out.splitlines())
        return [line for line in printed if "customer-7" in line]

    exec(compile(code, "docs/mq.md", "exec"), {"wait_until": wait_until, "handled": handled})
    assert handled() and "PartitionLag" in "\n".join(printed + capsys.readouterr().out.splitlines())
