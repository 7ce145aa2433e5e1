"""Quix Streams with processing_guarantee="exactly-once" against the broker: the counter app of
quix_counter.py consumes, counts and produces in Kafka transactions (its outputs, its changelog records
and its consumer offsets commit or abort together), and the test reads the output read_committed.

- Across clean restarts, every input comes out exactly once and the counts go on.
- An app killed with a transaction open leaves that transaction's outputs in the log, never committed:
  a read_committed reader skips them, the restarted app processes those inputs again from the last
  committed offsets and state, and each input comes out once. The killed app's transactional id dies
  with it (Quix draws a new one on every start), so the broker aborts its transaction when it times out
  (transaction.timeout.ms, 5 s here).
"""

from __future__ import annotations

import collections
import json

from tests.frameworks.quix_rig import KEYS, Quix, counts_by_key

EOS = "exactly-once"


def test_every_input_is_output_once_across_clean_restarts(quix: Quix) -> None:
    for cycle in range(3):
        app = quix.start(EOS)
        quix.produce(2 * KEYS)
        quix.wait_output(2 * KEYS * (cycle + 1))
        app.stop()
    outputs = quix.output().poll()
    assert collections.Counter((o.key, o.value) for o in outputs) == collections.Counter(quix.sent)
    assert counts_by_key(outputs) == {f"k{k}": list(range(1, 7)) for k in range(KEYS)}


def test_a_killed_app_leaves_only_committed_outputs_behind(quix: Quix) -> None:
    # A transaction commits after every 30 inputs (or after 60 s, beyond this test).
    app = quix.start(EOS, COMMIT_EVERY="30", COMMIT_INTERVAL="60",
                     CONSUMER_CONFIG=json.dumps({"session.timeout.ms": 6000}),
                     PRODUCER_CONFIG=json.dumps({"transaction.timeout.ms": 5000}))  # fmt: skip
    quix.produce(30)
    quix.wait_output(30)
    quix.produce(20)  # processed in a transaction that stays open
    quix.wait_output(50, isolation="read_uncommitted")
    app.kill()
    assert len(quix.output().poll()) == 30, "outputs of the open transaction were read as committed"

    app = quix.start(EOS, CONSUMER_CONFIG=json.dumps({"session.timeout.ms": 6000}))
    quix.produce(10)
    outputs = quix.wait_output(60, timeout=40)
    app.stop()
    assert len(outputs) == 60
    assert collections.Counter((o.key, o.value) for o in outputs) == collections.Counter(quix.sent)
    assert counts_by_key(outputs) == {f"k{k}": list(range(1, 11)) for k in range(KEYS)}
    # The 20 outputs of the aborted transaction are in the log, skipped by read_committed readers.
    assert len(quix.wait_output(80, isolation="read_uncommitted")) == 80
