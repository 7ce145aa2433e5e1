"""KIP-937's timestamp window (storage/topics/timestamps.py): which configs bound it, and which record of a
batch falls outside. Pure: no Redis."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from schooner.storage.offsets import DENSE_OFFSETS
from schooner.storage.topics.config import CONFIG_DEFS, NO_EFFECT_DOC, effective
from schooner.storage.topics.metadata import Topic
from schooner.storage.topics.timestamps import NO_TIMESTAMP, OutOfWindow, Window, out_of_window, window_of

NOW = 1_800_000_000_000
HOUR = 3_600_000
UNBOUNDED = 2**63 - 1


def _topic(**overrides: str) -> Topic:
    return Topic("t", uuid.uuid4(), 1, DENSE_OFFSETS, overrides, effective(overrides, {}))


@dataclass
class _Record:
    timestamp: int


@dataclass
class _Plain:
    runs: list[tuple[int, int]]
    max_timestamp: int


@dataclass
class _Batch:
    records: list[Any] = field(default_factory=list)
    plain: _Plain | None = None


def _records(*stamps: int) -> _Batch:
    return _Batch([_Record(ts) for ts in stamps])


def _runs(*runs: tuple[int, int]) -> _Batch:
    return _Batch(plain=_Plain(list(runs), max(ts for _, ts in runs)))


def test_the_default_window_refuses_only_records_more_than_an_hour_ahead() -> None:
    topic = _topic()
    assert window_of(topic) == Window(
        UNBOUNDED, "message.timestamp.before.max.ms", HOUR, "message.timestamp.after.max.ms"
    )
    assert out_of_window(topic, _records(1_000, NOW, NOW + HOUR), NOW) is None  # 1970 is fine
    refused = out_of_window(topic, _records(NOW, NOW + HOUR + 1), NOW)
    assert isinstance(refused, OutOfWindow) and refused.index == 1
    assert f"{HOUR + 1} ms after" in refused.message
    assert "message.timestamp.after.max.ms allows 3600000 ms" in refused.message


def test_the_first_record_outside_is_named_in_plain_and_decoded_batches() -> None:
    topic = _topic(**{"message.timestamp.before.max.ms": str(HOUR)})
    old = NOW - HOUR - 1
    decoded = out_of_window(topic, _records(NOW, NOW - HOUR, old, NOW), NOW)
    assert decoded is not None and decoded.index == 2
    assert f"timestamp {old}" in decoded.message and "message.timestamp.before.max.ms" in decoded.message
    plain = out_of_window(topic, _runs((3, NOW), (2, NOW - HOUR), (4, old)), NOW)
    assert plain is not None and plain.index == 5
    assert out_of_window(topic, _runs((3, NOW), (2, NOW - HOUR)), NOW) is None


def test_records_without_a_timestamp_are_not_checked() -> None:
    topic = _topic(**{"message.timestamp.before.max.ms": "0", "message.timestamp.after.max.ms": "0"})
    assert out_of_window(topic, _records(NO_TIMESTAMP, NOW, NO_TIMESTAMP), NOW) is None
    assert out_of_window(topic, _runs((4, NO_TIMESTAMP), (1, NOW)), NOW) is None
    refused = out_of_window(topic, _records(NO_TIMESTAMP, NOW + 1), NOW)
    assert refused is not None and refused.index == 1


def test_log_append_time_topics_check_nothing() -> None:
    topic = _topic(**{"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "0"})
    assert window_of(topic) is None
    assert out_of_window(topic, _records(1_000, NOW + 10 * HOUR), NOW) is None


def test_no_bound_at_all_checks_nothing() -> None:
    assert window_of(_topic(**{"message.timestamp.after.max.ms": str(UNBOUNDED)})) is None


def test_the_deprecated_difference_bounds_the_sides_left_at_their_defaults() -> None:
    both = window_of(_topic(**{"message.timestamp.difference.max.ms": "60000"}))
    diff = "message.timestamp.difference.max.ms"
    assert both == Window(60_000, diff, 60_000, diff)
    refused = out_of_window(_topic(**{diff: "60000"}), _records(NOW - 60_001), NOW)
    assert refused is not None and diff in refused.message
    one = window_of(_topic(**{diff: "60000", "message.timestamp.before.max.ms": str(2 * HOUR)}))
    assert one == Window(2 * HOUR, "message.timestamp.before.max.ms", 60_000, diff)


def test_the_kip_937_configs_have_kafka_4_defaults_and_take_effect() -> None:
    before = CONFIG_DEFS["message.timestamp.before.max.ms"]
    after = CONFIG_DEFS["message.timestamp.after.max.ms"]
    assert (before.default, after.default) == (str(UNBOUNDED), str(HOUR))
    assert (before.broker_name, after.broker_name) == (
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
    )
    for name in ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
                 "message.timestamp.difference.max.ms"):  # fmt: skip
        assert CONFIG_DEFS[name].effective and CONFIG_DEFS[name].documentation != NO_EFFECT_DOC
