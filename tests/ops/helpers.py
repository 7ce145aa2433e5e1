"""Helpers shared by the ops test modules: the `schooner` command of this interpreter's venv, and
starting `schooner broker` with its embedded redis-server.

Test modules import these from here, never from one another."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

SCHOONER = str(Path(sys.executable).with_name("schooner"))


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Waits until something accepts connections on `port`; fails with the output if `proc` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("broker did not start")


def start_cli_broker(data_dir: Path, port: int, **env: str) -> subprocess.Popen[bytes]:
    """`schooner broker --data-dir data_dir --port port` with `env` added, once it accepts connections."""
    proc = subprocess.Popen(
        [SCHOONER, "broker", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **env},
    )
    wait_for_port(port, proc)
    return proc
