"""What schema validation on produce costs, and how fast the schema registry answers lookups by id.

Two figures from one broker (the suite's, or one of its own when run alone):

- *Validated / unvalidated produce.* Each run creates two one-partition topics with CreateTopics, one with
  `confluent.value.schema.validation=true` and one without, and produces the same N records to each with
  the produce figure's client (bench/produce.py: one confluent-kafka `Producer`, the suite's settings,
  `produce_topic`). The records are a real Avro payload: one event record serialized by confluent-kafka's
  `AvroSerializer`, which registers its schema under the validated topic's subject (`<topic>-value`,
  TopicNameStrategy) in the broker's registry and frames it (magic byte 0 and the 4-byte schema id);
  100 bytes, as the produce figure's values. The same schema is registered under the unvalidated topic's
  subject too (the same id), so both topics get the same bytes. The two topics take turns at going first;
  after each produce the stream must hold exactly N entries. Before the runs a record without the framing
  must be refused by a validated topic (so the validated rate is of a topic that does check). The ratio is
  validated / unvalidated within each run (paired), median of the runs; the goal is at least 0.9. The
  broker's CPU microseconds per record on each topic are given beside it (steadier on a busy machine).
- *Lookups by id per second.* `GET /schemas/ids/{id}` from one httpx client over one keep-alive
  connection, one request at a time, cycling over 8 registered ids, for 3 s per run; every answer must be
  200 with a schema. Median of 3 runs; no goal (the issue asks for the figure only).

`python -m bench.schemas` runs it alone; the suite calls run() (`--skip schemas` leaves it out).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import httpx
import redis
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from schooner.storage.topics.config import VALUE_SCHEMA_VALIDATION

from . import produce
from .servers import BenchServers, CpuMeter, Endpoints

MESSAGES = 300_000
RUNS = 7
TARGET = 0.9
LOOKUP_SECONDS = 3.0  # each lookup run sends requests for this long
LOOKUP_RUNS = 3
LOOKUP_IDS = 8  # distinct schemas the lookups cycle over
VALIDATED_CONFIG = {VALUE_SCHEMA_VALIDATION: "true"}
SETUPS = ("validated", "unvalidated")

DEVICES = ("MOBILE", "DESKTOP", "TABLET")
EVENT_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "PageEvent",
    "namespace": "bench.schemas",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "user_id", "type": "long"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "page", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "country", "type": "string"},
        {"name": "device", "type": {"type": "enum", "name": "Device", "symbols": list(DEVICES)}},
        {"name": "referrer", "type": "string"},  # its length brings the framed value to VALUE_SIZE bytes
    ],
}
_REFERRER = "https://search.example.com/q?s=bench+schemas+validation&page=2"


def _event(referrer: str) -> dict[str, Any]:
    return {
        "event_id": "4f1c2a9e-7b3d-4e8a-9c61-0d2f5b7a8e13",
        "user_id": 123_456,
        "ts": 1_760_000_000_000,
        "page": "/products/item",
        "amount": 42.5,
        "country": "DE",
        "device": "MOBILE",
        "referrer": referrer,
    }


def registry_url(ep: Endpoints) -> str:
    if not ep.schema_registry_port:
        raise RuntimeError("the broker's schema registry port is not known (Endpoints.schema_registry_port)")
    return f"http://127.0.0.1:{ep.schema_registry_port}"


def wait_for_registry(url: str, timeout: float = 30.0) -> None:
    """The registry's server starts on the broker's loop beside the Kafka listener: wait for its answer."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/subjects", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the schema registry at {url} did not answer within {timeout} s")
        time.sleep(0.05)


def avro_value(client: SchemaRegistryClient, topic: str, size: int = produce.VALUE_SIZE) -> tuple[bytes, int]:
    """One event serialized by confluent-kafka's AvroSerializer for `topic` (registering the schema under
    `<topic>-value`), `size` bytes with the framing; and the schema id it carries."""
    serializer = AvroSerializer(client, json.dumps(EVENT_SCHEMA))
    context = SerializationContext(topic, MessageField.VALUE)
    bare = serializer(_event(""), context)
    assert bare is not None
    pad = size - len(bare)
    if not 0 <= pad <= min(63, len(_REFERRER)):  # 63: the string's length stays one varint byte
        raise RuntimeError(f"the event serializes to {len(bare)} bytes; cannot make {size}")
    value = serializer(_event(_REFERRER[:pad]), context)
    assert value is not None and len(value) == size, (len(value or b""), size)
    return value, int.from_bytes(value[1:5], "big")


def register(client: SchemaRegistryClient, topic: str) -> int:
    """Registers the event schema under `<topic>-value` (the id it already has, if registered)."""
    serializer = AvroSerializer(client, json.dumps(EVENT_SCHEMA))
    framed = serializer(_event(""), SerializationContext(topic, MessageField.VALUE))
    assert framed is not None
    return int.from_bytes(framed[1:5], "big")


def check_refusal(producer: Producer, topic: str) -> None:
    """A record without the framing must be refused by a validated topic (INVALID_RECORD)."""
    errors: list[KafkaError] = []

    def report(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(err)

    producer.produce(topic, b"plain bytes, no schema id", partition=0, on_delivery=report)
    if producer.flush(30):
        raise RuntimeError(f"{topic}: the unframed record was not answered within 30 s")
    if not errors or errors[0].code() != KafkaError.INVALID_RECORD:
        found = errors[0] if errors else "accepted"
        raise RuntimeError(
            f"{topic}: a record without a schema id was {found}, not refused as INVALID_RECORD"
        )


def _stored(client: redis.Redis, ep: Endpoints, topic: str) -> int:
    return int(client.xlen(ep.keyspace.stream(topic, 0)))


def _paired(num: list[float], den: list[float]) -> float:
    """The median of each run's ratio: the two ran back to back, so noise hits both."""
    return statistics.median(n / d for n, d in zip(num, den, strict=True))


def run_produce(ep: Endpoints, messages: int, runs: int) -> dict[str, Any]:
    registry = SchemaRegistryClient({"url": registry_url(ep)})
    rates: dict[str, list[float]] = {s: [] for s in SETUPS}
    broker_us: dict[str, list[float]] = {s: [] for s in SETUPS}
    redis_us: dict[str, list[float]] = {s: [] for s in SETUPS}
    other_cores: list[float] = []  # processes outside the benchmark, share of a core during each produce
    stamp = time.monotonic_ns()
    producer = produce.make_producer(ep.bootstrap)
    client = ep.redis_client()
    failed = True
    schema_id = 0
    value = b""
    try:
        check_topic = f"bench-schemas-check-{stamp}"
        produce.create_topics(ep.bootstrap, [check_topic], VALIDATED_CONFIG)
        register(registry, check_topic)
        produce.warm_up(producer, check_topic)
        check_refusal(producer, check_topic)
        meter = CpuMeter(ep)
        for run_no in range(runs):
            topics = {s: f"bench-schemas-{s}-{run_no}-{stamp}" for s in SETUPS}
            produce.create_topics(ep.bootstrap, [topics["validated"]], VALIDATED_CONFIG)
            produce.create_topics(ep.bootstrap, [topics["unvalidated"]], {})
            value, schema_id = avro_value(registry, topics["validated"])
            if register(registry, topics["unvalidated"]) != schema_id:
                raise RuntimeError("the same schema got another id under the unvalidated topic's subject")
            for topic in topics.values():
                produce.warm_up(producer, topic)
            for setup in SETUPS if run_no % 2 == 0 else SETUPS[::-1]:
                topic = topics[setup]
                meter.start()
                done = produce.produce_topic(producer, topic, messages, value)
                used = meter.used()
                stored = _stored(client, ep, topic)
                if stored != messages:
                    raise RuntimeError(f"{topic}: its stream holds {stored} entries; {messages} were sent")
                rates[setup].append(done.msgs_per_s)
                broker_us[setup].append(used["broker"] / messages * 1e6)
                redis_us[setup].append(used["redis"] / messages * 1e6)
                other_cores.append(used["other"] / done.seconds)
                print(f"  schemas run {run_no + 1}: {setup} {done.msgs_per_s:,.0f} msgs/s", file=sys.stderr)
        failed = False
    finally:
        produce.close_producer(producer, failed)
        client.close()
    validated, unvalidated = rates["validated"], rates["unvalidated"]
    return {
        "messages": messages,
        "runs": runs,
        "value_bytes": len(value),
        "schema_id": schema_id,
        "validated_msgs_per_s": round(statistics.median(validated)),
        "unvalidated_msgs_per_s": round(statistics.median(unvalidated)),
        "produce_ratio": round(_paired(validated, unvalidated), 3),
        "target_ratio": TARGET,
        "validated_broker_us_per_record": round(statistics.median(broker_us["validated"]), 2),
        "unvalidated_broker_us_per_record": round(statistics.median(broker_us["unvalidated"]), 2),
        "validated_redis_us_per_record": round(statistics.median(redis_us["validated"]), 2),
        "unvalidated_redis_us_per_record": round(statistics.median(redis_us["unvalidated"]), 2),
        "other_cores_max": round(max(other_cores), 2),
        "rates": rates,
        "broker_us_per_record": broker_us,
        "redis_us_per_record": redis_us,
        "producer_config": produce.PRODUCER_CONFIG,
        "validated_topic_config": VALIDATED_CONFIG,
    }


def run_lookups(ep: Endpoints, seconds: float = LOOKUP_SECONDS, runs: int = LOOKUP_RUNS) -> dict[str, Any]:
    url = registry_url(ep)
    registry = SchemaRegistryClient({"url": url})
    stamp = time.monotonic_ns()
    names: dict[str, str] = {}  # path -> the record name its schema defines
    for i in range(LOOKUP_IDS):  # distinct schemas: each a record of its own name
        name = f"PageEvent{i}"
        serializer = AvroSerializer(registry, json.dumps({**EVENT_SCHEMA, "name": name}))
        context = SerializationContext(f"bench-schemas-lookup-{i}-{stamp}", MessageField.VALUE)
        framed = serializer(_event(""), context)
        assert framed is not None
        names[f"/schemas/ids/{int.from_bytes(framed[1:5], 'big')}"] = name
    if len(names) != LOOKUP_IDS:
        raise RuntimeError(f"the {LOOKUP_IDS} schemas got the ids {list(names)}")
    paths = list(names)
    rates: list[float] = []
    broker_us: list[float] = []
    counts: list[int] = []
    meter = CpuMeter(ep)
    with httpx.Client(base_url=url, timeout=30.0) as http:
        for path, name in names.items():  # each answer once in full; then the connection is open and warm
            doc = http.get(path).raise_for_status().json()
            if json.loads(doc["schema"]).get("name") != name:
                raise RuntimeError(f"{path} answered {doc}, not the schema of {name}")
        get = http.get
        for _ in range(runs):
            meter.start()
            start = time.perf_counter()
            deadline = start + seconds
            n = 0
            while n % LOOKUP_IDS or time.perf_counter() < deadline:  # whole rounds over the ids
                answer = get(paths[n % LOOKUP_IDS])
                if answer.status_code != 200 or not answer.content.startswith(b"{"):
                    raise RuntimeError(
                        f"GET {paths[n % LOOKUP_IDS]}: {answer.status_code} {answer.text[:200]}"
                    )
                n += 1
            took = time.perf_counter() - start
            used = meter.used()
            rates.append(n / took)
            broker_us.append(used["broker"] / n * 1e6)
            counts.append(n)
            print(f"  schemas lookups: {n / took:,.0f} /s", file=sys.stderr)
    return {
        "lookup_seconds": seconds,
        "lookups": counts,
        "lookup_runs": runs,
        "lookup_ids": LOOKUP_IDS,
        "lookups_per_s": round(statistics.median(rates)),
        "lookup_rates": [round(r) for r in rates],
        "lookup_broker_us": round(statistics.median(broker_us), 1),
        "lookup_client": f"httpx {httpx.__version__}, one keep-alive connection, one request at a time",
    }


def run(
    ep: Endpoints, messages: int = MESSAGES, runs: int = RUNS, lookup_seconds: float = LOOKUP_SECONDS
) -> dict[str, Any]:
    wait_for_registry(registry_url(ep))
    return {**run_produce(ep, messages, runs), **run_lookups(ep, lookup_seconds)}


def print_figures(out: dict[str, Any]) -> None:
    print(
        f"produce, {out['messages']:,} Avro records of {out['value_bytes']} B "
        f"(schema id {out['schema_id']}), median of {out['runs']} runs:"
    )
    print(
        f"  validated {out['validated_msgs_per_s']:,} msgs/s, unvalidated {out['unvalidated_msgs_per_s']:,} "
        f"msgs/s, ratio {out['produce_ratio']:.3f} (paired; goal >= {out['target_ratio']}: "
        f"{'met' if out['produce_ratio'] >= out['target_ratio'] else 'MISSED'})"
    )
    print(
        "  CPU per record, validated / unvalidated: broker "
        f"{out['validated_broker_us_per_record']:.2f} / {out['unvalidated_broker_us_per_record']:.2f} us, "
        f"redis {out['validated_redis_us_per_record']:.2f} / {out['unvalidated_redis_us_per_record']:.2f} us"
    )
    rates = out["rates"]
    print(
        "  single runs: validated "
        + ", ".join(f"{r:,.0f}" for r in rates["validated"])
        + "; unvalidated "
        + ", ".join(f"{r:,.0f}" for r in rates["unvalidated"])
    )
    print(f"  other processes used up to {out['other_cores_max']:.2f} cores during a produce")
    print(
        f"GET /schemas/ids/{{id}}: {out['lookups_per_s']:,} lookups/s (median of "
        f"{', '.join(f'{r:,}' for r in out['lookup_rates'])}; {out['lookup_client']}); "
        f"broker CPU {out['lookup_broker_us']:.1f} us per lookup; no goal"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.schemas", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--messages", type=int, default=MESSAGES, help="records per topic and run")
    parser.add_argument("--runs", type=int, default=RUNS, help="runs (each: both topics, in turns)")
    parser.add_argument(
        "--lookup-seconds", type=float, default=LOOKUP_SECONDS, help="how long each lookup run sends"
    )
    args = parser.parse_args(argv)
    if args.messages < 1 or args.runs < 1 or args.lookup_seconds <= 0:
        parser.error("counts must be positive")
    with BenchServers() as ep:
        out = run(ep, args.messages, args.runs, args.lookup_seconds)
    print_figures(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
