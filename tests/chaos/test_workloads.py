"""The chaos workloads against one in-process broker with a cold store on a test folder, without
faults: each records the ops it should, and the history agrees with the logs read back afterwards."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaos.history import History, Operation, read_history
from chaos.workloads import TOPICS, TXN_IN, TXN_OUT, final_reads, plan, setup_topics
from schooner.storage.redis.embedded import EmbeddedRedis

RUN_S = 8
# What each workload must have recorded, by the prefix of its name.
KINDS = {
    "producer-": {"produce"},
    "txn-producer": {"txn", "produce"},
    "transform-": {"poll", "txn", "produce"},
    "classic-": {"poll", "commit"},
    "kip848-": {"poll", "commit"},
    "offsets-observer": {"offsets"},
    "share-": {"poll", "ack"},
    "reader-": {"poll"},
}


def _run(
    broker_factory: Callable[..., Any], redis_server: EmbeddedRedis, keyspace: str, tmp_path: Path
) -> list[Operation]:
    # Short archiver intervals, so the tiered topic's records reach the cold tier during the run.
    broker = broker_factory(
        cold_store_url=str(tmp_path / "cold"),
        archive_interval_ms=200,
        archive_batch_records=500,
        log_retention_check_interval_ms=300,
    )
    setup_topics(broker.bootstrap)
    history = History(tmp_path / "history.jsonl")
    workloads = plan(broker.bootstrap, history, seed=29, scale=0.5)
    for w in workloads:
        w.start()
    time.sleep(RUN_S)
    for w in workloads:
        w.stop()
    for w in workloads:
        w.join(30)
    assert not [w.name for w in workloads if w.is_alive()], "every workload ends soon after stop()"
    final_reads(broker.bootstrap, redis_server.url, keyspace, history, TOPICS)
    history.close()
    return read_history(tmp_path / "history.jsonl")


def _finals(ops: list[Operation], source: str, isolation: str) -> dict[tuple[str, int], dict[int, str]]:
    return {
        (op.value["topic"], op.value["partition"]): {o: v for o, v in op.value["records"]}
        for op in ops
        if op.f == "final" and op.value["source"] == source and op.value["isolation"] == isolation
    }


@pytest.mark.xdist_group("chaos")
def test_a_run_without_faults_agrees_with_the_final_logs(
    broker_factory: Callable[..., Any], redis_server: EmbeddedRedis, keyspace: str, tmp_path: Path
) -> None:
    _check(_run(broker_factory, redis_server, keyspace, tmp_path))


def _check(ops: list[Operation]) -> None:
    kinds: dict[str, set[str]] = defaultdict(set)
    for op in ops:
        kinds[op.process].add(op.f)
    for prefix, wanted in KINDS.items():
        names = [p for p in kinds if p.startswith(prefix)]
        assert names, f"no workload {prefix}* recorded anything"
        for name in names:
            assert wanted <= kinds[name], f"{name} recorded {kinds[name]}, not all of {wanted}"

    finals = [op for op in ops if op.f == "final"]
    assert all(op.status == "ok" for op in finals), [op.value["error"] for op in finals if op.status != "ok"]
    partitions = sum(parts for parts, _ in TOPICS.values())
    assert len(finals) == 3 * partitions, "kafka (both isolations) and redis, per partition"
    uncommitted = _finals(ops, "kafka", "read_uncommitted")
    committed = _finals(ops, "kafka", "read_committed")

    # Every acknowledged produce is in the log, at its offset.
    produced = [op for op in ops if op.f == "produce" and op.status == "ok"]
    assert len(produced) > 500
    missing = [
        op.value
        for op in produced
        if uncommitted[(op.value["topic"], op.value["partition"])].get(op.value["offset"])
        != op.value["value"]
    ]
    assert not missing, missing[:5]

    # The hot tier holds what Kafka reads at the same offsets (the tiered topic's oldest may be cold only).
    for tp, records in _finals(ops, "redis", "read_uncommitted").items():
        assert all(uncommitted[tp].get(o) == v for o, v in records.items()), tp

    # The transform: each input of a committed transaction appears once in the output, and nothing
    # else does but outputs of transactions that may have committed.
    txns = [op for op in ops if op.f == "txn" and op.process.startswith("transform-")]
    inputs = Counter(i[3] for op in txns if op.status == "ok" for i in op.value["inputs"])
    assert inputs and max(inputs.values()) == 1, "no input went into two committed transactions"
    out = Counter(
        v for (topic, _), records in committed.items() if topic == TXN_OUT for v in records.values()
    )
    assert all(out[f"out:{v}"] == 1 for v in inputs), "each committed input's output is there once"
    possible = {o[2] for op in txns if op.status != "fail" for o in op.value["outputs"]}
    assert set(out) <= possible and max(out.values()) == 1

    # Aborted on purpose: in the log, never shown to read_committed readers.
    aborted = {
        o[2] for op in ops if op.f == "txn" and op.value.get("deliberate_abort") for o in op.value["outputs"]
    }
    assert aborted, "the transactional producer aborted some transactions"
    assert all(op.status == "fail" for op in ops if op.f == "txn" and op.value.get("deliberate_abort"))
    txn_in = {v for (topic, _), records in uncommitted.items() if topic == TXN_IN for v in records.values()}
    assert aborted & txn_in, "aborted records reach the log"
    seen_committed = {
        r[3]
        for op in ops
        if op.f == "poll" and op.value["isolation"] == "read_committed"
        for r in op.value["records"]
    }
    seen_committed |= {v for records in committed.values() for v in records.values()}
    assert seen_committed & txn_in and not aborted & seen_committed

    # Share acknowledgements: confirmed ones, for records the members were handed.
    acks = [op for op in ops if op.f == "ack"]
    assert any(op.status == "ok" for op in acks)
    handed = {
        r[3] for op in ops if op.f == "poll" and op.value["mode"] == "share" for r in op.value["records"]
    }
    assert all(r[3] in handed for op in acks for r in op.value["records"])
