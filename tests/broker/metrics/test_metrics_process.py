"""`schooner broker --metrics-port P`: the flag turns the endpoint on in a real broker process, and a
broker without it serves no metrics."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from schooner.storage.redis.embedded import EmbeddedRedis, free_port
from tests.broker.metrics_rig import scrape
from tests.clients import Rec, confluent_produce


def _start(redis_url: str, keyspace: str, log: Path, *flags: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    args = [sys.executable, "-m", "schooner.ops.entry", "broker", "--redis-url", redis_url,
            "--port", str(port), "--keyspace", keyspace, *flags]  # fmt: skip
    with open(log, "ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    return process, port


def _wait_for_log(process: subprocess.Popen[bytes], log: Path, text: str) -> None:
    deadline = time.monotonic() + 30
    while text not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def test_the_flag_serves_metrics(redis_server: EmbeddedRedis, keyspace: str, tmp_path: Path) -> None:
    metrics_port = free_port()
    log = tmp_path / "broker.log"
    process, port = _start(redis_server.url, keyspace, log, "--metrics-port", str(metrics_port))
    try:
        _wait_for_log(process, log, "listening on")
        assert f"metrics at http://127.0.0.1:{metrics_port}/metrics" in log.read_text()
        confluent_produce(f"127.0.0.1:{port}", "by-flag", [Rec(None, b"a"), Rec(None, b"b")])
        assert scrape(metrics_port).value("schooner_records_in_total", topic="by-flag") == 2
    finally:
        process.terminate()
        process.wait(30)


def test_no_flag_no_metrics(redis_server: EmbeddedRedis, keyspace: str, tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    process, _ = _start(redis_server.url, keyspace, log)
    try:
        _wait_for_log(process, log, "listening on")
        assert "metrics at" not in log.read_text()
    finally:
        process.terminate()
        process.wait(30)
