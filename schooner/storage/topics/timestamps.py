"""KIP-937: the window of record timestamps a CreateTime topic accepts at produce time. Pure.

A record stamped more than message.timestamp.before.max.ms before the broker's clock, or more than
message.timestamp.after.max.ms after it, makes Produce refuse its batch with INVALID_TIMESTAMP. The
deprecated message.timestamp.difference.max.ms, when set, bounds each side left at its default, as in
Kafka 3.6 to 3.9. LogAppendTime topics stamp records themselves and check nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .config import (
    CONFIG_DEFS,
    TIMESTAMP_AFTER_MAX_MS,
    TIMESTAMP_BEFORE_MAX_MS,
    TIMESTAMP_DIFFERENCE_MAX_MS,
)
from .metadata import Topic

NO_TIMESTAMP = -1  # Kafka's: a record without a create time, never checked
_UNBOUNDED = 2**63 - 1


class _Plain(Protocol):
    @property
    def runs(self) -> Sequence[tuple[int, int]]: ...  # (count, timestamp) of each run of one timestamp
    @property
    def max_timestamp(self) -> int: ...


class StampedBatch(Protocol):
    """A produced batch: the protocol's ProducedBatch fits."""

    @property
    def records(self) -> Sequence[Any]: ...  # each with .timestamp
    @property
    def plain(self) -> _Plain | None: ...


@dataclass(frozen=True, slots=True)
class Window:
    """How far from the broker's clock a record's timestamp may be, and the configs that say so."""

    before_ms: int
    before_config: str
    after_ms: int
    after_config: str


@dataclass(frozen=True, slots=True)
class OutOfWindow:
    index: int  # the first refused record's place in its batch (Kafka's record_errors batch_index)
    message: str


def window_of(topic: Topic) -> Window | None:
    """The topic's window; None when nothing is checked (LogAppendTime, or no bound at all)."""
    if topic.log_append_time:
        return None
    configs = topic.configs
    before = (int(configs[TIMESTAMP_BEFORE_MAX_MS]), TIMESTAMP_BEFORE_MAX_MS)
    after = (int(configs[TIMESTAMP_AFTER_MAX_MS]), TIMESTAMP_AFTER_MAX_MS)
    difference = int(configs[TIMESTAMP_DIFFERENCE_MAX_MS])
    if difference != _UNBOUNDED:
        if before[0] == int(CONFIG_DEFS[TIMESTAMP_BEFORE_MAX_MS].default):
            before = (difference, TIMESTAMP_DIFFERENCE_MAX_MS)
        if after[0] == int(CONFIG_DEFS[TIMESTAMP_AFTER_MAX_MS].default):
            after = (difference, TIMESTAMP_DIFFERENCE_MAX_MS)
    if before[0] == after[0] == _UNBOUNDED:
        return None
    return Window(before[0], before[1], after[0], after[1])


def out_of_window(topic: Topic, batch: StampedBatch, now_ms: int) -> OutOfWindow | None:
    """The batch's first record stamped outside the topic's window, or None when all are inside."""
    window = window_of(topic)
    if window is None:
        return None
    low, high = now_ms - window.before_ms, now_ms + window.after_ms
    plain = batch.plain
    runs: Sequence[tuple[int, int]]
    if plain is not None:  # a few runs, and the highest known: no step per record
        runs, highest = plain.runs, plain.max_timestamp
    else:
        runs = [(1, r.timestamp) for r in batch.records]
        highest = max((ts for _, ts in runs), default=NO_TIMESTAMP)
    # The default window bounds only the future: then the highest timestamp decides.
    if highest <= high and (window.before_ms == _UNBOUNDED or _lowest(runs) >= low):
        return None
    index = 0
    for count, ts in runs:
        if ts != NO_TIMESTAMP and not low <= ts <= high:
            return OutOfWindow(index, _message(window, index, ts, now_ms))
        index += count
    return None


def _lowest(runs: Sequence[tuple[int, int]]) -> int:
    return min((ts for _, ts in runs if ts != NO_TIMESTAMP), default=_UNBOUNDED)


def _message(window: Window, index: int, ts: int, now_ms: int) -> str:
    if ts < now_ms:
        gap, side, bound, config = now_ms - ts, "before", window.before_ms, window.before_config
    else:
        gap, side, bound, config = ts - now_ms, "after", window.after_ms, window.after_config
    return (
        f"record {index} of the batch has timestamp {ts}, {gap} ms {side} the broker's clock ({now_ms}); "
        f"this topic's {config} allows {bound} ms"
    )
