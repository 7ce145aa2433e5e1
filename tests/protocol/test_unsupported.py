"""UNSUPPORTED_VERSION answers to APIs the broker does not serve (protocol/unsupported.py), for every
API and version kio has a schema for: they encode and read back, and put the error where clients look."""

from __future__ import annotations

import dataclasses
import datetime
import io
import types
import typing
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer

from schooner.protocol.apis import api_name, is_served, request_type
from schooner.protocol.unsupported import unsupported_response

_SAMPLES: dict[str, Any] = {
    "bool": True, "int8": 3, "int16": 3, "int32": 3, "int64": 3, "uint8": 3, "uint16": 3, "uint32": 3,
    "uint64": 3, "float64": 1.5, "error_code": ErrorCode.none, "string": "s", "bytes": b"b", "records": b"r",
    "uuid": uuid.UUID(int=7), "timedelta_i32": datetime.timedelta(seconds=1),
    "timedelta_i64": datetime.timedelta(seconds=1),
    "datetime_i64": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
}  # fmt: skip


def _strip(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _sample(cls: type) -> Any:
    """A request with every field set and every collection holding two entries."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        hint = _strip(f.type)
        if typing.get_origin(hint) is tuple:
            item = _strip(typing.get_args(hint)[0])
            one = _sample(item) if dataclasses.is_dataclass(item) else _SAMPLES[f.metadata["kafka_type"]]
            values[f.name] = (one, one)
        elif dataclasses.is_dataclass(hint):
            values[f.name] = _sample(hint)  # type: ignore[arg-type]
        else:
            values[f.name] = _SAMPLES[f.metadata["kafka_type"]]
    return cls(**values)


def _error_codes(entity: Any, path: str = "") -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.name == "error_code":
            found.append((path or "top", int(value)))
        for child in value if isinstance(value, tuple) else (value,):
            if dataclasses.is_dataclass(child):
                found += _error_codes(child, f"{path}/{f.name}")
    return found


UNSERVED = [
    (key, version)
    for key, name in sorted(api_key_map.items())
    if not is_served(key)
    for version in sorted(schema_name_map[name])
]
# Versions whose response collections match no request collection by the rule (the request lists
# plain partition numbers where the response has entries, or merges two lists): nothing to set.
NOT_ECHOED = {
    *(("add_partitions_to_txn", v) for v in range(4)),
    ("elect_leaders", 0),
    ("alter_user_scram_credentials", 0),
}


@pytest.mark.parametrize(("key", "version"), UNSERVED, ids=lambda v: str(v))
def test_every_unserved_api_gets_unsupported_version_where_clients_look(key: int, version: int) -> None:
    request = _sample(request_type(key, version))
    response = unsupported_response(request)
    buf = io.BytesIO()
    entity_writer(type(response))(buf, response)
    assert entity_reader(type(response))(buf.getvalue(), 0)[0] == response
    codes = _error_codes(response)
    assert all(code == ErrorCode.unsupported_version for _, code in codes), codes
    if (api_key_map[key], version) in NOT_ECHOED:
        assert codes == []
    elif ("top", ErrorCode.unsupported_version) in codes:
        assert len(codes) == 1  # collections stay empty beside a top-level error
        if hasattr(response, "error_message"):
            assert response.error_message == f"{api_name(key)} is not supported by this broker"
    else:
        assert len(codes) >= 2  # one per echoed request entry (the sample has two of each)


def test_entries_echo_the_request_by_field_name() -> None:
    from kio.schema.txn_offset_commit.v3.request import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitRequestPartition,
        TxnOffsetCommitRequestTopic,
    )

    partition = TxnOffsetCommitRequestPartition(
        partition_index=4, committed_offset=10, committed_leader_epoch=-1, committed_metadata=None
    )
    request = TxnOffsetCommitRequest(
        transactional_id="tx",
        group_id="g",
        producer_id=1,
        producer_epoch=0,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=(
            TxnOffsetCommitRequestTopic(
                name="orders", partitions=(partition, partition._replace() if False else partition)
            ),
        ),  # fmt: skip
    )
    response = unsupported_response(request)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics] == [
        ("orders", [(4, ErrorCode.unsupported_version), (4, ErrorCode.unsupported_version)])
    ]


def test_a_list_of_plain_values_is_echoed_as_entries_keyed_by_them() -> None:
    from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest

    response = unsupported_response(DescribeTransactionsRequest(transactional_ids=("a", "b")))
    assert [(s.transactional_id, s.error_code) for s in response.transaction_states] == [
        ("a", ErrorCode.unsupported_version),
        ("b", ErrorCode.unsupported_version),
    ]
