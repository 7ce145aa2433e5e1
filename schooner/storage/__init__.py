"""The storage layer: the only code that talks to Redis.

Layout, bottom to top (a module imports only from its own floor or the floors below):

  redis/     how a round trip travels, with no domain knowledge: client.py (connections),
             calls.py (Call, Steps and their runners), scripts.py (Lua by name), lane.py (the
             pipelined append connection), server_info.py, embedded.py (the redis-server we start),
             acl.py (the Redis ACL rules of a user limited to one keyspace), _stream_module.c (a
             Redis module the embedded server loads: SCHOONER.XADDRUN, which log_append.lua uses),
             redis_internals.py (the one door to redis-py's private parts, pinned by a test)
  keys.py    every key name, and tenants' keyspaces (Keyspace.tenant)
  offsets.py Kafka offset <-> stream entry ID (dense or timestamp)
  topics/    metadata.py (the topic hash, create/load/update/delete), config.py (topic configs)
  cluster.py brokers' registrations and the cluster-wide counters
  quotas.py  client quotas (AlterClientQuotas/DescribeClientQuotas): Kafka's rules, the change notices
  security/  users.py (SCRAM users and their tenants), acls.py (ACL bindings)
  log/       the Kafka log, one stream per partition: entry.py (record <-> entry fields),
             append.py, read.py, lookup.py (by time), retention.py, producers.py (idempotent
             producers' state: DescribeProducers and expiry), sizes.py (DescribeLogDirs),
             repair.py (offsets for a dense partition's `XADD *` entries), compaction.py
             (cleanup.policy compact: the claimed, stepped compactor), raw_entries.py (a Fetch's
             XRANGE reply kept as its RESP bytes)
  groups/    Kafka consumer groups: state.py (the group hash, owner-fenced), commits.py, lag.py,
             configs.py (group configs)
  transactions/ the transaction coordinator's state (state.py) and transactional offsets (offsets.py)
  share/     share groups (KIP-932): partition.py, share partitions on Redis consumer groups
  mq/        the MQ library's queue state: queue.py, leases.py, retries.py, dead_letters.py, admin.py
  cold/      the cold tier: one Delta Lake or Iceberg table per topic (a local folder or S3), written
             exactly once from the log's committed entries (source.py, table.py, iceberg/) and read back
             as stream entries; tiers.py (the tiered log's rules), typed/ (typed columns from the
             registry's schemas: the one part of storage that imports schooner.schemas), formats.py,
             location.py, layout.py (the columns), index.py (files by offset), aio.py, errors.py
  store.py   Store: the broker's list of every round trip it makes, on one client and keyspace
             (store_coordination.py: the coordinators' and security's part of it, which Store inherits)
  blocking_store.py  BlockingStore: the same for the blocking callers (the MQ library, Spark, the CLI)

Rules: mq/ may import log/ (retries and dead-letter replays append), never the reverse; groups/
never imports mq/; cold/ reads log/, never the reverse; nothing here imports a layer above storage.
tests/test_layering.py pins them.

The round-trip idiom: every public function returns a Call (one command or script, with the parser
of its reply) or Steps (a generator that yields the Calls of each round trip and is sent their
replies). It is written once and run by whichever runner fits: calls.run / calls.drive from
asyncio, calls.run_sync / calls.drive_sync from blocking code, PipelinedLane.send_call on the
broker's append lane. Callers above storage use a Store method (the broker) or a BlockingStore method
(the MQ library, Spark, the CLI), not the runners. A Lua script is
scripts/<concern>_<verb>.lua with a KEYS/ARGV header, called by name through script().

A new API: its handler goes in broker/handlers, its round trips in the sub-package of its concern
(a Call or Steps function, plus a Store method when the broker calls it, a BlockingStore method when a
blocking caller does), its script in scripts/.
"""
