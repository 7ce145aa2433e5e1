"""Checks of what was read: reorder and gap within a poll session, aborted_read, offsets_backwards and
share_double_ack."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from chaos.checks.model import READ_COMMITTED, READ_UNCOMMITTED, TP, Anomaly, Index, anomaly, where
from chaos.history import split_tp

# Share consumers legitimately see records out of order and with gaps.
GAPLESS_MODES = frozenset({"reader", "transform", "group"})


def sessions(ix: Index) -> Iterator[Anomaly]:
    """Within one session a partition's records come in rising offsets, skipping none that the final log
    at the session's isolation level holds."""
    last: dict[tuple[str, Any, TP], tuple[int, int]] = {}  # -> (highest offset read, op that read it)
    for op in ix.polls:
        v = op.value
        if v.get("mode") not in GAPLESS_MODES:
            continue
        isolation = v.get("isolation") or READ_UNCOMMITTED
        for topic, partition, offset, value in v.get("records") or ():
            tp = (topic, int(partition))
            key = (op.process, v.get("session"), tp)
            before = last.get(key)
            if before is None or offset > before[0]:
                last[key] = (offset, op.index)
            if before is None:
                continue
            previous, previous_op = before
            name = f"session {v.get('session')!r} of {op.process} ({v.get('mode')}, {isolation})"
            if offset <= previous:
                yield anomaly(
                    "reorder",
                    f"{name} read {where(tp, offset)} {value!r} after offset {previous}",
                    previous_op,
                    op.index,
                )
                continue
            log = ix.log(tp, isolation) if offset > previous + 1 else None
            if log is None:
                continue
            skipped, first = log.between(previous, offset)
            if skipped and first is not None:
                yield anomaly(
                    "gap",
                    f"{name} read {where(tp)} offset {previous} then {offset}, skipping {skipped} "
                    f"record(s) of the final log, first @{first} {log.records[first]!r}",
                    previous_op,
                    op.index,
                    log.ops,
                )


def _only_aborted(ix: Index, value: str) -> list[int]:
    """The transactions that wrote the value when every one of them aborted and nothing else wrote it."""
    txns = ix.txn_of.get(value, ())
    if not txns or any(ix.by_index[i].status != "fail" for i in txns):
        return []
    if any(not ix.by_index[i].value.get("transactional") for i in ix.produce_of.get(value, ())):
        return []
    return list(txns)


def polled_records(ix: Index) -> Iterator[Anomaly]:
    """A record a poll returned is in the final log, read_committed ones in the committed log."""
    for op in ix.polls:
        committed = op.value.get("isolation") == READ_COMMITTED
        for topic, partition, offset, value in op.value.get("records") or ():
            tp = (topic, int(partition))
            # A different value at the offset is an observation conflict: a duplicate.
            whole = ix.log(tp, READ_UNCOMMITTED)
            if whole is not None and offset not in whole.records:
                yield anomaly(
                    "lost_write",
                    f"{op.process} read {where(tp, offset)} {value!r}, which the final log no longer holds",
                    op.index,
                    whole.ops,
                    ix.writers(value),
                )
                continue
            if not committed:
                continue
            log = ix.log(tp, READ_COMMITTED)
            if log is not None:
                if offset not in log.records:
                    yield anomaly(
                        "aborted_read",
                        f"read_committed poll by {op.process} returned {where(tp, offset)} {value!r}, "
                        "absent from the final read_committed log",
                        op.index,
                        log.ops,
                        ix.writers(value),
                    )
            elif aborted := _only_aborted(ix, value):
                yield anomaly(
                    "aborted_read",
                    f"read_committed poll by {op.process} returned {where(tp, offset)} {value!r}, "
                    "written only by aborted transactions",
                    op.index,
                    aborted,
                )


def aborted_in_final(ix: Index) -> Iterator[Anomaly]:
    """The committed logs hold no record only aborted transactions wrote."""
    reported: set[tuple[str, str]] = set()
    for txn in ix.txns:
        if txn.status != "fail":
            continue
        for topic, partition, value in txn.value.get("outputs") or ():
            tp = (topic, int(partition))
            for log in (ix.finals.get((source, READ_COMMITTED, tp)) for source in ("kafka", "redis")):
                if log is None or (log.source, value) in reported or value not in log:
                    continue
                if aborted := _only_aborted(ix, value):
                    reported.add((log.source, value))
                    yield anomaly(
                        "aborted_read",
                        f"the final {log.source} read_committed log of {where(tp)} holds {value!r} at "
                        f"{log.offsets_of(value)}, written only by aborted transactions",
                        aborted,
                        log.ops,
                    )


def offsets_backwards(ix: Index) -> Iterator[Anomaly]:
    """Each observer sees a group's committed offsets never decrease."""
    last: dict[tuple[str, str, str], tuple[int, int]] = {}
    for op in ix.observed_offsets:
        if op.status != "ok":
            continue
        group = str(op.value.get("group"))
        for key, offset in (op.value.get("offsets") or {}).items():
            before = last.get((op.process, group, key))
            last[(op.process, group, key)] = (offset, op.index)
            if before is not None and offset < before[0]:
                yield anomaly(
                    "offsets_backwards",
                    f"{op.process} saw group {group}'s committed offset of {where(split_tp(key))} go "
                    f"from {before[0]} back to {offset}",
                    before[1],
                    op.index,
                )


def share_double_acks(ix: Index) -> Iterator[Anomaly]:
    accepted: dict[tuple[str, str, int, int], list[int]] = defaultdict(list)
    for op in ix.acks:
        if op.status != "ok" or op.value.get("type") != "accept":
            continue
        group = str(op.value.get("group"))
        for record in op.value.get("records") or ():
            accepted[(group, record[0], int(record[1]), int(record[2]))].append(op.index)
    for (group, topic, partition, offset), ops in accepted.items():
        if len(ops) > 1:
            members = sorted({str(ix.by_index[i].value.get("member")) for i in ops})
            yield anomaly(
                "share_double_ack",
                f"share group {group} accepted {where((topic, partition), offset)} {len(ops)} times "
                f"(members {', '.join(members)})",
                ops,
            )
