"""The produce codec figure runs both paths and leaves the compiled modules in place afterwards."""

from __future__ import annotations

import pytest

from bench import produce_codec
from schooner.protocol import records
from schooner.storage.redis import resp


def test_both_paths_are_measured_and_the_compiled_ones_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(produce_codec, "ROUNDS", 1)
    monkeypatch.setattr(produce_codec, "REPEAT", 1)
    figures = produce_codec.measure()
    assert set(figures) == {"compiled", "python"}
    for steps in figures.values():
        assert set(steps) == {"read_batches", "append_args", "resp", "all"}
        assert all(ns > 0 for ns in steps.values())
    assert records.plain_records is produce_codec.COMPILED["reader"] is not None
    assert resp.pack_bytes is produce_codec.COMPILED["resp"] is not None
