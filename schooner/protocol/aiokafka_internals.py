"""What the protocol takes from aiokafka beyond its public API (its clients), in this one module.

Checked against aiokafka 0.14; pyproject.toml bounds it (`aiokafka>=0.14,<0.15`: its 0.x minors may
change these), and tests/protocol/test_aiokafka_internals.py pins the shape assumed here, with a round
trip through each. No other module of schooner imports aiokafka (the test checks that too).

- DefaultRecordBatch, DefaultRecordBatchBuilder: the compiled (Cython) v2 record-batch reader and
  builder of `aiokafka.record._crecords`, the fastest measured for both directions (docs/benchmarks.md);
  the reader decodes every produced batch that _produce.c leaves (records.py), the builder writes every
  fetch batch that _batch.c leaves (broker/partitions/fetch_codec.py). The builder is
  `DefaultRecordBatchBuilder(magic, codec, is_transactional, producer_id, producer_epoch, base_sequence,
  batch_size)`, its `append(offset_delta, timestamp, key, value, headers)` and `build() -> bytearray`
  with the base offset and the CRC's fields still to set; a record read has `offset`, `timestamp`,
  `key`, `value` and `headers` (a list of (str, bytes | None)).
- crc32c_cython: the CRC-32C of `aiokafka.record._crecords.cutil`, for a header the builder wrote.
- LegacyRecordBatch: the magic 0 and 1 message reader of `aiokafka.record.legacy_records`, the compiled
  one where aiokafka has it (legacy_records.py).
- gzip_encode, lz4_encode, snappy_encode, zstd_encode: the codecs of `aiokafka.codec`, which compress a
  fetch batch as the builder would (compress.py).
"""

from __future__ import annotations

from aiokafka.codec import gzip_encode, lz4_encode, snappy_encode, zstd_encode
from aiokafka.record._crecords import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.record._crecords.cutil import crc32c_cython
from aiokafka.record.legacy_records import LegacyRecordBatch

AIOKAFKA_CHECKED = "0.14"  # the aiokafka version this module was checked against

__all__ = [
    "AIOKAFKA_CHECKED",
    "DefaultRecordBatch",
    "DefaultRecordBatchBuilder",
    "LegacyRecordBatch",
    "crc32c_cython",
    "gzip_encode",
    "lz4_encode",
    "snappy_encode",
    "zstd_encode",
]
