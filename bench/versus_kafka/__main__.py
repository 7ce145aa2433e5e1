"""`python -m bench.versus_kafka`: runs the comparison, prints the table, optionally writes the JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import report
from ..servers import stop_on_sigterm
from . import table
from .brokers import KAFKA, SETUPS
from .compare import Options, run


def parse_args(argv: list[str] | None) -> tuple[Options, Path | None]:
    defaults = Options()
    parser = argparse.ArgumentParser(prog="python -m bench.versus_kafka", description=__doc__)
    parser.add_argument("--records", type=int, default=defaults.records, help="records per throughput run")
    parser.add_argument("--runs", type=int, default=defaults.runs, help="runs per figure and setup (median)")
    parser.add_argument(
        "--partitions", type=int, default=defaults.partitions, help="the many-partition topic's"
    )
    parser.add_argument(
        "--latency-seconds", type=float, default=defaults.latency_seconds, help="how long a latency run sends"
    )
    parser.add_argument(
        "--latency-rate",
        type=int,
        action="append",
        help=f"msg/s (repeatable; default {defaults.latency_rates})",
    )
    parser.add_argument(
        "--linger",
        type=int,
        action="append",
        help=f"producer linger.ms (repeatable; default {defaults.lingers})",
    )
    parser.add_argument(
        "--idle-seconds", type=float, default=defaults.idle_seconds, help="at-rest CPU window"
    )
    parser.add_argument(
        "--quiet-wait", type=float, default=defaults.quiet_wait_seconds,
        help="before each run, wait up to this many seconds for other processes to calm down",
    )  # fmt: skip
    parser.add_argument(
        "--skip-setup", action="append", default=[], choices=[s for s in SETUPS if s != KAFKA],
        help="leave out a Schooner setup",
    )  # fmt: skip
    parser.add_argument(
        "--streams-records", type=int, default=defaults.streams_records,
        help="orders through the Kafka Streams topology per run",
    )  # fmt: skip
    parser.add_argument(
        "--no-applications", action="store_true",
        help="leave out the Kafka Streams topology and the Spark read (minutes)",
    )  # fmt: skip
    parser.add_argument("--output", type=Path, help="also write the results (every run) to this JSON file")
    args = parser.parse_args(argv)
    rates = tuple(args.latency_rate or defaults.latency_rates)
    lingers = tuple(args.linger or defaults.lingers)
    if min(args.records, args.runs, args.partitions, args.streams_records, *rates) < 1 or min(lingers) < 0:
        parser.error("counts and rates must be positive")
    if args.latency_seconds <= 0 or args.idle_seconds <= 0 or args.quiet_wait < 0:
        parser.error("durations must be positive")
    opts = Options(
        records=args.records,
        runs=args.runs,
        partitions=args.partitions,
        latency_rates=rates,
        lingers=lingers,
        latency_seconds=args.latency_seconds,
        idle_seconds=args.idle_seconds,
        quiet_wait_seconds=args.quiet_wait,
        applications=not args.no_applications,
        streams_records=args.streams_records,
        setups=tuple(s for s in SETUPS if s not in args.skip_setup),
    )
    return opts, args.output


def main(argv: list[str] | None = None) -> int:
    opts, output = parse_args(argv)
    stop_on_sigterm()
    results = run(opts)
    print(table.text(results))
    if output is not None:
        report.write_json(results, output)
        print(f"written to {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
