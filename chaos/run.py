"""One chaos run: deploy, start the workloads and the nemesis, stop at the deadline, heal every fault,
let the clients settle, read the final logs, check the history and write the report.

Everything random follows the run's seed (the nemesis's faults, the workloads' choices), so a report's
seed replays the same plan of faults; the interleavings the machine picks are not replayed.
"""

from __future__ import annotations

import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .checker import CheckResult, check, format_report
from .deployment import Deployment, DeploymentSpec
from .history import History, read_history
from .nemesis import Nemesis
from .workloads import TOPICS, Workload, final_reads, plan, setup_topics

# After the last fault: clients reconnect, open transactions end (the workloads' transaction timeout)
# and consumers catch up before the final reads.
SETTLE_SECONDS = 20.0
STOP_SECONDS = 60.0  # for all the workloads to finish their operations and close their clients


@dataclass(frozen=True)
class RunSpec:
    seconds: float
    seed: int
    work_dir: Path
    deployment: DeploymentSpec
    faults: list[str] | None = None  # fault kinds the nemesis may pick; None: all the deployment supports
    scale: float = 1.0  # the workloads' pace
    fault_interval: tuple[float, float] = (2.0, 8.0)  # seconds between faults
    fault_duration: tuple[float, float] = (1.0, 10.0)  # seconds a fault is held
    settle_seconds: float = SETTLE_SECONDS


@dataclass
class RunOutcome:
    result: CheckResult
    report: str
    history_path: Path
    report_path: Path
    phases: dict[str, float] = field(default_factory=dict)  # seconds each phase took

    @property
    def ok(self) -> bool:
        return self.result.ok


def run(spec: RunSpec, say: Callable[[str], None] = print) -> RunOutcome:
    spec.work_dir.mkdir(parents=True, exist_ok=True)
    history_path = spec.work_dir / "history.jsonl"
    history_path.unlink(missing_ok=True)
    phases: dict[str, float] = {}
    began = time.monotonic()
    workloads: list[Workload] = []
    nemesis_errors: list[BaseException] = []
    with Deployment(spec.deployment) as deployment:
        deployment.wait_healthy(120)
        phases["deploy"] = time.monotonic() - began
        say(f"deployed in {phases['deploy']:.1f} s: brokers {deployment.bootstrap}")
        history = History(history_path)
        try:
            setup_topics(deployment.bootstrap)
            workloads = plan(deployment.bootstrap, history, spec.seed, spec.scale)
            for w in workloads:
                w.start()
            nemesis = Nemesis(
                deployment, history, random.Random(spec.seed), kinds=spec.faults,
                interval=spec.fault_interval, duration=spec.fault_duration,
            )  # fmt: skip
            started = time.monotonic()
            nemesis.start()
            say(f"{len(workloads)} workloads and the nemesis for {spec.seconds:.0f} s, seed {spec.seed}")
            _wait(spec.seconds, history, say)
            nemesis.stop(180)
            nemesis_errors = nemesis.errors
            phases["chaos"] = time.monotonic() - started
            healed = time.monotonic()
            deployment.heal_all()
            deployment.wait_healthy(180)
            time.sleep(spec.settle_seconds)
            for w in workloads:
                w.stop()
            _join(workloads, STOP_SECONDS, say)
            phases["settle"] = time.monotonic() - healed
            read = time.monotonic()
            final_reads(deployment.bootstrap, deployment.redis_url, deployment.keyspace, history, TOPICS)
            phases["final reads"] = time.monotonic() - read
        finally:
            history.close()
    checking = time.monotonic()
    result = check(read_history(history_path))
    phases["check"] = time.monotonic() - checking
    result.stats["phases_seconds"] = {k: round(v, 1) for k, v in phases.items()}
    result.stats["client_errors"] = sum(len(w.errors) for w in workloads)
    # The clients' errors, for whoever reads a report: a session that raised shows here only.
    errors = [f"{w.name}: {e}" for w in workloads for e in w.errors]
    (spec.work_dir / "client-errors.txt").write_text("".join(line + "\n" for line in errors))
    result.stats["nemesis_errors"] = [repr(e) for e in nemesis_errors]
    report = format_report(result, spec.seed)
    report_path = spec.work_dir / "report.txt"
    report_path.write_text(report)
    return RunOutcome(result, report, history_path, report_path, phases)


def _join(workloads: list[Workload], seconds: float, say: Callable[[str], None]) -> None:
    """Waits for the workloads to stop, together at most `seconds`; one still in a client call then is
    left (the threads are daemons) and named with where it is stuck."""
    deadline = time.monotonic() + seconds
    for w in workloads:
        w.join(max(0.0, deadline - time.monotonic()))
    frames = sys._current_frames()
    for w in workloads:
        if w.is_alive() and w.ident in frames:
            stack = "".join(traceback.format_stack(frames[w.ident])[-4:])
            say(f"  workload {w.name} did not stop within {seconds:.0f} s; it is in:\n{stack}")


def _wait(seconds: float, history: History, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(30.0, left))
        say(f"  {history.count} operations recorded, {max(0.0, deadline - time.monotonic()):.0f} s left")
