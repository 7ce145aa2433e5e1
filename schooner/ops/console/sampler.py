"""The charts' history: every interval the console reads each partition's end offset and each group's
committed offsets, and keeps the last `history` samples. Throughput is the end offsets' advance per
second (records per second on dense topics); lag is end offset minus committed offset per partition.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool

from .kafka_data import TP, KafkaFailure, KafkaSide

log = logging.getLogger(__name__)

GROUPS_SAMPLED = 100  # groups whose lag is sampled, at most (the first by name)
PARTITIONS_CHARTED = 8  # a lag chart draws this many partitions, plus the total


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the epoch
    ends: dict[TP, int]
    lags: dict[str, dict[TP, int]]  # group -> partition -> lag


@dataclass
class Sampler:
    history: int
    samples: deque[Sample] = field(init=False)
    error: str | None = None  # why the last sample failed
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.samples = deque(maxlen=self.history)

    def take(self, side: KafkaSide) -> Sample:
        """One sample (blocking): end offsets of every partition, then the lag of each group."""
        tps = [(t.name, p.id) for t in side.topics() if t.error is None for p in t.partitions]
        ends = side.latest(tps)
        lags: dict[str, dict[TP, int]] = {}
        for g in side.groups()[:GROUPS_SAMPLED]:
            if g.type not in ("classic", "consumer"):
                continue
            try:
                committed = side.committed(g.group_id)
            except KafkaFailure:  # not a consumer group after all, or not ours to read
                continue
            lags[g.group_id] = {tp: max(ends[tp] - c, 0) for tp, c in committed.items() if tp in ends}
        sample = Sample(time.time(), ends, lags)
        with self._lock:
            self.samples.append(sample)
        return sample

    def snapshot(self) -> list[Sample]:
        with self._lock:
            return list(self.samples)

    def throughput(self, topic: str | None = None) -> list[list[float]]:
        """uPlot data: [times, records/s] between consecutive samples (of one topic, or all)."""
        xs: list[float] = []
        ys: list[float] = []
        samples = self.snapshot()
        for before, after in zip(samples, samples[1:], strict=False):
            moved = sum(
                max(end - before.ends.get(tp, end), 0)
                for tp, end in after.ends.items()
                if topic is None or tp[0] == topic
            )
            xs.append(round(after.at, 3))
            ys.append(round(moved / max(after.at - before.at, 1e-3), 3))
        return [xs, ys]

    def lag(self, group: str) -> tuple[list[str], list[list[float | None]]]:
        """uPlot data for one group: series names, then [times, total, one series per partition]."""
        samples = [s for s in self.snapshot() if group in s.lags]
        tps = sorted({tp for s in samples for tp in s.lags[group]})[:PARTITIONS_CHARTED]
        names = ["total"] + [f"{t}:{p}" for t, p in tps]
        data: list[list[float | None]] = [[round(s.at, 3) for s in samples]]
        data.append([float(sum(s.lags[group].values())) for s in samples])
        for tp in tps:
            data.append([s.lags[group].get(tp) for s in samples])  # type: ignore[misc]
        return names, data

    async def run(self, console: Any, interval_s: float) -> None:
        """Samples until cancelled; a failed sample is logged and the chart just gets no point."""
        while True:
            side = console.sampling_side()
            if side is not None:
                try:
                    await run_in_threadpool(self.take, side)
                    self.error = None
                except Exception as exc:  # the broker is down or refuses: try again next time
                    self.error = str(exc)
                    log.info("console sample failed: %s", exc)
            await asyncio.sleep(interval_s)
