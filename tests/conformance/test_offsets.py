"""ListOffsets and DeleteRecords: the offsets Kafka answers, by each kind of query, are Schooner's too."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.delete_records.v2.request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)

from tests.conformance.peers import (
    EARLIEST,
    LATEST,
    MAX_TIMESTAMP,
    Peer,
    create_topic,
    list_offsets,
    listing,
    plain,
    same_answers,
    unique,
)
from tests.wire import produce_request, record_batch

BASE_MS = 1_700_000_000_000


def _fill(peer: Peer, topic: str) -> None:
    """Three batches, stamped 10 s apart, the middle one holding the largest timestamp at its second
    record: offsets 0-1 at BASE, 2-3 at BASE+20 s and BASE+30 s (the maximum), 4 at BASE+20 s."""
    for values, stamp in (([b"a", b"b"], BASE_MS), ([b"c"], BASE_MS + 20_000), ([b"d"], BASE_MS + 30_000),
                          ([b"e"], BASE_MS + 20_000)):  # fmt: skip
        answer = peer.call(produce_request(topic, record_batch(values, stamp)))
        assert answer.responses[0].partition_responses[0].error_code == 0, answer


def test_list_offsets_by_each_query(kafka: Peer, schooner: Peer) -> None:
    topic = unique("offsets")

    def scenario(peer: Peer) -> Any:
        empty = unique("empty")
        create_topic(peer, empty)
        create_topic(peer, topic)
        before = list_offsets(peer, topic, EARLIEST, LATEST, MAX_TIMESTAMP, BASE_MS)
        _fill(peer, topic)
        stamps = (BASE_MS - 1, BASE_MS, BASE_MS + 1, BASE_MS + 20_000, BASE_MS + 25_000, BASE_MS + 40_000)
        after = list_offsets(peer, topic, EARLIEST, LATEST, MAX_TIMESTAMP, *stamps)
        twice = listing(peer, topic, [EARLIEST, LATEST])  # one partition named twice
        return before, after, twice

    same_answers(scenario, kafka, schooner)


def test_delete_records_moves_the_log_start(kafka: Peer, schooner: Peer) -> None:
    topic = unique("delete")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, topic)
        _fill(peer, topic)

        def delete(*partitions: tuple[int, int]) -> Any:
            request = DeleteRecordsRequest(
                topics=(
                    DeleteRecordsTopic(
                        name=topic,
                        partitions=tuple(
                            DeleteRecordsPartition(partition_index=p, offset=o) for p, o in partitions
                        ),
                    ),
                ),
                timeout=datetime.timedelta(seconds=10),
            )
            return plain(peer.call(request))["topics"]

        return [
            delete((0, 2)),
            list_offsets(peer, topic, EARLIEST, LATEST, BASE_MS),
            delete((0, 1)),  # below the log start: nothing moves
            delete((0, 99)),  # past the end
            list_offsets(peer, topic, MAX_TIMESTAMP),
            delete((0, -1)),  # -1: up to the high watermark
            delete((3, 1)),  # no such partition
            list_offsets(peer, topic, EARLIEST, LATEST, BASE_MS),
        ]

    same_answers(scenario, kafka, schooner)


def test_max_timestamp_of_a_log_deleted_to_its_end_is_a_known_difference(kafka: Peer, schooner: Peer) -> None:
    """docs/compatibility.md: Kafka still finds the largest timestamp in the segment file that holds the
    deleted records (an offset below the log start); Schooner has no record left, so no offset (-1)."""
    topic = unique("max-deleted")
    answers = {}
    for peer in (kafka, schooner):
        create_topic(peer, topic)
        _fill(peer, topic)
        request = DeleteRecordsRequest(
            topics=(
                DeleteRecordsTopic(
                    name=topic, partitions=(DeleteRecordsPartition(partition_index=0, offset=-1),)
                ),
            ),
            timeout=datetime.timedelta(seconds=10),
        )
        peer.call(request)
        answers[peer.name] = list_offsets(peer, topic, EARLIEST, MAX_TIMESTAMP)
    assert [a["offset"] for a in answers["kafka"]] == [5, 3]
    assert [a["offset"] for a in answers["schooner"]] == [5, -1]
