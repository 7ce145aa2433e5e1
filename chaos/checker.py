"""Reads a chaos history and reports the anomalies of Kafka's guarantees it shows.

The final reads (f == "final", taken after every fault healed) are the ground truth: the "kafka" read
from offset 0 across the tiers is the whole log; the "redis" read of the hot tier must agree with it.
Each check is in chaos/checks/; `check` runs them all, `format_report` renders the result.

Kinds (model.KINDS):

- lost_write: an acknowledged produce, a committed transaction's output, or a record a poll returned,
  missing from the final log;
- failed_write_visible: a produce recorded as failed (never sent) in a final log;
- wrong_offset: an acknowledged offset holding another value, or none while the value is elsewhere;
- duplicate: two values seen at one offset, or a value at more places than the times it was sent (read
  committed: more than once);
- order: one producer's values to a partition not at offsets rising with its seq;
- reorder, gap: a poll session (not a share one) going back, or skipping a record the final log holds
  at its isolation level;
- aborted_read: a read_committed poll, or the final read_committed log, holding an aborted record;
- eos: a transform input below its group's committed offset processed twice or never;
- offsets_backwards: one observer seeing a group's committed offset decrease;
- share_double_ack: a share record accepted (and confirmed) twice in one share group;
- tier_mismatch: the hot tier read from redis disagreeing with the kafka read.

A final read that did not complete leaves its (source, isolation, partition) unchecked
(stats["finals_incomplete"]); unknown outcomes are allowed either way.
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
    text = f"#{index} {op.process} {op.f} {op.status} {op.start:.3f}-{op.end:.3f}s"
    if op.f == "final":  # several final reads per partition: say which
        v = op.value
        text += f" ({v.get('source')} {v.get('isolation')} {v.get('topic')}/{v.get('partition')})"
    return text


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
