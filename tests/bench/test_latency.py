"""The end-to-end latency figure: one row per producer linger.ms, taking turns, every message received."""

from __future__ import annotations

import os
import signal
import time

import pytest

from bench import latency, report
from bench.servers import Endpoints


def test_each_linger_row_receives_every_message_and_splits_the_time(
    endpoints: Endpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    rate, seconds = 500, 0.4
    monkeypatch.setattr(latency, "STATISTICS_INTERVAL_MS", 100)  # windows within a 0.4 s run
    results = latency.run(endpoints, rate, seconds, rounds=2)
    rows = results["rows"]
    assert [r["linger_ms"] for r in rows] == list(latency.LINGERS)
    assert rows[0]["linger_ms"] == latency.TARGET_LINGER_MS == results["target_linger_ms"]
    assert rows[-1]["label"] == f"linger.ms {latency.CLIENT_DEFAULT_LINGER_MS} (client default)"
    for row in rows:
        assert len(row["runs"]) == 2
        assert row["received"] == row["sent"] == 2 * int(rate * seconds)
        for run in row["runs"]:
            assert 0 < run["p50_ms"] <= run["p99_ms"] <= run["max_ms"]
            # Every message's acknowledgement was timed (it may land just before or after the receipt).
            assert 0 < run["acked_p50_ms"] <= run["acked_p99_ms"]
            # The producer's own account: records held in the client, and its Produce round trips.
            assert 0 < run["client_queue_p50_ms"] <= run["client_queue_p99_ms"]
            assert 0 < run["produce_rtt_p50_ms"] <= run["produce_rtt_p99_ms"]
        assert set(row["cpu"]) == {"broker", "redis", "client", "other"}
    # The client's default linger.ms of 5 holds records in the producer; linger.ms 0 and 1 do not.
    assert {r["runs"][0]["linger_ms"] for r in rows} == {1, 0, None}
    assert results["p99_ms"] == rows[0]["p99_ms"]
    lines = report.latency_rows(results)
    assert len(lines) == len(rows) + 4
    assert "p99 <= 2 ms" in lines[0][4] and "p99" not in lines[2][4]
    # The target row's split follows it: what the client held, and the round trip it saw.
    assert lines[1][0].strip().startswith("the producer's own account")
    assert lines[1][1] == f"{rows[0]['client_queue_p50_ms']:.2f}/{rows[0]['client_queue_p99_ms']:.2f} ms"
    # The machine's own wake-up round trip and stalls, beside the rows they bound.
    trip = results["host_round_trip"]
    assert trip["same_cpu_us"] > 0 and trip["cross_cpu_us"] > 0
    assert lines[-3][0].strip().startswith("host: wake-up round trip")
    # The interpreter's speed on the host today, which the broker's CPU per request follows.
    assert results["host_python_us"] > 0
    assert lines[-2][1] == f"{results['host_python_us']:.1f} us"
    stalls = results["host_hiccups"]
    assert stalls["seconds"] > 0 and stalls["worst_ms"] >= 0
    assert stalls["over_1ms_per_10s"] >= stalls["over_2ms_per_10s"] >= stalls["over_5ms_per_10s"] >= 0
    assert lines[-1][0].strip().startswith("host: idle loop's stalls")


def test_host_stalls_count_a_stall_the_loop_saw() -> None:
    """A stall made here (a child stops this process for 30 ms, once) is counted in each band."""
    pid = os.getpid()
    child = os.fork()
    if child == 0:
        time.sleep(0.3)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.03)
        os.kill(pid, signal.SIGCONT)
        os._exit(0)
    try:
        stalls = latency.host_hiccups(seconds=1.0)
    finally:
        os.waitpid(child, 0)
    assert stalls["worst_ms"] >= 25
    assert stalls["over_5ms_per_10s"] >= 10  # one stall in 1 s


def _open_files() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the listing's own descriptor, closed since
            continue
    return found


def test_idle_polling_holds_the_wakeup_latency_while_inside() -> None:
    """Where the QoS file may be written (root, as on this machine) it is held, then let go; elsewhere
    the tuned rows are left out."""
    allowed = os.access(latency.CPU_DMA_LATENCY, os.W_OK)
    with latency.idle_polling() as held:
        assert held == allowed
        assert (latency.CPU_DMA_LATENCY in _open_files()) == allowed
    assert latency.CPU_DMA_LATENCY not in _open_files()


def test_the_report_leaves_out_a_skipped_latency_figure() -> None:
    assert report.latency_rows(None) == []
