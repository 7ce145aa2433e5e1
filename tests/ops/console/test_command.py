"""`schooner console` as a process: it serves the pages, reading the Redis side from the broker's config
file; a bad flag is one clear line, not a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from schooner.storage.redis.embedded import free_port
from tests.ops.helpers import wait_for_port

from .rig import ORDERS, seed_records


def _console(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "schooner.ops.entry", "console", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=os.environ.copy(),
    )


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        return response.read().decode()  # type: ignore[no-any-return]


def test_console_process_serves_pages_with_the_config_files_redis(broker: Any, tmp_path: Path) -> None:
    seed_records(broker.bootstrap)
    config = tmp_path / "broker.toml"
    config.write_text(f'redis_url = "{broker.redis_url}"\nkeyspace = "{broker.settings.keyspace}"\n')
    port = free_port()
    proc = _console(
        "--port", str(port), "-b", broker.bootstrap, "--config", str(config), "--sample-interval", "1"
    )
    try:
        wait_for_port(port, proc)
        overview = _get(f"http://127.0.0.1:{port}/")
        assert "<h1>Overview</h1>" in overview and "standalone" in overview  # Redis INFO via the config file
        topic = _get(f"http://127.0.0.1:{port}/topics/{ORDERS}")
        assert f"<h1>Topic {ORDERS}</h1>" in topic
        assert re.search(r"<td>[0-9.]+ (B|KiB)</td>", topic)  # partition sizes, from Redis
    finally:
        proc.terminate()
        proc.wait(15)


def test_bad_flags_are_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "schooner.ops.entry", "console", "--sample-interval", "0"],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert b"--sample-interval" in done.stderr and b"Traceback" not in done.stderr
