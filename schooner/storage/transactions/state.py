"""A transactional id's coordinator state: a hash {version, state (JSON)} per id, replaced with a
compare-and-set (txn_save.lua) so that two brokers never both move one transaction on, and an index of
ids scored by when they last changed (ListTransactions, timeouts, expiry)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, Steps, command, script, text

EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
STATES = (EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT)


@dataclass(frozen=True, slots=True)
class TransactionState:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str = EMPTY
    partitions: tuple[str, ...] = ()  # "topic:partition", in the order they joined
    groups: tuple[str, ...] = ()  # consumer groups whose offsets the transaction commits
    started_ms: int = -1  # when the open transaction began (its timeout counts from here)
    updated_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    # Transactions v2 (KIP-890): the epoch moves on at every end; the last end's epoch, for retries.
    bump_on_end: bool = False
    previous_epoch: int = -1

    @property
    def preparing(self) -> bool:
        return self.state in (PREPARE_COMMIT, PREPARE_ABORT)

    def to_json(self) -> str:
        data = asdict(self)
        data["partitions"] = list(self.partitions)
        data["groups"] = list(self.groups)
        return json.dumps(data, separators=(",", ":"))

    @staticmethod
    def from_json(raw: bytes | str) -> TransactionState:
        data = json.loads(raw)
        data["partitions"] = tuple(data.get("partitions", ()))
        data["groups"] = tuple(data.get("groups", ()))
        return TransactionState(**data)

    def changed(self, **changes: Any) -> TransactionState:
        return replace(self, updated_ms=int(time.time() * 1000), **changes)


@dataclass(frozen=True, slots=True)
class Stored:
    """A state as read, with the version a save must name."""

    version: int
    state: TransactionState | None


def _parse(reply: Any) -> Stored:
    if not reply:
        return Stored(0, None)
    if isinstance(reply, list):
        reply = dict(zip(reply[::2], reply[1::2], strict=True))
    fields = {text(k): v for k, v in reply.items()}
    return Stored(int(fields.get("version", 0)), TransactionState.from_json(fields["state"]))


def load(ks: Keyspace, transactional_id: str) -> Call[Stored]:
    return command("HGETALL", ks.transaction(transactional_id), parse=_parse)


def save(ks: Keyspace, transactional_id: str, version: int, state: TransactionState | None) -> Steps[int]:
    """The new version, or 0 when another broker changed the id since `version` was read (nothing is
    written then). None deletes the id. The index rides the same round trip (it is in another slot on
    a Redis Cluster, so not in the script); a refused save has moved it too, so one more round trip
    puts it back to what is stored."""
    raw = state.to_json() if state is not None else ""
    stored, _ = yield [
        script("txn_save", [ks.transaction(transactional_id)], [version, raw], int),
        _index(ks, transactional_id, state),
    ]
    if not stored:
        (now,) = yield [load(ks, transactional_id)]
        yield [_index(ks, transactional_id, now.state)]
    return int(stored)


def _index(ks: Keyspace, transactional_id: str, state: TransactionState | None) -> Call[Any]:
    if state is None:
        return command("ZREM", ks.transaction_ids, transactional_id)
    return command("ZADD", ks.transaction_ids, state.updated_ms, transactional_id)


def ids(ks: Keyspace, changed_before_ms: float = float("inf")) -> Call[list[str]]:
    """Every transactional id with state, or those unchanged since the given time."""
    top = "+inf" if changed_before_ms == float("inf") else int(changed_before_ms)
    return command("ZRANGEBYSCORE", ks.transaction_ids, "-inf", top, parse=lambda r: [text(x) for x in r])
