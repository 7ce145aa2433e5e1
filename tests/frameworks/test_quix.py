"""Quix Streams (from PyPI) against the broker, as its users run it: a stateful app (quix_counter.py)
counts inputs per key in a RocksDB store, whose changes Quix writes to a changelog topic it creates
itself with cleanup.policy=compact.

The app runs, stops, loses its local state folder, and starts again: it rebuilds its state from the
changelog (compacted by the broker meanwhile, so recovery reads a log with gaps), and each key's count
goes on from where it was.
"""

from __future__ import annotations

from schooner.storage.keys import Keyspace
from tests.broker.helpers import wait
from tests.frameworks.quix_rig import INPUT, KEYS, PARTITIONS, Quix, counts_by_key


def test_state_is_rebuilt_from_the_compacted_changelog(quix: Quix, broker, redis_client) -> None:
    app = quix.start()
    quix.produce(30)
    quix.wait_output(30)
    # A second batch, once the first one's checkpoint is in the changelog: every key changes twice.
    (changelog,) = quix.changelogs()
    wait(lambda: sum(quix.ends(changelog)) >= KEYS, 15, "no checkpoint reached the changelog")
    quix.produce(30)
    outputs = quix.wait_output(60)
    app.stop()
    assert changelog == f"changelog__counter--{INPUT}--default"
    assert quix.config(changelog)["cleanup.policy"] == "compact"
    assert sorted((o.key, o.value) for o in outputs) == sorted(quix.sent)
    assert counts_by_key(outputs) == {f"k{k}": list(range(1, 11)) for k in range(KEYS)}

    # The broker compacts the changelog down to the latest count of each key.
    assert sum(quix.ends(changelog)) > KEYS
    streams = [Keyspace(broker.settings.keyspace).stream(changelog, p) for p in range(PARTITIONS)]
    wait(lambda: sum(redis_client.xlen(s) for s in streams) == KEYS, 15, "the changelog was not compacted")

    quix.delete_state()
    app = quix.start()
    quix.produce(KEYS)
    outputs = quix.wait_output(60 + KEYS)
    app.stop()
    assert len(outputs) == 60 + KEYS
    assert counts_by_key(outputs) == {f"k{k}": list(range(1, 12)) for k in range(KEYS)}
    assert any(quix.state_dir.rglob("*")), "the restarted app rebuilt no local state"
