"""The checker's parts: model.py indexes a history once (final logs, writers of each value, transactions);
writes.py, reads.py and eos.py each search it for some anomaly kinds; stats.py counts. checker.py
runs them all and formats the report."""
