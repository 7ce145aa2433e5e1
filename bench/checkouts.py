"""Two checkouts side by side: bench.cpu_per_record in each, taking turns, and the medians.

`PYTHONPATH=$PWD .venv/bin/python -m bench.checkouts BEFORE AFTER --rounds 3` compares the working tree of
two checkouts of Schooner, for instance the commit before a change in a git worktree
(`git worktree add /tmp/before HEAD~1`, its C extensions built with `.venv/bin/python setup.py
build_ext --inplace` there) and this one. Each round runs bench.cpu_per_record once in each, the
checkout going first alternating, each as a process of its own with the checkout on PYTHONPATH, so that
the broker, its scripts and its compiled modules are that checkout's; the measuring code is this one's.
Both use this interpreter and its packages. It prints each run and then, per figure, the medians and
AFTER ÷ BEFORE.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FIGURES = ("msgs_per_s", "broker_us", "redis_us")
BENCH = Path(__file__).resolve().parent


def run_in(checkout: Path, records: int, topics: int) -> dict[str, Any]:
    """This checkout's bench.cpu_per_record with `checkout`'s schooner: a folder holding only a link to
    this bench package goes first on PYTHONPATH, so an older checkout without this module works too."""
    with tempfile.TemporaryDirectory(prefix="schooner-checkouts-") as tmp:
        (Path(tmp) / "bench").symlink_to(BENCH, target_is_directory=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(checkout)])}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.cpu_per_record",
                "--records",
                str(records),
                "--topics",
                str(topics),
            ],
            cwd=tmp,  # -m puts the working folder first on sys.path
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    if done.returncode != 0:
        raise RuntimeError(f"bench.cpu_per_record failed in {checkout}:\n{done.stderr[-2000:]}")
    out = done.stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def medians(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per step (produce, fetch) and figure, the median over every run's topics."""
    out: dict[str, dict[str, float]] = {}
    for step in ("produce", "fetch"):
        steps = [s for run in runs for s in run[step]]
        out[step] = {f: statistics.median(s[f] for s in steps) for f in FIGURES}
    return out


def compare(before: Path, after: Path, rounds: int, records: int, topics: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for n in range(rounds):
        order = [("before", before), ("after", after)]
        for name, checkout in order if n % 2 == 0 else reversed(order):
            result = run_in(checkout, records, topics)
            runs[name].append(result)
            print(f"round {n + 1}, {name}: {json.dumps(result)}", flush=True)
    mid = {name: medians(r) for name, r in runs.items()}
    ratios = {
        step: {f: mid["after"][step][f] / mid["before"][step][f] for f in FIGURES if mid["before"][step][f]}
        for step in ("produce", "fetch")
    }
    return {"runs": runs, "medians": mid, "after_over_before": ratios}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.checkouts", description=__doc__)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--topics", type=int, default=2)
    args = parser.parse_args(argv)
    result = compare(args.before.resolve(), args.after.resolve(), args.rounds, args.records, args.topics)
    for step in ("produce", "fetch"):
        for f in FIGURES:
            b, a = result["medians"]["before"][step][f], result["medians"]["after"][step][f]
            ratio = result["after_over_before"][step].get(f, float("nan"))
            print(f"{step:8} {f:11} before {b:12,.2f}  after {a:12,.2f}  after/before {ratio:.3f}")


if __name__ == "__main__":
    main()
