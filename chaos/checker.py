"""Reads a chaos history and reports the anomalies of Kafka's guarantees it shows.

The final reads (f == "final", taken after every fault healed) are the ground truth: the "kafka" read
from offset 0 across the tiers is the whole log; the "redis" read of the hot tier must agree with it.
Each check is in chaos/checks/; `check` runs them all, `format_report` renders the result.

Kinds (see model.KINDS): lost_write, failed_write_visible, wrong_offset, duplicate, order, reorder,
gap, aborted_read, eos, offsets_backwards, share_double_ack, tier_mismatch.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.checks import eos, reads, writes
from chaos.checks.model import KINDS, Anomaly, Index
from chaos.checks.stats import stats
from chaos.history import Operation

__all__ = ["KINDS", "Anomaly", "CheckResult", "check", "format_report"]

SHOWN_PER_KIND = 20
SHOWN_OPS = 6  # per anomaly; the rest are counted


@dataclass
class CheckResult:
    anomalies: list[Anomaly]
    stats: dict[str, Any]
    # The operations the anomalies name, so the report can describe them without the history.
    involved: dict[int, Operation] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.anomalies

    def of_kind(self, kind: str) -> list[Anomaly]:
        return [a for a in self.anomalies if a.kind == kind]


def check(ops: Sequence[Operation]) -> CheckResult:
    ix = Index(ops)
    found: list[Anomaly] = [
        *writes.lost_writes(ix),
        *writes.wrong_offsets(ix),
        *writes.order(ix),
        *writes.duplicates(ix),
        *writes.tier_mismatches(ix),
        *reads.sessions(ix),
        *reads.polled_records(ix),
        *reads.aborted_in_final(ix),
        *reads.offsets_backwards(ix),
        *reads.share_double_acks(ix),
        *eos.exactly_once(ix),
    ]
    rank = {kind: position for position, kind in enumerate(KINDS)}
    found.sort(key=lambda a: (rank[a.kind], a.ops))
    counted = stats(ix)
    counted["anomalies"] = dict(Counter(a.kind for a in found))
    involved = {i: ix.by_index[i] for a in found for i in a.ops if i in ix.by_index}
    return CheckResult(found, counted, involved)


def _describe(op: Operation | None, index: int) -> str:
    if op is None:
        return f"#{index}"
    return f"#{index} {op.process} {op.f} {op.status} {op.start:.3f}-{op.end:.3f}s"


def format_report(result: CheckResult, seed: int | None) -> str:
    lines: list[str] = []
    verdict = "no anomalies" if result.ok else f"{len(result.anomalies)} anomalies"
    lines.append(f"chaos check: {verdict}")
    if seed is not None:
        lines.append(f"reproduce with: python -m chaos --seed {seed}")
    for kind in KINDS:
        anomalies = result.of_kind(kind)
        if not anomalies:
            continue
        lines.append("")
        lines.append(f"{kind}: {len(anomalies)}")
        for a in anomalies[:SHOWN_PER_KIND]:
            lines.append(f"  - {a.message}")
            for index in a.ops[:SHOWN_OPS]:
                lines.append(f"      {_describe(result.involved.get(index), index)}")
            if len(a.ops) > SHOWN_OPS:
                lines.append(f"      ... and {len(a.ops) - SHOWN_OPS} more operations")
        if len(anomalies) > SHOWN_PER_KIND:
            lines.append(f"  ... and {len(anomalies) - SHOWN_PER_KIND} more {kind}")
    lines.append("")
    lines.append("stats:")
    for key, value in result.stats.items():
        lines.append(f"  {key}: {json.dumps(value, sort_keys=True)}")
    return "\n".join(lines)
