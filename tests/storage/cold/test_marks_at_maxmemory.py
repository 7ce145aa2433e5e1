"""The archiver's writes and the trims run when Redis refuses every other write (used memory over
maxmemory): their scripts carry Redis' allow-oom flag, so archiving frees memory when it is needed most."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from schooner.storage import cluster
from schooner.storage.cold import marks
from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import retention
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import calls

pytestmark = pytest.mark.single_redis  # it sets the one server's maxmemory


def _over_maxmemory(client: redis.Redis) -> None:
    client.config_set("maxmemory-policy", "noeviction")
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", str(used // 2))


def test_the_archivers_writes_and_the_trim_run_over_maxmemory(make_log: Any, full_redis: redis.Redis) -> None:
    log = make_log("oom", **{"remote.storage.enable": "true"})
    for _ in range(20):
        log.append([Record(1000 + i, b"k", b"v" * 200) for i in range(50)])
    _over_maxmemory(full_redis)
    # A record append is refused, as every write Redis counts as growing memory...
    refused = log_append.append(log.ks, log.topic, 0, RecordBatch([Record(1, None, b"late")]))
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        log._run(lambda r: calls.run(r, refused))
    # ...and so is a plain write of the same few bytes the claim writes.
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        full_redis.set(log.ks.archiver(log.topic.name, 0) + ":plain", "x")
    # The archiver's claim, its marks and the trim go through, and free memory.
    assert log.call(marks.claim(log.ks, log.topic, 0, "broker-1"))
    assert log.call(marks.record(log.ks, log.topic, 0, 600, first=0)) == marks.TierMarks(600, 0)
    assert log.call(marks.trim_hot(log.ks, log.topic, 0, -1, -1, to_archived_end=True)) == 600
    assert log.length() == 400
    assert log.read(0, 1).first_valid_offset == 600
    # Retention of an untiered topic frees memory too.
    assert log.call(retention.delete_records(log.ks, log.topic, 0, 700)) is not None
    assert log.length() == 300


def test_a_brokers_registration_runs_over_maxmemory(full_redis: redis.Redis, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    me = cluster.BrokerInfo(3, "127.0.0.1", 9092)
    _over_maxmemory(full_redis)
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        full_redis.hset(ks.broker(4), "host", "x")
    calls.drive_sync(full_redis, cluster.heartbeat(ks, me, 5000))
    assert calls.drive_sync(full_redis, cluster.live_brokers(ks)) == [me]
    assert calls.run_sync(full_redis, cluster.allocate_broker_id(ks)) >= 1
