"""broker/metrics/errors.py: the error codes of a response, found by a per-class plan (no socket)."""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import response as fetch
from kio.schema.metadata.v12 import response as metadata
from kio.static.primitive import i32, i32Timedelta, i64

from schooner.broker.metrics.errors import error_codes
from schooner.broker.metrics.meters import api_label, error_label, topic_label


def _partition(index: int, error: ErrorCode) -> fetch.PartitionData:
    return fetch.PartitionData(
        partition_index=i32(index), error_code=error, high_watermark=i64(0), last_stable_offset=i64(0),
        log_start_offset=i64(0), aborted_transactions=(), preferred_read_replica=i32(-1), records=b"",
    )  # fmt: skip


def test_fetch_errors_per_partition_and_none_for_success() -> None:
    ok = fetch.FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(fetch.FetchableTopicResponse(topic="t", partitions=(_partition(0, ErrorCode.none),)),),
    )
    assert error_codes(ok) == []
    mixed = fetch.FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            fetch.FetchableTopicResponse(
                topic="t",
                partitions=(
                    _partition(0, ErrorCode.offset_out_of_range),
                    _partition(1, ErrorCode.none),
                    _partition(2, ErrorCode.not_leader_or_follower),
                ),
            ),
        ),
    )
    assert error_codes(mixed) == [ErrorCode.offset_out_of_range, ErrorCode.not_leader_or_follower]


def test_codes_at_every_level_of_nesting() -> None:
    partition = metadata.MetadataResponsePartition(
        error_code=ErrorCode.leader_not_available, partition_index=i32(0), leader_id=i32(-1),
        leader_epoch=i32(-1), replica_nodes=(), isr_nodes=(), offline_replicas=(),
    )  # fmt: skip
    topic = metadata.MetadataResponseTopic(
        error_code=ErrorCode.topic_authorization_failed, name="t", topic_id=None, is_internal=False,
        partitions=(partition,), topic_authorized_operations=i32(0),
    )  # fmt: skip
    response = metadata.MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), brokers=(), cluster_id=None,
        controller_id=i32(1), topics=(topic,),
    )  # fmt: skip
    assert error_codes(response) == [ErrorCode.topic_authorization_failed, ErrorCode.leader_not_available]


def test_labels_are_kafka_names() -> None:
    assert [api_label(k) for k in (0, 1, 18, 36)] == ["Produce", "Fetch", "ApiVersions", "SaslAuthenticate"]
    assert error_label(ErrorCode.unknown_topic_or_partition) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert error_label(-1) == "UNKNOWN_SERVER_ERROR"
    assert topic_label(None, "orders") == "orders" and topic_label("acme", "orders") == "acme/orders"
