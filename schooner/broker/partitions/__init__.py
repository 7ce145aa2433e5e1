"""The data path: what the broker keeps in memory per partition, between the handlers and the Store.

- sequencer.py: turns that keep a partition's appends (and a group's offset writes) in arrival order.
- retry_order.py: an idempotent producer's batches after a failed one wait for its retry.
- waiters.py: long-polling fetches, woken by appends from any writer.
- recent_batches.py: batches just appended, served to fetches as they are.
- partition_ends.py: reads that found a partition's end, reused until its next append notice.
- fetch_codec.py: Redis entries to Kafka record batches.
"""
