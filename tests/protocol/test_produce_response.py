"""The fast Produce response writer against kio's: the same bytes for every version from 3, with entries
the fast path writes and entries it leaves to kio (record errors, messages, log append times, leader
hints, node endpoints), and a round trip through kio's reader."""

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

from schooner.protocol.apis import response_type
from schooner.protocol.messages import has_field, make
from schooner.protocol.produce_response import writer_for
from tests.protocol.writer_bytes import fast_and_kio

VERSIONS = range(3, 14)


def _module(version: int) -> ModuleType:
    return importlib.import_module(f"kio.schema.produce.v{version}.response")


def _partition(mod: ModuleType, rng: random.Random, usual: bool) -> Any:
    cls = mod.PartitionProduceResponse
    values: dict[str, Any] = {
        "index": rng.randrange(1 << 31),
        "error_code": rng.choice(
            [ErrorCode.none, ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error]
        ),
        "base_offset": rng.randrange(-1, 1 << 62),
        "log_append_time": None,
        "log_start_offset": rng.randrange(-1, 1 << 62),
        "record_errors": (),
        "error_message": None,
    }
    if not usual:
        unusual = rng.choice(["time", "errors", "message", "leader"])
        if unusual == "time" or not has_field(cls, "record_errors"):
            values["log_append_time"] = datetime.datetime.fromtimestamp(
                rng.randrange(1 << 40) / 1000, datetime.UTC
            )
        elif unusual == "errors":
            errors = [make(mod.BatchIndexAndErrorMessage, batch_index=i, batch_index_error_message=m)
                      for i, m in [(0, "bad"), (3, None)]]  # fmt: skip
            values["record_errors"] = tuple(errors)
            values["error_message"] = "refused"
        elif unusual == "message" or not has_field(cls, "current_leader"):
            values["error_message"] = "ü" * rng.randrange(200)
        else:
            values["current_leader"] = make(mod.LeaderIdAndEpoch, leader_id=3, leader_epoch=9)
    return make(cls, **values)


def _response(mod: ModuleType, rng: random.Random, topics: int, partitions: int, usual: bool = True) -> Any:
    return make(
        mod.ProduceResponse,
        throttle_time=datetime.timedelta(milliseconds=rng.choice([0, 5, 1999])),
        responses=tuple(
            make(
                mod.TopicProduceResponse,
                name=rng.choice(["t", "orders-ü", "x" * 249]),
                topic_id=uuid.uuid4(),
                partition_responses=tuple(
                    _partition(mod, rng, usual or i % 2 == 0) for i in range(partitions)
                ),
            )
            for _ in range(topics)
        ),
    )


def _both(response: Any) -> tuple[bytes, bytes]:
    return fast_and_kio(writer_for, response)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("usual", [True, False])
def test_same_bytes_as_kio(version: int, usual: bool) -> None:
    mod = _module(version)
    rng = random.Random(version)
    for topics, partitions in [(0, 0), (1, 0), (1, 1), (2, 3), (1, 130), (3, 40)]:
        response = _response(mod, rng, topics, partitions, usual)
        fast, kio = _both(response)
        assert fast == kio
        decoded, end = entity_reader(type(response))(fast, 0)
        assert end == len(fast)
        assert decoded == response


@pytest.mark.parametrize("version", range(10, 14))
def test_node_endpoints_are_written_as_kio_writes_them(version: int) -> None:
    mod = _module(version)
    endpoint = make(mod.NodeEndpoint, node_id=3, host="h", port=9092, rack=None)
    response = _response(mod, random.Random(7), 1, 2)
    response = make(mod.ProduceResponse, throttle_time=response.throttle_time, responses=response.responses,
                    node_endpoints=(endpoint,))  # fmt: skip
    fast, kio = _both(response)
    assert fast == kio
    assert entity_reader(type(response))(fast, 0)[0].node_endpoints == (endpoint,)


def test_legacy_versions_are_left_to_kio() -> None:
    for version in range(3):
        assert writer_for(response_type(0, version)) is None
