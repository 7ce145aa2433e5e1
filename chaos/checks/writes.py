"""Checks of what was written against the final logs: lost_write, failed_write_visible, wrong_offset,
order, duplicate and tier_mismatch."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from typing import Any

from chaos.checks.model import READ_COMMITTED, TP, Anomaly, Index, anomaly, where

OFFSET_BITS = 40  # an observed location packs a partition number and an offset below 2**40 into one int


def _tp(value: dict) -> TP:
    return value["topic"], int(value["partition"])


def lost_writes(ix: Index) -> Iterator[Anomaly]:
    for op in ix.produces:
        v = op.value
        tp = _tp(v)
        if op.status == "fail":
            logs = [log for key, log in ix.finals.items() if key[2] == tp and v["value"] in log]
            if logs:
                yield anomaly(
                    "failed_write_visible",
                    f"produce of {v['value']!r} failed (never sent) yet the final "
                    f"{logs[0].source} {logs[0].isolation} log of {where(tp)} holds it",
                    op.index,
                    *(log.ops for log in logs),
                )
            continue
        # A transactional produce is expected only through its committed transaction, checked below.
        if op.status != "ok" or v.get("transactional"):
            continue
        log = ix.written_log(tp)
        if log is not None and v["value"] not in log:
            yield anomaly(
                "lost_write",
                f"acknowledged produce of {v['value']!r} to {where(tp, v.get('offset'))} by producer "
                f"{v.get('producer')} is missing from the final {log.isolation} log",
                op.index,
                log.ops,
            )
    for op in ix.txns:
        if op.status != "ok":
            continue
        missing: dict[TP, list[str]] = defaultdict(list)
        for topic, partition, value in op.value.get("outputs") or ():
            log = ix.log((topic, int(partition)), READ_COMMITTED)
            if log is not None and value not in log:
                missing[(topic, int(partition))].append(value)
        for tp, values in missing.items():
            log = ix.log(tp, READ_COMMITTED)
            assert log is not None
            yield anomaly(
                "lost_write",
                f"committed transaction of {op.value.get('producer')} wrote {len(values)} record(s) to "
                f"{where(tp)} missing from the final read_committed log, e.g. {values[:3]!r}",
                op.index,
                log.ops,
                *(ix.produce_of.get(value, ()) for value in values[:20]),
            )


def wrong_offsets(ix: Index) -> Iterator[Anomaly]:
    for op in ix.produces:
        v = op.value
        offset = v.get("offset")
        if op.status != "ok" or offset is None:
            continue
        tp = _tp(v)
        log = ix.written_log(tp)
        if log is None:
            continue
        there = log.records.get(offset)
        if there == v["value"]:
            continue
        if there is not None:
            found = f"holds {there!r}"
        elif v["value"] in log:
            found = f"is empty; the value is at {log.offsets_of(v['value'])}"
        else:
            continue  # missing altogether: a lost write, reported as such
        yield anomaly(
            "wrong_offset",
            f"produce of {v['value']!r} was acknowledged at {where(tp, offset)}, which in the final "
            f"{log.isolation} log {found}",
            op.index,
            log.ops,
            ix.writers(there) if there is not None else (),
        )


def order(ix: Index) -> Iterator[Anomaly]:
    """Per producer and partition, offsets must rise with seq: the final log's offset of each value,
    else the acknowledged one. A value several produces sent (a transform produces its outputs again after
    an abort, from each new instance too) is placed only by an acknowledged produce: which of the other
    attempts wrote the log's copy, if any did, is not known."""
    attempts: Counter[tuple[TP, str]] = Counter(
        (_tp(op.value), op.value["value"]) for op in ix.produces if op.status != "fail"
    )
    sent: dict[tuple[str, TP], list[tuple[int, int, int]]] = defaultdict(list)
    for op in ix.produces:
        v = op.value
        if op.status == "fail":
            continue
        tp = _tp(v)
        if attempts[(tp, v["value"])] > 1:
            offset = v.get("offset") if op.status == "ok" else None
        else:
            log = ix.written_log(tp)
            offset = log.offset_of(v["value"]) if log is not None else None
            if offset is None and op.status == "ok":
                offset = v.get("offset")
        if offset is not None:
            sent[(str(v.get("producer")), tp)].append((int(v["seq"]), offset, op.index))
    for (producer, tp), writes in sent.items():
        writes.sort()
        for (seq1, offset1, op1), (seq2, offset2, op2) in zip(writes, writes[1:], strict=False):
            if offset2 <= offset1:
                yield anomaly(
                    "order",
                    f"producer {producer} sent seq {seq1} then seq {seq2} to {where(tp)}, but they are "
                    f"at offsets {offset1} and {offset2}",
                    op1,
                    op2,
                )


def _observations(ix: Index) -> Iterator[tuple[TP, int, Iterable[Sequence[Any]]]]:
    """Every (offset, value) any operation saw, by partition, with the operation's index."""
    for op in ix.ops:
        if op.f == "final":
            yield (op.value["topic"], int(op.value["partition"])), op.index, op.value["records"]
            continue
        if op.f in ("poll", "ack"):
            rows = op.value.get("records") or ()
        elif op.f == "txn":
            rows = op.value.get("inputs") or ()
        else:
            continue
        for tp, run in groupby(rows, key=lambda row: (row[0], int(row[1]))):
            yield tp, op.index, [(int(row[2]), row[3]) for row in run]


def duplicates(ix: Index) -> list[Anomaly]:
    """One value at one place: a (topic, partition, offset) holds one value in every observation, and a
    value sits at one place, or at as many as the times it was sent (an aborted transaction's records
    stay in the log and its retry writes the same values again). Read committed, a value is once."""
    tps: dict[TP, int] = {}
    at: dict[int, str] = {}
    first: dict[str, int] = {}
    conflicts: dict[int, set[str]] = {}
    places: dict[str, set[int]] = {}
    for tp, _op, records in _observations(ix):
        base = tps.setdefault(tp, len(tps)) << OFFSET_BITS
        for offset, value in records:
            loc = base | offset
            seen = at.get(loc)
            if seen == value:
                continue  # this very observation was made before
            if seen is None:
                at[loc] = value
            else:
                conflicts.setdefault(loc, {seen}).add(value)
            other = first.setdefault(value, loc)
            if other != loc:
                places.setdefault(value, {other}).add(loc)
    del at, first
    values = {value for value, locs in places.items() if len(locs) > max(1, ix.attempts(value))}
    for log in ix.finals.values():
        if log.isolation == READ_COMMITTED:
            values.update(v for v in log.repeated() if not ix.is_transform_output(v))
    resent = {v for v in values if ix.resent_by_client(v)}
    ix.client_resent.update(resent)
    values -= resent
    if not conflicts and not values:
        return []

    # A second pass finds who saw the offending places, only for the few found above.
    names = {index: tp for tp, index in tps.items()}
    seen_by: dict[str, dict[int, int]] = defaultdict(dict)  # value -> place -> the first op seeing it
    for tp, op, records in _observations(ix):
        base = tps[tp] << OFFSET_BITS
        for offset, value in records:
            if value in values or base | offset in conflicts:
                seen_by[value].setdefault(base | offset, op)

    def place(loc: int) -> str:
        return where(names[loc >> OFFSET_BITS], loc & ((1 << OFFSET_BITS) - 1))

    found: list[Anomaly] = []
    for loc, held in sorted(conflicts.items()):
        found.append(
            anomaly(
                "duplicate",
                f"{place(loc)} was seen holding {len(held)} different values: {sorted(held)!r}",
                [seen_by[value][loc] for value in held],
            )
        )
    for value in sorted(values):
        locs = sorted(seen_by[value])
        found.append(
            anomaly(
                "duplicate",
                f"{value!r} (sent {ix.attempts(value)} time(s)) was seen at {len(locs)} places: "
                + ", ".join(place(loc) for loc in locs[:10]),
                [seen_by[value][loc] for loc in locs],
                ix.writers(value),
            )
        )
    return found


def tier_mismatches(ix: Index) -> Iterator[Anomaly]:
    for (source, isolation, tp), hot in ix.finals.items():
        whole = ix.log(tp, isolation)
        if source != "redis" or whole is None:
            continue
        wrong = [(o, v) for o, v in hot.records.items() if whole.records.get(o) != v]
        if not wrong:
            continue
        wrong.sort()
        shown = "; ".join(f"@{o}: redis {v!r}, kafka {whole.records.get(o)!r}" for o, v in wrong[:5])
        yield anomaly(
            "tier_mismatch",
            f"the hot tier of {where(tp)} ({isolation}) disagrees with the kafka read at {len(wrong)} "
            f"offset(s): {shown}",
            hot.ops,
            whole.ops,
        )
