"""A broker whose cold store is S3 (moto's server): a tiered topic of each table format (Delta, Iceberg) is
archived to the bucket, Redis keeps only what local.retention.ms allows, and a consumer reads every
record back from offset 0."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.broker.helpers import wait
from tests.broker.tiering.conftest import FAST, hot_state, tiered
from tests.clients import Rec, confluent_consume, confluent_produce

N = 300


# Each format's own files in the bucket: Delta's log, Iceberg's metadata.
TABLE_FILES = {"delta": "/_delta_log/", "iceberg": ".metadata.json"}


@pytest.mark.parametrize("table_format", sorted(TABLE_FILES))
def test_a_topic_tiered_to_s3_reads_back_from_offset_0(
    broker_factory: Any, s3_server: Any, redis_client, table_format: str
) -> None:
    bucket = s3_server.bucket()
    broker = broker_factory(
        cold_store_url=s3_server.url(bucket),
        cold_store_endpoint=s3_server.endpoint,
        cold_store_region="us-east-1",
        cold_store_access_key_id="test",
        cold_store_secret_access_key="test",
        **FAST,
    )
    tiered("s3-clicks", broker.bootstrap, **{"schooner.table.format": table_format})
    sent = [Rec(b"k%d" % i if i % 4 else None, b"v%d" % i, (("h", b"%d" % i), ("h", None))) for i in range(N)]
    confluent_produce(broker.bootstrap, "s3-clicks", sent)
    ks = broker.settings.keyspace
    wait(lambda: hot_state(redis_client, ks, "s3-clicks")[1].get("archived_end") == str(N), 30, "archived")
    wait(lambda: hot_state(redis_client, ks, "s3-clicks")[0] == 0, 30, "trimmed from Redis")
    s3 = boto3.client(
        "s3", endpoint_url=s3_server.endpoint, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )  # fmt: skip
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert any(k.endswith(".parquet") for k in keys), keys
    assert any(TABLE_FILES[table_format] in k for k in keys), keys
    got = confluent_consume(broker.bootstrap, "s3-clicks", N)
    assert [m.offset() for m in got] == list(range(N))
    assert [(m.key(), m.value(), tuple(m.headers() or ())) for m in got] == [
        (r.key, r.value, r.headers) for r in sent
    ]
