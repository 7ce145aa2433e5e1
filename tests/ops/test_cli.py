"""The `schooner broker` command with its embedded redis-server: serves, keeps data, stops cleanly."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from schooner.storage.redis.embedded import free_port
from tests.clients import kcat
from tests.ops.helpers import start_cli_broker


def _redis_servers_using(data_dir: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "redis-server" in line and str(data_dir) in line]


def test_embedded_broker_keeps_data_across_restarts_and_stops_redis(tmp_path: Path) -> None:
    port = free_port()
    proc = start_cli_broker(tmp_path, port, SCHOONER_DEFAULT_PARTITIONS="3")
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

    proc = start_cli_broker(tmp_path, port, SCHOONER_DEFAULT_PARTITIONS="3")
    try:
        out = kcat("-b", f"127.0.0.1:{port}", "-C", "-t", "kept", "-p", "0", "-e", "-f", "%s\n")
        assert out.splitlines() == ["one", "two"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
