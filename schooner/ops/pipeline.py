"""`schooner pipeline run FILE.py`: runs a Spark pipeline file on Schooner topics (docs/spark.md)."""

from __future__ import annotations

from pathlib import Path

import click


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=what)
        out[key] = value
    return out


@click.group()
def pipeline() -> None:
    """Spark pipelines that read and write Schooner topics."""


@pipeline.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--redis-url", envvar="SCHOONER_REDIS_URL", default="redis://127.0.0.1:6379/0", show_default=True
)
@click.option("--keyspace", envvar="SCHOONER_KEYSPACE", default="schooner", show_default=True)
@click.option("--checkpoint", default=".checkpoints", show_default=True, help="Folder for query checkpoints.")
@click.option("--master", default="local[2]", show_default=True, help="Spark master URL.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="A Spark setting (repeatable).")
@click.option("-o", "--option", "options", multiple=True, metavar="KEY=VALUE", help="Passed to build().")
def run(
    file: Path,
    redis_url: str,
    keyspace: str,
    checkpoint: str,
    master: str,
    confs: tuple[str, ...],
    options: tuple[str, ...],
) -> None:
    """Run FILE's build(spark, options) and wait for the streaming query it returns."""
    from ..spark import pipeline as runner

    settings = {
        "redis.url": redis_url,
        "keyspace": keyspace,
        "checkpointLocation": str(Path(checkpoint).resolve()),
        **_pairs(options, "--option"),
    }
    runner.run(file, settings, master, _pairs(confs, "--conf"))
