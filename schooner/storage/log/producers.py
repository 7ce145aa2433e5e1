"""Idempotent producers' state per partition: reading it (DescribeProducers) and expiring idle producers.

The append script keeps each producer as the field `producer:<id>` of the partition state hash, valued
"epoch,last append ms;batch;batch..." (each batch "firstSeq,lastSeq,baseMs,baseSeq,lastMs,lastSeq"),
and scores the id by that time in the partition's producers sorted set. Expiry reads only the low end
of that set, so a pass costs the producers it removes, not all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..keys import Keyspace
from ..redis.calls import Call, Steps, command, script, text
from ..topics.metadata import Topic

FIELD_PREFIX = "producer:"
EXPIRE_CHUNK = 1000  # producers forgotten per script call, so no call holds Redis for long


@dataclass(frozen=True, slots=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int  # the last batch's last sequence number
    last_append_ms: int  # -1: written before the time was kept, and not yet dated by an expiry pass


def parse_entry(producer_id: int, value: str) -> ProducerState:
    head, *batches = value.split(";")
    epoch, _, last_ms = head.partition(",")
    last_seq = int(batches[-1].split(",")[1]) if batches else -1
    return ProducerState(producer_id, int(epoch), last_seq, int(last_ms) if last_ms else -1)


def _parse_states(reply: dict[bytes, bytes] | list[bytes]) -> list[ProducerState]:
    if isinstance(reply, list):  # RESP2 without redis-py's pairing
        reply = dict(zip(reply[::2], reply[1::2], strict=True))
    states = []
    for raw_field, raw_value in reply.items():
        field = text(raw_field)
        if field.startswith(FIELD_PREFIX):
            states.append(parse_entry(int(field[len(FIELD_PREFIX) :]), text(raw_value)))
    return sorted(states, key=lambda s: s.producer_id)


def states(ks: Keyspace, topic: Topic, partition: int) -> Call[list[ProducerState]]:
    """Every producer the partition still remembers, by producer id."""
    return command("HGETALL", ks.partition_state(topic.name, partition), parse=_parse_states)


def state(ks: Keyspace, topic: Topic, partition: int, producer_id: int) -> Call[ProducerState | None]:
    """One producer's state in the partition, None when the partition does not remember it."""

    def parse(value: bytes | None) -> ProducerState | None:
        return None if value is None else parse_entry(producer_id, text(value))

    field = f"{FIELD_PREFIX}{producer_id}"
    return command("HGET", ks.partition_state(topic.name, partition), field, parse=parse)


def expire(ks: Keyspace, topic: Topic, partition: int, expiration_ms: int) -> Steps[int]:
    """Forgets the producers whose last append is expiration_ms or more ago; the reply is how many."""
    keys = [ks.partition_state(topic.name, partition), ks.producers(topic.name, partition)]
    total = 0
    while True:
        (removed,) = yield [script("log_producer_expiry", keys, [expiration_ms, EXPIRE_CHUNK], int)]
        total += removed
        if removed < EXPIRE_CHUNK:
            return total
