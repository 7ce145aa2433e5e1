"""How the CLI reaches a schema registry (Schooner's own, in every broker, or Confluent's): the address and
the HTTP Basic login as click options, confluent-kafka's SchemaRegistryClient built from them, and a
registry's refusal turned into one line (Confluent's error message) on stderr and exit status 1.

confluent-kafka's client is imported when a command first needs it: it costs a third of a second of start,
which `schooner produce` without a schema format should not pay.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click
import httpx

from ..schemas import AVRO, Dependency

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

DEFAULT_URL = "http://127.0.0.1:8081"
URL_ENV = "SCHOONER_SCHEMA_REGISTRY_URL"
USER_ENV = "SCHOONER_SCHEMA_REGISTRY_USER"
PASSWORD_ENV = "SCHOONER_SCHEMA_REGISTRY_PASSWORD"
# Refused answers that no retry or other record can mend: a command stops on them rather than going on.
FATAL_STATUSES = (401, 403)


class RegistryFailure(click.ClickException):
    """A registry refused or did not answer; the message is fit to show as it is."""

    def __init__(self, message: str, status: int | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code

    @property
    def fatal(self) -> bool:
        """True when every further request would fail the same way (no answer, a refused login)."""
        return self.status is None or self.status in FATAL_STATUSES


@dataclass(frozen=True)
class RegistrySettings:
    url: str = DEFAULT_URL
    user: str | None = None
    password: str | None = None
    timeout_s: float = 10.0

    def client(self) -> SchemaRegistryClient:
        from confluent_kafka.schema_registry import SchemaRegistryClient

        conf: dict[str, Any] = {
            "url": self.url,
            "timeout": self.timeout_s,
            # Its defaults (3 retries from 1 s, doubling) keep a command waiting ~7 s for a registry that is
            # not there; one quick retry still rides over a registry restarting.
            "max.retries": 1,
            "retries.wait.ms": 200,
        }
        if self.user is not None:
            conf["basic.auth.user.info"] = f"{self.user}:{self.password or ''}"
        try:
            return SchemaRegistryClient(conf)
        except (ValueError, TypeError) as exc:  # a URL that is not http(s)://, credentials in it and --user
            raise click.BadParameter(str(exc), param_hint="--registry") from None

    def http(self) -> httpx.Client:
        """For the calls SchemaRegistryClient does not make (a compatibility check's messages)."""
        auth = None if self.user is None else httpx.BasicAuth(self.user, self.password or "")
        return httpx.Client(base_url=self.url.rstrip("/"), auth=auth, timeout=self.timeout_s)


@contextmanager
def registry_errors(settings: RegistrySettings) -> Iterator[None]:
    """Turns what a registry call raises into RegistryFailure: Confluent's message and error code, or that
    nothing answered at the URL."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    try:
        yield
    except SchemaRegistryError as exc:
        raise failure(exc.http_status_code, exc.error_code, exc.error_message) from None
    except transport_errors() as exc:
        why = str(exc) or type(exc).__name__
        raise RegistryFailure(f"no schema registry answered at {settings.url} ({why})") from None


@functools.cache
def transport_errors() -> tuple[type[Exception], ...]:
    """httpx's, and httpx2's: confluent-kafka's client prefers httpx2 (httpx's fork) where it is installed."""
    errors: list[type[Exception]] = [httpx.TransportError]
    try:
        import httpx2

        errors.append(httpx2.TransportError)
    except ImportError:
        pass
    return tuple(errors)


def failure(status: int, code: int | None, message: str | None) -> RegistryFailure:
    shown = message or "no message"
    return RegistryFailure(f"{shown} (HTTP {status}, error code {code})", status, code)


def answer(response: httpx.Response) -> Any:
    """The JSON body of an httpx answer; a refusal (Confluent's {"error_code", "message"}) as
    RegistryFailure."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return body
    if isinstance(body, dict) and "message" in body:
        raise failure(response.status_code, body.get("error_code"), str(body["message"]))
    raise failure(response.status_code, -1, response.text.strip()[:200] or response.reason_phrase)


def references(values: Sequence[str]) -> list[SchemaReference]:
    """`--reference name=subject:version` options as Confluent's references, in order."""
    from confluent_kafka.schema_registry import SchemaReference

    out = []
    for value in values:
        name, sep, target = value.partition("=")
        # A subject may hold ':' (a context, ":.ctx:orders"): the version is after the last one.
        subject, colon, version = target.rpartition(":")
        if not sep or not name or not colon or not subject or not version.isdigit():
            raise click.BadParameter(f"{value!r} is not name=subject:version", param_hint="--reference")
        out.append(SchemaReference(name, subject, int(version)))
    return out


def dependencies(client: SchemaRegistryClient, schema: Schema) -> list[Dependency]:
    """The schemas `schema` refers to, transitively, dependencies first and each once: what
    schooner.schemas.parse needs beside the text. Soft-deleted versions count, as the registry's own do."""
    found: list[Dependency] = []
    seen: set[str] = set()

    def walk(refs: Sequence[SchemaReference]) -> None:
        for ref in refs:
            if ref.name is None or ref.subject is None or ref.version is None or ref.name in seen:
                continue
            seen.add(ref.name)
            target = client.get_version(ref.subject, ref.version, deleted=True).schema
            walk(target.references or ())
            found.append(Dependency(ref.name, target.schema_str or ""))

    walk(schema.references or ())
    return found


def schema_type(schema: Schema) -> str:
    """A registry omits the type of an Avro schema."""
    return schema.schema_type or AVRO


F = TypeVar("F", bound=Callable[..., Any])


def _url_option(fn: F) -> F:
    return click.option(
        "--registry",
        "registry_url",
        envvar=URL_ENV,
        default=DEFAULT_URL,
        show_default=True,
        metavar="URL",
        help=f"The schema registry [or {URL_ENV}].",
    )(fn)


def with_registry_options(fn: F) -> F:
    """`--registry URL --user U --password P` for the `schooner schemas` commands, which receive them as
    one `registry: RegistrySettings`."""

    @functools.wraps(fn)  # carries over the click options declared beneath this decorator
    def build(**kwargs: Any) -> Any:
        registry = RegistrySettings(
            kwargs.pop("registry_url"), kwargs.pop("registry_user"), kwargs.pop("registry_password")
        )
        return fn(registry=registry, **kwargs)

    command: Any = click.option(
        "--password",
        "registry_password",
        envvar=PASSWORD_ENV,
        help=f"The user's password; better in {PASSWORD_ENV} than on the command line.",
    )(build)
    command = click.option(
        "--user", "registry_user", envvar=USER_ENV, help="HTTP Basic user: a broker's SASL user."
    )(command)
    return _url_option(command)  # type: ignore[no-any-return]


def with_registry_client_options(fn: F) -> F:
    """`--registry URL --registry-user U --registry-password P` for produce and consume, whose --sasl-*
    options log in to the broker; the command receives `registry_url`, `registry_user` and
    `registry_password` and builds RegistrySettings with registry_of()."""
    command: Any = click.option(
        "--registry-password",
        envvar=PASSWORD_ENV,
        help="The registry user's password [or --sasl-password].",
    )(fn)
    command = click.option(
        "--registry-user", envvar=USER_ENV, help="HTTP Basic user of the registry [or --sasl-username]."
    )(command)
    return _url_option(command)  # type: ignore[no-any-return]


def registry_of(
    url: str, user: str | None, password: str | None, sasl_user: str | None, sasl_password: str | None
) -> RegistrySettings:
    """The registry login of produce and consume: their own, else the broker's SASL user (a Schooner
    registry takes the broker's users)."""
    if user is None:
        user, password = sasl_user, sasl_password
    return RegistrySettings(url, user, password)
