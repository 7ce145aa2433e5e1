"""The base of every workload: a thread that runs one client after another until stopped, records each
operation it performs in the history, and keeps the client errors it saw instead of raising them."""

from __future__ import annotations

import random
import threading
import time
import traceback
from abc import ABC, abstractmethod
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from ..history import History, Status

MAX_ERRORS = 500  # kept for the report; a long outage must not grow them without bound
RESTART_PAUSE_S = 0.5  # between a client that failed and its replacement

# librdkafka settings every confluent-kafka client of a run shares: short backoffs so that a client
# reconnects soon after a fault heals, moderate timeouts so that a call never blocks for long.
CONFLUENT_COMMON: dict[str, Any] = {
    "reconnect.backoff.ms": 100,
    "reconnect.backoff.max.ms": 1000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1000,
    "socket.timeout.ms": 10000,
    "socket.connection.setup.timeout.ms": 5000,
    "topic.metadata.refresh.interval.ms": 5000,
    "log_level": 0,  # connection errors during faults would flood stderr; error_cb keeps them
}

# Errors of a group commit the coordinator answered with a refusal: the offsets were not written.
REFUSED_COMMIT = {
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.FENCED_INSTANCE_ID,
    KafkaError._ASSIGNMENT_LOST,
    KafkaError.STALE_MEMBER_EPOCH,
    KafkaError.FENCED_MEMBER_EPOCH,
}


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The KafkaError a confluent-kafka exception carries, if any."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def text(value: bytes | str | None) -> str | None:
    """A record value as the history writes it."""
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "replace")


def record_of(m: Message) -> list[Any]:
    """[topic, partition, offset, value] of a consumed record, as the history writes it."""
    return [m.topic(), m.partition(), m.offset(), text(m.value())]


class Workload(threading.Thread, ABC):
    """One workload: `session()` runs a client from creation to close; a session that raises is
    recorded as an error and replaced after a short pause, until stop() is called."""

    def __init__(self, name: str, bootstrap: str, history: History, rng_seed: int, **options: Any) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap = bootstrap
        self.history = history
        self.rng = random.Random(rng_seed)
        self.options = options
        self.stop_event = threading.Event()
        self.errors: list[str] = []
        self.error_count = 0
        self.instances = 0  # clients created so far: each gets its own id
        self.sessions = 0  # continuous reads begun so far
        self.session_id = ""  # the current one's, as poll ops name it
        self.drain_s = float(options.get("drain_s", 5.0))  # how long stop() waits for in-flight work
        self._lock = threading.Lock()

    def stop(self) -> None:
        self.stop_event.set()

    @property
    def stopping(self) -> bool:
        return self.stop_event.is_set()

    def run(self) -> None:
        while not self.stopping:
            try:
                self.session()
            except Exception as exc:  # never out of the thread: recorded, then a new client
                where = traceback.extract_tb(exc.__traceback__)[-1]
                self.error(f"session ended by {type(exc).__name__}: {exc} ({where.filename}:{where.lineno})")
            self.stop_event.wait(RESTART_PAUSE_S)  # a client that had to go is not replaced in a tight loop

    @abstractmethod
    def session(self) -> None:
        """Creates a client, works with it until stopping (or until it must be replaced), closes it and
        records whatever it left unresolved."""

    def new_instance(self) -> str:
        """The id of a new client instance of this workload (a producer's `producer`, a member)."""
        self.instances += 1
        return f"{self.name}.{self.instances}"

    def new_session(self, member: str) -> None:
        """A new continuous read of this member (after an assignment change, a rewind, a restart or a
        new pass): session_id names it."""
        self.sessions += 1
        self.session_id = f"{member}/{self.sessions}"

    def error(self, message: str) -> None:
        with self._lock:
            self.error_count += 1
            if len(self.errors) < MAX_ERRORS:
                self.errors.append(f"{self.history.now():.3f} {message}")

    def on_client_error(self, err: KafkaError) -> None:
        """confluent-kafka's error_cb: most are transient (the client retries); kept for the report."""
        self.error(f"client: {err}")

    def confluent_config(self, **extra: Any) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "error_cb": self.on_client_error,
            **CONFLUENT_COMMON,
            **extra,
        }

    def record(self, f: str, status: Status, start: float, **value: Any) -> None:
        self.history.record(self.name, f, status, start, value)

    def pause(self, seconds: float) -> None:
        """Sleeps unless stopped meanwhile."""
        self.stop_event.wait(seconds)


class Pacer:
    """Spaces operations `rate` per second apart, catching up a little after a stall but never bursting."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.next = time.monotonic()

    def wait(self, stop: threading.Event) -> None:
        now = time.monotonic()
        if self.next > now:
            stop.wait(self.next - now)
        self.next = max(self.next, time.monotonic() - 10 * self.interval) + self.interval
