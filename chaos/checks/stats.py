"""What a run did, in counts: the report's context for its anomalies (or their absence)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from chaos.checks.eos import txn_committed
from chaos.checks.model import Index, where


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "max": None}
    return {"mean": round(sum(values) / len(values), 3), "max": round(max(values), 3)}


def stats(ix: Index) -> dict[str, Any]:
    by_f: dict[str, Counter[str]] = defaultdict(Counter)
    for op in ix.ops:
        by_f[op.f][op.status] += 1

    produce = Counter(op.status for op in ix.produces)
    landed = unchecked = 0
    for op in ix.produces:
        log = ix.written_log((op.value["topic"], int(op.value["partition"])))
        if op.status == "unknown":
            landed += log is not None and op.value["value"] in log
        # A partition without a final read: its writes could not be checked.
        unchecked += op.status == "ok" and log is None

    txn = Counter(op.status for op in ix.txns)
    unknown_committed = sum(1 for op in ix.txns if op.status == "unknown" and txn_committed(ix, op))

    faults: dict[str, dict[str, Any]] = {}
    healed: dict[str, list[float]] = defaultdict(list)
    recovered: dict[str, list[float]] = defaultdict(list)
    unrecovered: Counter[str] = Counter()
    for op in ix.ops:
        if op.f != "fault":
            continue
        kind = str(op.value.get("kind"))
        healed[kind].extend([op.value["healed"]] if op.value.get("healed") is not None else [])
        if op.value.get("recovered") is None:
            unrecovered[kind] += 1
        else:
            recovered[kind].append(op.value["recovered"])
        faults.setdefault(kind, {"count": 0})["count"] += 1
    for kind, entry in faults.items():
        entry["healed"] = _spread(healed[kind])
        entry["recovered"] = _spread(recovered[kind])
        entry["never_recovered"] = unrecovered[kind]

    return {
        "operations": len(ix.ops),
        "by_f": {f: dict(counts) for f, counts in sorted(by_f.items())},
        "unknown_outcomes": sum(counts["unknown"] for counts in by_f.values()),
        "produce": {
            "acknowledged": produce["ok"],
            "unknown": produce["unknown"],
            "unknown_in_log": landed,
            "failed": produce["fail"],
            "unchecked": unchecked,
            # Written twice by a client that renumbered them after its own record timeout (model.py).
            "client_resent": len(ix.client_resent),
            "timed_out_producers": sorted(ix.timed_out_producers),
        },
        "txn": {
            "committed": txn["ok"],
            "aborted": txn["fail"],
            "unknown": txn["unknown"],
            "unknown_committed": unknown_committed,
            "transform": sum(1 for op in ix.txns if op.value.get("inputs")),
        },
        "final_records": {
            f"{source} {isolation} {where(tp)}": len(log.records)
            for (source, isolation, tp), log in sorted(ix.finals.items())
        },
        "finals_incomplete": sorted(
            " ".join(str(ix.by_index[i].value.get(k)) for k in ("source", "isolation", "topic", "partition"))
            for i in ix.partial_finals
        ),
        "faults": dict(sorted(faults.items())),
    }
