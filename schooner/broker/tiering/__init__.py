"""Tiered storage in the broker: the cold tier (storage/cold/) wired to topics with remote.storage.enable.

  tiering.py   Tiering (ctx.tiering): the keyspace's cold store, if the broker has one; the cold side of
               ListOffsets and DeleteRecords; opened by open_context, closed at stop
  archiver.py  Archiver: the pass upkeep.py runs every archive_interval_ms: for each tiered partition
               this broker owns (the groups' rule: a hash over the live brokers, plus a claim in Redis
               so one broker at a time archives it), archive committed slices, record the archived
               end, trim Redis below it, and apply retention to the cold tier

Fetch's cold reads are a step of PartitionReader's cascade (partitions/cold_reads.py), over the same
AsyncColdStore. Floor: beside access/, metadata/ and metrics/ (below the data path).
"""
