"""The CLI's and the console's Kafka client side: confluent-kafka (librdkafka) clients built from
ClientSettings, and the translation of its failures into one readable sentence."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from ..client_options import ClientSettings

T = TypeVar("T")
C = TypeVar("C")


class KafkaFailure(Exception):
    """A client call failed; the message is fit to show a user as it is."""


def quiet(conf: dict[str, Any]) -> dict[str, Any]:
    """librdkafka logs connection failures to stderr itself; the CLI reports one line of its own."""
    return {"log_level": 0, **conf}


def admin_client(settings: ClientSettings) -> AdminClient:
    return build(AdminClient, quiet(settings.librdkafka()))


def build(kind: Callable[[dict[str, Any]], C], conf: dict[str, Any]) -> C:
    """Makes a client (AdminClient, Producer, Consumer); a configuration librdkafka refuses (a bad `-X`
    pair) becomes KafkaFailure."""
    try:
        return kind(conf)
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else exc
        raise KafkaFailure(
            f"bad client setting: {error.str() if isinstance(error, KafkaError) else error}"
        ) from None
    except (ValueError, TypeError) as exc:
        raise KafkaFailure(f"bad client setting: {exc}") from None


def describe(error: KafkaError | Exception, settings: ClientSettings | None = None) -> str:
    """One sentence for a client failure; names the bootstrap servers when none could be reached."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        error = error.args[0]
    if isinstance(error, KafkaError):
        code = error.code()
        if code in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT) and settings:
            return f"no broker answered at {settings.bootstrap_servers} ({error.str()})"
        if code == KafkaError._AUTHENTICATION or code == KafkaError.SASL_AUTHENTICATION_FAILED:
            return f"authentication failed: {error.str()}"
        return f"{error.name()}: {error.str()}"
    return str(error) or type(error).__name__


def result(future: Future[T], settings: ClientSettings) -> T:
    """Waits for an admin future, with the settings' timeout; failures become KafkaFailure."""
    try:
        return future.result(timeout=settings.timeout_s + 5)  # librdkafka's own timeout fires first
    except TimeoutError:
        waited = f"{settings.timeout_s:g}s"
        raise KafkaFailure(f"no answer from {settings.bootstrap_servers} in {waited}") from None
    except (KafkaException, ValueError, TypeError) as exc:
        raise KafkaFailure(describe(exc, settings)) from None
