"""A short chaos run, as `make chaos` runs a long one: a real deployment (one Redis with AOF, two
brokers, an S3 cold store), every workload, the nemesis dealing every fault kind, and the checker.
The seed is fixed so the plan of faults is the same each time; the report is printed (pytest -s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.deployment import DeploymentSpec
from chaos.nemesis import supported_kinds
from chaos.run import RunSpec, run

SEED = 29


@pytest.mark.xdist_group("chaos-run")  # its own worker: the longest test of the suite
def test_a_short_run_under_every_fault_kind_finds_no_anomaly(tmp_path: Path) -> None:
    deployment = DeploymentSpec(tmp_path / "deployment", redis="single", brokers=2)
    kinds = supported_kinds(deployment)
    spec = RunSpec(
        seconds=100, seed=SEED, work_dir=tmp_path, deployment=deployment,
        fault_interval=(0.5, 2.0), fault_duration=(1.0, 3.0), settle_seconds=15,
    )  # fmt: skip
    outcome = run(spec)
    print(outcome.report)
    assert outcome.ok, outcome.report
    stats = outcome.result.stats
    exercised = set(stats["faults"])
    assert exercised == set(kinds), f"faults exercised {sorted(exercised)} of {sorted(kinds)}"
    assert stats["produce"]["acknowledged"] > 1000, stats["produce"]
