"""Many partitions: produce and fetch throughput on a 1,000-partition topic divided by a 10-partition one.

The figure is the broker's cost per partition, not the batching effect: both runs send the same requests.
A raw-protocol producer (Produce v9, acks=1) sends requests that each carry one 10-record batch of 100-byte
records for each of 10 partitions (100 records a request), on 4 connections with 8 requests in flight on
each. On the 10-partition topic every request names all 10 partitions; on the 1,000-partition topic the
requests take the partitions 10 at a time in turn, so each partition gets a batch every 100 requests, as
from a thousand producers that each send now and then. The batch and the request bytes are built once,
so the client costs next to nothing per request.
While it produces, one raw-protocol consumer (Fetch v12 with a KIP-227 fetch session, min_bytes 1,
max_wait 500 ms) reads every partition from offset 0, counting records from the batch headers; it sends
only the partitions whose offset moved (incremental fetches), so the broker's parked fetches, wake-ups
and session bookkeeping are all exercised.
Produce throughput is records acknowledged per second (first request to last response); fetch throughput
is records read per second (first request to the last record read). The ratios are 1,000 / 10 within a
round (the two take turns at going first), medians of the rounds; the target is >= 0.8 for produce. The
broker's and Redis's CPU microseconds per record are given too: steadier on a machine shared with other work.
`python -m bench.partitions` runs it alone against its own servers; the suite calls run() (`--skip
partitions` leaves it out).
"""

from __future__ import annotations

import asyncio
import datetime
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16, i32

from schooner.protocol.client import decode_response, encode_request
from schooner.protocol.records import CODEC_NONE, BatchBuilder

from .fetch import _count_records
from .produce import bench_value
from .servers import BenchServers, CpuMeter, Endpoints

MESSAGES = 200_000
RUNS = 5
COUNTS = (10, 1000)
TARGET = 0.8
BATCH_RECORDS = 10
PARTITIONS_PER_REQUEST = 10
CONNECTIONS = 4
IN_FLIGHT = 8
FETCH_WAIT_MS = 500
PARTITION_MAX_BYTES = 1048576
MAX_BYTES = 52428800
_CORRELATION = slice(8, 12)  # in a framed request: size, api key, api version, then the correlation id
_CLIENT = "bench-partitions"


@dataclass(frozen=True, slots=True)
class PartitionsRun:
    partitions: int
    messages: int
    produce_seconds: float
    produce_msgs_per_s: float
    fetch_seconds: float
    fetch_msgs_per_s: float
    fetches: int
    cpu: dict[str, float]  # share of a core over the run: broker, redis, client, other
    broker_us_per_record: float
    redis_us_per_record: float


def produce_batch(records: int = BATCH_RECORDS) -> bytes:
    """One v2 record batch of `records` 100-byte values without keys (no producer id: not idempotent)."""
    builder = BatchBuilder(0, CODEC_NONE)
    now = int(time.time() * 1000)
    value = bench_value()
    for i in range(records):
        builder.append(i, now, None, value, [])
    return builder.build()


def produce_requests(topic: str, partitions: int, per_request: int = PARTITIONS_PER_REQUEST) -> list[bytes]:
    """Framed Produce requests (correlation id 0, patched when sent): each names `per_request`
    partitions with one batch each; together they cover every partition once."""
    batch = produce_batch()
    out = []
    for first in range(0, partitions, per_request):
        data = tuple(
            PartitionProduceData(index=i32(p), records=batch)
            for p in range(first, min(first + per_request, partitions))
        )
        request = ProduceRequest(
            transactional_id=None,
            acks=i16(1),
            timeout=datetime.timedelta(seconds=30),
            topic_data=(TopicProduceData(name=topic, partition_data=data),),
        )
        out.append(encode_request(request, 0, _CLIENT))
    return out


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = int.from_bytes(await reader.readexactly(4), "big")
    return await reader.readexactly(size)


async def _produce_connection(host: str, port: int, requests: list[bytes], sample: ProduceRequest) -> int:
    """Sends these requests with IN_FLIGHT outstanding; checks every partition's answer. Records sent."""
    reader, writer = await asyncio.open_connection(host, port)
    slots = asyncio.Semaphore(IN_FLIGHT)
    records = 0

    async def receive() -> None:
        nonlocal records
        for _ in requests:
            _, response = decode_response(await _read_frame(reader), sample)
            slots.release()
            for topic in response.responses:
                for p in topic.partition_responses:
                    if p.error_code != 0:
                        raise RuntimeError(f"Produce to partition {p.index} failed: {p.error_code}")
                    records += BATCH_RECORDS

    receiving = asyncio.ensure_future(receive())
    try:
        for n, framed in enumerate(requests, 1):
            await slots.acquire()
            if receiving.done():
                break
            message = bytearray(framed)
            message[_CORRELATION] = n.to_bytes(4, "big")
            writer.write(message)
        await receiving
    finally:
        receiving.cancel()
        writer.close()
    return records


async def _produce(ep: Endpoints, topic: str, partitions: int, messages: int) -> tuple[int, float]:
    """Records acknowledged and the seconds from the first request to the last response."""
    groups = produce_requests(topic, partitions)
    per_request = BATCH_RECORDS * min(PARTITIONS_PER_REQUEST, partitions)
    total = messages // per_request
    # Request i goes to connection i % CONNECTIONS and covers group i % len(groups).
    plans = [[groups[i % len(groups)] for i in range(c, total, CONNECTIONS)] for c in range(CONNECTIONS)]
    sample = ProduceRequest(transactional_id=None, acks=i16(1), timeout=datetime.timedelta(seconds=30),
                            topic_data=())  # fmt: skip
    host, _, port = ep.bootstrap.rpartition(":")
    start = time.perf_counter()
    done = await asyncio.gather(*(_produce_connection(host, int(port), plan, sample) for plan in plans))
    return sum(done), time.perf_counter() - start


def _fetch_request(
    topic: str, offsets: dict[int, int], wanted: list[int], session_id: int, epoch: int
) -> FetchRequest:
    return FetchRequest(
        max_wait=datetime.timedelta(milliseconds=FETCH_WAIT_MS),
        min_bytes=i32(1),
        max_bytes=i32(MAX_BYTES),
        isolation_level=0,
        session_id=i32(session_id),
        session_epoch=i32(epoch),
        topics=(
            FetchTopic(
                topic=topic,
                partitions=tuple(
                    FetchPartition(
                        partition=i32(p),
                        fetch_offset=offsets[p],  # type: ignore[arg-type]
                        partition_max_bytes=i32(PARTITION_MAX_BYTES),
                    )
                    for p in wanted
                ),
            ),
        )
        if wanted
        else (),
        forgotten_topics_data=(),
    )


async def _consume(ep: Endpoints, topic: str, partitions: int, expected: int) -> tuple[int, int, float]:
    """Reads every partition from 0 until `expected` records: (records, fetches, perf_counter() at the
    last record). A fetch session: after the first, fetches name the partitions that moved."""
    host, _, port = ep.bootstrap.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    offsets = dict.fromkeys(range(partitions), 0)
    wanted = list(range(partitions))
    session_id, epoch = 0, 0
    records = fetches = 0
    try:
        while records < expected:
            request = _fetch_request(topic, offsets, wanted, session_id, epoch)
            fetches += 1
            writer.write(encode_request(request, fetches, _CLIENT))
            _, response = decode_response(await _read_frame(reader), request)
            if response.error_code != 0:
                raise RuntimeError(f"Fetch failed: {response.error_code}")
            session_id, epoch = response.session_id, epoch + 1
            wanted = []
            for t in response.responses:
                for p in t.partitions:
                    if p.error_code != 0:
                        raise RuntimeError(f"Fetch of partition {p.partition_index} failed: {p.error_code}")
                    if p.records:
                        count, offsets[p.partition_index] = _count_records(
                            p.records, offsets[p.partition_index]
                        )
                        records += count
                        wanted.append(p.partition_index)
        ended = time.perf_counter()
    finally:
        writer.close()
    return records, fetches, ended


async def _both(
    ep: Endpoints, topic: str, partitions: int, messages: int
) -> tuple[int, float, int, int, float]:
    consumer = asyncio.ensure_future(_consume(ep, topic, partitions, messages))
    await asyncio.sleep(0.2)  # the consumer's first fetch is parked before the first record
    start = time.perf_counter()
    produced, produce_seconds = await _produce(ep, topic, partitions, messages)
    read, fetches, ended = await asyncio.wait_for(consumer, 120)
    # Both from the first Produce request: reading cannot finish before producing does.
    return produced, produce_seconds, read, fetches, ended - start


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=60)
    for future in futures.values():
        future.result(120)


def run_once(ep: Endpoints, topic: str, partitions: int, messages: int) -> PartitionsRun:
    """Creates the topic, then produces `messages` records to it while one consumer reads them all."""
    create_topic(ep.bootstrap, topic, partitions)
    per_request = BATCH_RECORDS * min(PARTITIONS_PER_REQUEST, partitions)
    messages -= messages % per_request
    meter = CpuMeter(ep)
    meter.start()
    produced, produce_seconds, read, fetches, fetch_seconds = asyncio.run(
        _both(ep, topic, partitions, messages)
    )
    wall = max(produce_seconds, fetch_seconds)
    cpu = meter.stop()
    if produced != messages or read != messages:
        raise RuntimeError(f"{topic}: {produced} records acknowledged and {read} read, {messages} sent")
    # The meter's shares are over its own interval (topic creation aside), so close to `wall`.
    return PartitionsRun(
        partitions, messages, produce_seconds, messages / produce_seconds, fetch_seconds,
        messages / fetch_seconds, fetches, cpu,
        round(cpu["broker"] * wall / messages * 1e6, 2), round(cpu["redis"] * wall / messages * 1e6, 2),
    )  # fmt: skip


def run(
    ep: Endpoints, messages: int = MESSAGES, runs: int = RUNS, counts: tuple[int, int] = COUNTS
) -> dict[str, Any]:
    few, many = counts
    listed: dict[int, list[PartitionsRun]] = {few: [], many: []}
    for n in range(runs):
        order = (few, many) if n % 2 == 0 else (many, few)
        for partitions in order:
            stamp = time.monotonic_ns()
            result = run_once(ep, f"bench-partitions-{partitions}-{n}-{stamp}", partitions, messages)
            listed[partitions].append(result)
            print(
                f"  partitions run {n + 1}: {partitions} partitions, "
                f"produce {result.produce_msgs_per_s:,.0f} msgs/s, "
                f"fetch {result.fetch_msgs_per_s:,.0f} msgs/s, "
                f"broker {result.broker_us_per_record} us/record",
                file=sys.stderr,
                flush=True,
            )
    out: dict[str, Any] = {
        "partitions": list(counts),
        "messages": messages,
        "runs": runs,
        "target_ratio": TARGET,
        "batch_records": BATCH_RECORDS,
        "partitions_per_request": PARTITIONS_PER_REQUEST,
        "connections": CONNECTIONS,
        "in_flight": IN_FLIGHT,
    }
    for label, partitions in (("few", few), ("many", many)):
        rs = listed[partitions]
        out[f"{label}_produce_msgs_per_s"] = round(statistics.median(r.produce_msgs_per_s for r in rs))
        out[f"{label}_fetch_msgs_per_s"] = round(statistics.median(r.fetch_msgs_per_s for r in rs))
        out[f"{label}_broker_us_per_record"] = round(statistics.median(r.broker_us_per_record for r in rs), 2)
        out[f"{label}_redis_us_per_record"] = round(statistics.median(r.redis_us_per_record for r in rs), 2)
        out[f"{label}_fetches"] = round(statistics.median(r.fetches for r in rs))
        out[f"{label}_runs"] = [asdict(r) for r in rs]
    for kind in ("produce", "fetch"):
        out[f"{kind}_ratio"] = _paired(
            [getattr(r, f"{kind}_msgs_per_s") for r in listed[many]],
            [getattr(r, f"{kind}_msgs_per_s") for r in listed[few]],
        )
    out["broker_cpu_ratio"] = _paired(
        [r.broker_us_per_record for r in listed[many]], [r.broker_us_per_record for r in listed[few]]
    )
    out["redis_cpu_ratio"] = _paired(
        [r.redis_us_per_record for r in listed[many]], [r.redis_us_per_record for r in listed[few]]
    )
    return out


def _paired(many: list[float], few: list[float]) -> float:
    """The median of each round's many/few: the two ran back to back, so noise hits both."""
    return round(statistics.median(m / f if f else float("nan") for m, f in zip(many, few, strict=True)), 3)


def main() -> int:
    with BenchServers() as ep:
        out = run(ep)
    few, many = out["partitions"]
    for kind in ("produce", "fetch"):
        print(
            f"{kind}: {many} partitions {out[f'many_{kind}_msgs_per_s']:,} msgs/s, {few} partitions "
            f"{out[f'few_{kind}_msgs_per_s']:,} msgs/s, ratio {out[f'{kind}_ratio']:.3f}"
            + (f" (target >= {TARGET})" if kind == "produce" else "")
        )
    print(
        f"CPU us per record, broker: {out['many_broker_us_per_record']} / {out['few_broker_us_per_record']} "
        f"(ratio {out['broker_cpu_ratio']}); redis: {out['many_redis_us_per_record']} / "
        f"{out['few_redis_us_per_record']} (ratio {out['redis_cpu_ratio']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
