"""The cold tier in Iceberg: one table per topic (schooner.table.format=iceberg), written with pyiceberg,
read by the broker straight from its Parquet files, its catalog kept in Redis unless one is configured.

  clients.py  blocking Redis clients for the catalog (no pyiceberg: the broker names them at start)
  pointers.py the Redis catalog's state as Calls (table pointers, namespaces; no pyiceberg either)
  catalog.py  RedisCatalog (table pointers in a Redis hash, moved by compare-and-swap); open_catalog
  naming.py   identifiers, table properties, FileIO settings
  files.py    the file index of a table's current snapshot, from its manifests (cached per manifest)
  store.py    IcebergColdStore: ColdStore's methods (archive exactly once, reads, trims, drop)
  vacuum.py   expiring snapshots and removing the files only they named

Imported only when a topic's table is Iceberg (formats.ColdTables), so pyiceberg loads only then.
"""
