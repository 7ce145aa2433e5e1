"""The cold tier: a topic's older records in a Delta Lake or Iceberg table (Parquet, ZSTD) on a local
folder or S3-compatible storage, read back by every consumer as if they had never left Redis.

  tiers.py     the tiered log's rules, once: which tier answers an offset, the log start, timestamps
  marks.py     the tier marks in Redis (archived_end, cold_start), the rules' one source of truth

  errors.py    ColdStoreError and its kinds (ColdStoreUnavailable, ColdDataCorrupt, ArchiveConflict)
  location.py  ColdLocation: the root URL, delta-rs's storage options, each topic's table URI
  layout.py    the table's columns; stream entries <-> Arrow rows (docs/tiered-storage.md); archive_rows
               and kafka_rows, every table format's rows (typed columns included) and back
  source.py    archive_slice: the Redis side of an archive step (committed entries, below the LSO,
               and the schema documents a decoded topic's records need)
  typed/       typed columns: keys and values decoded by their registered schemas (Avro, JSON Schema,
               Protobuf) into Arrow structs beside the raw bytes
  index.py     FileIndex: a partition's data files by offset and time, from the add actions' statistics
  table.py     ColdStore: archive (exactly once, by Delta app transactions), archived_end, read,
               start_offset, offset_for_timestamp, trim and vacuum; all blocking
  iceberg/     IcebergColdStore: the same methods on an Iceberg table (pyiceberg), its catalog in Redis
  formats.py   ColdTables: each call to the Delta or the Iceberg store, by the topic's table format
  file_cache.py FileCache: decoded data files, kept (one per deployment)
  aio.py       AsyncColdStore: the same, run in threads of its own for the event loop (one pool per
               deployment, its tenants' stores beside it)

Floor: beside mq/ and groups/ (it reads the log through log/read.py); store.py names archive_slice.
Only this package imports deltalake and pyiceberg; only typed/ in storage imports schooner.schemas (the
parsers).
"""
