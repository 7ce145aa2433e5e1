"""The multi-process figure: `schooner broker --processes 2` against one process, side by side, in one
short run."""

from __future__ import annotations

from bench import multiproc, report

MESSAGES = 2400


def test_two_broker_processes_and_one_are_measured_side_by_side() -> None:
    out = multiproc.run(messages=MESSAGES, runs=2)
    # Metadata spread the partition leaders over both processes of the two-process deployment.
    assert out["leaders"] == {"1p": 1, "2p": 2}
    for kind in ("produce", "fetch"):
        rates = out["rates"][kind]
        assert all(len(rates[s]) == 2 and min(rates[s]) > 0 for s in ("1p", "2p"))
        assert out[f"{kind}_1p_msgs_per_s"] == round(report.median(rates["1p"]))
        paired = [two / one for two, one in zip(rates["2p"], rates["1p"], strict=True)]
        assert out[f"{kind}_ratio"] == round(report.median(paired), 3)
        # Each broker process's CPU is reported on its own.
        assert len(out[f"{kind}_2p_cores"]["brokers"]) == 2 and len(out[f"{kind}_1p_cores"]["brokers"]) == 1
        assert set(out[f"{kind}_2p_cores"]) == {"broker", "brokers", "redis", "client", "machine", "other"}
    rows = report.multiproc_rows(out)
    assert len(rows) == 2 and rows[0][3] == f"{out['produce_ratio']:.3f}"
    assert rows[1][4].startswith(f">= {report.MULTIPROC_TARGET} ")
    # The verdict: ok at or above 1; below it, BELOW only when the one process was the bound.
    bound = {**out, "produce_ratio": 0.9, "produce_1p_cores": {**out["produce_1p_cores"], "broker": 0.95}}
    idle = {**out, "produce_ratio": 0.9, "produce_1p_cores": {**out["produce_1p_cores"], "broker": 0.3}}
    faster = {**out, "produce_ratio": 1.2}
    assert " BELOW;" in report.multiproc_rows(bound)[0][4]
    assert "n/a: 1 process used 0.30 cores, not the bound" in report.multiproc_rows(idle)[0][4]
    assert " ok;" in report.multiproc_rows(faster)[0][4]
