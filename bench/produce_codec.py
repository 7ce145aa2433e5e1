"""The broker's per-record work on a Produce, without sockets or Redis: `read_batches` (CRC check and decode),
`append_args` (the append script's arguments) and the RESP encoding of the EVALSHA, for one 10,000-record
batch of 100-byte values, with the compiled reader and RESP encoder and without them (aiokafka's decoder and
the list join, the path of a checkout without a C compiler). The collector is set as the broker sets it.
`PYTHONPATH=$PWD .venv/bin/python -m bench.produce_codec` prints ns per record, medians of alternating rounds.
"""

from __future__ import annotations

import gc
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from schooner.protocol import records
from schooner.protocol.records import CODEC_NONE, BatchBuilder, read_batches
from schooner.storage.log.append import append_args
from schooner.storage.offsets import DENSE_OFFSETS
from schooner.storage.redis import resp
from schooner.storage.topics.metadata import Topic

RECORDS = 10_000
ROUNDS = 7
REPEAT = 20
CONFIGS = {
    "retention.ms": "-1",
    "retention.bytes": "-1",
    "schooner.trim.approximate": "false",
    "message.timestamp.type": "CreateTime",
    "cleanup.policy": "delete",
}
COMPILED = {"reader": records.plain_records, "resp": resp.pack_bytes}


def batch_bytes() -> bytes:
    builder = BatchBuilder(0, CODEC_NONE)
    for i in range(RECORDS):  # three timestamps, as a producer's linger gives
        builder.append(i, 1_700_000_000_000 + i // 3_500, None, b"x" * 100, [])
    return builder.build()


def _compiled(on: bool) -> None:
    records.plain_records = COMPILED["reader"] if on else None
    resp.pack_bytes = COMPILED["resp"] if on else None


def _ns_per_record(step: Callable[[], Any]) -> float:
    started = time.process_time()
    for _ in range(REPEAT):
        step()
    return (time.process_time() - started) / REPEAT / RECORDS * 1e9


def measure() -> dict[str, dict[str, float]]:
    raw = batch_bytes()
    topic = Topic("t", uuid.uuid4(), 1, DENSE_OFFSETS, {}, CONFIGS)
    notice = (b"channel", b"message", b"0")
    head = [b"EVALSHA", b"0" * 40, b"3", b"k1", b"k2", b"k3"]
    samples: dict[str, dict[str, list[float]]] = {"compiled": {}, "python": {}}
    for _ in range(ROUNDS):
        for name in samples:
            _compiled(name == "compiled")
            (batch,) = read_batches(raw)
            args = append_args(topic, 0, batch, notice)
            steps = {
                "read_batches": lambda: read_batches(raw),
                "append_args": lambda: append_args(topic, 0, batch, notice),  # noqa: B023
                "resp": lambda: resp.pack([*head, *args]),  # noqa: B023
                "all": lambda: resp.pack([*head, *append_args(topic, 0, read_batches(raw)[0], notice)]),
            }
            for step, fn in steps.items():
                samples[name].setdefault(step, []).append(_ns_per_record(fn))
    _compiled(True)
    return {name: {step: statistics.median(v) for step, v in s.items()} for name, s in samples.items()}


def main() -> None:
    if None in COMPILED.values():
        raise SystemExit("the compiled modules are not built: run `make install`")
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, *gc.get_threshold()[1:])  # as broker/server.py does
    figures = measure()
    print(f"ns per record, {RECORDS:,}-record batch, median of {ROUNDS} rounds")
    print(f"{'step':<14}{'compiled':>10}{'python':>10}")
    for step in figures["compiled"]:
        print(f"{step:<14}{figures['compiled'][step]:>10.1f}{figures['python'][step]:>10.1f}")


if __name__ == "__main__":
    main()
