"""`schooner console`: the web console, served by uvicorn."""

from __future__ import annotations

from pathlib import Path

import click

from ... import config
from ..client_options import ClientSettings, with_client_options
from ..redis_options import with_redis_options
from .context import ConsoleSettings


def _redis_url(
    config_file: str | None, redis_url: str | None, data_dir: str, keyspace: str
) -> tuple[str | None, str]:
    """The Redis of the Redis-side views: --redis-url, else the config file's, else an embedded broker's
    data folder; None when there is none (those views then say so)."""
    if config_file:
        try:
            settings = config.load(config_file)
        except (OSError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--config") from None
        redis_url = redis_url or settings.redis_url
        data_dir = settings.data_dir if data_dir == ".data" else data_dir
        keyspace = settings.keyspace if keyspace == "schooner" else keyspace
    if redis_url:
        return redis_url, keyspace
    saved = Path(data_dir) / "redis" / "url"
    return (saved.read_text().strip() if saved.exists() else None), keyspace


@click.command()
@click.option("--port", type=int, default=8080, show_default=True, help="Port of the console's web server.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, exists=True),
    help="The broker's TOML config: its redis_url, data_dir and keyspace, for the Redis-side views.",
)
@click.option("--read-only", is_flag=True, help="Show everything, change nothing (every POST gets 403).")
@click.option(
    "--sample-interval",
    type=float,
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="How often the charts' throughput and lag are sampled.",
)
@click.option(
    "--schema-registry",
    "schema_registry",
    envvar="SCHOONER_SCHEMA_REGISTRY_URL",
    metavar="URL",
    help="The schema registry's REST API, for the Schemas pages and decoded messages "
    "[http://<the bootstrap server's host>:8081].",
)
@click.option("--log-level", default="WARNING", show_default=True)
@with_redis_options
@with_client_options
def console(port: int, host: str, config_file: str | None, redis_url: str | None, data_dir: str,
            keyspace: str, client: ClientSettings, read_only: bool, sample_interval: float,
            schema_registry: str | None, log_level: str) -> None:  # fmt: skip
    """The web console: brokers, topics, messages, schemas, groups, MQ dead letters, users and ACLs.

    With SASL client settings and no --sasl-username, each user logs in with their own credentials.
    """
    import uvicorn

    from .app import create_app

    if sample_interval <= 0:
        raise click.BadParameter("must be above 0", param_hint="--sample-interval")
    if schema_registry is not None and not schema_registry.startswith(("http://", "https://")):
        raise click.BadParameter("must be an http:// or https:// URL", param_hint="--schema-registry")
    url, keyspace = _redis_url(config_file, redis_url, data_dir, keyspace)
    settings = ConsoleSettings(client, url, keyspace, read_only, sample_interval,
                               schema_registry_url=schema_registry)  # fmt: skip
    click.echo(f"schooner console on http://{host}:{port}/ (broker {client.bootstrap_servers}, schema "
               f"registry {settings.registry_url}{', read-only' if read_only else ''})")  # fmt: skip
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level.lower())
