"""The broker's Prometheus metrics, in prometheus_client's default registry.

Served over HTTP once the broker has a metrics port (the operations issue); until then they are there
for an embedding process to expose.
"""

from __future__ import annotations

from prometheus_client import Counter

FOREIGN_ENTRY_REFUSALS = Counter(
    "schooner_foreign_entry_refusals_total",
    "Produce requests refused because a dense topic's partition holds an entry added with XADD '*'.",
    ["topic", "partition"],
)
