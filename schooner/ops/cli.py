"""The `schooner` command."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import Any

import click

from .. import config
from ..storage.redis.calls import StorageError
from ..storage.redis.client import redacted
from ..storage.redis.embedded import DataDirInUse, EmbeddedRedis
from . import check as check_deployment
from . import logs, processes
from .consume_cli import consume
from .groups_cli import groups
from .kafka import KafkaFailure
from .mq_cli import mq
from .pipeline import pipeline
from .produce_cli import produce
from .schemas_cli import schemas
from .topics_cli import topics
from .users_cli import users


class SchoonerGroup(click.Group):
    """Turns the failures a command does not catch itself (a broker or Redis that cannot be reached or
    refuses) into one line on stderr and exit status 1, instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KafkaFailure as exc:
            raise click.ClickException(str(exc)) from None
        except StorageError as exc:
            raise click.ClickException(f"Redis failed: {exc}") from None


@click.group(cls=SchoonerGroup)
@click.version_option(package_name="schooner")
def main() -> None:
    """Schooner: a Kafka-compatible streaming platform on Redis Streams."""


@main.command()
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML settings file.")
@click.option("--host", help="Address to listen on [127.0.0.1].")
@click.option("--port", type=int, help="Port to listen on [9092].")
@click.option("--advertise", metavar="HOST:PORT", help="Address clients are told to connect to.")
@click.option(
    "--listener",
    "listener_flags",
    multiple=True,
    metavar="PROTOCOL://HOST:PORT",
    help="A listener (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL); repeatable. Replaces --host/--port.",
)
@click.option("--redis-url", help="Use this Redis (>= 7.0) instead of starting the embedded one.")
@click.option("--data-dir", help="Folder of the embedded redis-server's data [.data].")
@click.option("--redis-maxmemory", help="maxmemory of the embedded redis-server, e.g. 2gb (noeviction).")
@click.option("--keyspace", help="Prefix of every Redis key [schooner].")
@click.option("--broker-id", type=int, help="Fixed broker id (default: allocated from Redis).")
@click.option("--default-partitions", type=int, help="Partitions of auto-created topics [1].")
@click.option(
    "--producer-id-expiration-ms", type=int, help="Forget idempotent producers idle this long [86400000]."
)
@click.option("--metrics-port", type=int, help="Serve Prometheus metrics at /metrics on this port [off].")
@click.option("--metrics-host", help="Address of the metrics endpoint [the first listener's host].")
@click.option(
    "--schema-registry-port",
    type=int,
    help="Serve the schema registry's REST API on this port, 0 for none [8081].",
)
@click.option("--schema-registry-host", help="Address of the schema registry [the first listener's host].")
@click.option(
    "--cold-store-url",
    help="Cold tier of tiered topics: a path, file:// or s3:// URL [<data-dir>/cold when Redis is embedded].",
)
@click.option("--cold-store-endpoint", help="S3-compatible endpoint of an s3:// cold store.")
@click.option("--cold-store-region", help="Region of an s3:// cold store.")
@click.option("--archive-interval-ms", type=int, help="How often tiered partitions are archived [5000].")
@click.option("--archive-batch-records", type=int, help="Records per archive commit [50000].")
@click.option("--archive-concurrency", type=int, help="Partitions archived at once [4].")
@click.option("--log-level", default="INFO", show_default=True)
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    help="Broker processes on consecutive ports, each its own broker over the same Redis [1].",
)
# -- logs and checks (docs/operations.md, "Logs" and "Checking a deployment") --
@click.option(
    "--log-format", type=click.Choice(logs.FORMATS), help="text, or json: one object per line [text]."
)
@click.option(
    "--check", is_flag=True, help="Check the config and Redis, print a line per check, exit (1 on a fail)."
)
def broker(
    config_file: str | None, log_level: str, listener_flags: tuple[str, ...], check: bool, **flags: Any
) -> None:
    """Run a broker. Without --redis-url, starts an embedded redis-server (AOF on), restarts it if it
    dies, and stops it on exit. SIGTERM or Ctrl-C stops gracefully."""
    overrides = {**flags, "listeners": list(listener_flags) or None}
    if check:
        raise SystemExit(check_deployment.run(config_file, overrides, click.echo))
    try:
        settings = config.load(config_file, overrides=overrides)
        logs.configure(log_level, settings.log_format)
        listeners = settings.listeners_in_force()
        if settings.processes < 1:
            raise ValueError(f"processes must be at least 1, not {settings.processes}")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    embedded: EmbeddedRedis | None = None
    redis_url = settings.redis_url
    if redis_url is None:
        embedded = EmbeddedRedis(
            Path(settings.data_dir) / "redis", persistent=True, maxmemory=settings.redis_maxmemory
        )
        try:
            redis_url = embedded.start()
        except (DataDirInUse, RuntimeError, OSError) as exc:
            raise click.ClickException(f"cannot start the embedded redis-server: {exc}") from None
        click.echo(
            f"embedded redis-server at {redacted(redis_url)}, data and password in {embedded.data_dir}"
        )
    try:
        if settings.processes > 1:  # this process supervises; the brokers are its children
            failure = processes.run(settings, redis_url, log_level, _serve_process, embedded)
        else:
            failure = _run(settings, listeners, redis_url, embedded)
    finally:
        if embedded:
            embedded.stop()  # after the broker: in-flight acks=all are answered first
    if failure:
        raise click.ClickException(failure)


def _serve_process(settings: config.Settings, redis_url: str, log_level: str) -> None:
    """One broker of `--processes N`, in a child process (ops/processes.py); exits 1 when it fails."""
    logs.configure(log_level, settings.log_format)
    failure = _run(settings, settings.listeners_in_force(), redis_url, None)
    if failure:
        click.echo(f"Error: {failure}", err=True)
        raise SystemExit(1)


def _run(
    settings: config.Settings,
    listeners: list[config.Listener],
    redis_url: str,
    embedded: EmbeddedRedis | None,
) -> str | None:
    """Serves until SIGTERM/SIGINT; returns why the broker had to stop, or None for a requested stop."""
    from ..broker.server import Broker, StartupRefused
    from ..storage.redis.calls import StorageError

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass

    async def serve() -> str | None:
        b = Broker(settings, redis_url)
        try:
            await b.start()
        except StartupRefused as exc:
            return str(exc)
        except (StorageError, OSError) as exc:  # Redis failed (or a port was taken) while starting
            await b.stop()
            return f"the broker could not start: {exc}"
        stop = asyncio.Event()
        failure: list[str] = []
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)

        def give_up(reason: str) -> None:  # called on the supervisor's thread
            def fail() -> None:
                failure.append(reason)
                stop.set()

            loop.call_soon_threadsafe(fail)

        if embedded is not None:
            embedded.supervise(give_up)
        where = ", ".join(
            f"{listener.protocol} {listener.host}:{b.port_of(listener.protocol)}" for listener in listeners
        )
        click.echo(f"schooner broker {b.ctx.me.broker_id if b.ctx else '?'} listening on {where}")
        await stop.wait()
        await b.stop(graceful=not failure)
        return failure[0] if failure else None

    return asyncio.run(serve())


main.add_command(pipeline)
main.add_command(groups)
main.add_command(topics)
main.add_command(users)
main.add_command(mq)
main.add_command(schemas)

# the web console (docs/console.md)
from .console.command import console  # noqa: E402

main.add_command(console)
main.add_command(produce)
main.add_command(consume)

if __name__ == "__main__":
    main()
