"""The history of a chaos run: every operation a workload or the nemesis performed, one JSON line each.

An operation is recorded once, when it completes, with the time it was invoked and the time it ended
(seconds since the run began) and how it ended:

- ``ok``: the operation took effect (a produce acknowledged, a transaction committed, a read returned);
- ``fail``: it certainly did not (a transaction aborted, an acknowledgement refused);
- ``unknown``: it may or may not have (a produce whose delivery report was an error, a commit that
  timed out, a client killed mid-call). The checker must allow both outcomes.

``value`` depends on ``f``; every record value is a string unique in the run, and offsets are Kafka
offsets. A topic-partition is written ``"topic/partition"`` where it is a dict key.

======== ==================================================================================================
f        value
======== ==================================================================================================
produce  topic, partition, value, offset (int or None), producer (the client instance's id: a restarted
         producer gets a new one), seq (the producer's own count, in the order it called produce()),
         transactional (bool), error (str or None)
txn      producer (the transactional.id), group (the consumer group whose offsets went into the
         transaction, or None), inputs ([topic, partition, offset, value] consumed), outputs
         ([topic, partition, value] produced), offsets ({"topic/partition": next offset} sent with
         send_offsets_to_transaction), deliberate_abort (bool: aborted on purpose, so ``fail``),
         error (str or None)
poll     mode ("reader", "group", "share" or "transform"), group (or None), member (the client's id),
         isolation ("read_committed" or "read_uncommitted"), session (the id of a continuous read: a
         new one after every seek, assignment change or restart), records ([topic, partition, offset,
         value], in the order the client returned them)
commit   group, member, offsets ({"topic/partition": next offset}), error (str or None)
offsets  group, offsets ({"topic/partition": committed offset}) as an observer read them
ack      share acknowledgements: group, member, records ([topic, partition, offset, value,
         delivery count]), type ("accept", "release" or "reject"), error (str or None); ok when the
         broker confirmed them
final    the log after the run, every fault healed: source ("kafka": a fresh consumer from offset 0,
         across the tiers; "redis": the hot tier read from the streams), isolation, topic, partition,
         records ([offset, value]), high_watermark (taken before the read), error (str or None); ``fail``
         when the read did not reach the high watermark
fault    kind, target, healed (seconds the fault lasted), recovered (seconds from the heal until the
         deployment served again, or None)
======== ==================================================================================================
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["ok", "fail", "unknown"]
STATUSES: tuple[Status, ...] = ("ok", "fail", "unknown")


@dataclass(frozen=True, slots=True)
class Operation:
    index: int
    process: str  # the worker that performed it: "producer-0", "nemesis", "final", ...
    f: str
    status: Status
    start: float
    end: float
    value: dict[str, Any] = field(default_factory=dict)


class History:
    """Thread-safe recorder: operations are numbered in the order they complete and appended to
    `path` (flushed each time, so a history survives a crashed run)."""

    def __init__(self, path: Path, started: float | None = None) -> None:
        self.path = path
        self.started = time.monotonic() if started is None else started
        self._lock = threading.Lock()
        self._count = 0
        self._file = path.open("a", encoding="utf-8")

    def now(self) -> float:
        return time.monotonic() - self.started

    def record(
        self,
        process: str,
        f: str,
        status: Status,
        start: float,
        value: dict[str, Any],
        end: float | None = None,
    ) -> Operation:
        """Records one completed operation; `start` is what now() returned when it was invoked."""
        with self._lock:
            op = Operation(self._count, process, f, status, start, self.now() if end is None else end, value)
            self._count += 1
            self._file.write(json.dumps(asdict(op), separators=(",", ":")) + "\n")
            self._file.flush()
        return op

    @property
    def count(self) -> int:
        return self._count

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_history(path: Path) -> list[Operation]:
    return list(iter_history(path))


def iter_history(path: Path) -> Iterator[Operation]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield Operation(**json.loads(line))


# A transform workload writes its output for input value v as TRANSFORM_OUTPUT_PREFIX + v; the checks
# find an output's input by it.
TRANSFORM_OUTPUT_PREFIX = "out:"


def tp_key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def split_tp(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition("/")
    return topic, int(partition)
