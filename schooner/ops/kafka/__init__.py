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
    """A client call failed; the message is fit to show a user as it is. `code` is Kafka's error name
    (TOPIC_AUTHORIZATION_FAILED, _TIMED_OUT, ...) when the failure came from Kafka, else empty."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


# The last login failure librdkafka reported per (bootstrap servers, user): a refused login only reaches
# error_cb, while the call that then fails says no more than "transport failure".
_LOGIN_FAILURES: dict[tuple[str, str | None], KafkaError] = {}
_AUTH_CODES = (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)


def quiet(conf: dict[str, Any]) -> dict[str, Any]:
    """librdkafka logs connection failures to stderr itself; the CLI reports one line of its own. The
    error callback remembers a refused login, for describe() to name."""
    where = (str(conf.get("bootstrap.servers")), conf.get("sasl.username"))

    def remember(error: KafkaError) -> None:
        if error.code() in _AUTH_CODES:
            _LOGIN_FAILURES[where] = error

    return {"log_level": 0, "error_cb": remember, **conf}


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
            login = _LOGIN_FAILURES.get((settings.bootstrap_servers, settings.sasl_username))
            if login is not None:
                return f"authentication failed: {login.str()}"
            return f"no broker answered at {settings.bootstrap_servers} ({error.str()})"
        if code in _AUTH_CODES:
            return f"authentication failed: {error.str()}"
        return f"{error.name()}: {error.str()}"
    return str(error) or type(error).__name__


def failure(error: KafkaError | Exception, settings: ClientSettings | None = None) -> KafkaFailure:
    """The KafkaFailure of a client failure: describe()'s sentence, and Kafka's error name as its code."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        error = error.args[0]
    code = str(error.name()) if isinstance(error, KafkaError) else ""
    return KafkaFailure(describe(error, settings), code)


def no_answer(settings: ClientSettings) -> KafkaFailure:
    waited = f"{settings.timeout_s:g}s"
    return KafkaFailure(f"no answer from {settings.bootstrap_servers} in {waited}", "_TIMED_OUT")


def result(future: Future[T], settings: ClientSettings) -> T:
    """Waits for an admin future, with the settings' timeout; failures become KafkaFailure."""
    try:
        return future.result(timeout=settings.timeout_s + 5)  # librdkafka's own timeout fires first
    except TimeoutError:
        raise no_answer(settings) from None
    except (KafkaException, ValueError, TypeError) as exc:
        raise failure(exc, settings) from None
