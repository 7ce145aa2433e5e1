"""Transactions in the partition log: markers, the last stable offset and the aborted-transactions index.

A transactional producer's records carry the field `txn` = "producer id:epoch". Ending the transaction
in a partition appends a marker entry (fields timestamp, control = commit|abort, txn), which Fetch serves
as Kafka's control batch. Two keys beside the stream keep what readers need without a scan:
  txn-open  hash: producer id -> "epoch,first entry id,transactional id" of each transaction with records
            here and no marker yet. The last stable offset (LSO) is the smallest first entry's offset,
            or the high watermark when none is open.
  aborted   sorted set: "producer id,first entry id,marker entry id" of each aborted transaction, scored
            by the marker's offset. A record with `txn` at entry X of producer P is aborted iff a member
            has P and first <= X < marker.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..offsets import OffsetCodec
from ..redis.calls import Call, command, script, text
from ..topics.metadata import Topic
from .notices import notice_args

TXN = b"txn"
CONTROL = b"control"
COMMIT = b"commit"
ABORT = b"abort"

MARKER_WRITTEN = 0
NOTHING_OPEN = 1  # no records of the producer open in the partition: no marker needed
# Aborted transactions listed per read at most (members whose marker retention removed are dropped
# by log_retention.lua, so the index keeps pace with the stream).
ABORTED_READ_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class MarkerResult:
    status: int  # MARKER_WRITTEN, NOTHING_OPEN, or a negated Kafka error code
    offset: int  # the marker's offset, -1 when none was written


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    producer_id: int
    producer_epoch: int
    first_offset: int
    transactional_id: str


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's offset


def write_marker(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    *,
    notify: bool = True,
    sharded: bool = False,
    end_version: int = -1,
) -> Call[MarkerResult]:
    """Ends the producer's transaction in this partition; idempotent (a second call finds nothing open).
    `sharded` as in append.append. end_version: the coordinator's version of this end; a marker of an
    end the partition has taken already (another broker completed it) writes nothing."""
    offsets = topic.offsets
    channel, message, spublish = notice_args(ks, topic.name, partition, notify, sharded)
    args = [
        offsets.script_arg,
        producer_id,
        producer_epoch,
        "commit" if commit else "abort",
        channel,
        message,
        str(topic.id),
        spublish,
        end_version,
    ]

    def parse(reply: list[Any]) -> MarkerResult:
        status, ms, seq = (int(x) for x in reply)
        return MarkerResult(status, offsets.offset_of(ms, seq) if status == MARKER_WRITTEN else -1)

    return script("log_txn_marker", ks.partition_keys(topic.name, partition), args, parse)


def parse_open(reply: Any, offsets: OffsetCodec) -> list[OpenTransaction]:
    """The txn-open hash (HGETALL reply) as open transactions, oldest first."""
    items = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
    out = []
    for raw_pid, raw_value in items:
        epoch, first_id, transactional_id = text(raw_value).split(",", 2)
        out.append(
            OpenTransaction(
                int(raw_pid), int(epoch), offsets.offset_of_id(first_id.encode()), transactional_id
            )
        )
    return sorted(out, key=lambda t: t.first_offset)


def open_transactions(ks: Keyspace, topic: Topic, partition: int) -> Call[list[OpenTransaction]]:
    offsets = topic.offsets
    return command("HGETALL", ks.txn_open(topic.name, partition), parse=lambda r: parse_open(r, offsets))


def open_call(ks: Keyspace, topic: Topic, partition: int) -> Call[Any]:
    """The raw txn-open hash, for callers that pipeline it with a read (see last_stable_offset)."""
    return command("HGETALL", ks.txn_open(topic.name, partition))


def last_stable_offset(open_reply: Any, offsets: OffsetCodec, high_watermark: int) -> int:
    """The LSO from the raw txn-open hash: no read-committed consumer reads at or past it."""
    if not open_reply:
        return high_watermark
    first = min(t.first_offset for t in parse_open(open_reply, offsets))
    return min(first, high_watermark)


def parse_aborted(reply: Iterable[bytes | str], offsets: OffsetCodec) -> list[AbortedTransaction]:
    out = []
    for member in reply:
        pid, first_id, marker_id = text(member).split(",")
        out.append(
            AbortedTransaction(
                int(pid), offsets.offset_of_id(first_id.encode()), offsets.offset_of_id(marker_id.encode())
            )
        )
    return out


def aborted_call(ks: Keyspace, topic: Topic, partition: int, from_offset: int) -> Call[Any]:
    """Raw members of the aborted transactions whose marker is at or after from_offset (the score is
    exact on dense topics; on timestamp topics a little early, which filter_aborted settles)."""
    return command(
        "ZRANGEBYSCORE",
        ks.aborted(topic.name, partition),
        aborted_min_score(from_offset),
        "+inf",
        "LIMIT",
        0,
        ABORTED_READ_LIMIT,
    )


def aborted_min_score(from_offset: int) -> int:
    """The lowest score of an aborted member that may have records at or after from_offset."""
    return max(from_offset - (from_offset >> 50) - 1, 0)  # a double's rounding, on timestamp offsets


def aborted_overlapping(
    members: Iterable[bytes | str], offsets: OffsetCodec, start: int, end: int
) -> list[AbortedTransaction]:
    """The aborted transactions with a record in [start, end): what Fetch lists for read_committed."""
    return [a for a in parse_aborted(members, offsets) if a.last_offset >= start and a.first_offset < end]


def committed_entries(
    entries: list[Any], offsets: OffsetCodec, aborted: list[AbortedTransaction], stable: int
) -> list[Any]:
    """The data entries a read-committed reader sees: markers, aborted records, and anything at or past
    the LSO are dropped. Entries without `txn` (the common case) pass with one scan of their fields."""
    out = []
    for entry in entries:
        entry_id, fields = entry
        offset = offsets.offset_of_id(entry_id)
        if offset >= stable:
            break
        txn = None
        for i in range(0, len(fields) - 1, 2):
            name = fields[i]
            if name == CONTROL:
                txn = b""
                break
            if name == TXN:
                txn = fields[i + 1]
        if txn is None:
            out.append(entry)
            continue
        if not txn:
            continue  # a marker
        pid = int(txn.split(b":", 1)[0])
        if any(a.producer_id == pid and a.first_offset <= offset < a.last_offset for a in aborted):
            continue
        out.append(entry)
    return out
