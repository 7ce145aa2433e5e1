from __future__ import annotations

import datetime
import struct

import pytest
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsV0Response
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v0.request import MetadataRequest as MetadataV0
from kio.schema.offset_fetch.v1.response import OffsetFetchResponsePartition as OffsetFetchV1Partition
from kio.serial import entity_reader

from schooner.protocol.apis import SUPPORTED_VERSIONS, request_type, response_type
from schooner.protocol.errors import MalformedRequest, UnsupportedRequest
from schooner.protocol.messages import decode_request, encode_response, make
from tests.wire import encode_request


def test_decodes_flexible_and_legacy_requests() -> None:
    fetch = FetchRequest(
        max_wait=datetime.timedelta(milliseconds=500),
        min_bytes=1,
        topics=(
            FetchTopic(
                topic="t", partitions=(FetchPartition(partition=0, fetch_offset=5, partition_max_bytes=1024),)
            ),
        ),
        forgotten_topics_data=(),
    )
    request = decode_request(encode_request(fetch, correlation_id=9)[4:])
    assert request.header.correlation_id == 9 and request.header.api_version == 12
    assert request.body == fetch
    legacy = decode_request(encode_request(MetadataV0(topics=()), correlation_id=3)[4:])
    assert legacy.body.topics == ()


def test_unsupported_and_malformed() -> None:
    with pytest.raises(UnsupportedRequest):
        decode_request(struct.pack(">hhih", 1, 3, 1, -1))  # Fetch v3 is below Kafka 4.0's minimum
    with pytest.raises(UnsupportedRequest):
        decode_request(struct.pack(">hhih", 5000, 0, 1, -1))
    frame = encode_request(ApiVersionsRequest(client_software_name="abc", client_software_version="1"))[4:]
    with pytest.raises(MalformedRequest):
        decode_request(frame[:-3])


def test_api_versions_response_always_uses_header_v0() -> None:
    header = decode_request(
        encode_request(ApiVersionsRequest(client_software_name="a", client_software_version="1"))[4:]
    ).header
    body = make(
        ApiVersionsResponse, error_code=ErrorCode.none, api_keys=(), throttle_time=datetime.timedelta(0)
    )
    data = encode_response(header, body)
    assert struct.unpack_from(">ii", data) == (len(data) - 4, 1)
    decoded, _ = entity_reader(ApiVersionsResponse)(data, 8)  # no header tagged fields
    assert decoded.error_code == ErrorCode.none


def test_every_advertised_version_has_kio_types() -> None:
    for api_key, (low, high) in SUPPORTED_VERSIONS.items():
        for version in range(low, high + 1):
            assert request_type(api_key, version).__version__ == version
            assert response_type(api_key, version).__api_key__ == api_key


def test_make_drops_fields_a_version_lacks() -> None:
    """zk_migration_ready is a field of ApiVersionsResponse v3 and v4 only; older versions drop it."""
    v0 = make(ApiVersionsV0Response, error_code=ErrorCode.none, api_keys=(), zk_migration_ready=True)
    assert v0 == ApiVersionsV0Response(error_code=ErrorCode.none, api_keys=())
    v3 = make(
        ApiVersionsResponse,
        error_code=ErrorCode.none,
        api_keys=(),
        throttle_time=datetime.timedelta(0),
        zk_migration_ready=True,
    )
    assert v3.zk_migration_ready is True


def test_make_refuses_a_name_no_version_defines() -> None:
    with pytest.raises(TypeError, match=r"unrecognized kwarg\(s\) error_mesage: no version of "):
        make(ApiVersionsResponse, error_code=ErrorCode.none, api_keys=(), error_mesage="typo")
    # Nested entities are checked against the class of the same name in every version.
    with pytest.raises(TypeError, match="api_versions response ApiVersion"):
        make(ApiVersionV0, api_key=0, min_version=0, max_version=1, max_verison=2)
    # A name that only another version of a nested entity has is dropped, not refused.
    partition = make(OffsetFetchV1Partition, partition_index=0, committed_offset=5, metadata="",
                     error_code=ErrorCode.none, committed_leader_epoch=3)  # fmt: skip
    assert partition.committed_offset == 5
