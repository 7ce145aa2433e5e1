"""franz-go, the Go client, against a Schooner broker: its own integration tests (pkg/kgo, at the pinned
module version), as its maintainers run them against a Kafka cluster (KGO_SEEDS): groups with every
balancer on the classic and the KIP-848 protocol (static members too) moving records from topic to topic,
the same through transactions (each record exactly once, checked by the tests), and a share group with
consumers killed and added while acknowledging, releasing and rejecting records."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.application

MODULE, VERSION = "github.com/twmb/franz-go", "v1.22.3"
TESTS = ("TestGroupETL", "TestTxnEtl", "TestShareGroupETL")
RECORDS = 20_000  # per test (KGO_TEST_RECORDS; the tests' own default is 500,000)


def kgo_tests(folder: Path) -> Path:
    """pkg/kgo's test binary, built from the module as the Go proxy serves it (a writable copy)."""
    go = shutil.which("go")
    assert go, "Go is needed: the machines have it"
    found = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{VERSION}"], capture_output=True,
                           text=True, timeout=600, check=True)  # fmt: skip
    source = folder / "franz-go"
    shutil.copytree(json.loads(found.stdout)["Dir"], source)
    for path in source.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    binary = folder / "kgo.test"
    subprocess.run(
        [go, "test", "-c", "-o", str(binary), "."], cwd=source / "pkg" / "kgo", check=True, timeout=900
    )
    return binary


def test_franz_go_integration_tests(broker: Any, tmp_path: Path) -> None:
    binary = kgo_tests(tmp_path)
    env = {**os.environ, "KGO_SEEDS": broker.bootstrap, "KGO_TEST_RECORDS": str(RECORDS), "KGO_TEST_RF": "1"}
    done = subprocess.run(
        [str(binary), "-test.run", f"^({'|'.join(TESTS)})$", "-test.count=1", "-test.timeout=15m", "-test.v"],
        cwd=tmp_path / "franz-go" / "pkg" / "kgo", env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    summary = [line for line in done.stdout.splitlines() if line.startswith(("--- ", "PASS", "FAIL", "ok"))]
    assert done.returncode == 0, "\n".join(summary) + done.stdout[-4000:]
    for name in TESTS:  # each ran (a test skips itself when the broker lacks a feature)
        assert any(line.startswith(f"--- PASS: {name} ") for line in summary), summary
    assert not any(line.startswith("--- SKIP") for line in summary), summary
