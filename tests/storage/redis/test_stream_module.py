"""Schooner's Redis module (storage/redis/_stream_module.c): SCHOONER.XADDPACKED, the entries it adds, its
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
from schooner.storage.log.append import APPENDED, RecordBatch, pack_fields
from schooner.storage.log.entry import Record
from schooner.storage.redis import calls, client
from schooner.storage.redis.embedded import EmbeddedRedis, stream_module_path
from schooner.storage.topics import metadata
from tests.compiled import needs_compiled

pytestmark = needs_compiled

TS = 1_700_000_000_000
BIG_SEQ = 2**53 + 1  # a Lua number (a double) cannot hold it: the replay must not compute IDs in Lua


def packed(*values: str | bytes) -> bytes:
    """Record values as the command takes them: each a MessagePack str 32 (0xdb, a 4-byte big-endian
    length, the bytes)."""
    raw = [v.encode() if isinstance(v, str) else v for v in values]
    return b"".join(b"\xdb" + len(v).to_bytes(4, "big") + v for v in raw)


def test_the_module_is_built_and_the_embedded_server_loads_it(redis_client: Any) -> None:
    assert stream_module_path() is not None
    names = [m[b"name"] for m in redis_client.execute_command("MODULE", "LIST")]
    assert b"schooner" in names


def test_xaddpacked_adds_entries_of_one_shape_with_consecutive_ids(redis_client: Any, keyspace: str) -> None:
    key = f"{keyspace}:s"
    values = packed("k1", "v1", "k2", "", "k3", "v3")
    reply = redis_client.execute_command(
        "SCHOONER.XADDPACKED", key, 0, 4, 3, 0, values, "crrc", "timestamp", "7", "key", "value", "txn", "9:0"
    )
    assert reply == [3, len(values)]
    assert redis_client.xrange(key) == [
        (b"0-4", {b"timestamp": b"7", b"key": b"k1", b"value": b"v1", b"txn": b"9:0"}),
        (b"0-5", {b"timestamp": b"7", b"key": b"k2", b"value": b"", b"txn": b"9:0"}),
        (b"0-6", {b"timestamp": b"7", b"key": b"k3", b"value": b"v3", b"txn": b"9:0"}),
    ]
    # Field order is kept: a plain reader sees the fields as XADD would have written them.
    assert list(redis_client.xrange(key, "0-4", "0-4")[0][1]) == [b"timestamp", b"key", b"value", b"txn"]


def test_xaddpacked_starts_at_the_offset_and_answers_where_it_stopped(
    redis_client: Any, keyspace: str
) -> None:
    key = f"{keyspace}:s"
    values = packed("a", "bc", "def", "g")
    first = redis_client.execute_command("SCHOONER.XADDPACKED", key, 3, 0, 2, 0, values, "r", "value")
    assert first == [2, 5 + 1 + 5 + 2]
    assert redis_client.execute_command(
        "SCHOONER.XADDPACKED", key, 3, 2, 2, first[1], values, "r", "value"
    ) == [
        2,
        len(values),
    ]
    assert [(i, f[b"value"]) for i, f in redis_client.xrange(key)] == [
        (b"3-0", b"a"), (b"3-1", b"bc"), (b"3-2", b"def"), (b"3-3", b"g"),
    ]  # fmt: skip


V = packed("v")
VW = packed("v", "w")


@pytest.mark.parametrize(
    "args, error",
    [
        (("0", "9", "1", "0", V, "cr"), "wrong number of arguments"),  # no field names
        (("0", "9", "1", "0", V, "cx", "timestamp", "1", "value"), "spec"),
        (("0", "9", "1", "0", V, "cc", "a", "1", "b", "2"), "spec"),  # no field for a record's value
        (("0", "9", "1", "0", V, "r", "value", "extra"), "spec"),  # arguments after the names
        (("0", "9", "1", "0", V, "r" * 9, *["f"] * 9), "spec"),  # more than 8 fields
        (("0", "9", "1", "0", V, "", "value", "x"), "spec"),
        (("-1", "9", "1", "0", V, "r", "value"), "integers"),
        (("0", "x", "1", "0", V, "r", "value"), "integers"),
        (
            ("0", str(2**63), "1", "0", V, "r", "value"),
            "integers",
        ),  # XADD takes it; the module stops at int64
        (("0", " 9", "1", "0", V, "r", "value"), "integers"),
        (("0", "+9", "1", "0", V, "r", "value"), "integers"),
        (("0", "9", "0", "0", V, "r", "value"), "integers"),  # no record
        (("0", "9", "-1", "0", V, "r", "value"), "integers"),
        (("0", "9", "1", "-1", V, "r", "value"), "integers"),
        (("0", "9", "1", str(len(V) + 1), V, "r", "value"), "packed"),  # the offset past the end
        (("0", "9", "2", "0", V, "r", "value"), "packed"),  # fewer values than records
        (("0", "9", "1", "0", V, "rr", "key", "value"), "packed"),  # records do not fill the fields
        (("0", "9", "2", "0", VW[:-1], "r", "value"), "packed"),  # the last value cut short
        (("0", "9", "1", "0", b"\xdb\x00\x00\x00\x09ab", "r", "value"), "packed"),  # a length past the end
        (("0", "9", "1", "0", b"\xdb\x00\x00", "r", "value"), "packed"),  # half a length
        (("0", "9", "1", "0", b"\xc4\x01v", "r", "value"), "packed"),  # not a str 32
        (("0", "9", "1", "0", b"\x00" + V[1:], "r", "value"), "packed"),
        (("0", "9", "1", "0", b"", "r", "value"), "packed"),
        (("0", "9", str(2**62), "0", V, "r", "value"), "packed"),  # a count no string could hold
        (("0", "2", "2", "0", VW, "r", "value"), "smaller"),  # at or below the stream's last ID
    ],
)
def test_xaddpacked_refuses_bad_calls_and_adds_nothing(
    redis_client: Any, keyspace: str, args: tuple[str | bytes, ...], error: str
) -> None:
    key = f"{keyspace}:s"
    redis_client.xadd(key, {"value": "first"}, id="0-2")
    with pytest.raises(redis.ResponseError, match=error):
        redis_client.execute_command("SCHOONER.XADDPACKED", key, *args)
    assert redis_client.xrange(key) == [(b"0-2", {b"value": b"first"})]


def test_xaddpacked_refuses_a_key_of_another_type(redis_client: Any, keyspace: str) -> None:
    key = f"{keyspace}:h"
    redis_client.hset(key, "f", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        redis_client.execute_command("SCHOONER.XADDPACKED", key, 0, 1, 1, 0, V, "r", "value")
    assert redis_client.hgetall(key) == {b"f": b"v"}


APPEND_IN_SCRIPT = """redis.call('XADD', KEYS[1], '0-1', 'timestamp', '5', 'value', 'a')
return redis.call('SCHOONER.XADDPACKED', KEYS[1], 0, 2, 2, 0, ARGV[1], 'crr', 'timestamp', '6', 'key',
  'value')[1]"""


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
            assert p.eval(APPEND_IN_SCRIPT, 1, "s", packed("k", "b", "l", "c")) == 2
            de = packed("d", "e")
            p.execute_command("SCHOONER.XADDPACKED", "s", 0, 4, 2, 0, de, "cr", "timestamp", "7", "value")
            # From an offset, to the end or not: the replay gets the values taken, not the whole string.
            fgh = packed("f", "g", "h")
            p.execute_command("SCHOONER.XADDPACKED", "s", 0, 6, 1, 6, fgh, "cr", "timestamp", "8", "value")
            p.execute_command("SCHOONER.XADDPACKED", "s", 0, 7, 1, 0, fgh, "cr", "timestamp", "9", "value")
            written = p.xrange("s")
            assert [i for i, _ in written] == [b"0-%d" % n for n in range(1, 8)]
            assert [f[b"value"] for _, f in written[-2:]] == [b"g", b"f"]
            p.execute_command("SCHOONER.XADDPACKED", "big", 0, BIG_SEQ, 3, 0, packed(*"abc"), "r", "value")
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
# sequence carry (a packed run that takes two calls), and a long run.
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
            total += int(r.info("commandstats").get("cmdstat_schooner.xaddpacked", {}).get("calls", 0))
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


# SCHOONER.XADDPACKED against its twin, one XADD per entry with the IDs ms-seq, ms-(seq+1), ...: random
# shapes and values, sequences where a double loses digits and at the end of int64, streams whose last ID is
# at, above or below the first one asked for, values after other bytes, and packed values cut short. The
# same entries, or both add nothing.
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
    before=st.binary(max_size=6),  # bytes ahead of the values: the call starts after them
    cut=st.sampled_from([0, 0, 0, 1, 4, 5]),  # bytes cut from the end
)
def test_xaddpacked_adds_what_one_xadd_per_entry_adds(
    redis_client: Any,
    keyspace: str,
    ms: int,
    seq: int,
    spec: str,
    constants: list[bytes],
    records: list[list[bytes]],
    last: int | None,
    before: bytes,
    cut: int,
) -> None:
    n = next(_calls)
    run_key, twin_key = f"{keyspace}:{{x{n}}}:run", f"{keyspace}:{{x{n}}}:twin"
    if last is not None:
        at = seq + last
        first = f"{ms}-{at}" if at >= 0 else (f"{ms - 1}-0" if ms else None)
        if first is not None and first != "0-0":
            for key in (run_key, twin_key):
                redis_client.xadd(key, {"v": "before"}, id=first)
    names = [b"f%d" % f for f in range(len(spec))]
    args: list[Any] = []
    for f, kind in enumerate(spec):
        args += [names[f], constants[f]] if kind == "c" else [names[f]]
    fields = pack_fields([record[f] for record in records for f, kind in enumerate(spec) if kind == "r"])
    values = before + fields[5:]  # without the array's header: the script's calls start after a field
    values = values[: len(values) - cut]
    try:
        reply = redis_client.execute_command(
            "SCHOONER.XADDPACKED", run_key, ms, seq, len(records), len(before), values, spec, *args
        )
        added = reply[0]
        assert reply[1] == len(values) or added < len(records)
    except redis.ResponseError:
        added = 0
    twin_added = 0
    for i, record in enumerate(records):
        if cut:
            break  # values cut short: nothing is added
        fields = [(names[f], constants[f] if kind == "c" else record[f]) for f, kind in enumerate(spec)]
        try:
            redis_client.execute_command("XADD", twin_key, f"{ms}-{seq + i}", *itertools.chain(*fields))
        except redis.ResponseError:
            break
        twin_added += 1
    assert added == twin_added
    assert redis_client.xrange(run_key) == redis_client.xrange(twin_key)
    redis_client.delete(run_key, twin_key)
