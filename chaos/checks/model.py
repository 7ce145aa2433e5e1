"""What every check shares: the anomaly type and an index of the history built in one pass."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.history import TRANSFORM_OUTPUT_PREFIX, Operation

TP = tuple[str, int]

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"

# Every kind the checker reports, in the order the report lists them.
KINDS: tuple[str, ...] = (
    "lost_write",
    "failed_write_visible",
    "wrong_offset",
    "duplicate",
    "order",
    "reorder",
    "gap",
    "aborted_read",
    "eos",
    "offsets_backwards",
    "share_double_ack",
    "tier_mismatch",
)


@dataclass(frozen=True)
class Anomaly:
    kind: str
    message: str
    ops: tuple[int, ...]


def anomaly(kind: str, message: str, *ops: int | Sequence[int]) -> Anomaly:
    """Flattens and de-duplicates the op indexes, keeping them sorted."""
    found: set[int] = set()
    for op in ops:
        if isinstance(op, int):
            found.add(op)
        else:
            found.update(op)
    return Anomaly(kind, message, tuple(sorted(found)))


def where(tp: TP, offset: int | None = None) -> str:
    return f"{tp[0]}/{tp[1]}" if offset is None else f"{tp[0]}/{tp[1]}@{offset}"


class FinalLog:
    """One final read of a partition (several final ops of the same source and isolation are merged)."""

    def __init__(self, source: str, isolation: str, tp: TP) -> None:
        self.source = source
        self.isolation = isolation
        self.tp = tp
        self.records: dict[int, str] = {}
        self.ops: list[int] = []
        # Built on first use: a redis log is only ever looked up by offset.
        self._first: dict[str, int] | None = None
        self._more: dict[str, list[int]] = {}
        self._sorted: list[int] | None = None

    def extend(self, records: Iterable[Sequence[Any]]) -> None:
        """Adds [offset, value] pairs; a second value at an offset is an observation conflict, which the
        duplicate check reports, so the first is kept."""
        keep = self.records.setdefault
        for offset, value in records:
            keep(offset, value)
        self._first = None
        self._sorted = None

    def _index(self) -> dict[str, int]:
        if self._first is None:
            first: dict[str, int] = {}
            more: dict[str, list[int]] = {}
            for offset in self.sorted_offsets():
                value = self.records[offset]
                if value in first:
                    more.setdefault(value, [first[value]]).append(offset)
                else:
                    first[value] = offset
            self._first, self._more = first, more
        return self._first

    def __contains__(self, value: str) -> bool:
        return value in self._index()

    def offset_of(self, value: str) -> int | None:
        """The value's offset when it is there exactly once."""
        offset = self._index().get(value)
        return None if offset is None or value in self._more else offset

    def offsets_of(self, value: str) -> list[int]:
        first = self._index().get(value)
        if first is None:
            return []
        return self._more.get(value, [first])

    def repeated(self) -> dict[str, list[int]]:
        """The values held at more than one offset."""
        self._index()
        return self._more

    def sorted_offsets(self) -> list[int]:
        if self._sorted is None:
            self._sorted = sorted(self.records)
        return self._sorted

    def between(self, low: int, high: int) -> tuple[int, int | None]:
        """How many records lie strictly between the two offsets, and the first of them."""
        offsets = self.sorted_offsets()
        left, right = bisect_right(offsets, low), bisect_left(offsets, high)
        return max(0, right - left), (offsets[left] if right > left else None)


# What a client's own record timeout says in a produce op's error: librdkafka's, kafka-python's.
CLIENT_TIMEOUTS = ("_MSG_TIMED_OUT", "KafkaTimeoutError: Expiring")


class Index:
    """The history looked up by what the checks ask: final logs, the writers of each value, transactions."""

    def __init__(self, ops: Sequence[Operation]) -> None:
        self.ops = ops
        self.by_index: dict[int, Operation] = {op.index: op for op in ops}
        self.finals: dict[tuple[str, str, TP], FinalLog] = {}
        # Final reads that did not complete: their (source, isolation, partition) is not checked.
        self.partial_finals: list[int] = []
        self.produces: list[Operation] = []
        self.txns: list[Operation] = []
        self.polls: list[Operation] = []
        self.acks: list[Operation] = []
        self.observed_offsets: list[Operation] = []
        self.produce_of: dict[str, list[int]] = defaultdict(list)  # value -> produce ops
        self.txn_of: dict[str, list[int]] = defaultdict(list)  # output value -> txn ops
        # Input value -> the transform polls that took it: each may have sent its output (see attempts).
        self.taken_by_transform: dict[str, int] = defaultdict(int)
        self.client_resent: set[str] = set()  # duplicates the checks put down to a client's resend
        for op in ops:
            if op.f == "final":
                self._add_final(op)
            elif op.f == "produce":
                self.produces.append(op)
                self.produce_of[op.value["value"]].append(op.index)
            elif op.f == "txn":
                self.txns.append(op)
                for _topic, _partition, value in op.value.get("outputs") or ():
                    self.txn_of[value].append(op.index)
            elif op.f == "poll":
                self.polls.append(op)
                if op.value.get("mode") == "transform":
                    for _topic, _partition, _offset, value in op.value.get("records") or ():
                        self.taken_by_transform[value] += 1
            elif op.f == "ack":
                self.acks.append(op)
            elif op.f == "offsets":
                self.observed_offsets.append(op)
        # Idempotent producer instances that had a record time out in the client: librdkafka then
        # bumps its epoch and renumbers the records still in flight on every partition, so one that
        # was possibly persisted is written again (its documented limit; kafka-python's expiry is
        # alike). Their duplicates are counted, not reported (stats["client_resent"]).
        self.timed_out_producers: set[str] = {
            str(op.value.get("producer"))
            for op in self.produces
            if op.status != "ok"
            and not op.value.get("transactional")
            and any(mark in str(op.value.get("error") or "") for mark in CLIENT_TIMEOUTS)
        }
        for op_index in self.partial_finals:
            self.finals.pop(_final_key(self.by_index[op_index]), None)

    def _add_final(self, op: Operation) -> None:
        if op.status != "ok":
            self.partial_finals.append(op.index)
            return
        key = _final_key(op)
        tp = key[2]
        log = self.finals.get(key)
        if log is None:
            log = self.finals[key] = FinalLog(key[0], key[1], tp)
        log.ops.append(op.index)
        log.extend(op.value["records"])

    def log(self, tp: TP, isolation: str) -> FinalLog | None:
        """The whole log (the kafka read, across tiers) at one isolation level."""
        return self.finals.get(("kafka", isolation, tp))

    def written_log(self, tp: TP) -> FinalLog | None:
        """Where any write lands: read_uncommitted, else read_committed."""
        return self.log(tp, READ_UNCOMMITTED) or self.log(tp, READ_COMMITTED)

    def attempts(self, value: str) -> int:
        """How many times the value was sent: each transaction carrying it and each plain produce of it
        (a transactional produce is counted through its transaction when that was recorded). A
        transform's output may also have been sent once per poll that took its input: a transform stuck
        in a blocking client call when the run ends (librdkafka's send_offsets_to_transaction) records
        neither its produces nor its transaction, which the coordinator aborts, and its input is then
        processed again; the aborted copy stays in a read_uncommitted log."""
        txns = self.txn_of.get(value, ())
        count = len(txns)
        for op_index in self.produce_of.get(value, ()):
            if not (txns and self.by_index[op_index].value.get("transactional")):
                count += 1
        if value.startswith(TRANSFORM_OUTPUT_PREFIX):
            count = max(count, self.taken_by_transform.get(value[len(TRANSFORM_OUTPUT_PREFIX) :], 0))
        return count

    def resent_by_client(self, value: str) -> bool:
        """A plain idempotent produce of the value by an instance whose records timed out client-side:
        a duplicate of it is the client's renumbering after its epoch bump, not the broker's."""
        produced = self.produce_of.get(value, ())
        return (
            bool(produced)
            and not self.txn_of.get(value)
            and all(self.by_index[i].value.get("producer") in self.timed_out_producers for i in produced)
        )

    def writers(self, value: str) -> list[int]:
        return [*self.produce_of.get(value, ()), *self.txn_of.get(value, ())]

    def is_transform_output(self, value: str) -> bool:
        return any(self.by_index[i].value.get("inputs") for i in self.txn_of.get(value, ()))


def _final_key(op: Operation) -> tuple[str, str, TP]:
    return op.value["source"], op.value["isolation"], (op.value["topic"], int(op.value["partition"]))
