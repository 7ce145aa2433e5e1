"""First-message time of a new producer: a new idempotent producer and a new plain one, each timed from
`Producer()` to the delivery of its one message, side by side in one run.

The same two clients against librdkafka's in-process mock cluster (`test.mock.num.brokers`) give the
client's own figure, with no Schooner and no network in it: the floor a broker cannot go below. With
librdkafka >= 2.10 an idempotent producer's floor is about 0.5 s. The client closes its bootstrap connection
when the first Metadata answer names the real brokers, asks for a producer id in that same moment, finds no
broker up, and looks again only when its fixed 500 ms timer fires (see docs/benchmarks.md).
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Message, Producer, libversion

from .produce import close_producer, warm_up

SAMPLES = 10
TOPIC = "bench-first-message"
FLUSH_TIMEOUT_S = 10.0
# "eos" debug makes the client log when it gets its producer id; both kinds get it, so they stay alike.
BASE_CONFIG: dict[str, str | int | bool] = {"log.connection.close": False, "debug": "eos"}
IDEMPOTENT: dict[str, str | int | bool] = {"enable.idempotence": True}
MOCK_CLUSTER: dict[str, str | int | bool] = {"test.mock.num.brokers": 1}
PID_ACQUIRED = "Acquired PID"  # librdkafka's eos debug line once InitProducerId has answered

# The client's log lines are served by flush() in this thread, so their arrival time is close to their time.
_CLIENT_LOG = logging.getLogger("bench.first_message.client")
_CLIENT_LOG.setLevel(logging.DEBUG)
_CLIENT_LOG.propagate = False


@dataclass(frozen=True, slots=True)
class Sample:
    seconds: float  # Producer() to the return of flush(), with the message delivered
    pid_seconds: float | None  # Producer() to the producer id (None: a plain producer asks for none)


class _PidWatch(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.acquired_at: float | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.acquired_at is None and PID_ACQUIRED in record.getMessage():
            self.acquired_at = time.perf_counter()


def first_message(config: dict[str, Any], topic: str = TOPIC) -> Sample:
    """A new producer with `config` sends one message to partition 0 of `topic` and waits for its delivery."""
    watch = _PidWatch()
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(err)

    _CLIENT_LOG.addHandler(watch)
    try:
        start = time.perf_counter()
        producer = Producer({**BASE_CONFIG, **config}, logger=_CLIENT_LOG)
        failed = True
        try:
            producer.produce(topic, b"first", partition=0, on_delivery=on_delivery)
            left = producer.flush(FLUSH_TIMEOUT_S)
            end = time.perf_counter()
            failed = bool(left or errors)
        finally:
            close_producer(producer, failed)
    finally:
        _CLIENT_LOG.removeHandler(watch)
    if left or errors:
        raise RuntimeError(f"first message not delivered within {FLUSH_TIMEOUT_S} s: {errors or left}")
    pid = None if watch.acquired_at is None else watch.acquired_at - start
    return Sample(end - start, pid)


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def _seconds(samples: list[Sample]) -> list[float]:
    return [s.seconds for s in samples]


def _each_ms(samples: list[Sample]) -> list[float]:
    return [round(s.seconds * 1000, 1) for s in samples]


def side_by_side(target: dict[str, Any], samples: int) -> tuple[list[Sample], list[Sample]]:
    """Plain and idempotent samples taken in turn, so drift in the machine's load hits both alike."""
    first_message(target)  # untimed: the topic exists and the broker has served both kinds once
    first_message({**target, **IDEMPOTENT})
    plain: list[Sample] = []
    idempotent: list[Sample] = []
    for _ in range(samples):
        plain.append(first_message(target))
        idempotent.append(first_message({**target, **IDEMPOTENT}))
    return plain, idempotent


def run(bootstrap: str, samples: int = SAMPLES) -> dict[str, Any]:
    creator = Producer({"bootstrap.servers": bootstrap, "log.connection.close": False})
    try:
        warm_up(creator, TOPIC)
    finally:
        close_producer(creator, False)
    plain, idem = side_by_side({"bootstrap.servers": bootstrap}, samples)
    mock_plain, mock_idem = side_by_side(MOCK_CLUSTER, samples)
    pid = [s.pid_seconds for s in idem if s.pid_seconds is not None]
    after_pid = [s.seconds - s.pid_seconds for s in idem if s.pid_seconds is not None]
    mock_pid = [s.pid_seconds for s in mock_idem if s.pid_seconds is not None]
    plain_s, idem_s = _seconds(plain), _seconds(idem)
    results: dict[str, Any] = {
        "samples": samples,
        "client": f"librdkafka {libversion()[0]}",
        "plain_ms": _ms(plain_s),
        "idempotent_ms": _ms(idem_s),
        "ratio": round(statistics.median(idem_s) / statistics.median(plain_s), 1),
        "idempotent_pid_ms": _ms(pid) if pid else None,
        "idempotent_after_pid_ms": _ms(after_pid) if after_pid else None,
        "mock_plain_ms": _ms(_seconds(mock_plain)),
        "mock_idempotent_ms": _ms(_seconds(mock_idem)),
        "mock_idempotent_pid_ms": _ms(mock_pid) if mock_pid else None,
        "plain_runs_ms": _each_ms(plain),
        "idempotent_runs_ms": _each_ms(idem),
        "mock_plain_runs_ms": _each_ms(mock_plain),
        "mock_idempotent_runs_ms": _each_ms(mock_idem),
    }
    r = results
    print(
        f"first message of a new producer, median of {samples}: idempotent {r['idempotent_ms']} ms "
        f"(producer id after {r['idempotent_pid_ms']} ms), plain {r['plain_ms']} ms, ratio {r['ratio']}; "
        f"librdkafka mock cluster: idempotent {r['mock_idempotent_ms']} ms, plain {r['mock_plain_ms']} ms",
        file=sys.stderr,
    )
    return results


def main() -> int:
    from .servers import BenchServers

    with BenchServers() as ep:
        print(run(ep.bootstrap))
    return 0


if __name__ == "__main__":
    sys.exit(main())
