"""Options shared by the CLI commands that read Redis directly (`schooner groups`, `schooner topics`)."""

from __future__ import annotations

from pathlib import Path

import click


def redis_url_of(redis_url: str | None, data_dir: str) -> str:
    if redis_url:
        return redis_url
    saved = Path(data_dir) / "redis" / "url"
    if saved.exists():
        return saved.read_text().strip()
    raise click.UsageError("give --redis-url, or run where the embedded broker keeps its data (--data-dir)")


_common = [
    click.option("--redis-url", envvar="SCHOONER_REDIS_URL", help="Redis of the deployment."),
    click.option(
        "--data-dir",
        envvar="SCHOONER_DATA_DIR",
        default=".data",
        show_default=True,
        help="Data folder of an embedded broker (its Redis URL is read from there).",
    ),  # fmt: skip
    click.option("--keyspace", envvar="SCHOONER_KEYSPACE", default="schooner", show_default=True),
]


def with_redis_options(fn):  # type: ignore[no-untyped-def]
    for option in reversed(_common):
        fn = option(fn)
    return fn
