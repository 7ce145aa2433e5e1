"""`schooner topics repair`: a dense partition stopped by a plain `XADD key *` is given offsets again."""

from __future__ import annotations

import redis
from click.testing import CliRunner
from confluent_kafka import KafkaError, Producer

from schooner.ops.cli import main
from schooner.storage.keys import Keyspace
from tests.clients import Rec, confluent_consume, confluent_produce


def _refused(bootstrap: str, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 1500, "retries": 0})
    producer.produce(topic, b"refused?", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)
    return errors[0]


def test_repair_gives_star_entries_offsets_and_produce_resumes(broker, redis_client: redis.Redis) -> None:
    ks = Keyspace(broker.settings.keyspace)
    stream = ks.stream("stopped", 0)
    confluent_produce(broker.bootstrap, "stopped", [Rec(b"k", b"v%d" % i) for i in range(3)])
    redis_client.xgroup_create(stream, "workers", id="0")
    redis_client.xreadgroup("workers", "w1", {stream: ">"}, count=2)  # two pending, one not yet delivered
    star = redis_client.xadd(stream, {"value": b"with star"})  # ms > 0: no dense ID can follow it
    error = _refused(broker.bootstrap, "stopped")
    assert error is not None and error.code() == KafkaError.KAFKA_STORAGE_ERROR
    assert [m.value() for m in confluent_consume(broker.bootstrap, "stopped", 3)] == [b"v0", b"v1", b"v2"]

    args = ["--redis-url", broker.redis_url, "--keyspace", broker.settings.keyspace]
    result = CliRunner().invoke(main, ["topics", "repair", "stopped", *args])
    assert result.exit_code == 0, result.output
    assert "1 entries given offsets; the log now ends at 4" in result.output
    assert redis_client.hget(ks.partition_state("stopped", 0), "foreign_id") is None

    confluent_produce(broker.bootstrap, "stopped", [Rec(None, b"after")])
    got = confluent_consume(broker.bootstrap, "stopped", 5)
    assert [(m.offset(), m.value()) for m in got] == [
        (0, b"v0"), (1, b"v1"), (2, b"v2"), (3, b"with star"), (4, b"after"),
    ]  # fmt: skip
    assert got[3].timestamp()[1] == int(star.split(b"-")[0])  # the old ID's time became its timestamp
    # The group goes back to before its oldest unacknowledged entry: nothing it had not acknowledged is
    # lost (the two pending ones come again), and the moved entry comes at its new ID.
    assert redis_client.xpending(stream, "workers")["pending"] == 0
    rest = redis_client.xreadgroup("workers", "w1", {stream: ">"}, count=10)[0][1]
    assert [e[0] for e in rest] == [b"0-1", b"0-2", b"0-3", b"0-4", b"0-5"]
    again = CliRunner().invoke(main, ["topics", "repair", "stopped", *args])
    assert again.exit_code == 0 and "nothing to repair" in again.output
