"""What one record costs Redis inside the append script, against a bare XADD (docs/benchmarks.md).

`PYTHONPATH=$PWD .venv/bin/python -m bench.append_script` starts its own non-persistent redis-server
and prints, per record: Redis's `INFO commandstats` time and its own CPU time (which includes reading
the command), for a pipelined bare XADD, for XADD loops in Lua written in different ways, and for
log_append.lua itself through Store.append (plain and transactional batches; the server loads the stream
module, so the script appends each run with SCHOONER.XADDRUN). These figures hold steady
on a busy machine, where end-to-end throughput does not.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from schooner.storage.keys import Keyspace
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis.client import connect
from schooner.storage.redis.embedded import EmbeddedRedis
from schooner.storage.store import Store

VALUE = (b"0123456789abcdef" * 7)[:100]
BARE_FIELDS = (b"timestamp", b"1764000000000", b"value", VALUE)


# XADD loops over ARGV[2..]: ARGV[1] is the first sequence, the rest one value per record.
LOOPS = {
    "Lua, ID built per record (prefix .. seq)": """local s, seq = KEYS[1], tonumber(ARGV[1])
        for i = 2, #ARGV do
          redis.call('XADD', s, '0-' .. seq, 'timestamp', '1764000000000', 'value', ARGV[i]); seq = seq + 1
        end return 0""",
    "Lua, 0-*": """local s = KEYS[1]
        for i = 2, #ARGV do redis.call('XADD', s, '0-*', 'timestamp', '1764000000000', 'value', ARGV[i]) end
        return 0""",
    "Lua, 0-*, no timestamp field": """local s = KEYS[1]
        for i = 2, #ARGV do redis.call('XADD', s, '0-*', 'value', ARGV[i]) end return 0""",
    "Lua, reading ARGV only": "local x = 0 for i = 2, #ARGV do x = x + 1 end return x",
    # The stream module (storage/redis/_stream_module.c), as log_append.lua calls it: one call per run.
    "Lua, one SCHOONER.XADDRUN": """return redis.call('SCHOONER.XADDRUN', KEYS[1], 0, ARGV[1], 'cr',
        'timestamp', '1764000000000', 'value', unpack(ARGV, 2))""",
}


def _usec_per_call(stats: dict[str, Any], command: str) -> float:
    return float(stats[f"cmdstat_{command}"]["usec_per_call"])


async def _cpu(redis: Any) -> float:
    info = await redis.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def _measure(redis: Any, command: str, records: int, work: Any) -> tuple[float, float]:
    """(commandstats µs, Redis CPU µs) per record of `work`, which runs `records` records in calls
    of `command`."""
    await redis.config_resetstat()
    before = await _cpu(redis)
    calls = await work()
    cpu = (await _cpu(redis) - before) / records * 1e6
    per_call = _usec_per_call(await redis.info("commandstats"), command)
    return per_call * calls / records, cpu


async def run_async(redis_url: str, batch: int = 1000, calls: int = 200, rounds: int = 3) -> dict[str, Any]:
    redis = connect(redis_url)
    store = Store(redis, Keyspace("bench-append-script"))
    rows: dict[str, list[tuple[float, float]]] = {}
    records = batch * calls
    try:
        for round_no in range(rounds):

            async def bare() -> int:
                await redis.delete("bench:bare")
                for _ in range(calls):
                    pipe = redis.pipeline(transaction=False)
                    for _ in range(batch):
                        pipe.execute_command("XADD", "bench:bare", "0-*", *BARE_FIELDS)
                    await pipe.execute()
                return records

            rows.setdefault("bare XADD 0-*, pipelined", []).append(
                await _measure(redis, "xadd", records, bare)
            )
            for name, source in LOOPS.items():
                sha = await redis.script_load(source)

                async def loop(sha: str = sha) -> int:
                    await redis.delete("bench:loop")
                    for c in range(calls):
                        await redis.evalsha(sha, 1, "bench:loop", c * batch + 1, *[VALUE] * batch)
                    return calls

                rows.setdefault(name, []).append(await _measure(redis, "evalsha", records, loop))
            for txn in (None, "bench-txn"):
                topic = await store.create_topic(f"append-{round_no}-{txn or 'plain'}", 1, {}, {})

                async def appends(topic: Any = topic, txn: str | None = txn) -> int:
                    for c in range(calls):
                        stamped = [
                            Record(1764000000000 + c * 10 + i * 10 // batch, None, VALUE)
                            for i in range(batch)
                        ]
                        result = await store.append(topic, 0, RecordBatch(stamped), txn)
                        if result.status != 0:
                            raise RuntimeError(f"append refused: {result}")
                    return calls

                name = "log_append.lua, transactional batch" if txn else "log_append.lua"
                rows.setdefault(name, []).append(await _measure(redis, "evalsha", records, appends))
    finally:
        await store.close()
    return {
        name: {
            "commandstats_us": round(statistics.median(r[0] for r in runs), 3),
            "redis_cpu_us": round(statistics.median(r[1] for r in runs), 3),
        }
        for name, runs in rows.items()
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="schooner-append-script-") as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis", persistent=False)
        server.start()
        try:
            out = asyncio.run(run_async(server.url))
        finally:
            server.stop()
    title = "per record, 1,000 records per call, median of 3"
    print(f"{title:<48} {'commandstats us':>16} {'Redis CPU us':>13}")
    for name, figures in out.items():
        print(f"{name:<48} {figures['commandstats_us']:>16.3f} {figures['redis_cpu_us']:>13.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
