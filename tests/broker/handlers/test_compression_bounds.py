"""A compressed batch that inflates far past its size on the wire is refused with MESSAGE_TOO_LARGE:
nothing of it is stored, the broker's memory stays near the bound, and it keeps serving (over the wire,
with raw frames)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from aiokafka.record._crecords import DefaultRecordBatch
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from tests.bombs import GZIP, LZ4, MIB, SNAPPY, ZSTD, bomb, peak_rss_growth
from tests.wire import call, create_topics, produce_request, record_batch

pytestmark = pytest.mark.both_encodings

# Inflated sizes: 128 MiB for gzip, lz4 and zstd (a few KiB to 550 KiB on the wire); snappy inflates
# at most about 21 times, so 20 MiB fits under max.message.bytes (1 MiB) and still passes the bound.
BOMBS = [
    pytest.param(GZIP, 128 * MIB, id="gzip"),
    pytest.param(ZSTD, 128 * MIB, id="zstd"),
    pytest.param(LZ4, 128 * MIB, id="lz4"),
    pytest.param(SNAPPY, 20 * MIB, id="snappy"),
]


def _produce(topic: str, batches: dict[int, bytes]) -> ProduceRequest:
    """One Produce (v9) with a batch per partition."""
    return ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(
            TopicProduceData(
                name=topic,
                partition_data=tuple(PartitionProduceData(index=p, records=b) for p, b in batches.items()),
            ),
        ),
    )


def _stored_values(port: int, topic: str, partition: int = 0) -> tuple[int, list[bytes]]:
    """The partition's high watermark and every value in it, read back with a Fetch (v12)."""
    request = FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=1,
        max_bytes=16 * MIB,
        topics=(
            FetchTopic(
                topic=topic,
                partitions=(
                    FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=16 * MIB),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    answer: Any = call(port, request).responses[0].partitions[0]
    assert answer.error_code == ErrorCode.none
    values: list[bytes] = []
    raw = answer.records or b""
    pos = 0
    while pos < len(raw):
        size = 12 + int.from_bytes(raw[pos + 8 : pos + 12], "big")
        values += [r.value for r in DefaultRecordBatch(raw[pos : pos + size])]
        pos += size
    return answer.high_watermark, values


@pytest.mark.parametrize(("codec", "inflated"), BOMBS)
def test_a_bomb_is_refused_stores_nothing_and_costs_little_memory(broker, codec: int, inflated: int) -> None:
    create_topics(broker.port, "bombed")
    first = call(broker.port, produce_request("bombed", [b"before"])).responses[0].partition_responses[0]
    assert first.error_code == ErrorCode.none
    before = _stored_values(broker.port, "bombed")
    data = bomb(codec, inflated)
    answers: list[Any] = []

    grown = peak_rss_growth(lambda: answers.append(call(broker.port, produce_request("bombed", data))))

    [partition] = answers[0].responses[0].partition_responses
    assert partition.error_code == ErrorCode.message_too_large
    assert "max_decompressed_batch_bytes" in (partition.error_message or "")
    assert _stored_values(broker.port, "bombed") == before
    # The default bound is 8 x max.message.bytes (8 MiB); undefended, the broker grew by twice the
    # inflated size (256 MiB for gzip, lz4 and zstd, 40 MiB for snappy).
    assert grown < 24 * MIB, f"the broker grew by {grown / MIB:.0f} MiB"
    after = call(broker.port, produce_request("bombed", [b"after"])).responses[0].partition_responses[0]
    assert after.error_code == ErrorCode.none
    assert _stored_values(broker.port, "bombed")[1] == [*before[1], b"after"]


def test_the_other_partitions_of_the_request_are_appended(broker_factory) -> None:
    broker = broker_factory(default_partitions=2)
    create_topics(broker.port, "mixed", partitions=2)
    good = record_batch([b"kept-1", b"kept-2"])
    answer = call(broker.port, _produce("mixed", {0: bomb(ZSTD, 128 * MIB), 1: good}))
    errors = {p.index: p.error_code for p in answer.responses[0].partition_responses}
    assert errors == {0: ErrorCode.message_too_large, 1: ErrorCode.none}
    assert _stored_values(broker.port, "mixed", 0)[1] == []
    assert _stored_values(broker.port, "mixed", 1)[1] == [b"kept-1", b"kept-2"]


def test_the_bound_is_a_broker_setting(broker_factory) -> None:
    # 4 MiB of zeros: under the default bound (8 MiB), over a bound of 1 MiB.
    data = bomb(GZIP, 4 * MIB)
    default = broker_factory()
    create_topics(default.port, "within")
    ok = call(default.port, produce_request("within", data)).responses[0].partition_responses[0]
    assert ok.error_code == ErrorCode.none
    assert [len(v) for v in _stored_values(default.port, "within")[1]] == [4 * MIB - 16]
    strict = broker_factory(max_decompressed_batch_bytes=MIB)
    create_topics(strict.port, "strict")
    refused = call(strict.port, produce_request("strict", data)).responses[0].partition_responses[0]
    assert refused.error_code == ErrorCode.message_too_large
