"""The transform's exactly-once: every input record below its group's committed offset has its outputs in
the final read_committed log exactly once."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from chaos.checks.model import READ_COMMITTED, TP, Anomaly, Index, anomaly, where
from chaos.history import Operation, split_tp

Input = tuple[str, int, int]  # topic, partition, offset
Output = tuple[TP, str]


def _outputs_by_input(txn: Operation) -> Iterator[tuple[Input, str, list[Output]]]:
    """Pairs each input with its outputs: position by position when the transaction wrote one output per
    input (the transform does), else every output to every input."""
    inputs = txn.value.get("inputs") or []
    outputs: list[Output] = [((t, int(p)), v) for t, p, v in txn.value.get("outputs") or []]
    paired = len(inputs) == len(outputs)
    for position, (topic, partition, offset, value) in enumerate(inputs):
        yield (topic, int(partition), int(offset)), value, [outputs[position]] if paired else outputs


def txn_committed(ix: Index, txn: Operation) -> bool:
    """ok, or unknown with its outputs in the committed log."""
    if txn.status == "ok":
        return True
    if txn.status == "fail":
        return False
    for topic, partition, value in txn.value.get("outputs") or ():
        log = ix.log((topic, int(partition)), READ_COMMITTED)
        if log is None or value not in log:
            return False
    return True


def committed_offsets(ix: Index, groups: set[str]) -> dict[tuple[str, TP], int]:
    """Each transform group's committed offset: the highest sent by a committed transaction, or the last
    one an observer saw, whichever is higher."""
    found: dict[tuple[str, TP], int] = {}

    def raise_to(group: str, key: str, offset: int) -> None:
        at = (group, split_tp(key))
        found[at] = max(found.get(at, offset), offset)

    for txn in ix.txns:
        group = txn.value.get("group")
        if group in groups and txn_committed(ix, txn):
            for key, offset in (txn.value.get("offsets") or {}).items():
                raise_to(group, key, offset)
    observed: dict[tuple[str, str], int] = {}
    for op in ix.observed_offsets:
        if op.status == "ok" and op.value.get("group") in groups:
            for key, offset in (op.value.get("offsets") or {}).items():
                observed[(op.value["group"], key)] = offset  # index order: the last one wins
    for (group, key), offset in observed.items():
        raise_to(group, key, offset)
    return found


def exactly_once(ix: Index) -> Iterator[Anomaly]:
    transforms = [txn for txn in ix.txns if txn.value.get("inputs")]
    if not transforms:
        return
    consumers: dict[Input, list[Operation]] = defaultdict(list)
    outputs: dict[Input, dict[Output, None]] = defaultdict(dict)  # insertion-ordered set
    values: dict[Input, str] = {}
    group_of: dict[Input, str] = {}
    for txn in transforms:
        for source, value, paired in _outputs_by_input(txn):
            consumers[source].append(txn)
            outputs[source].update(dict.fromkeys(paired))
            values[source] = value
            group_of.setdefault(source, str(txn.value.get("group")))
    groups = {str(txn.value.get("group")) for txn in transforms}
    committed = committed_offsets(ix, groups)

    for source, outs in outputs.items():
        tp, offset = (source[0], source[1]), source[2]
        seen: dict[Output, list[int]] = {}
        logs: list[int] = []
        for out in outs:
            log = ix.log(out[0], READ_COMMITTED)
            if log is not None:
                seen[out] = log.offsets_of(out[1])
                logs.extend(log.ops)
        took = [txn.index for txn in consumers[source] if txn.status != "fail"]
        twice = {out: at for out, at in seen.items() if len(at) > 1}
        if twice:
            (out_tp, out_value), at = next(iter(twice.items()))
            yield anomaly(
                "eos",
                f"input {where(tp, offset)} {values[source]!r} was processed {len(at)} times: its output "
                f"{out_value!r} is at offsets {at} of the committed log of {where(out_tp)}",
                took,
                logs,
            )
            continue
        limit = committed.get((group_of[source], tp))
        if limit is None or offset >= limit or not seen or any(seen.values()):
            continue
        if any(txn.status == "ok" for txn in consumers[source]):
            continue  # a committed transaction's missing output is reported as a lost write
        yield anomaly(
            "eos",
            f"input {where(tp, offset)} {values[source]!r} is below group {group_of[source]}'s committed "
            f"offset {limit} but no output of it is in the committed log (read by transactions "
            f"{[txn.index for txn in consumers[source]]}, none committed)",
            [txn.index for txn in consumers[source]],
            logs,
        )

    # Inputs no transaction read at all, yet below the committed offset: skipped by the transform.
    for (group, tp), limit in committed.items():
        log = ix.log(tp, READ_COMMITTED)
        if log is None:
            continue
        for offset in log.sorted_offsets():
            if offset >= limit:
                break
            if (tp[0], tp[1], offset) not in outputs:
                yield anomaly(
                    "eos",
                    f"input {where(tp, offset)} {log.records[offset]!r} is below group {group}'s committed "
                    f"offset {limit} but no transaction read it",
                    log.ops,
                )
