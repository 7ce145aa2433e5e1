"""Scraping a broker's /metrics over HTTP, for tests/broker/test_metrics*.py and the dashboard test."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from schooner.storage.redis.embedded import free_port

# The sample names each metric type exposes, from its family name.
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


@dataclass(frozen=True)
class Scrape:
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]
    types: dict[str, str]  # family name -> counter, gauge, histogram

    def value(self, name: str, **labels: str) -> float:
        """The sample's value; 0 for a series not there (yet)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def series(self, name: str) -> dict[frozenset[tuple[str, str]], float]:
        return {labels: v for (n, labels), v in self.samples.items() if n == name}

    def by(self, name: str, *keys: str) -> dict[tuple[str, ...], float]:
        """The series of `name` keyed by the values of the given labels."""
        return {tuple(dict(labels)[k] for k in keys): v for labels, v in self.series(name).items()}

    @property
    def exported_names(self) -> set[str]:
        """Every sample name the broker can export, series or not yet (a labelled metric with no child)."""
        names = {n for n, _ in self.samples}
        for family, kind in self.types.items():
            names.update(family + s for s in _SUFFIXES.get(kind, ("",)))
        return names


def scrape(port: int) -> Scrape:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=15) as answer:
        text = answer.read().decode()
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return Scrape(samples, types)


def with_metrics(broker_factory: Callable[..., Any], **overrides: Any) -> tuple[Any, int]:
    """A broker serving /metrics on a free port, and that port."""
    port = free_port()
    return broker_factory(metrics_port=port, **overrides), port
