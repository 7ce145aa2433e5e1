"""Exactly-once through crashes: a query that dies after its sink wrote a micro-batch but before Spark
committed it, and a pipeline process killed with SIGKILL again and again, each restarted from its
checkpoint, leave every input record in the output topic exactly once."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import BASE_MS, Log, Rec
from tests.spark.crashing import CrashingSchooner

PIPELINE = Path(__file__).with_name("pipelines") / "copy_upper.py"


def _fill(log: Log, topic: str, partitions: int, per_partition: int, batch: int) -> list[bytes]:
    """Distinct values in several appends per partition (on a timestamp-encoded topic, offsets with
    gaps between them); returns them all."""
    values = []
    for p in range(partitions):
        for first in range(0, per_partition, batch):
            records = [
                Rec(BASE_MS, f"k{p}-{i}".encode(), f"v{p}-{i}".encode())
                for i in range(first, min(first + batch, per_partition))
            ]
            log.append(topic, p, records)
            values += [r.value for r in records if r.value is not None]
    return values


# On both encodings: the replayed batch's offsets come from the checkpoint. The killed pipeline below,
# a 50 s soak, runs on the default (dense) only.
@pytest.mark.both_encodings
def test_a_batch_replayed_after_a_crash_between_write_and_commit_writes_nothing_twice(
    spark: Any, log: Log, tmp_path: Path
) -> None:
    spark.dataSource.register(CrashingSchooner)
    log.topic("orders", 2)
    log.topic("orders-upper", 3)
    values = _fill(log, "orders", 2, 100, 30)

    def start(crash_at: int) -> Any:
        source = (
            spark.readStream.format("schooner")
            .options(**log.options)
            .option("subscribe", "orders")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", 40)
            .load()
        )
        out = source.selectExpr("key", "upper(cast(value as string)) as value").repartition(3, "key")
        return (
            out.writeStream.format("schooner_crash_test")
            .options(**log.options)
            .option("topic", "orders-upper")
            .option("crashAtBatch", str(crash_at))
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .start()
        )

    crashed = start(crash_at=2)
    with pytest.raises(Exception, match="crash between the sink's write and Spark's commit"):
        crashed.awaitTermination(120)
    # Batches 0, 1 and 2 are in the topic, though Spark never committed batch 2.
    assert len(log.read("orders-upper")) == 3 * 40

    resumed = start(crash_at=-1)
    resumed.awaitTermination(120)
    assert resumed.exception() is None
    written = collections.Counter(s.value for s in log.read("orders-upper"))
    assert written == collections.Counter(v.upper() for v in values)


def _run_pipeline(log: Log, checkpoint: Path, output: Path) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-m", "schooner.ops.entry", "pipeline", "run", str(PIPELINE),
        "--redis-url", log.url, "--keyspace", log.keyspace, "--checkpoint", str(checkpoint),
        "-o", "input=events", "-o", "output=events-upper", "-o", "batch=50",
        "--conf", "spark.python.unix.domain.socket.enabled=true",  # as the spark fixture (conftest.py)
    ]  # fmt: skip
    with open(output, "ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _written(log: Log) -> int:
    return sum(int(log.redis.xlen(log.ks.stream("events-upper", p))) for p in range(3))


# Three pipelines, each its own JVM: on a busy machine (parallel workers, other runs) each may take
# minutes to start (one took 3 min 14 s to its first write on a slow day, in a full make test), so the
# deadlines are generous; they cost nothing when the pipeline is quick.
@pytest.mark.timeout(1800)
def test_a_pipeline_killed_again_and_again_writes_every_record_exactly_once(log: Log, tmp_path: Path) -> None:
    log.topic("events", 3)
    log.topic("events-upper", 3)
    values = _fill(log, "events", 3, 150, 50)
    checkpoint, output = tmp_path / "cp", tmp_path / "pipeline.log"
    kills = 0
    for kill_after in (1, 150):  # records in the output topic when the process group is killed
        proc = _run_pipeline(log, checkpoint, output)
        try:
            deadline = time.monotonic() + 480
            while _written(log) < kill_after and proc.poll() is None:
                assert time.monotonic() < deadline, output.read_text()
                time.sleep(0.02)
            assert proc.poll() in (None, 0), output.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # the Python driver, its JVM and the Python workers
                kills += 1
            proc.wait(30)
    assert kills >= 2, "the pipeline was killed mid-run"
    final = _run_pipeline(log, checkpoint, output)
    assert final.wait(600) == 0, output.read_text()
    written = collections.Counter(s.value for s in log.read("events-upper"))
    assert written == collections.Counter(v.upper() for v in values)
