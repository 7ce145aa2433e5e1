"""The `schooner` command."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import Any

import click

from .. import config
from ..storage.embedded import EmbeddedRedis
from .groups_cli import groups
from .pipeline import pipeline


@click.group()
@click.version_option(package_name="schooner")
def main() -> None:
    """Schooner: a Kafka-compatible streaming platform on Redis Streams."""


@main.command()
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML settings file.")
@click.option("--host", help="Address to listen on [127.0.0.1].")
@click.option("--port", type=int, help="Port to listen on [9092].")
@click.option("--advertise", metavar="HOST:PORT", help="Address clients are told to connect to.")
@click.option("--redis-url", help="Use this Redis (>= 7.0) instead of starting the embedded one.")
@click.option("--data-dir", help="Folder of the embedded redis-server's data [.data].")
@click.option("--keyspace", help="Prefix of every Redis key [schooner].")
@click.option("--broker-id", type=int, help="Fixed broker id (default: allocated from Redis).")
@click.option("--default-partitions", type=int, help="Partitions of auto-created topics [1].")
@click.option("--log-level", default="INFO", show_default=True)
def broker(config_file: str | None, log_level: str, **flags: Any) -> None:
    """Run a broker. Without --redis-url, starts an embedded redis-server (AOF on) and stops it on exit."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = config.load(config_file, overrides=flags)
    embedded: EmbeddedRedis | None = None
    redis_url = settings.redis_url
    if redis_url is None:
        embedded = EmbeddedRedis(Path(settings.data_dir) / "redis", port=None, persistent=True)
        redis_url = embedded.start()
        click.echo(f"embedded redis-server at {redis_url}, data in {embedded.data_dir}")
    try:
        _run(settings, redis_url)
    finally:
        if embedded:
            embedded.stop()


def _run(settings: config.Settings, redis_url: str) -> None:
    from ..broker.server import Broker

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass

    async def serve() -> None:
        b = Broker(settings, redis_url)
        await b.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        click.echo(
            f"schooner broker {b.ctx.me.broker_id if b.ctx else '?'} listening on {settings.host}:{b.port}"
        )
        await stop.wait()
        await b.stop()

    asyncio.run(serve())


main.add_command(pipeline)
main.add_command(groups)

if __name__ == "__main__":
    main()
