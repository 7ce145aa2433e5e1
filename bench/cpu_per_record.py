"""CPU per record of produce and fetch: the broker's and its redis-server's, from /proc, for one checkout.

`PYTHONPATH=$PWD .venv/bin/python -m bench.cpu_per_record --records 300000` starts a fresh non-persistent
redis-server and one broker (BenchServers), warms a topic up, then produces `records` 100-byte records to
new one-partition topics with the suite's producer and reads one back from the beginning with kcat,
printing one JSON line: each topic's rate and the broker's and Redis's CPU µs per record. A comparison of
two checkouts runs this in each, taking turns (bench/checkouts.py): CPU per record holds steadier on a
shared machine than the rates do, which the clients on the same cores bound.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Any

from .produce import bench_value, close_producer, create_topics, make_producer, produce_topic, warm_up
from .servers import BenchServers, CpuMeter, Endpoints

WARM_UP_RECORDS = 50_000


@dataclass(frozen=True, slots=True)
class Step:
    msgs_per_s: float
    broker_us: float  # the broker process's CPU µs per record
    redis_us: float  # its redis-server's


def _step(cpu: CpuMeter, records: int, seconds: float) -> Step:
    used = cpu.used()
    return Step(records / seconds, 1e6 * used["broker"] / records, 1e6 * used["redis"] / records)


def _kcat_read(ep: Endpoints, topic: str, records: int) -> float:
    """Reads the topic from the beginning to its end with kcat; the seconds it took."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        raise RuntimeError("kcat is not installed (make test-system-deps)")
    start = time.perf_counter()
    out = subprocess.run(
        [kcat, "-C", "-b", ep.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%o\n"],
        capture_output=True,
        check=True,
        timeout=300,
    ).stdout
    seconds = time.perf_counter() - start
    read = out.count(b"\n")
    if read != records:
        raise RuntimeError(f"kcat read {read} records of {records}")
    return seconds


def measure(records: int, topics: int = 2) -> dict[str, Any]:
    """Produce to `topics` new topics, then fetch the first of them, each with its CPU per record."""
    value = bench_value()
    with BenchServers() as ep:
        names = [f"cpu-{n}" for n in range(topics + 1)]
        create_topics(ep.bootstrap, names, {})
        producer = make_producer(ep.bootstrap)
        try:
            warm_up(producer, names[0])
            produce_topic(producer, names[0], min(records, WARM_UP_RECORDS), value)
            produced = []
            for name in names[1:]:
                cpu = CpuMeter(ep)
                cpu.start()
                run = produce_topic(producer, name, records, value)
                produced.append(asdict(_step(cpu, records, run.seconds)))
        finally:
            close_producer(producer, failed=False)
        cpu = CpuMeter(ep)
        cpu.start()
        fetched = asdict(_step(cpu, records, _kcat_read(ep, names[1], records)))
    return {"records": records, "produce": produced, "fetch": [fetched]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_per_record", description=__doc__)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--topics", type=int, default=2, help="produce runs, each to a new topic")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.records, args.topics)))


if __name__ == "__main__":
    main()
