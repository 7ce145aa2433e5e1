"""Bad requests: the error codes Kafka gives, per topic and partition, are Schooner's too."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_offsets.v9.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from tests.conformance.peers import Peer, create_topic, plain, same_answers, unique
from tests.wire import produce_request, record_batch

STAMP = datetime.timedelta(seconds=30)


def _create(peer: Peer, *topics: tuple[str, int, int, dict[str, str]], validate_only: bool = False) -> Any:
    request = CreateTopicsRequest(
        topics=tuple(
            CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=replicas,
                assignments=(),
                configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in configs.items()),
            )
            for name, partitions, replicas, configs in topics
        ),
        timeout=STAMP,
        validate_only=validate_only,
    )
    return plain(peer.call(request), drop=frozenset({"configs", "num_partitions", "replication_factor"}))


def test_create_topics_refuses_what_kafka_refuses(kafka: Peer, schooner: Peer) -> None:
    base = unique("create")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, f"{base}-exists")
        return _create(
            peer,
            (f"{base}-exists", 1, 1, {}),
            (f"{base}-zero", 0, 1, {}),
            (f"{base}-replicas", 1, 0, {}),
            (f"{base}-negative", -2, 1, {}),
            (f"{base}-bad/name", 1, 1, {}),
            ("x" * 250, 1, 1, {}),
            (".", 1, 1, {}),
            (f"{base}-policy", 1, 1, {"cleanup.policy": "sometimes"}),
            (f"{base}-unknown", 1, 1, {"no.such.config": "1"}),
            (f"{base}-number", 1, 1, {"retention.ms": "soon"}),
            (f"{base}-ok", 2, -1, {"retention.ms": "1000"}),
        )

    same_answers(scenario, kafka, schooner)


def test_create_topics_validate_only_creates_nothing(kafka: Peer, schooner: Peer) -> None:
    name = unique("validate")

    def scenario(peer: Peer) -> Any:
        first = _create(peer, (name, 3, 1, {}), validate_only=True)
        second = _create(peer, (name, 3, 1, {}), validate_only=True)
        return first, second

    same_answers(scenario, kafka, schooner)


def test_produce_to_missing_topics_partitions_and_oversized_records(kafka: Peer, schooner: Peer) -> None:
    small, absent = unique("small"), unique("absent")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, small, 2, {"max.message.bytes": "1000"})
        return [
            plain(peer.call(produce_request(absent, [b"v"]))),
            plain(peer.call(produce_request(small, [b"v"], partition=7))),
            plain(peer.call(produce_request(small, [b"x" * 2000]))),
            plain(peer.call(produce_request(small, [b"v"], acks=2))),
            plain(peer.call(produce_request(small, [b"fits"], partition=1))),
        ]

    same_answers(scenario, kafka, schooner)


def test_one_produce_with_a_different_fault_per_partition(kafka: Peer, schooner: Peer) -> None:
    """Each partition of one Produce gets its own answer: the faults of one do not touch the others,
    and the good partitions append."""
    small, absent, compacted, stamped = (
        unique("mixed"),
        unique("absent"),
        unique("compacted"),
        unique("stamped"),
    )
    good = record_batch([b"fits"])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF  # a byte of the record under the CRC

    def scenario(peer: Peer) -> Any:
        create_topic(peer, small, 4, {"max.message.bytes": "1000"})
        create_topic(peer, compacted, 1, {"cleanup.policy": "compact"})
        create_topic(peer, stamped, 1, {"message.timestamp.before.max.ms": "3600000"})
        data = {
            stamped: [(0, record_batch([b"old"], timestamp_ms=1000))],  # INVALID_TIMESTAMP, and its record
            compacted: [(0, good)],  # a record without a key: INVALID_RECORD, with its record error
            small: [
                (0, good),
                (1, record_batch([b"x" * 2000])),  # over max.message.bytes
                (2, bytes(corrupt)),
                (9, good),  # no such partition
                (3, good),
            ],
            absent: [(0, good)],
        }
        request = ProduceRequest(
            transactional_id=None,
            acks=1,
            timeout=STAMP,
            topic_data=tuple(
                TopicProduceData(
                    name=topic,
                    partition_data=tuple(PartitionProduceData(index=p, records=raw) for p, raw in parts),
                )
                for topic, parts in data.items()
            ),
        )
        answer = plain(peer.call(request), drop=frozenset({"log_append_time_ms"}))
        names = [small, compacted, stamped, absent]
        answer["responses"].sort(key=lambda t: names.index(t["name"]))
        for t in answer["responses"]:
            t["partition_responses"].sort(key=lambda p: p["index"])
        return answer

    same_answers(scenario, kafka, schooner)


def test_fetch_and_list_offsets_of_missing_partitions_and_offsets(kafka: Peer, schooner: Peer) -> None:
    name, absent = unique("fetch"), unique("absent")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, name, 1)
        peer.call(produce_request(name, [b"a", b"b"]))
        fetch = FetchRequest(
            max_wait=datetime.timedelta(0),
            min_bytes=1,
            max_bytes=1 << 20,
            topics=(
                FetchTopic(
                    topic=name,
                    partitions=(
                        FetchPartition(partition=0, fetch_offset=5, partition_max_bytes=1 << 20),
                        FetchPartition(partition=3, fetch_offset=0, partition_max_bytes=1 << 20),
                    ),
                ),
                FetchTopic(
                    topic=absent,
                    partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),),
                ),
            ),
            forgotten_topics_data=(),
        )
        listing = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                ListOffsetsTopic(
                    name=name,
                    partitions=(
                        ListOffsetsPartition(partition_index=0, timestamp=-1),
                        ListOffsetsPartition(partition_index=9, timestamp=-1),
                    ),
                ),
                ListOffsetsTopic(
                    name=absent, partitions=(ListOffsetsPartition(partition_index=0, timestamp=-2),)
                ),
            ),
        )
        # Kafka gives an unknown partition an empty aborted list even read_uncommitted (no client reads it).
        answer = plain(peer.call(fetch), drop=frozenset({"session_id", "records", "aborted_transactions"}))
        listed = plain(peer.call(listing), drop=frozenset({"timestamp"}))
        listed["topics"].sort(key=lambda t: t["name"])  # Kafka lists refused ones first: no meaning in it
        for t in listed["topics"]:
            t["partitions"].sort(key=lambda p: p["partition_index"])
        return answer, listed

    same_answers(scenario, kafka, schooner)


def test_metadata_of_absent_and_invalid_topics_without_auto_creation(kafka: Peer, schooner: Peer) -> None:
    absent = unique("absent")

    def scenario(peer: Peer) -> Any:
        request = MetadataRequest(
            topics=tuple(
                MetadataRequestTopic(name=n, topic_id=uuid.UUID(int=0)) for n in (absent, "bad/name", "")
            ),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        topics = plain(peer.call(request), drop=frozenset({"brokers"}))["topics"]
        return sorted(topics, key=lambda t: t["name"])  # Kafka answers in no set order

    same_answers(scenario, kafka, schooner)


def test_a_replication_factor_above_the_brokers_is_a_known_difference(kafka: Peer, schooner: Peer) -> None:
    """docs/compatibility.md: Kafka refuses more replicas than it has brokers; Schooner's one copy is
    Redis', so it takes any factor (Kafka Connect and MirrorMaker 2 ask for 3 by default)."""
    name = unique("replicas")
    answers = {
        peer.name: _create(peer, (name, 1, 3, {}))["topics"][0]["error_code"] for peer in (kafka, schooner)
    }
    assert answers == {"kafka": "invalid_replication_factor", "schooner": "none"}
