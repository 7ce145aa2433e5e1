"""Transactional produce against idempotent produce: the same client, settings and record count, side by
side in one run, and fetch of what each wrote.

Each run sends N 100-byte records to partition 0 of a new topic three times, the three taking turns at
going first: from a transactional producer in transactions of TXN_RECORDS records (begin, produce,
commit); from an idempotent producer (the same settings without the transactional id) that calls flush()
after every TXN_RECORDS records, which is a commit's wait for its records without the transaction; and
from the idempotent producer as one stream. The ratio is the median of each run's transactional /
idempotent rate. Then kcat reads the first transactional topic with read_committed and the first
idempotent topic with read_uncommitted (the same records, with and without transactions), and that one
with read_committed too, which separates the isolation level's own cost. Last, the three produce kinds
run against librdkafka's in-process mock cluster: the client's own cost, which no broker can go below.
`python -m bench.transactions` runs it on its own servers; the suite runs it as the `transactions` figure.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import redis
from confluent_kafka import Producer

from . import fetch, memory, produce, report
from .servers import CpuMeter, Endpoints

TXN_RECORDS = 1000
MESSAGES = 100_000  # per run and kind (the suite takes the smaller of this and its --messages)
RUNS = 7
TXN_TIMEOUT_S = 60.0
# The suite's produce settings; idempotence needs acks=all, so both producers here use it.
IDEMPOTENT_CONFIG: dict[str, str | int | bool] = {
    **{k: v for k, v in produce.PRODUCER_CONFIG.items() if k != "acks"},
    "acks": "all",
    "enable.idempotence": True,
}
TRANSACTIONAL_ID = "bench-txn"
WARMUP_TOPIC = "bench-txn-warmup"
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
# The three ways of producing, which also name their topics (bench-transactional-0, ...).
TRANSACTIONAL = "transactional"
FLUSHED = "flushed"  # idempotent, with a flush() after every TXN_RECORDS records: a commit's wait alone
IDEMPOTENT = "idempotent"
KINDS = (TRANSACTIONAL, FLUSHED, IDEMPOTENT)
# librdkafka's in-process mock cluster (as in first_message.py): the client's own floor.
MOCK_CLUSTER: dict[str, Any] = {"test.mock.num.brokers": 1}
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Run:
    messages: int
    chunks: int  # transactions, or flushes; 1 for the idempotent stream (its one final flush)
    seconds: float  # first produce() (or begin_transaction()) to the return of the last commit or flush
    ending_seconds: float  # the time spent in commit_transaction() or flush() calls
    msgs_per_s: float


@dataclass(slots=True)
class Series:
    """One way of producing, with a producer and a topic per run."""

    name: str
    runs: list[Run] = field(default_factory=list)
    cpu: list[dict[str, float]] = field(default_factory=list)

    def topic(self, run: int) -> str:
        return f"bench-{self.name}-{run}"

    @property
    def rates(self) -> list[float]:
        return [r.msgs_per_s for r in self.runs]

    def figures(self) -> dict[str, Any]:
        n = self.name
        return {
            f"{n}_msgs_per_s": report.median(self.rates),
            f"{n}_ms_per_chunk": report.median([r.seconds / r.chunks * 1000 for r in self.runs]),
            f"{n}_ending_ms_per_chunk": report.median(
                [r.ending_seconds / r.chunks * 1000 for r in self.runs]
            ),
            f"{n}_cpu": {k: round(report.median([c[k] for c in self.cpu]), 3) for k in CpuMeter.NAMES},
            f"{n}_cpu_us_per_record": _us_per_record(self.cpu, self.rates),
            f"{n}_runs": [{**asdict(r), "cpu": c} for r, c in zip(self.runs, self.cpu, strict=True)],
        }


def make_producers(config: dict[str, Any]) -> tuple[Producer, Producer]:
    """(transactional, idempotent) on the cluster `config` names; the transactional one is initialised."""
    base = {**config, **IDEMPOTENT_CONFIG}
    txn = Producer({**base, "transactional.id": TRANSACTIONAL_ID})
    txn.init_transactions(TXN_TIMEOUT_S)
    return txn, Producer(base)


def _produce_one(producer: Producer, topic: str, value: bytes) -> None:
    """produce() to partition 0, serving delivery reports while the client's queue is full."""
    deadline = time.perf_counter() + produce.BUFFER_WAIT_SECONDS
    while True:
        try:
            producer.produce(topic, value, partition=0)
            return
        except BufferError:
            producer.poll(0.005)
            if time.perf_counter() > deadline:
                waited = produce.BUFFER_WAIT_SECONDS
                raise RuntimeError(f"the producer queue was full for {waited} s") from None


def _flush(producer: Producer) -> None:
    if producer.flush(TXN_TIMEOUT_S):
        raise RuntimeError(f"records were still unacknowledged after {TXN_TIMEOUT_S} s")


def produce_in_chunks(
    producer: Producer, topic: str, messages: int, value: bytes, per_chunk: int, transactional: bool
) -> Run:
    """Sends `messages` records in chunks of `per_chunk` (the last may be shorter), each one a transaction
    (begin, produce, commit) or, for an idempotent producer, followed by a flush()."""
    chunks = 0
    ending = 0.0
    sent = 0
    start = time.perf_counter()
    while sent < messages:
        if transactional:
            producer.begin_transaction()
        chunk = min(per_chunk, messages - sent)
        for _ in range(chunk):
            _produce_one(producer, topic, value)
        t0 = time.perf_counter()
        if transactional:
            producer.commit_transaction(TXN_TIMEOUT_S)  # flushes, then EndTxn; raises if anything failed
        else:
            _flush(producer)
        ending += time.perf_counter() - t0
        sent += chunk
        chunks += 1
    seconds = time.perf_counter() - start
    return Run(messages, chunks, seconds, ending, messages / seconds)


def _warm_up(txn_producer: Producer, idem_producer: Producer, value: bytes) -> None:
    """One untimed transaction and one idempotent record: both clients are connected to the broker and
    have their producer ids (an idempotent producer's first one comes after a 500 ms client timer)."""
    produce.warm_up(txn_producer, WARMUP_TOPIC)
    produce.warm_up(idem_producer, WARMUP_TOPIC)
    txn_producer.begin_transaction()
    txn_producer.produce(WARMUP_TOPIC, value, partition=0)
    txn_producer.commit_transaction(TXN_TIMEOUT_S)
    idem_producer.produce(WARMUP_TOPIC, value, partition=0)
    _flush(idem_producer)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _paired(a: list[float], b: list[float]) -> float:
    """The median of each run's a/b: the two ran back to back, so the machine's noise hits both."""
    return report.median([x / y for x, y in zip(a, b, strict=True)])


def _us_per_record(cpu: list[dict[str, float]], rates: list[float]) -> dict[str, float]:
    names = ("broker", "redis", "client")
    return {
        n: round(report.median([c[n] / r * 1e6 for c, r in zip(cpu, rates, strict=True)]), 2) for n in names
    }


def _rotated(items: tuple[T, ...], run: int) -> tuple[T, ...]:
    """Each kind goes first in turn, so none always runs right after another."""
    k = run % len(items)
    return items[k:] + items[:k]


def _produce_rounds(
    config: dict[str, Any],
    messages: int,
    runs: int,
    per_txn: int,
    meter: CpuMeter | None = None,
    check: Callable[[str, int], None] | None = None,
) -> tuple[Series, Series, Series]:
    """Each run: the three kinds in turn, on new topics. config names the cluster; check(topic, entries)
    is told how many stream entries each topic should now hold."""
    value = produce.bench_value()
    txn_producer, idem_producer = make_producers(config)
    txn, flushed, idem = Series(TRANSACTIONAL), Series(FLUSHED), Series(IDEMPOTENT)
    failed = True
    try:
        _warm_up(txn_producer, idem_producer, value)
        for run in range(runs):
            produce.warm_up(txn_producer, txn.topic(run))  # each topic is auto-created here
            produce.warm_up(idem_producer, flushed.topic(run))
            produce.warm_up(idem_producer, idem.topic(run))
            for series in _rotated((txn, flushed, idem), run):
                topic = series.topic(run)
                if meter is not None:
                    meter.start()
                if series is idem:
                    r = produce.produce_topic(idem_producer, topic, messages, value)
                    result = Run(messages, 1, r.seconds, r.seconds - r.enqueue_seconds, r.msgs_per_s)
                else:
                    producer = txn_producer if series is txn else idem_producer
                    result = produce_in_chunks(producer, topic, messages, value, per_txn, series is txn)
                if meter is not None:
                    series.cpu.append(meter.stop())
                series.runs.append(result)
                if check is not None:
                    check(topic, messages + (result.chunks if series is txn else 0))  # + a marker each
            kinds = (txn, flushed, idem)
            said = ", ".join(f"{s.name} {s.runs[-1].msgs_per_s:,.0f}" for s in kinds) + " msgs/s"
            if meter is not None:
                said += f" (other load up to {max(s.cpu[-1]['other'] for s in kinds):.2f} cores)"
            _say(f"  transactions run {run + 1}: {said}")
        failed = False
    finally:
        if failed:
            txn_producer.purge()  # an open transaction is left to the broker's timeout
        produce.close_producer(txn_producer, False)
        produce.close_producer(idem_producer, failed)
    return txn, flushed, idem


def run_produce(ep: Endpoints, client: redis.Redis, messages: int, runs: int, per_txn: int) -> dict[str, Any]:
    def check(topic: str, entries: int) -> None:
        stored = int(client.xlen(ep.keyspace.stream(topic, 0)))
        if stored != entries:
            raise RuntimeError(f"{topic}: its stream holds {stored} entries; {entries} were expected")

    config = {"bootstrap.servers": ep.bootstrap}
    txn, flushed, idem = _produce_rounds(config, messages, runs, per_txn, CpuMeter(ep), check)
    # Stream memory per record (markers included on the transactional side), on the first run's topics.
    txn_bytes, idem_bytes = (
        memory.stream_memory(client, ep.keyspace.stream(s.topic(0), 0)).bytes / messages for s in (txn, idem)
    )
    return {
        "txn_records": per_txn,
        "messages": messages,
        "transactions_per_run": txn.runs[0].chunks,
        "ratio": _paired(txn.rates, idem.rates),
        "flushed_ratio": _paired(flushed.rates, idem.rates),
        "transactional_vs_flushed": _paired(txn.rates, flushed.rates),
        "transactions_per_s": report.median([r.chunks / r.seconds for r in txn.runs]),
        "transactional_stream_bytes_per_record": txn_bytes,
        "idempotent_stream_bytes_per_record": idem_bytes,
        "producer_config": IDEMPOTENT_CONFIG,
        **txn.figures(),
        **flushed.figures(),
        **idem.figures(),
    }


def run_client_floor(messages: int, runs: int, per_txn: int) -> dict[str, Any]:
    """The same against librdkafka's in-process mock cluster: the client's own cost, with no broker."""
    _say("  the same against librdkafka's mock cluster:")
    txn, flushed, idem = _produce_rounds(MOCK_CLUSTER, messages, runs, per_txn)
    return {
        "mock_transactional_msgs_per_s": report.median(txn.rates),
        "mock_flushed_msgs_per_s": report.median(flushed.rates),
        "mock_idempotent_msgs_per_s": report.median(idem.rates),
        "mock_ratio": _paired(txn.rates, idem.rates),
        "mock_transactional_vs_flushed": _paired(txn.rates, flushed.rates),
        "mock_transactional_ms_per_chunk": report.median([r.seconds / r.chunks * 1000 for r in txn.runs]),
        "mock_flushed_ms_per_chunk": report.median([r.seconds / r.chunks * 1000 for r in flushed.runs]),
    }


FETCHES = (
    ("txn_read_committed", Series(TRANSACTIONAL).topic(0), READ_COMMITTED),
    ("idempotent_read_uncommitted", Series(IDEMPOTENT).topic(0), READ_UNCOMMITTED),
    ("idempotent_read_committed", Series(IDEMPOTENT).topic(0), READ_COMMITTED),
)


def run_fetch(ep: Endpoints, messages: int, runs: int) -> dict[str, Any]:
    """kcat reads of the first topics, the three kinds taking turns at going first."""
    found: dict[str, list[fetch.KcatRun]] = {name: [] for name, _, _ in FETCHES}
    for run in range(runs):
        for name, topic, isolation in _rotated(FETCHES, run):
            found[name].append(fetch.kcat_consume(ep.bootstrap, topic, messages, isolation=isolation))
        rates = {name: f"{k[-1].steady_msgs_per_s:,.0f}" for name, k in found.items()}
        _say(f"  transactions fetch run {run + 1} (first record..exit): {rates} msgs/s")
    out: dict[str, Any] = {}
    for name, kcat_runs in found.items():
        out[f"{name}_msgs_per_s"] = report.median([k.msgs_per_s for k in kcat_runs])
        out[f"{name}_steady_msgs_per_s"] = report.median([k.steady_msgs_per_s for k in kcat_runs])
        out[f"{name}_runs"] = [asdict(k) for k in kcat_runs]

    def steady(name: str) -> list[float]:
        return [k.steady_msgs_per_s for k in found[name]]

    out["fetch_ratio"] = _paired(steady("txn_read_committed"), steady("idempotent_read_uncommitted"))
    out["fetch_ratio_start_to_exit"] = _paired(
        [k.msgs_per_s for k in found["txn_read_committed"]],
        [k.msgs_per_s for k in found["idempotent_read_uncommitted"]],
    )
    out["read_committed_ratio"] = _paired(
        steady("idempotent_read_committed"), steady("idempotent_read_uncommitted")
    )
    return out


def run(
    ep: Endpoints, messages: int = MESSAGES, runs: int = RUNS, per_txn: int = TXN_RECORDS
) -> dict[str, Any]:
    client = ep.redis_client()
    try:
        results = run_produce(ep, client, messages, runs, per_txn)
    finally:
        client.close()
    results.update(run_fetch(ep, messages, runs))
    results.update(run_client_floor(messages, runs, per_txn))
    r = results
    _say(
        f"transactions of {per_txn:,} records: {r['transactional_msgs_per_s']:,.0f} msgs/s "
        f"({r['transactions_per_s']:,.0f} transactions/s), idempotent {r['idempotent_msgs_per_s']:,.0f} "
        f"msgs/s, ratio {r['ratio']:.3f}; fetch read_committed/read_uncommitted {r['fetch_ratio']:.3f}"
    )
    return results


def main() -> int:
    from .servers import BenchServers

    with BenchServers() as ep:
        results = run(ep)
    for name, value in results.items():
        if not name.endswith("_runs"):
            print(f"{name:44} {value}")
    other = max(results[f"{kind}_cpu"]["other"] for kind in KINDS)
    if other > report.OTHER_LOAD_WARNING:
        print(f"WARNING: other processes used {other:.2f} cores during the produce runs (disturbed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
