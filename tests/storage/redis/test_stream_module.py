"""Schooner's Redis module (storage/redis/_stream_module.c): SCHOONER.XADDRUN, the entries it adds, its
errors, what replicas and the AOF receive, and log_append.lua storing the same entries with and without it.

With SCHOONER_COMPILED=0 the embedded server loads no module: these tests are skipped then, and the
append script's own XADDs are what tests/storage/log runs."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import calls, client
from schooner.storage.redis.embedded import EmbeddedRedis, stream_module_path
from schooner.storage.topics import metadata
from tests.compiled import needs_compiled

pytestmark = needs_compiled

TS = 1_700_000_000_000
BIG_SEQ = 2**53 + 1  # a Lua number (a double) cannot hold it: the replay must not compute IDs in Lua


def test_the_module_is_built_and_the_embedded_server_loads_it(redis_client: Any) -> None:
    assert stream_module_path() is not None
    names = [m[b"name"] for m in redis_client.execute_command("MODULE", "LIST")]
    assert b"schooner" in names


def test_xaddrun_adds_entries_of_one_shape_with_consecutive_ids(redis_client: Any, keyspace: str) -> None:
    key = f"{keyspace}:s"
    added = redis_client.execute_command(
        "SCHOONER.XADDRUN", key, 0, 4, "crrc", "timestamp", "7", "key", "value", "txn", "9:0",
        "k1", "v1", "k2", "", "k3", "v3",
    )  # fmt: skip
    assert added == 3
    assert redis_client.xrange(key) == [
        (b"0-4", {b"timestamp": b"7", b"key": b"k1", b"value": b"v1", b"txn": b"9:0"}),
        (b"0-5", {b"timestamp": b"7", b"key": b"k2", b"value": b"", b"txn": b"9:0"}),
        (b"0-6", {b"timestamp": b"7", b"key": b"k3", b"value": b"v3", b"txn": b"9:0"}),
    ]
    # Field order is kept: a plain reader sees the fields as XADD would have written them.
    assert list(redis_client.xrange(key, "0-4", "0-4")[0][1]) == [b"timestamp", b"key", b"value", b"txn"]


@pytest.mark.parametrize(
    "args, error",
    [
        (("0", "9", "cr", "value"), "wrong number of arguments"),  # no record
        (("0", "9", "cx", "timestamp", "1", "value", "v"), "spec"),
        (("0", "9", "rr", "key", "value", "only-a-key"), "spec"),  # records do not fill the fields
        (("0", "9", "cc", "a", "1", "b", "2", "v"), "spec"),  # no field for a record's value
        (("-1", "9", "r", "value", "v"), "integers"),
        (("0", "x", "r", "value", "v"), "integers"),
        (("0", str(2**63), "r", "value", "v"), "integers"),  # XADD takes it; the module stops at int64
        (("0", " 9", "r", "value", "v"), "integers"),
        (("0", "+9", "r", "value", "v"), "integers"),
        (("0", "9", "r" * 9, *["f"] * 9, *["v"] * 9), "spec"),  # more than 8 fields
        (("0", "9", "", "value", "v"), "spec"),
        (("0", "2", "r", "value", "v", "w"), "smaller"),  # at or below the stream's last ID
    ],
)
def test_xaddrun_refuses_bad_calls_and_adds_nothing(
    redis_client: Any, keyspace: str, args: tuple[str, ...], error: str
) -> None:
    key = f"{keyspace}:s"
    redis_client.xadd(key, {"value": "first"}, id="0-2")
    with pytest.raises(redis.ResponseError, match=error):
        redis_client.execute_command("SCHOONER.XADDRUN", key, *args)
    assert redis_client.xrange(key) == [(b"0-2", {b"value": b"first"})]


def test_xaddrun_refuses_a_key_of_another_type(redis_client: Any, keyspace: str) -> None:
    key = f"{keyspace}:h"
    redis_client.hset(key, "f", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        redis_client.execute_command("SCHOONER.XADDRUN", key, 0, 1, "r", "value", "v")
    assert redis_client.hgetall(key) == {b"f": b"v"}


APPEND_IN_SCRIPT = """redis.call('XADD', KEYS[1], '0-1', 'timestamp', '5', 'value', 'a')
return redis.call('SCHOONER.XADDRUN', KEYS[1], 0, 2, 'crr', 'timestamp', '6', 'key', 'value',
  'k', 'b', 'l', 'c')"""


def _wait_until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_replicas_and_the_aof_get_the_entries_without_the_module(tmp_path: Path) -> None:
    """The module propagates each call as an EVAL of plain XADDs: a replica without the module, and a
    server without it reading the AOF back, hold the same entries."""
    no_delay = ["--repl-diskless-sync-delay", "0"]
    with EmbeddedRedis(tmp_path / "primary", persistent=True, extra_args=no_delay) as primary:
        replica = EmbeddedRedis(
            tmp_path / "replica",
            persistent=False,
            stream_module=False,
            password=primary.password or True,
            extra_args=["--replicaof", "127.0.0.1", str(primary.port)],
        )
        with replica, redis.Redis.from_url(primary.url) as p, redis.Redis.from_url(replica.url) as r:
            assert b"schooner" not in [m[b"name"] for m in r.execute_command("MODULE", "LIST")]
            _wait_until(lambda: r.info("replication")["master_link_status"] == "up")
            assert p.eval(APPEND_IN_SCRIPT, 1, "s") == 2
            p.execute_command("SCHOONER.XADDRUN", "s", 0, 4, "cr", "timestamp", "7", "value", "d", "e")
            written = p.xrange("s")
            assert [i for i, _ in written] == [b"0-1", b"0-2", b"0-3", b"0-4", b"0-5"]
            p.execute_command("SCHOONER.XADDRUN", "big", 0, BIG_SEQ, "r", "value", *"abc")
            big = p.xrange("big")
            assert [i for i, _ in big] == [b"0-%d" % (BIG_SEQ + n) for n in range(3)]
            assert p.wait(1, 5000) == 1
            assert r.xrange("s") == written
            assert r.xrange("big") == big
            p.execute_command("WAITAOF", 1, 0, 5000)
    with (
        EmbeddedRedis(tmp_path / "primary", persistent=True, stream_module=False) as again,
        redis.Redis.from_url(again.url) as a,
    ):
        assert a.xrange("s") == written
        assert a.xrange("big") == big


# log_append.lua with and without the module: every shape, a transactional batch, a timestamp topic's
# sequence carry, and a run longer than the script's chunk of 1,000 records.
def _batches() -> list[tuple[dict[str, str], RecordBatch, str | None]]:
    dense: dict[str, str] = {"retention.ms": "-1"}
    carry = {**dense, "schooner.offset.encoding": "timestamp", "schooner.sequence.bits": "2"}
    values = [Record(TS + i // 700, None, b"v%d" % i) for i in range(2500)]
    keyed = [Record(TS, b"k%d" % i, b"v%d" % i) for i in range(30)]
    mixed = [
        Record(TS, b"k", b"v"),
        Record(TS, None, None),
        Record(TS + 1, b"k", b"v", [("h", b"x"), ("h", None)]),
        Record(TS + 1, None, b"w"),
        Record(TS + 1, None, b"w2"),
        Record(TS + 1, None, b"w3"),
    ]
    return [
        (dense, RecordBatch(values), None),
        (dense, RecordBatch(keyed), None),
        (dense, RecordBatch(keyed, producer_id=3, producer_epoch=0, base_sequence=0), "txn-a"),
        (dense, RecordBatch(mixed), None),
        (carry, RecordBatch(values[:11]), None),
        (carry, RecordBatch(keyed[:9], producer_id=4, producer_epoch=0, base_sequence=0), "txn-b"),
    ]


async def _append_all(url: str, ks: Keyspace) -> list[Any]:
    redis_client = client.connect(url)
    try:
        out = []
        for n, (configs, batch, txn) in enumerate(_batches()):
            topic = await calls.drive(redis_client, metadata.create(ks, f"t{n}", 1, configs, {}))
            first = -1  # a timestamp topic's IDs hold the append time: offsets are compared from the first
            # A second batch starts after the first one's IDs (on a timestamp topic, where the clock says).
            for _ in range(1 if "schooner.offset.encoding" in configs else 2):
                result = await calls.run(
                    redis_client, log_append.append(ks, topic, 0, batch, transactional_id=txn)
                )
                assert result.status == APPENDED
                if batch.producer_id >= 0:
                    batch = RecordBatch(
                        batch.records, batch.producer_id, 0, batch.base_sequence + len(batch.records)
                    )
                first = result.base_offset if first < 0 else first
                out.append((result.base_offset - first, result.last_offset - first))
            entries = await redis_client.xrange(ks.stream(topic.name, 0))
            ids = [[int(part) for part in i.split(b"-")] for i, _ in entries]
            offsets = [topic.offsets.offset_of(ms, seq) - first for ms, seq in ids]
            out.append([(o, fields) for o, (_, fields) in zip(offsets, entries, strict=True)])
        return out
    finally:
        await redis_client.aclose()


def _module_calls(server: Any) -> int:
    total = 0
    for node in getattr(server, "nodes", [server]):
        with redis.Redis.from_url(node.url) as r:
            total += int(r.info("commandstats").get("cmdstat_schooner.xaddrun", {}).get("calls", 0))
    return total


def test_log_append_stores_the_same_entries_with_and_without_the_module(
    redis_server: Any, keyspace: str, tmp_path: Path
) -> None:
    before = _module_calls(redis_server)
    with_module = asyncio.run(_append_all(redis_server.url, Keyspace(keyspace)))
    assert _module_calls(redis_server) > before
    with EmbeddedRedis(tmp_path / "plain", persistent=False, stream_module=False) as plain:
        without = asyncio.run(_append_all(plain.url, Keyspace(keyspace)))
        assert _module_calls(plain) == 0
    assert with_module == without
    assert len(with_module[2]) == 5000  # both batches of the long run


def test_log_append_leaves_the_module_alone_when_told_to(
    redis_server: Any, keyspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SCHOONER_COMPILED=0 sets ARGV[19] of log_append.lua to 0: the script XADDs each record itself on a
    server that has the module, and stores the same entries."""
    with_module = asyncio.run(_append_all(redis_server.url, Keyspace(f"{keyspace}:on")))
    monkeypatch.setattr(log_append, "_USE_MODULE", b"0")
    before = _module_calls(redis_server)
    without = asyncio.run(_append_all(redis_server.url, Keyspace(f"{keyspace}:off")))
    assert _module_calls(redis_server) == before
    assert with_module == without


# SCHOONER.XADDRUN against its twin, one XADD per entry with the IDs ms-seq, ms-(seq+1), ...: random
# shapes and values, sequences where a double loses digits and at the end of int64, and streams whose
# last ID is at, above or below the first one asked for. The same entries, or both add nothing.
SEQS = st.sampled_from([0, 1, 7, 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 8]) | st.integers(0, 2**63 - 8)
_calls = itertools.count()


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ms=st.sampled_from([0, 1, 2**63 - 1]),
    seq=SEQS,
    spec=st.text("cr", min_size=1, max_size=8).filter(lambda s: "r" in s),
    constants=st.lists(st.binary(max_size=5), min_size=8, max_size=8),
    records=st.lists(st.lists(st.binary(max_size=5), min_size=8, max_size=8), min_size=1, max_size=5),
    last=st.sampled_from([None, -1, 0, 1]),  # the stream's last entry: none, or relative to the first ID
)
def test_xaddrun_adds_what_one_xadd_per_entry_adds(
    redis_client: Any,
    keyspace: str,
    ms: int,
    seq: int,
    spec: str,
    constants: list[bytes],
    records: list[list[bytes]],
    last: int | None,
) -> None:
    n = next(_calls)
    run_key, twin_key = f"{keyspace}:{{x{n}}}:run", f"{keyspace}:{{x{n}}}:twin"
    if last is not None:
        at = seq + last
        before = f"{ms}-{at}" if at >= 0 else (f"{ms - 1}-0" if ms else None)
        if before is not None and before != "0-0":
            for key in (run_key, twin_key):
                redis_client.xadd(key, {"v": "before"}, id=before)
    names = [b"f%d" % f for f in range(len(spec))]
    args: list[Any] = []
    for f, kind in enumerate(spec):
        args += [names[f], constants[f]] if kind == "c" else [names[f]]
    values = [record[f] for record in records for f, kind in enumerate(spec) if kind == "r"]
    try:
        added = redis_client.execute_command("SCHOONER.XADDRUN", run_key, ms, seq, spec, *args, *values)
    except redis.ResponseError:
        added = 0
    twin_added = 0
    for i, record in enumerate(records):
        fields = [(names[f], constants[f] if kind == "c" else record[f]) for f, kind in enumerate(spec)]
        try:
            redis_client.execute_command("XADD", twin_key, f"{ms}-{seq + i}", *itertools.chain(*fields))
        except redis.ResponseError:
            break
        twin_added += 1
    assert added == twin_added
    assert redis_client.xrange(run_key) == redis_client.xrange(twin_key)
    redis_client.delete(run_key, twin_key)
