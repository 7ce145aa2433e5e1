"""The `schooner broker` command with its embedded redis-server: serves, keeps data, stops cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from schooner.storage.redis.embedded import free_port
from tests.clients import kcat

SCHOONER = str(Path(sys.executable).with_name("schooner"))


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("broker did not start")


def _start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [SCHOONER, "broker", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "SCHOONER_DEFAULT_PARTITIONS": "3"},
    )
    _wait_for_port(port, proc)
    return proc


def _redis_servers_using(data_dir: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "redis-server" in line and str(data_dir) in line]


def test_embedded_broker_keeps_data_across_restarts_and_stops_redis(tmp_path: Path) -> None:
    port = free_port()
    proc = _start(tmp_path, port)
    try:
        kcat("-b", f"127.0.0.1:{port}", "-P", "-t", "kept", "-p", "0", stdin=b"one\ntwo\n")
        listing = kcat("-b", f"127.0.0.1:{port}", "-L", "-t", "kept")
        assert "3 partitions" in listing  # SCHOONER_DEFAULT_PARTITIONS reached the broker
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0
    assert not _redis_servers_using(tmp_path)
    assert any((tmp_path / "redis").rglob("*.aof*")), "AOF is on"

    proc = _start(tmp_path, port)
    try:
        out = kcat("-b", f"127.0.0.1:{port}", "-C", "-t", "kept", "-p", "0", "-e", "-f", "%s\n")
        assert out.splitlines() == ["one", "two"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
