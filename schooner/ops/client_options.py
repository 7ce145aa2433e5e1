"""How the CLI and the console reach a broker as a Kafka client: the address and the client security
settings, as click options and as a librdkafka configuration.

The names follow Kafka's client properties (`security.protocol`, `sasl.mechanism`, ...), so a user
can move a working client configuration over; `-X key=value` passes anything else to librdkafka.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import click

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ClientSettings:
    """Everything a Kafka client needs to connect and log in."""

    bootstrap_servers: str = "localhost:9092"
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_keyfile_password: str | None = None
    timeout_s: float = 10.0
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.security_protocol not in PROTOCOLS:
            raise ValueError(f"security protocol must be one of {', '.join(PROTOCOLS)}")
        if self.sasl_mechanism is not None and self.sasl_mechanism not in MECHANISMS:
            raise ValueError(f"SASL mechanism must be one of {', '.join(MECHANISMS)}")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def with_login(self, username: str, password: str) -> ClientSettings:
        return replace(self, sasl_username=username, sasl_password=password)

    def librdkafka(self) -> dict[str, Any]:
        """The settings as a confluent-kafka configuration dict."""
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
        }
        if self.uses_sasl:
            conf["sasl.mechanism"] = self.sasl_mechanism or "PLAIN"
            if self.sasl_username is not None:
                conf["sasl.username"] = self.sasl_username
            if self.sasl_password is not None:
                conf["sasl.password"] = self.sasl_password
        for key, value in (
            ("ssl.ca.location", self.ssl_cafile),
            ("ssl.certificate.location", self.ssl_certfile),
            ("ssl.key.location", self.ssl_keyfile),
            ("ssl.key.password", self.ssl_keyfile_password),
        ):
            if value is not None:
                conf[key] = value
        conf.update(self.extra)
        return conf


def _extra(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not key=value", param_hint="-X")
        out[key.strip()] = value
    return out


F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = [
    click.option(
        "--bootstrap-server", "-b", "bootstrap_server", envvar="SCHOONER_BOOTSTRAP_SERVER",
        default="localhost:9092", show_default=True, metavar="HOST:PORT[,HOST:PORT]",
        help="A broker to start from.",
    ),
    click.option(
        "--security-protocol", envvar="SCHOONER_SECURITY_PROTOCOL", default="PLAINTEXT", show_default=True,
        type=click.Choice(PROTOCOLS, case_sensitive=False),
    ),
    click.option("--sasl-mechanism", envvar="SCHOONER_SASL_MECHANISM",
                 type=click.Choice(MECHANISMS, case_sensitive=False)),
    click.option("--sasl-username", envvar="SCHOONER_SASL_USERNAME"),
    click.option("--sasl-password", envvar="SCHOONER_SASL_PASSWORD",
                 help="Better given in the environment (SCHOONER_SASL_PASSWORD) than on the command line."),
    click.option("--ssl-cafile", envvar="SCHOONER_SSL_CAFILE", help="CA certificates to trust (PEM)."),
    click.option("--ssl-certfile", envvar="SCHOONER_SSL_CERTFILE", help="Client certificate (PEM)."),
    click.option("--ssl-keyfile", envvar="SCHOONER_SSL_KEYFILE", help="Client key (PEM), for mTLS."),
    click.option("--ssl-keyfile-password", envvar="SCHOONER_SSL_KEYFILE_PASSWORD"),
    click.option("--request-timeout", envvar="SCHOONER_REQUEST_TIMEOUT", type=click.FloatRange(min=0.1),
                 default=10.0, show_default=True, metavar="SECONDS",
                 help="How long to wait for a broker's answer."),
    click.option("-X", "extra", multiple=True, metavar="KEY=VALUE",
                 help="Any other librdkafka setting; repeatable."),
]  # fmt: skip


def with_client_options(fn: F) -> F:
    """Adds the client options to a click command, which receives them as one `client: ClientSettings`."""

    @functools.wraps(fn)  # carries over the click options declared beneath this decorator
    def build(**kwargs: Any) -> Any:
        try:
            client = ClientSettings(
                bootstrap_servers=kwargs.pop("bootstrap_server"),
                security_protocol=kwargs.pop("security_protocol").upper(),
                sasl_mechanism=(m.upper() if (m := kwargs.pop("sasl_mechanism")) else None),
                sasl_username=kwargs.pop("sasl_username"),
                sasl_password=kwargs.pop("sasl_password"),
                ssl_cafile=kwargs.pop("ssl_cafile"),
                ssl_certfile=kwargs.pop("ssl_certfile"),
                ssl_keyfile=kwargs.pop("ssl_keyfile"),
                ssl_keyfile_password=kwargs.pop("ssl_keyfile_password"),
                timeout_s=kwargs.pop("request_timeout"),
                extra=_extra(kwargs.pop("extra")),
            )
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        return fn(client=client, **kwargs)

    command: Any = build
    for option in reversed(_OPTIONS):
        command = option(command)
    return command  # type: ignore[no-any-return]
