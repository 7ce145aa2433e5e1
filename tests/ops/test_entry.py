"""The `schooner` command's process entry keeps kio from loading hypothesis (seconds of every start)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import runpy
import sys
sys.argv = ["schooner", "--help"]
try:
    runpy.run_module("schooner.ops.entry", run_name="__main__")
except SystemExit as exit:
    assert not exit.code, exit.code
import kio.static._phantom as phantom
print(phantom.hypothesis is None, "hypothesis.strategies" in sys.modules)
"""


def test_a_command_process_runs_without_hypothesis_and_kio_skips_its_strategies() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout
    assert done.stdout.strip().endswith("True False")
