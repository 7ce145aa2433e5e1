"""The data path: the partition writer and reader, and what they keep in memory per partition.

- writer.py: PartitionWriter, a Produce's batches appended through the Store in request order.
- reader.py: PartitionReader, a Fetch's partitions read through recent batches, kept ends and Redis,
  and the long poll that Fetch and ShareFetch share.
- data_path.py: DataPath, the writer, reader and their state for one keyspace (open_data_path).
- sequencer.py: turns that keep a partition's appends (and a group's offset writes) in arrival order.
- retry_order.py: an idempotent producer's batches after a failed one wait for its retry.
- waiters.py: long-polling fetches, woken by appends from any writer.
- recent_batches.py: batches just appended, served to fetches as they are.
- partition_ends.py: reads that found a partition's end, reused until its next append notice.
- fetch_codec.py: Redis entries to Kafka record batches.
- cold_reads.py: the reader's source below a tiered partition's Redis start (the cold tier).

Nothing here takes the broker's context: open_context (broker/context.py) builds the DataPath from the
Store, the metrics and the topic cache's `forget`.
"""
