"""Archival to the cold tier: records/s of 100-byte records, and Parquet bytes per record.

`records` records (16-byte keys, 100-byte values, no headers) are appended to one partition through the
append script; then the archive steps run as the archiver will: each reads a slice of committed entries
out of Redis (cold/source.py, one round trip) and appends it to the topic's Delta table (one commit with
its app transaction). Two throughputs: the whole step (Redis read + rows + Parquet + commit), and the
cold write alone (rows + Parquet + commit). Bytes per record: the table's data files over the records.
`python -m bench.cold_archive [RECORDS [SLICE]]` runs it on an embedded redis-server and a temporary
folder; run(redis_url, cold_url) on any Redis and cold store.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.source import archive_slice
from schooner.storage.cold.table import ColdStore
from schooner.storage.keys import Keyspace
from schooner.storage.log import append
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.topics import metadata

RECORDS = 500_000
SLICE = 50_000
CHUNK = 1000
VALUE = (b"0123456789abcdef" * 7)[:100]
OLD = 1_700_000_000_000


def run(redis_url: str, cold_url: str, records: int = RECORDS, slice_records: int = SLICE) -> dict[str, Any]:
    ks = Keyspace(f"bench-cold-{uuid.uuid4().hex[:8]}")
    redis = client.connect_sync(redis_url)
    try:
        topic = drive_sync(redis, metadata.create(ks, "cold", 1, {"retention.ms": "-1"}, {}))
        for start in range(0, records, CHUNK):
            ids = range(start, min(start + CHUNK, records))
            batch = [Record(OLD + i, b"key-%012d" % i, VALUE) for i in ids]
            run_sync(redis, append.append(ks, topic, 0, RecordBatch(batch)))
        cold = ColdStore(ColdLocation.from_url(cold_url), ks.prefix)
        offset, archived, read_s, write_s = 0, 0, 0.0, 0.0
        began = time.perf_counter()
        while archived < records:
            t0 = time.perf_counter()
            piece = drive_sync(redis, archive_slice(ks, topic, 0, offset, slice_records))
            t1 = time.perf_counter()
            done = cold.archive(topic, 0, piece)
            write_s += time.perf_counter() - t1
            read_s += t1 - t0
            archived += done.records
            offset = piece.end
        total_s = time.perf_counter() - began
        table = DeltaTable(cold.table_uri(topic))
        data_bytes = sum(pa.table(table.get_add_actions(flatten=True)).column("size_bytes").to_pylist())
        return {
            "archive records/s (redis read + delta write)": round(records / total_s),
            "delta write records/s": round(records / write_s),
            "redis slice read records/s": round(records / read_s),
            "parquet bytes/record": round(data_bytes / records, 2),
            "records": records,
            "records per step": slice_records,
            "files": table.get_add_actions().num_rows,
        }
    finally:
        redis.close()


def main(argv: list[str]) -> int:
    from schooner.storage.redis.embedded import EmbeddedRedis

    records = int(argv[0]) if argv else RECORDS
    slice_records = int(argv[1]) if len(argv) > 1 else SLICE
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(Path(data) / "redis", persistent=False)
        server.start()
        try:
            for name, value in run(server.url, f"file://{data}/cold", records, slice_records).items():
                print(f"{name:46} {value}")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
