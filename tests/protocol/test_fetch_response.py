"""The fast Fetch response writer against kio's: the same bytes for every flexible version, and a
round trip through kio's reader."""

from __future__ import annotations

import datetime
import importlib
import random
import uuid
from types import ModuleType
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from schooner.protocol.fetch_response import writer_for
from schooner.protocol.messages import make
from tests.protocol.writer_bytes import fast_and_kio

VERSIONS = range(12, 19)


def _module(version: int) -> ModuleType:
    return importlib.import_module(f"kio.schema.fetch.v{version}.response")


def _partition(mod: ModuleType, rng: random.Random, **tagged: Any) -> Any:
    aborted = rng.choice(
        [None, (), tuple(make(mod.AbortedTransaction, producer_id=rng.randrange(1 << 40),
                              first_offset=rng.randrange(1 << 50)) for _ in range(rng.randrange(1, 4)))]
    )  # fmt: skip
    size = rng.choice([0, 1, 126, 127, 128, 1022, 1023, 1024, 20_000, 3_000_000])
    return make(
        mod.PartitionData,
        partition_index=rng.randrange(1 << 31),
        error_code=rng.choice([ErrorCode.none, ErrorCode.offset_out_of_range, ErrorCode.kafka_storage_error]),
        high_watermark=rng.randrange(-1, 1 << 62),
        last_stable_offset=rng.randrange(-1, 1 << 62),
        log_start_offset=rng.randrange(-1, 1 << 62),
        aborted_transactions=aborted,
        preferred_read_replica=rng.choice([-1, 0, 7]),
        records=rng.choice([None, rng.randbytes(size)]),
        **tagged,
    )


def _response(mod: ModuleType, rng: random.Random, topics: int, partitions: int, **tagged: Any) -> Any:
    return make(
        mod.FetchResponse,
        throttle_time=datetime.timedelta(milliseconds=rng.choice([0, 5, 1999])),
        error_code=rng.choice([ErrorCode.none, ErrorCode.fetch_session_id_not_found]),
        session_id=rng.randrange(1 << 31),
        responses=tuple(
            make(
                mod.FetchableTopicResponse,
                topic=rng.choice(["t", "orders-ü", "x" * 249]),
                topic_id=rng.choice([None, uuid.uuid4()]),
                partitions=tuple(_partition(mod, rng) for _ in range(partitions)),
            )
            for _ in range(topics)
        ),
        **tagged,
    )


def _both(response: Any) -> tuple[bytes, bytes]:
    return fast_and_kio(writer_for, response)


@pytest.mark.parametrize("version", VERSIONS)
def test_same_bytes_as_kio(version: int) -> None:
    mod = _module(version)
    rng = random.Random(version)
    for topics, partitions in [(0, 0), (1, 0), (1, 1), (2, 3), (1, 130), (3, 400)]:
        response = _response(mod, rng, topics, partitions)
        fast, kio = _both(response)
        assert fast == kio
        decoded, end = entity_reader(type(response))(fast, 0)
        assert end == len(fast)
        assert decoded == response


@pytest.mark.parametrize("version", VERSIONS)
def test_set_tagged_fields_are_written_as_kio_writes_them(version: int) -> None:
    mod = _module(version)
    rng = random.Random(100 + version)
    leader = make(mod.LeaderIdAndEpoch, leader_id=3, leader_epoch=9)
    response = _response(mod, rng, 1, 2)
    topic = response.responses[0]
    moved = _partition(mod, rng, current_leader=leader)
    response = make(
        mod.FetchResponse,
        throttle_time=response.throttle_time,
        error_code=response.error_code,
        session_id=response.session_id,
        responses=(
            make(mod.FetchableTopicResponse, topic=topic.topic if version < 13 else None,
                 topic_id=getattr(topic, "topic_id", None), partitions=(*topic.partitions, moved)),
        ),
    )  # fmt: skip
    fast, kio = _both(response)
    assert fast == kio
    assert entity_reader(type(response))(fast, 0)[0].responses[0].partitions[-1].current_leader == leader
    if version >= 16:
        endpoint = make(mod.NodeEndpoint, node_id=3, host="h", port=9092, rack=None)
        with_endpoints = make(
            mod.FetchResponse, throttle_time=response.throttle_time, error_code=response.error_code,
            session_id=response.session_id, responses=response.responses, node_endpoints=(endpoint,),
        )  # fmt: skip
        fast, kio = _both(with_endpoints)
        assert fast == kio
        assert entity_reader(type(with_endpoints))(fast, 0)[0].node_endpoints == (endpoint,)


def test_older_versions_are_left_to_kio() -> None:
    for version in range(4, 12):
        assert writer_for(_module(version).FetchResponse) is None
