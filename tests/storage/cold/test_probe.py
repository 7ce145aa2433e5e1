"""The cold store probe of `--check`: it writes, reads back and deletes an object under the root, on a
local folder and on S3 (moto's server), and says what failed when the store cannot be used."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from schooner.storage.cold.errors import ColdStoreUnavailable
from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.probe import probe
from schooner.storage.redis.embedded import free_port


def test_a_local_folder_is_probed_and_left_clean(tmp_path: Path) -> None:
    probe(ColdLocation.from_url(str(tmp_path / "cold")))
    assert list((tmp_path / "cold").iterdir()) == []


def test_a_folder_that_cannot_be_written_is_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"a file where the root should be a folder")
    with pytest.raises(ColdStoreUnavailable, match="cannot write a probe object"):
        probe(ColdLocation.from_url(str(blocker)))


def test_s3_is_probed_and_left_clean(s3_server) -> None:
    bucket = s3_server.bucket()
    probe(s3_server.location(bucket))
    s3 = boto3.client(
        "s3", endpoint_url=s3_server.endpoint, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )  # fmt: skip
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert left in ([], ["tiered/"]), left  # at most the root's own folder marker


def test_an_unreachable_s3_endpoint_or_a_missing_bucket_is_unavailable(s3_server) -> None:
    with pytest.raises(ColdStoreUnavailable, match="cannot write"):
        probe(s3_server.location("no-such-bucket"))
    with pytest.raises(ColdStoreUnavailable, match="cannot write"):
        probe(s3_server.location(s3_server.bucket(), endpoint=f"http://127.0.0.1:{free_port()}"))
