"""The tier marks in the partition state and the trim of Redis below them (cold/marks.py, tier_*.lua)."""

from __future__ import annotations

from typing import Any

from schooner.storage.cold import marks
from schooner.storage.log.entry import Record
from schooner.storage.redis import calls


def _run(log: Any, call: Any) -> Any:
    return log._run(lambda r: calls.run(r, call))


def _length(log: Any) -> int:
    return int(log._run(lambda r: r.xlen(log.ks.stream(log.topic.name, 0))))


def test_redis_is_never_trimmed_at_or_past_the_archived_end(make_log) -> None:
    log = make_log("hot", **{"remote.storage.enable": "true"})
    for _ in range(10):
        log.append([Record(1000 + i, b"k", b"v%d" % i) for i in range(10)])  # stamped long ago
    # Nothing archived: nothing goes, whatever local retention says.
    assert _run(log, marks.trim_hot(log.ks, log.topic, 0, 0, 0)) == 0
    assert _run(log, marks.record(log.ks, log.topic, 0, 35, first=0)) == marks.TierMarks(35, 0)
    # local.retention.ms 0 lets every record go: only those below the archived end do.
    assert _run(log, marks.trim_hot(log.ks, log.topic, 0, 0, -1)) == 35
    assert _length(log) == 65
    assert log.read(0, 1).first_valid_offset == 35
    # No local bound: Redis keeps everything.
    _run(log, marks.record(log.ks, log.topic, 0, 80))
    assert _run(log, marks.trim_hot(log.ks, log.topic, 0, -1, -1)) == 0
    # By bytes: keep about 30 records, but never past the archived end (80).
    trimmed = _run(log, marks.trim_hot(log.ks, log.topic, 0, -1, 30 * 40))
    assert 0 < trimmed <= 45 and _length(log) >= 20


def test_the_archived_end_only_rises_and_the_cold_start_follows_trims(make_log) -> None:
    log = make_log("mk", **{"remote.storage.enable": "true"})
    log.append([Record(1, None, b"x")])
    assert _run(log, marks.marks(log.ks, log.topic, 0)).archived_end is None
    assert _run(log, marks.record(log.ks, log.topic, 0, 50, first=3)) == marks.TierMarks(50, 3)
    assert _run(log, marks.record(log.ks, log.topic, 0, 20, first=9)) == marks.TierMarks(
        50, 3
    )  # a late writer
    assert _run(log, marks.record(log.ks, log.topic, 0, trimmed_below=10)) == marks.TierMarks(50, 10)
    assert _run(log, marks.record(log.ks, log.topic, 0, trimmed_below=5)) == marks.TierMarks(50, 10)
    assert _run(log, marks.record(log.ks, log.topic, 0, trimmed_below=50)) == marks.TierMarks(50, None)


def test_marks_of_a_topic_made_again_are_left_alone(make_log) -> None:
    old = make_log("again", **{"remote.storage.enable": "true"})
    old.append([Record(1, None, b"x")])
    stale = old.topic
    import uuid
    from dataclasses import replace

    other = replace(stale, id=uuid.uuid4())  # an archiver that still holds the deleted topic's id
    assert _run(old, marks.record(old.ks, other, 0, 99, first=0)) is None
    assert _run(old, marks.trim_hot(old.ks, other, 0, 0, -1)) == 0
    assert _run(old, marks.marks(old.ks, stale, 0)).archived_end is None


def test_one_broker_at_a_time_holds_a_partitions_claim(make_log) -> None:
    log = make_log("claim", **{"remote.storage.enable": "true"})
    assert _run(log, marks.claim(log.ks, log.topic, 0, "a", 5000))
    assert not _run(log, marks.claim(log.ks, log.topic, 0, "b", 5000))
    assert _run(log, marks.claim(log.ks, log.topic, 0, "a", 5000))  # renewed
    assert _run(log, marks.release(log.ks, log.topic, 0, "a"))
    assert _run(log, marks.claim(log.ks, log.topic, 0, "b", 5000))


def test_a_trim_forgets_the_aborted_transactions_whose_marker_it_removed(make_log) -> None:
    log = make_log("ab", **{"remote.storage.enable": "true"})
    aborted = log.ks.aborted(log.topic.name, 0)
    log.append([Record(1000, None, b"t%d" % i) for i in range(3)], pid=7, epoch=0, seq=0)  # offsets 0-2
    log.end_txn(7, 0, commit=False)  # the abort marker at offset 3
    log.append([Record(1000, None, b"t%d" % i) for i in range(3)], pid=8, epoch=0, seq=0)  # 4-6
    log.end_txn(8, 0, commit=False)  # offset 7
    log.append([Record(1000, None, b"after%d" % i) for i in range(5)])  # 8-12
    assert int(log._run(lambda r: r.zcard(aborted))) == 2
    # Archived up to 5 and trimmed: the first marker (3) is gone, the second (7) is not.
    _run(log, marks.record(log.ks, log.topic, 0, 5, first=0))
    assert _run(log, marks.trim_hot(log.ks, log.topic, 0, 0, -1)) == 5
    assert int(log._run(lambda r: r.zcard(aborted))) == 1
    _run(log, marks.record(log.ks, log.topic, 0, 13))
    _run(log, marks.trim_hot(log.ks, log.topic, 0, 0, -1))
    assert int(log._run(lambda r: r.zcard(aborted))) == 0
