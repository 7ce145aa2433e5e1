"""Batches kept as appended (broker/partitions/recent_batches.py): which fetches they answer, and when a read
must."""

from __future__ import annotations

import uuid

from schooner.broker.partitions.recent_batches import MAX_RUN_BATCHES, RecentBatches
from schooner.storage.offsets import DENSE_OFFSETS
from schooner.storage.topics.metadata import Topic


def _topic() -> Topic:
    return Topic(name="t", id=uuid.uuid4(), partitions=2, offsets=DENSE_OFFSETS, overrides={})


def _fill(recent: RecentBatches, topic: Topic, bounds: list[tuple[int, int]], now: float = 10.0) -> None:
    for n, (base, end) in enumerate(bounds):
        recent.appended(topic, 0, base, end, b"b%d" % base, 3, now, n + 1)


def test_a_fetch_from_a_kept_batch_gets_it_and_those_after_within_the_budget() -> None:
    recent, topic = RecentBatches(), _topic()
    _fill(recent, topic, [(10, 15), (15, 20), (20, 30)])
    served = recent.serve(topic, 0, 15, 1000, 10.5)
    assert served is not None
    assert served.batches == [b"b15", b"b20"] and served.next_offset == 30
    assert (served.high_watermark, served.log_start, served.notices) == (30, 3, 3)
    cut = recent.serve(topic, 0, 10, 7, 10.5)  # as many batches as fit
    assert cut is not None and cut.batches == [b"b10", b"b15"] and cut.next_offset == 20
    # A first batch over the budget is a read's to cut (one record at least), never sent whole.
    assert recent.serve(topic, 0, 10, 2, 10.5) is None


def test_offsets_outside_the_run_or_inside_a_batch_are_read() -> None:
    recent, topic = RecentBatches(), _topic()
    _fill(recent, topic, [(10, 15), (15, 20)])
    assert recent.serve(topic, 0, 9, 1000, 10.5) is None
    assert recent.serve(topic, 0, 12, 1000, 10.5) is None  # a read cuts the batch at the offset
    assert recent.serve(topic, 0, 20, 1000, 10.5) is None  # the end: nothing kept to give
    assert recent.serve(topic, 1, 10, 1000, 10.5) is None  # another partition


def test_another_writer_between_two_batches_starts_a_new_run() -> None:
    recent, topic = RecentBatches(), _topic()
    _fill(recent, topic, [(10, 15), (18, 20)])  # 15..17 came from elsewhere
    assert recent.serve(topic, 0, 10, 1000, 10.5) is None
    served = recent.serve(topic, 0, 18, 1000, 10.5)
    assert served is not None and served.batches == [b"b18"]


def test_a_batch_a_read_returns_otherwise_ends_the_run() -> None:
    recent, topic = RecentBatches(), _topic()
    _fill(recent, topic, [(10, 15)])
    recent.appended(topic, 0, 15, 20, None, 3, 10.0, 2)
    assert recent.serve(topic, 0, 10, 1000, 10.5) is None


def test_runs_last_the_window_and_a_bounded_number_of_batches() -> None:
    recent, topic = RecentBatches(window=1.0), _topic()
    _fill(recent, topic, [(10, 15)])
    assert recent.serve(topic, 0, 10, 1000, 11.5) is None
    _fill(recent, topic, [(i, i + 1) for i in range(MAX_RUN_BATCHES + 1)], now=20.0)
    assert recent.serve(topic, 0, 0, 1000, 20.5) is None  # the run started again at the last batch
    assert recent.serve(topic, 0, MAX_RUN_BATCHES, 1000, 20.5) is not None


def test_forget_drops_the_partitions_run() -> None:
    recent, topic = RecentBatches(), _topic()
    _fill(recent, topic, [(10, 15)])
    recent.forget(topic, 0)
    assert recent.serve(topic, 0, 10, 1000, 10.5) is None
