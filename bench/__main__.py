"""`python -m bench`: runs the suite, prints the table, writes bench/results/latest.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import goals, report
from .servers import stop_on_sigterm
from .suite import Options, run_all

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "latest.json"


def parse_args(argv: list[str] | None) -> tuple[Options, Path | None]:
    defaults = Options()
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--messages", type=int, default=defaults.messages, help="records per produce run")
    parser.add_argument("--runs", type=int, default=defaults.runs, help="runs of produce and fetch (median)")
    parser.add_argument("--raw-requests", type=int, default=defaults.raw_requests, help="redis-benchmark -n")
    parser.add_argument("--latency-rate", type=int, default=defaults.latency_rate, help="e2e test msgs/s")
    parser.add_argument("--latency-seconds", type=float, default=defaults.latency_seconds)
    parser.add_argument(
        "--latency-rounds", type=int, default=defaults.latency_rounds, help="runs per linger.ms"
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results file")
    parser.add_argument("--no-save", action="store_true", help="print the table only")
    parser.add_argument(
        "--skip", action="append", default=[], choices=list(defaults.extras), help="leave out a figure"
    )
    args = parser.parse_args(argv)
    if (
        args.messages < 1
        or args.runs < 1
        or args.raw_requests < 1
        or args.latency_rate < 1
        or args.latency_rounds < 1
    ):
        parser.error("counts must be positive")
    opts = Options(
        messages=args.messages,
        runs=args.runs,
        raw_requests=args.raw_requests,
        latency_rate=args.latency_rate,
        latency_seconds=args.latency_seconds,
        latency_rounds=args.latency_rounds,
        extras=tuple(e for e in defaults.extras if e not in args.skip),
    )
    return opts, None if args.no_save else args.output


def main(argv: list[str] | None = None) -> int:
    opts, output = parse_args(argv)
    stop_on_sigterm()
    results = run_all(opts)
    print(report.table(results))
    print()
    print(goals.block(results))
    if output is not None:
        report.write_json(results, output)
        print(f"written to {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
