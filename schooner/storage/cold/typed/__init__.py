"""The cold table's typed columns: keys and values decoded by their registered schemas into Arrow columns
beside the raw bytes (a topic's schooner.table.key.mode / schooner.table.value.mode, issue 42).

  fits.py        what the formats share: a type and its fit, the JSON-text fallback, merging versions
  avro_types.py  Avro -> Arrow, and fastavro's reader of many payloads (the fast path)
  avro_batch.py  many payloads of one Avro schema at once (polars' reader), verified against their bytes
  json_types.py  JSON Schema -> Arrow
  proto_types.py Protobuf messages -> Arrow
  codecs.py      Codec: one registered schema's type and decoder, parsed once per document and kept
  columns.py     decode_column: a column of raw keys or values -> (struct, schema id, error)

The only part of storage that imports schooner.schemas (the parsers); the schema documents themselves come
in the archive slice (source.py reads them from the registry's keys).
"""

from __future__ import annotations

from .columns import Decoded, decode_column

__all__ = ["Decoded", "decode_column"]
