"""Two checkouts compared (bench/checkouts.py), run tiny with this checkout on both sides: each run's
produce and fetch figures, and medians and ratios made of them. Nothing here is about speed."""

from __future__ import annotations

from pathlib import Path

from bench import checkouts

HERE = Path(__file__).resolve().parents[2]


def test_both_sides_are_measured_and_compared() -> None:
    result = checkouts.compare(HERE, HERE, rounds=1, records=2_000, topics=1)
    for side in ("before", "after"):
        (run,) = result["runs"][side]
        assert run["records"] == 2_000
        assert len(run["produce"]) == 1 and len(run["fetch"]) == 1
        for step in (*run["produce"], *run["fetch"]):
            assert step["msgs_per_s"] > 0
            assert step["broker_us"] >= 0 and step["redis_us"] >= 0  # CPU comes in 10 ms ticks
        assert result["medians"][side]["produce"]["msgs_per_s"] == run["produce"][0]["msgs_per_s"]
    ratio = result["after_over_before"]["produce"]["msgs_per_s"]
    medians = result["medians"]
    assert ratio == medians["after"]["produce"]["msgs_per_s"] / medians["before"]["produce"]["msgs_per_s"]
