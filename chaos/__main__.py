"""`python -m chaos`: one chaos run (chaos/run.py); exits 1 when the checker found an anomaly."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Literal

import click

from .deployment import DeploymentSpec
from .run import RunSpec, run


@click.command()
@click.option("--minutes", type=float, default=10.0, show_default=True, help="How long the nemesis runs.")
@click.option(
    "--seed", type=int, default=None, help="The run's seed (random when not given); a report names it."
)
@click.option(
    "--redis", "redis_kind", type=click.Choice(["cluster", "single"]), default="cluster", show_default=True,
    help="A Redis Cluster of 3 primaries with a replica each, or one redis-server with AOF.",
)  # fmt: skip
@click.option("--brokers", type=int, default=3, show_default=True)
@click.option(
    "--fault", "faults", multiple=True, help="A fault kind the nemesis may pick (repeat); all by default."
)
@click.option("--scale", type=float, default=1.0, show_default=True, help="The workloads' pace.")
@click.option(
    "--work-dir", type=click.Path(path_type=Path), default=None,
    help="Where the deployment, the history and the report go (default .chaos/<time>-<seed>).",
)  # fmt: skip
def main(
    minutes: float, seed: int | None, redis_kind: str, brokers: int, faults: tuple[str, ...], scale: float,
    work_dir: Path | None,
) -> None:  # fmt: skip
    seed = random.randrange(1 << 31) if seed is None else seed
    work_dir = (work_dir or Path(".chaos") / f"{time.strftime('%Y%m%d-%H%M%S')}-{seed}").resolve()
    redis: Literal["single", "cluster"] = "cluster" if redis_kind == "cluster" else "single"
    deployment = DeploymentSpec(work_dir / "deployment", redis=redis, brokers=brokers)
    spec = RunSpec(
        seconds=minutes * 60, seed=seed, work_dir=work_dir, deployment=deployment,
        faults=list(faults) or None, scale=scale,
    )  # fmt: skip
    outcome = run(spec, say=lambda line: click.echo(line, err=True))
    click.echo(outcome.report)
    click.echo(f"history: {outcome.history_path}\nreport: {outcome.report_path}", err=True)
    sys.exit(0 if outcome.ok else 1)


if __name__ == "__main__":
    main()
