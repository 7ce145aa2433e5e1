"""Compression end to end: the bytes a consumer's fetches carry per record for a compressible JSON
workload, when the producer compressed it (lz4, zstd), with the default compression.type=producer
(each batch served with its producer's codec) beside a topic set to `uncompressed` (served as the
records are stored, one entry each). The producer's own compressed size per record is the yardstick:
Kafka sends a producer's batches on as they came.

The producer is this process, sending record batches built with aiokafka's builder (the codec
libraries Kafka clients use) over Produce requests, so its batch sizes are known exactly; the
consumer is bench/fetch.py's wire client, which counts the records fields of each response.
"""

from __future__ import annotations

import random
import sys
import time
from typing import Any

from aiokafka.record._crecords import DefaultRecordBatchBuilder
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.protocol.records import CODEC_LZ4, CODEC_ZSTD

from .fetch import wire_consume
from .produce import produce_frame, wire_produce
from .servers import BenchServers, Endpoints

MESSAGES = 100_000
RUNS = 3
BATCH_RECORDS = 1_000
CODECS = {"lz4": CODEC_LZ4, "zstd": CODEC_ZSTD}
_PAGES = ["/", "/search", "/products/item", "/cart", "/checkout", "/account/orders"]
_EVENTS = ["page_view", "click", "add_to_cart", "purchase"]


def json_records(count: int, seed: int = 7) -> list[bytes]:
    """Event records of about 200 bytes, as a web analytics topic carries: repeated field names and
    a few values, varying ids and times."""
    rng = random.Random(seed)
    base = 1_760_000_000_000
    return [
        (
            b'{"event_id":"%08x-%04x","user_id":%d,"event":"%s","page":"%s","ts":%d,'
            b'"session":{"device":"%s","country":"%s"},"amount":%d.%02d}'
        )
        % (
            rng.getrandbits(32),
            rng.getrandbits(16),
            rng.randrange(1_000_000),
            rng.choice(_EVENTS).encode(),
            rng.choice(_PAGES).encode(),
            base + i * 7,
            rng.choice([b"mobile", b"desktop", b"tablet"]),
            rng.choice([b"DE", b"FR", b"US", b"GB", b"JP"]),
            rng.randrange(500),
            rng.randrange(100),
        )  # fmt: skip
        for i in range(count)
    ]


def producer_batches(records: list[bytes], codec: int) -> list[bytes]:
    stamp = int(time.time() * 1000)
    batches = []
    for start in range(0, len(records), BATCH_RECORDS):
        builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 2**31 - 1)
        for i, value in enumerate(records[start : start + BATCH_RECORDS]):
            builder.append(i, stamp, None, value, [])
        batches.append(bytes(builder.build()))
    return batches


def produce_batches(bootstrap: str, topic: str, batches: list[bytes]) -> None:
    """One Produce (acks=1) per batch, one in flight."""
    frames = [produce_frame(topic, batch, n, "bench-compression") for n, batch in enumerate(batches, 1)]
    wire_produce(bootstrap, frames, 0, in_flight=1)


def run(ep: Endpoints, messages: int = MESSAGES, runs: int = RUNS) -> dict[str, Any]:
    records = json_records(messages)
    raw_bytes = sum(len(r) for r in records) / messages
    admin = AdminClient({"bootstrap.servers": ep.bootstrap})
    out: dict[str, Any] = {"messages": messages, "value_bytes": round(raw_bytes, 1), "codecs": {}}
    for name, codec in CODECS.items():
        batches = producer_batches(records, codec)
        figures: dict[str, list[float]] = {
            "e2e_bytes": [],
            "plain_bytes": [],
            "e2e_rate": [],
            "plain_rate": [],
        }
        for run_no in range(runs):
            topics = {"e2e": f"bench-codec-{name}-{run_no}", "plain": f"bench-codec-{name}-{run_no}-plain"}
            new = [
                NewTopic(topics["e2e"], 1, 1),
                NewTopic(topics["plain"], 1, 1, config={"compression.type": "uncompressed"}),
            ]
            for future in admin.create_topics(new).values():
                future.result(30)
            for topic in topics.values():
                produce_batches(ep.bootstrap, topic, batches)
            for kind in ("plain", "e2e") if run_no % 2 else ("e2e", "plain"):  # alternate the order
                w = wire_consume(ep.bootstrap, topics[kind], messages)
                figures[f"{kind}_bytes"].append(w.record_bytes / messages)
                figures[f"{kind}_rate"].append(w.msgs_per_s)
            for future in admin.delete_topics(list(topics.values())).values():
                future.result(30)
        e2e, plain = _median(figures["e2e_bytes"]), _median(figures["plain_bytes"])
        out["codecs"][name] = {
            "producer_bytes_per_record": round(sum(len(b) for b in batches) / messages, 1),
            "fetch_bytes_per_record": round(e2e, 1),
            "uncompressed_fetch_bytes_per_record": round(plain, 1),
            "bytes_ratio": round(plain / e2e, 2),
            "fetch_msgs_per_s": round(_median(figures["e2e_rate"])),
            "uncompressed_fetch_msgs_per_s": round(_median(figures["plain_rate"])),
        }
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main() -> int:
    with BenchServers() as ep:
        out = run(ep)
    print(f"{out['messages']:,} JSON records of {out['value_bytes']:.0f} B on average")
    for name, c in out["codecs"].items():
        print(
            f"{name}: producer {c['producer_bytes_per_record']} B/record; "
            f"fetch {c['fetch_bytes_per_record']} B/record end to end, "
            f"{c['uncompressed_fetch_bytes_per_record']} uncompressed "
            f"({c['bytes_ratio']}x); fetch {c['fetch_msgs_per_s']:,} msgs/s end to end, "
            f"{c['uncompressed_fetch_msgs_per_s']:,} uncompressed"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
