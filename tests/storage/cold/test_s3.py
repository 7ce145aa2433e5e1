"""The cold tier on S3-compatible storage (moto's server from PyPI, started by the s3_server fixture):
the round trip, exactly once after a retry, and trims that remove the objects."""

from __future__ import annotations

import boto3

from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.table import ColdStore
from schooner.storage.log.entry import Record

OLD = 1_700_000_000_000


def _objects(server, bucket: str) -> set[str]:
    s3 = boto3.client(
        "s3", endpoint_url=server.endpoint, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )  # fmt: skip
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"] for page in pages for o in page.get("Contents", []) if o["Key"].endswith(".parquet")}


def _all_objects(server, bucket: str) -> set[str]:
    s3 = boto3.client(
        "s3", endpoint_url=server.endpoint, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )  # fmt: skip
    return {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}


def test_round_trip_exactly_once_and_trim_on_s3(make_log, s3_server, keyspace) -> None:
    bucket = s3_server.bucket()
    cold = ColdStore(s3_server.location(bucket), keyspace)
    assert cold.table_uri(make_log().topic).startswith(f"s3://{bucket}/tiered/{keyspace}/orders/")
    log = make_log("s3topic")
    records = [
        Record(
            OLD + i, None if i % 3 == 0 else b"k%d" % i, b"v" * i, [("h", b"1"), ("h", None)] if i % 2 else []
        )
        for i in range(30)
    ]
    base = log.append(records)
    first = log.slice(base, 10)
    assert cold.archive(log.topic, 0, first).records == 10
    # A retry from another process after an unrecorded commit, then the rest.
    again = ColdStore(s3_server.location(bucket), keyspace)
    assert again.archive(log.topic, 0, first).records == 0
    rest = log.slice(first.end, 100)
    assert again.archive(log.topic, 0, rest).records == 20
    back = cold.read(log.topic, 0, base, 1 << 20)
    assert back.entries == log.read(base, 100).entries
    assert len(_objects(s3_server, bucket)) == 2
    assert cold.trim(log.topic, 0, first.end) == 10
    assert len(_objects(s3_server, bucket)) == 1
    assert cold.start_offset(log.topic, 0) == first.end
    cold.drop(log.topic)  # DeleteTopics: the table's objects go, log and all
    assert all(key.endswith("/") for key in _all_objects(s3_server, bucket))  # empty folder markers only


def test_location_urls() -> None:
    local = ColdLocation.from_url("file:///var/data/cold")
    assert local.local and local.root == "/var/data/cold" and not local.storage_options
    s3 = ColdLocation.from_url(
        "s3://bucket/some/prefix/", endpoint="http://127.0.0.1:9000", region="eu-west-1",
        access_key_id="a", secret_access_key="b",
    )  # fmt: skip
    assert s3.root == "s3://bucket/some/prefix" and not s3.local
    assert s3.storage_options["AWS_ALLOW_HTTP"] == "true"
    assert s3.storage_options["AWS_REGION"] == "eu-west-1"
    assert s3.storage_options["conditional_put"] == "etag"
    import uuid

    tid = uuid.UUID(int=5)
    assert (
        s3.table_uri("schooner:tenant:acme", "t", tid)
        == f"s3://bucket/some/prefix/schooner/tenant/acme/t/{tid}"
    )
    for bad in ("ftp://x/y", "s3:///nobucket"):
        try:
            ColdLocation.from_url(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} was taken")
