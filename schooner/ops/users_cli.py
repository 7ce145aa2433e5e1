"""`schooner users`: SCRAM users (credentials, never passwords) and their tenants, written straight to
the deployment's Redis, so the first admin user can be made before any broker runs.

Redis is the settings' redis_url; without one, the embedded redis-server of data_dir: a running
broker's (its URL is in the data folder), else one started for the command and stopped after it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import click

from .. import config
from ..security.scram import DEFAULT_ITERATIONS, MECHANISMS, make_credential
from ..storage.blocking_store import BlockingStore
from ..storage.redis.calls import StorageError
from ..storage.redis.embedded import DataDirInUse, EmbeddedRedis
from ..storage.security.users import User

_config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="TOML settings file (redis_url, data_dir).",
)


@click.group()
def users() -> None:
    """SCRAM users for SASL: set a password, list, delete."""


@users.command("set")
@click.argument("name")
@click.option("--mechanism", required=True, metavar="SCRAM-SHA-256|SCRAM-SHA-512", help="SCRAM mechanism.")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input (one line).")
@click.option("--iterations", type=int, default=DEFAULT_ITERATIONS, show_default=True)
@click.option("--tenant", help="The tenant the user belongs to (kept as it is when not given).")
@_config_option
def set_user(
    name: str,
    mechanism: str,
    password_stdin: bool,
    iterations: int,
    tenant: str | None,
    config_file: str | None,
) -> None:
    """Sets NAME's credential for one SCRAM mechanism (PLAIN logins check the password against it too)."""
    if not name:
        raise click.ClickException("the user name must not be empty")
    if mechanism not in MECHANISMS:
        raise click.ClickException(f"unknown mechanism {mechanism!r}: use one of {', '.join(MECHANISMS)}")
    if not password_stdin:
        raise click.ClickException("give the password on standard input with --password-stdin")
    password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise click.ClickException("no password on standard input")
    try:
        credential = make_credential(mechanism, password, iterations)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    with _users_store(config_file) as store:
        user = store.user(name) or User(name)
        user = replace(
            user,
            tenant=tenant if tenant is not None else user.tenant,
            credentials={**user.credentials, mechanism: credential},
        )
        store.put_user(user)
    where = f", tenant {user.tenant}" if user.tenant else ""
    click.echo(f"{name}: {mechanism} set ({iterations} iterations){where}")


@users.command("list")
@_config_option
def list_users(config_file: str | None) -> None:
    """Every user, with its tenant and SCRAM mechanisms (iterations)."""
    with _users_store(config_file) as store:
        found = store.users()
    click.echo(f"{'USER':30} {'TENANT':20} MECHANISMS")
    for user in found:
        mechanisms = ", ".join(f"{m} ({c.iterations})" for m, c in sorted(user.credentials.items()))
        click.echo(f"{user.name:30} {user.tenant or '-':20} {mechanisms or '-'}")


@users.command("delete")
@click.argument("name")
@click.option("--mechanism", help="Delete only this credential (the user goes with its last one).")
@_config_option
def delete(name: str, mechanism: str | None, config_file: str | None) -> None:
    """Deletes NAME, or one of its credentials."""
    if mechanism is not None and mechanism not in MECHANISMS:
        raise click.ClickException(f"unknown mechanism {mechanism!r}: use one of {', '.join(MECHANISMS)}")
    with _users_store(config_file) as store:
        user = store.user(name)
        if user is None:
            raise click.ClickException(f"no user {name!r}")
        if mechanism is None:
            store.delete_user(name)
            click.echo(f"{name}: deleted")
            return
        if mechanism not in user.credentials:
            raise click.ClickException(f"{name} has no {mechanism} credential")
        left = {m: c for m, c in user.credentials.items() if m != mechanism}
        if left or user.tenant:
            store.put_user(replace(user, credentials=left))
            click.echo(f"{name}: {mechanism} deleted")
        else:
            store.delete_user(name)
            click.echo(f"{name}: {mechanism} deleted, and the user with it")


@contextmanager
def _users_store(config_file: str | None) -> Iterator[BlockingStore]:
    """A store on the deployment's Redis and base keyspace, where users live."""
    try:
        settings = config.load(config_file)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot read the settings: {exc}") from None
    with _redis_url(settings) as url:
        store = BlockingStore.connect(url, settings.keyspace)
        try:
            yield store
        except (StorageError, OSError) as exc:
            raise click.ClickException(f"Redis at {url} failed: {exc}") from None
        finally:
            store.close()


@contextmanager
def _redis_url(settings: config.Settings) -> Iterator[str]:
    if settings.redis_url:
        yield settings.redis_url
        return
    embedded = EmbeddedRedis(
        Path(settings.data_dir) / "redis", persistent=True, maxmemory=settings.redis_maxmemory
    )
    try:
        url = embedded.start()
    except DataDirInUse:  # a broker runs on this data folder: use its redis-server
        running = EmbeddedRedis.running_url(embedded.data_dir)
        if running is None:
            raise click.ClickException(f"{embedded.data_dir} is in use, but holds no Redis URL") from None
        yield running
        return
    except (RuntimeError, OSError) as exc:
        raise click.ClickException(f"cannot start the embedded redis-server: {exc}") from None
    try:
        yield url
    finally:
        embedded.stop()
