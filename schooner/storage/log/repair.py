"""Repairing a dense partition that a plain `XADD key *` stopped (see log/append.FOREIGN_ID)."""

from __future__ import annotations

from dataclasses import dataclass

from ..keys import Keyspace
from ..redis.calls import Steps, command, script, text
from ..topics.metadata import Topic

PAGE = 1000  # entries per script call: Redis stays free between pages


@dataclass(frozen=True, slots=True)
class Renumbered:
    moved: int  # entries that had no offset and now have one
    high_watermark: int


def renumber(ks: Keyspace, topic: Topic, partition: int) -> Steps[Renumbered]:
    """Copies the partition's stream into one whose every entry has a dense ID, then swaps it in.

    The partition's writers must be stopped: an entry added during the copy may be missed. Readers
    keep reading; consumer groups on the stream are carried over (see log_renumber.lua).
    """
    if not topic.offsets.dense:
        raise ValueError(
            f"{topic.name} uses the {topic.offsets.encoding} encoding: '*' entries are valid there"
        )
    stream = ks.stream(topic.name, partition)
    keys = [stream, ks.partition_state(topic.name, partition), stream + ":renumber"]
    after = ""
    while True:
        (reply,) = yield [script("log_renumber", keys, [after, PAGE])]
        if text(reply[0]) == "done":
            return Renumbered(int(reply[1]), int(reply[2]))
        after = text(reply[1])


def needs_repair(ks: Keyspace, topic: str, partition: int) -> Steps[bool]:
    """Whether renumber has work: the append script noted a foreign ID, or the last entry's ID is not a
    dense offset's (`0-<offset>`). One round trip."""
    foreign, tail = yield [
        command("HGET", ks.partition_state(topic, partition), "foreign_id"),
        command("XREVRANGE", ks.stream(topic, partition), "+", "-", "COUNT", 1),
    ]
    return foreign is not None or bool(tail and not text(tail[0][0]).startswith("0-"))
