"""Running `schooner` as a real subprocess for the Kafka-client commands (topics, produce, consume), so
that stdin piping, stderr and exit codes are the real ones; and checking that a failure is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from schooner.storage.redis.embedded import free_port


def schooner(*args: str, stdin: bytes | None = None, timeout: float = 120, **env: str) -> Any:
    """`python -m schooner.ops.entry ARGS`, finished; its returncode, stdout and stderr (bytes)."""
    return subprocess.run(
        [sys.executable, "-m", "schooner.ops.entry", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


def text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def refused(done: Any, *expected: str) -> str:
    """Asserts a failed run that said why in one line on stderr (no traceback), containing each of
    `expected`; returns the line."""
    err = text(done.stderr)
    assert done.returncode != 0, (done.returncode, err)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    # click's usage errors add two hint lines (Usage:, Try ...) before their one "Error:" line
    errors = [line for line in lines if line.startswith("Error:")]
    assert len(errors) == 1 and all(line.startswith(("Usage:", "Try ", "Error:")) for line in lines), err
    for part in expected:
        assert part in errors[0], err
    return errors[0]


def unreachable() -> str:
    """A bootstrap address where nothing listens."""
    return f"127.0.0.1:{free_port()}"


# For a client the tests expect to fail to connect: it says so after 2 s rather than the default 10 s.
QUICK = ("--request-timeout", "2")


def groups_cli(broker: Any, *args: str) -> Any:
    """`schooner groups ARGS -b BROKER` in this process (click's runner), for its output and exit code."""
    from click.testing import CliRunner

    from schooner.ops.cli import main

    return CliRunner().invoke(main, ["groups", *args, "-b", broker.bootstrap])


def groups_json(broker: Any, *args: str) -> Any:
    """`schooner groups ARGS -o json`, which must succeed, parsed."""
    import json

    result = groups_cli(broker, *args, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)
