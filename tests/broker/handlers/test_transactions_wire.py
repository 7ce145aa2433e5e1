"""Transactions over the raw wire, requests built with kio: transactions v2 (KIP-890: the
transaction.version feature, Produce v12 and TxnOffsetCommit v5 joining the transaction themselves,
EndTxn v5 moving the epoch on), and the coordinator's error codes in each version."""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from typing import Any

from aiokafka.record._crecords import DefaultRecordBatchBuilder
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from schooner.storage.keys import Keyspace
from tests.conftest import redis_for
from tests.wire import call

TIMEOUT = datetime.timedelta(seconds=60)


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def _request(api: ApiKey, version: int, **values: Any) -> Any:
    return make(request_type(api, version), **values)


def _init(port: int, transactional_id: str, version: int = 5, timeout: datetime.timedelta = TIMEOUT,
          current: tuple[int, int] = (-1, -1)) -> Any:  # fmt: skip
    return call(
        port,
        _request(
            ApiKey.INIT_PRODUCER_ID,
            version,
            transactional_id=transactional_id,
            transaction_timeout=timeout,
            producer_id=current[0],
            producer_epoch=current[1],
        ),
    )


def _outcome(response: Any) -> tuple[ErrorCode, int, int]:
    """(error, producer id, producer epoch) of an InitProducerId or EndTxn (v5+) response."""
    return response.error_code, response.producer_id, response.producer_epoch


def _producer(port: int, transactional_id: str) -> tuple[int, int]:
    response = _init(port, transactional_id)
    assert response.error_code == ErrorCode.none
    return response.producer_id, response.producer_epoch


def _txn_batch(values: Sequence[bytes], pid: int, epoch: int, sequence: int) -> bytes:
    """One uncompressed transactional batch of value-only records."""
    stamp = int(time.time() * 1000)
    builder = DefaultRecordBatchBuilder(2, 0, 1, pid, epoch, sequence, 2**31 - 1)
    for i, value in enumerate(values):
        builder.append(i, stamp, None, value, [])
    return bytes(builder.build())


def _produce(port: int, version: int, transactional_id: str, topic: str, partition: int, batch: bytes) -> Any:
    """One partition's result of a Produce carrying `batch`."""
    cls = request_type(ApiKey.PRODUCE, version)
    data = sibling(cls, "PartitionProduceData")(index=partition, records=batch)
    body = make(
        cls,
        transactional_id=transactional_id,
        acks=-1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(sibling(cls, "TopicProduceData")(name=topic, partition_data=(data,)),),
    )
    return call(port, body).responses[0].partition_responses[0]


def _end(port: int, version: int, transactional_id: str, producer: tuple[int, int], commit: bool) -> Any:
    return call(
        port,
        _request(
            ApiKey.END_TXN,
            version,
            transactional_id=transactional_id,
            producer_id=producer[0],
            producer_epoch=producer[1],
            committed=commit,
        ),
    )


def _add_partitions(port: int, version: int, transactional_id: str, producer: tuple[int, int],
                    topics: dict[str, list[int]]) -> dict[tuple[str, int], ErrorCode]:  # fmt: skip
    """AddPartitionsToTxn as a client sends it (v0-v3), or as one transaction of the batch form (v4+)."""
    cls = request_type(ApiKey.ADD_PARTITIONS_TO_TXN, version)
    topic_cls = sibling(cls, "AddPartitionsToTxnTopic")
    wanted = tuple(topic_cls(name=n, partitions=tuple(ps)) for n, ps in topics.items())
    if version <= 3:
        body = make(
            cls,
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer[0],
            v3_and_below_producer_epoch=producer[1],
            v3_and_below_topics=wanted,
        )
        results = call(port, body).results_by_topic_v3_and_below
    else:
        txn = sibling(cls, "AddPartitionsToTxnTransaction")(
            transactional_id=transactional_id,
            producer_id=producer[0],
            producer_epoch=producer[1],
            verify_only=False,
            topics=wanted,
        )
        response = call(port, make(cls, transactions=(txn,)))
        assert response.error_code == ErrorCode.none
        (result,) = response.results_by_transaction
        results = result.topic_results
    return {
        (t.name, p.partition_index): p.partition_error_code for t in results for p in t.results_by_partition
    }


def _txn_offset_commit(port: int, version: int, transactional_id: str, group: str,
                       producer: tuple[int, int], topic: str, offset: int) -> ErrorCode:  # fmt: skip
    cls = request_type(ApiKey.TXN_OFFSET_COMMIT, version)
    partition = make(
        sibling(cls, "TxnOffsetCommitRequestPartition"),
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        committed_metadata=None,
    )
    body = make(
        cls,
        transactional_id=transactional_id,
        group_id=group,
        producer_id=producer[0],
        producer_epoch=producer[1],
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=(sibling(cls, "TxnOffsetCommitRequestTopic")(name=topic, partitions=(partition,)),),
    )
    (t,) = call(port, body).topics
    (p,) = t.partitions
    code: ErrorCode = p.error_code
    return code


def _offset_fetch(port: int, group: str, topic: str) -> tuple[ErrorCode, int]:
    """(error, committed offset) of partition 0, asking for stable offsets (OffsetFetch v7)."""
    cls = request_type(ApiKey.OFFSET_FETCH, 7)
    body = make(
        cls,
        group_id=group,
        topics=(sibling(cls, "OffsetFetchRequestTopic")(name=topic, partition_indexes=(0,)),),
        require_stable=True,
    )
    response = call(port, body)
    assert response.error_code == ErrorCode.none
    p = response.topics[0].partitions[0]
    return p.error_code, p.committed_offset


def _describe(port: int, transactional_id: str) -> Any:
    response = call(port, _request(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=(transactional_id,)))
    (state,) = response.transaction_states
    return state


def _markers(broker: Any, topic: str, partition: int = 0) -> list[tuple[bytes, bytes]]:
    """(control, txn) of each marker entry in the partition's stream, oldest first."""
    client = redis_for(broker.redis_url)
    try:
        entries = client.xrange(Keyspace(broker.settings.keyspace).stream(topic, partition))
    finally:
        client.close()
    return [(f[b"control"], f[b"txn"]) for _, f in entries if b"control" in f]


# -- transactions v2 ------------------------------------------------------------------------------


def test_api_versions_lists_the_transaction_version_feature(broker) -> None:
    for version in (3, 4):
        response = call(
            broker.port,
            _request(ApiKey.API_VERSIONS, version, client_software_name="t", client_software_version="1"),
        )
        assert response.error_code == ErrorCode.none
        supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
        finalized = {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features}
        assert supported["transaction.version"] == (0, 2)
        assert finalized["transaction.version"] == (2, 2)
        assert response.finalized_features_epoch >= 0


def test_init_producer_id_with_a_transactional_id(broker) -> None:
    first = _init(broker.port, "w-init")
    pid = first.producer_id
    assert (first.error_code, first.producer_epoch) == (ErrorCode.none, 0) and pid >= 0
    again = _init(broker.port, "w-init")  # a new instance: same id, next epoch
    assert _outcome(again) == (ErrorCode.none, pid, 1)
    other = _init(broker.port, "w-init-other")
    assert other.producer_id != pid
    assert _init(broker.port, "").error_code == ErrorCode.invalid_request
    state = _describe(broker.port, "w-init")
    assert (state.transaction_state, state.producer_id, state.producer_epoch) == ("Empty", pid, 1)


def test_produce_v12_adds_its_partition_and_v11_does_not(broker) -> None:
    _create(broker.bootstrap, "w-implicit", partitions=2)
    tid = "w-implicit-tx"
    pid, epoch = _producer(broker.port, tid)

    # v11 (transactions v1): the partition must have been added with AddPartitionsToTxn
    refused = _produce(broker.port, 11, tid, "w-implicit", 0, _txn_batch([b"v11"], pid, epoch, 0))
    assert refused.error_code == ErrorCode.invalid_txn_state
    assert _describe(broker.port, tid).transaction_state == "Empty"

    accepted = _produce(broker.port, 12, tid, "w-implicit", 0, _txn_batch([b"v12"], pid, epoch, 0))
    assert (accepted.error_code, accepted.base_offset) == (ErrorCode.none, 0)
    state = _describe(broker.port, tid)
    assert state.transaction_state == "Ongoing"
    assert [(t.topic, tuple(t.partitions)) for t in state.topics] == [("w-implicit", (0,))]

    # the transaction is open, but partition 1 is not in it: v11 is refused there, v12 adds it
    refused = _produce(broker.port, 11, tid, "w-implicit", 1, _txn_batch([b"v11"], pid, epoch, 0))
    assert refused.error_code == ErrorCode.invalid_txn_state
    accepted = _produce(broker.port, 12, tid, "w-implicit", 1, _txn_batch([b"v12-1"], pid, epoch, 0))
    assert accepted.error_code == ErrorCode.none
    assert {(t.topic, p) for t in _describe(broker.port, tid).topics for p in t.partitions} == {
        ("w-implicit", 0), ("w-implicit", 1),
    }  # fmt: skip

    ended = _end(broker.port, 5, tid, (pid, epoch), commit=True)
    assert _outcome(ended) == (ErrorCode.none, pid, epoch + 1)
    for p in (0, 1):
        assert _markers(broker, "w-implicit", p) == [(b"commit", b"%d:%d" % (pid, epoch + 1))]


def test_txn_offset_commit_v5_joins_the_group_without_add_offsets(broker) -> None:
    _create(broker.bootstrap, "w-off-in")
    _create(broker.bootstrap, "w-off-out")
    tid, group = "w-off-tx", "w-off-group"
    pid, epoch = _producer(broker.port, tid)
    assert _produce(broker.port, 12, tid, "w-off-out", 0, _txn_batch([b"x"], pid, epoch, 0)).error_code == 0

    assert _txn_offset_commit(broker.port, 5, tid, group, (pid, epoch), "w-off-in", 4) == ErrorCode.none
    assert _offset_fetch(broker.port, group, "w-off-in") == (ErrorCode.unstable_offset_commit, -1)

    ended = _end(broker.port, 5, tid, (pid, epoch), commit=True)
    assert ended.error_code == ErrorCode.none
    assert _offset_fetch(broker.port, group, "w-off-in") == (ErrorCode.none, 4)

    # the next transaction's offsets, aborted, never show
    epoch = ended.producer_epoch
    assert _txn_offset_commit(broker.port, 5, tid, group, (pid, epoch), "w-off-in", 9) == ErrorCode.none
    aborted = _end(broker.port, 5, tid, (pid, epoch), commit=False)
    assert (aborted.error_code, aborted.producer_epoch) == (ErrorCode.none, epoch + 1)
    assert _offset_fetch(broker.port, group, "w-off-in") == (ErrorCode.none, 4)


def test_end_txn_v5_moves_the_epoch_on_and_a_retry_gets_the_same_answer(broker) -> None:
    _create(broker.bootstrap, "w-bump")
    tid = "w-bump-tx"
    pid, epoch = _producer(broker.port, tid)
    batch = _txn_batch([b"a", b"b"], pid, epoch, 0)
    assert _produce(broker.port, 12, tid, "w-bump", 0, batch).error_code == ErrorCode.none

    first = _end(broker.port, 5, tid, (pid, epoch), commit=True)
    assert _outcome(first) == (ErrorCode.none, pid, epoch + 1)
    retry = _end(broker.port, 5, tid, (pid, epoch), commit=True)  # the answer was lost: same again
    assert _outcome(retry) == (ErrorCode.none, pid, epoch + 1)
    assert _markers(broker, "w-bump") == [(b"commit", b"%d:%d" % (pid, epoch + 1))]  # one marker only
    # a retry must name the end it retries: an abort with the old epoch is no retry of a commit
    assert _end(broker.port, 5, tid, (pid, epoch), commit=False).error_code == ErrorCode.invalid_txn_state

    # the old epoch is fenced from the partition, the new one starts its sequences at 0
    stale = _produce(broker.port, 12, tid, "w-bump", 0, _txn_batch([b"zombie"], pid, epoch, 2))
    assert stale.error_code == ErrorCode.invalid_producer_epoch
    fresh = _produce(broker.port, 12, tid, "w-bump", 0, _txn_batch([b"c"], pid, epoch + 1, 0))
    assert (fresh.error_code, fresh.base_offset) == (ErrorCode.none, 3)  # after a, b and the marker
    second = _end(broker.port, 5, tid, (pid, epoch + 1), commit=False)
    assert (second.error_code, second.producer_epoch) == (ErrorCode.none, epoch + 2)
    assert _markers(broker, "w-bump") == [
        (b"commit", b"%d:%d" % (pid, epoch + 1)), (b"abort", b"%d:%d" % (pid, epoch + 2)),
    ]  # fmt: skip
    state = _describe(broker.port, tid)
    assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", epoch + 2)


def test_end_txn_v5_with_nothing_open(broker) -> None:
    """Kafka's table for transactions v2: with no transaction open an abort still moves the epoch on
    (so a client can always abort), a commit is INVALID_TXN_STATE, and so is a second commit."""
    tid = "w-nothing"
    pid, epoch = _producer(broker.port, tid)
    assert _end(broker.port, 5, tid, (pid, epoch), commit=True).error_code == ErrorCode.invalid_txn_state
    aborted = _end(broker.port, 5, tid, (pid, epoch), commit=False)
    assert (aborted.error_code, aborted.producer_epoch) == (ErrorCode.none, epoch + 1)
    assert _describe(broker.port, tid).transaction_state == "CompleteAbort"
    again = _end(broker.port, 5, tid, (pid, epoch + 1), commit=False)
    assert (again.error_code, again.producer_epoch) == (ErrorCode.none, epoch + 2)

    _create(broker.bootstrap, "w-nothing")
    epoch += 2
    assert _produce(broker.port, 12, tid, "w-nothing", 0, _txn_batch([b"x"], pid, epoch, 0)).error_code == 0
    assert _end(broker.port, 5, tid, (pid, epoch), commit=True).error_code == ErrorCode.none
    # CompleteCommit: committing again with the new epoch is no retry
    assert _end(broker.port, 5, tid, (pid, epoch + 1), commit=True).error_code == ErrorCode.invalid_txn_state
    assert _describe(broker.port, tid).producer_epoch == epoch + 1


# -- errors ---------------------------------------------------------------------------------------


def test_end_txn_v1_with_nothing_open_is_invalid_txn_state(broker) -> None:
    """Transactions v1 (EndTxn v0-v4): an id with no transaction (Empty) takes neither a commit nor an
    abort; a completed one takes the same end again, and not the other."""
    _create(broker.bootstrap, "w-v1-end")
    tid = "w-v1-end-tx"
    producer = _producer(broker.port, tid)
    for version in (0, 3, 4):
        for commit in (True, False):
            assert _end(broker.port, version, tid, producer, commit).error_code == ErrorCode.invalid_txn_state
    assert _describe(broker.port, tid).transaction_state == "Empty"

    assert _add_partitions(broker.port, 3, tid, producer, {"w-v1-end": [0]}) == {
        ("w-v1-end", 0): ErrorCode.none
    }
    assert _end(broker.port, 4, tid, producer, commit=True).error_code == ErrorCode.none
    assert _end(broker.port, 4, tid, producer, commit=True).error_code == ErrorCode.none  # a retry
    assert _end(broker.port, 4, tid, producer, commit=False).error_code == ErrorCode.invalid_txn_state
    state = _describe(broker.port, tid)
    assert (state.transaction_state, state.producer_epoch) == ("CompleteCommit", producer[1])  # no bump
    assert _markers(broker, "w-v1-end") == []  # nothing was written, so no marker is needed


def test_add_partitions_with_an_unknown_topic(broker) -> None:
    _create(broker.bootstrap, "w-known", partitions=2)
    tid = "w-unknown-tx"
    producer = _producer(broker.port, tid)
    for version in (0, 3, 5):
        codes = _add_partitions(broker.port, version, tid, producer, {"w-known": [0, 1], "w-missing": [0]})
        assert codes == {
            ("w-known", 0): ErrorCode.operation_not_attempted,
            ("w-known", 1): ErrorCode.operation_not_attempted,
            ("w-missing", 0): ErrorCode.unknown_topic_or_partition,
        }
        codes = _add_partitions(broker.port, version, tid, producer, {"w-known": [0, 7]})
        assert codes == {
            ("w-known", 0): ErrorCode.operation_not_attempted,
            ("w-known", 7): ErrorCode.unknown_topic_or_partition,
        }
    state = _describe(broker.port, tid)
    assert (state.transaction_state, state.topics) == ("Empty", ())  # nothing was added


def test_init_producer_id_timeout_above_the_maximum(broker) -> None:
    most = broker.settings.transaction_max_timeout_ms
    for version in (0, 4, 5):
        too_long = _init(broker.port, "w-timeout", version, datetime.timedelta(milliseconds=most + 1))
        assert (too_long.error_code, too_long.producer_id) == (ErrorCode.invalid_transaction_timeout, -1)
    zero = _init(broker.port, "w-timeout", 5, datetime.timedelta(0))
    assert zero.error_code == ErrorCode.invalid_transaction_timeout
    assert _init(broker.port, "w-timeout", 5, datetime.timedelta(milliseconds=most)).error_code == 0


def test_a_stale_epoch_is_fenced_with_each_versions_code(broker) -> None:
    """PRODUCER_FENCED from the versions that know it (KIP-588), INVALID_PRODUCER_EPOCH before."""
    _create(broker.bootstrap, "w-stale")
    tid = "w-stale-tx"
    pid, old = _producer(broker.port, tid)
    _, new = _producer(broker.port, tid)  # a second instance fences the first
    assert new == old + 1
    stale = (pid, old)

    def add(version: int) -> ErrorCode:
        return _add_partitions(broker.port, version, tid, stale, {"w-stale": [0]})[("w-stale", 0)]

    assert add(1) == ErrorCode.invalid_producer_epoch
    for version in (2, 3):
        assert add(version) == ErrorCode.producer_fenced
    for version, code in ((1, ErrorCode.invalid_producer_epoch), (2, ErrorCode.producer_fenced)):
        assert _end(broker.port, version, tid, stale, commit=False).error_code == code
        added = call(
            broker.port,
            _request(
                ApiKey.ADD_OFFSETS_TO_TXN,
                version,
                transactional_id=tid,
                producer_id=pid,
                producer_epoch=old,
                group_id="w-stale-group",
            ),
        )
        assert added.error_code == code
    assert _end(broker.port, 5, tid, stale, commit=False).error_code == ErrorCode.producer_fenced
    # KIP-360: InitProducerId naming the producer it replaces must name the current epoch
    assert _init(broker.port, tid, 3, current=stale).error_code == ErrorCode.invalid_producer_epoch
    assert _init(broker.port, tid, 4, current=stale).error_code == ErrorCode.producer_fenced
    # Produce knows no PRODUCER_FENCED
    for version in (11, 12):
        produced = _produce(broker.port, version, tid, "w-stale", 0, _txn_batch([b"z"], pid, old, 0))
        assert produced.error_code == ErrorCode.invalid_producer_epoch
    # the fenced producer's tries changed nothing
    state = _describe(broker.port, tid)
    assert (state.transaction_state, state.producer_epoch, state.topics) == ("Empty", new, ())
    # an epoch ahead of the coordinator's is no more valid than one behind it
    assert _end(broker.port, 4, tid, (pid, new + 1), commit=True).error_code == ErrorCode.producer_fenced


def test_init_producer_id_recovery_and_its_retry(broker) -> None:
    """KIP-360: a producer naming its current epoch gets the next one; a retry of that (the answer was
    lost) gets the same one again; a producer fenced by a new instance cannot come back this way."""
    tid = "w-recover"
    pid, epoch = _producer(broker.port, tid)
    bumped = _init(broker.port, tid, 4, current=(pid, epoch))
    assert _outcome(bumped) == (ErrorCode.none, pid, epoch + 1)
    retried = _init(broker.port, tid, 4, current=(pid, epoch))
    assert _outcome(retried) == (ErrorCode.none, pid, epoch + 1)

    _, newest = _producer(broker.port, tid)  # a new instance, naming no producer
    assert newest == epoch + 2
    zombie = _init(broker.port, tid, 4, current=(pid, epoch + 1))
    assert zombie.error_code == ErrorCode.producer_fenced
    assert _describe(broker.port, tid).producer_epoch == newest


def test_unknown_producer_id(broker) -> None:
    _create(broker.bootstrap, "w-mapping")
    tid = "w-mapping-tx"
    pid, epoch = _producer(broker.port, tid)
    wrong = (pid + 1000, epoch)
    codes = _add_partitions(broker.port, 3, tid, wrong, {"w-mapping": [0]})
    assert codes == {("w-mapping", 0): ErrorCode.invalid_producer_id_mapping}
    for version in (1, 5):
        assert _end(broker.port, version, tid, wrong, commit=True).error_code == (
            ErrorCode.invalid_producer_id_mapping
        )
    produced = _produce(broker.port, 12, tid, "w-mapping", 0, _txn_batch([b"x"], *wrong, 0))
    assert produced.error_code == ErrorCode.invalid_producer_id_mapping
    # an id the coordinator has never seen
    assert _end(broker.port, 4, "w-never", (pid, epoch), commit=True).error_code == (
        ErrorCode.invalid_producer_id_mapping
    )
    assert _add_partitions(broker.port, 3, "w-never", (pid, epoch), {"w-mapping": [0]}) == {
        ("w-mapping", 0): ErrorCode.invalid_producer_id_mapping
    }
    assert _describe(broker.port, "w-never").error_code == ErrorCode.transactional_id_not_found


def test_list_transactions_filters(broker) -> None:
    _create(broker.bootstrap, "w-list")
    open_pid, open_epoch = _producer(broker.port, "w-list-open")
    empty_pid, _ = _producer(broker.port, "w-list-empty")
    batch = _txn_batch([b"o"], open_pid, open_epoch, 0)
    assert _produce(broker.port, 12, "w-list-open", "w-list", 0, batch).error_code == ErrorCode.none

    def listed(version: int, **filters: Any) -> tuple[ErrorCode, dict[str, tuple[str, int]], tuple[str, ...]]:
        values = {"state_filters": (), "producer_id_filters": (), "duration_filter": -1,
                  "transactional_id_pattern": None, **filters}  # fmt: skip
        r = call(broker.port, _request(ApiKey.LIST_TRANSACTIONS, version, **values))
        found = {s.transactional_id: (s.transaction_state, s.producer_id) for s in r.transaction_states}
        return r.error_code, found, tuple(r.unknown_state_filters)

    assert listed(0) == (
        ErrorCode.none,
        {"w-list-open": ("Ongoing", open_pid), "w-list-empty": ("Empty", empty_pid)},
        (),
    )
    assert listed(0, state_filters=("Ongoing",))[1] == {"w-list-open": ("Ongoing", open_pid)}
    assert listed(0, producer_id_filters=(empty_pid,))[1] == {"w-list-empty": ("Empty", empty_pid)}
    assert listed(0, state_filters=("Ongoing",), producer_id_filters=(empty_pid,))[1] == {}
    assert listed(0, state_filters=("Ongoing", "Bogus"))[2] == ("Bogus",)
    time.sleep(0.2)
    assert set(listed(1, duration_filter=100)[1]) == {"w-list-open"}  # only an open one has a duration
    assert set(listed(1, duration_filter=60_000)[1]) == set()
    assert set(listed(2, transactional_id_pattern="w-list-e.*")[1]) == {"w-list-empty"}


def test_a_timed_out_transaction_fences_its_producer(broker_factory) -> None:
    """The coordinator aborts a transaction older than its timeout and moves the epoch on; its producer
    cannot pass the old epoch off as a retry of that end (EndTxn v5) to get the new one."""
    broker = broker_factory(transaction_check_ms=100)
    _create(broker.bootstrap, "w-timeout-out")
    tid = "w-timeout-tx"
    response = _init(broker.port, tid, timeout=datetime.timedelta(milliseconds=300))
    pid, epoch = response.producer_id, response.producer_epoch
    batch = _txn_batch([b"late"], pid, epoch, 0)
    assert _produce(broker.port, 12, tid, "w-timeout-out", 0, batch).error_code == ErrorCode.none

    deadline = time.monotonic() + 10
    while _describe(broker.port, tid).transaction_state != "CompleteAbort":
        assert time.monotonic() < deadline, "the timed-out transaction was not aborted"
        time.sleep(0.1)
    assert _describe(broker.port, tid).producer_epoch == epoch + 1
    assert _markers(broker, "w-timeout-out") == [(b"abort", b"%d:%d" % (pid, epoch + 1))]
    for commit in (False, True):
        assert _end(broker.port, 5, tid, (pid, epoch), commit).error_code == ErrorCode.producer_fenced
    assert _init(broker.port, tid, 4, current=(pid, epoch)).error_code == ErrorCode.producer_fenced
    assert _describe(broker.port, tid).producer_epoch == epoch + 1
