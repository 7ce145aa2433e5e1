"""The transactional produce figure: transactions against idempotent produce, and the fetch of each."""

from __future__ import annotations

import json

import redis

from bench import report, transactions
from bench.servers import Endpoints
from bench.transactions import FLUSHED, IDEMPOTENT, TRANSACTIONAL, TRANSACTIONAL_ID, Series

MESSAGES = 2500
RUNS = 2


def test_transactions_against_idempotent_produce_and_fetch(
    endpoints: Endpoints, redis_client: redis.Redis
) -> None:
    out = transactions.run(endpoints, messages=MESSAGES, runs=RUNS, per_txn=1000)
    ks = endpoints.keyspace
    assert out["transactions_per_run"] == 3  # 1000, 1000 and 500 records
    for run in range(RUNS):
        txn_stream = ks.stream(Series(TRANSACTIONAL).topic(run), 0)
        entries = redis_client.xrange(txn_stream)
        assert len(entries) == MESSAGES + 3
        markers = [fields for _, fields in entries if fields.get(b"control") == b"commit"]
        assert len(markers) == 3 and entries[-1][1].get(b"control") == b"commit"
        assert all(b"txn" in fields for _, fields in entries)  # every record is transactional
        for plain in (FLUSHED, IDEMPOTENT):
            stream = ks.stream(Series(plain).topic(run), 0)
            assert redis_client.xlen(stream) == MESSAGES
            assert all(b"txn" not in fields for _, fields in redis_client.xrange(stream, count=50))
    state = json.loads(redis_client.hget(ks.transaction(TRANSACTIONAL_ID), "state"))
    assert state["state"] == "CompleteCommit"

    txn_rates = [r["msgs_per_s"] for r in out["transactional_runs"]]
    idem_rates = [r["msgs_per_s"] for r in out["idempotent_runs"]]
    assert [r["chunks"] for r in out["transactional_runs"]] == [3] * RUNS
    assert out["transactional_msgs_per_s"] == report.median(txn_rates) > 0
    assert out["ratio"] == report.median([t / i for t, i in zip(txn_rates, idem_rates, strict=True)])
    assert all(r["messages"] == MESSAGES for r in out["flushed_runs"])
    for name in ("txn_read_committed", "idempotent_read_uncommitted", "idempotent_read_committed"):
        assert [k["messages"] for k in out[f"{name}_runs"]] == [MESSAGES] * RUNS
    assert out["fetch_ratio"] > 0
    # The transactional stream holds a marker per transaction and a txn field per record.
    assert out["transactional_stream_bytes_per_record"] > out["idempotent_stream_bytes_per_record"] > 100
    assert set(out["transactional_cpu"]) == {"broker", "redis", "client", "other"}
    assert out["mock_transactional_msgs_per_s"] > 0 and out["mock_ratio"] > 0
    rows = report.transactions_rows(out)
    assert rows[0][3] == f"{out['ratio']:.3f}" and rows[-1][3] == f"{out['fetch_ratio']:.3f}"
