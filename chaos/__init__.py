"""Chaos: many real clients against a real deployment while a nemesis injects faults at random, every
operation recorded to a history that a checker searches for anomalies of Kafka's guarantees.

`python -m chaos --minutes 10 --seed N` (`make chaos`) runs one; a short run is part of the suite
(tests/chaos/). The parts, lowest first:

- history.py: the operations and the history file (its docstring is the schema every part writes);
- checker.py: reads a history and names each anomaly with the operations involved;
- deployment.py: redis-server (one with AOF, or a Redis Cluster of primaries with replicas), broker
  processes, the S3 cold store, each behind a FaultProxy (proxy.py) so links can be stalled or cut;
- nemesis.py: picks faults at random from the run's seed, injects and heals them, records each;
- workloads/: the clients (confluent-kafka and kafka-python), each a thread recording its operations;
- run.py: one run: deploy, start the workloads and the nemesis, stop, heal, read the final logs,
  check, report.
"""
