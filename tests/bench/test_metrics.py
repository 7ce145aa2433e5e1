"""The metrics figure: produce and fetch with metrics on and off, side by side, in one short run."""

from __future__ import annotations

from bench import metrics, report

MESSAGES = 1000


def test_metrics_on_and_off_are_measured_side_by_side() -> None:
    out = metrics.run(messages=MESSAGES, runs=2)  # each metered run checks /metrics counted every record
    for kind in ("produce", "fetch"):
        off, on = out["rates"][kind]["off"], out["rates"][kind]["on"]
        assert len(off) == len(on) == 2 and all(r > 0 for r in off + on)
        assert out[f"{kind}_off_msgs_per_s"] == round(report.median(off))
        assert out[f"{kind}_on_msgs_per_s"] == round(report.median(on))
        assert out[f"{kind}_ratio"] == round(report.median([n / f for n, f in zip(on, off, strict=True)]), 3)
        assert len(out["broker_cpu_us_per_record"][kind]["on"]) == 2
    assert out["scrape_ms"] > 0
    rows = report.metrics_rows(out)
    assert [r[3] for r in rows] == [f"{out['produce_ratio']:.3f}", f"{out['fetch_ratio']:.3f}"]
