"""Keeps the writes to one partition, or to one group's offsets, in the order their requests arrived.

Requests on a connection run concurrently and the Redis pool may send their scripts on different
connections, so without this a later batch could overtake an earlier one (and an idempotent
producer would see OUT_OF_ORDER_SEQUENCE_NUMBER), or an earlier offset commit could be stored over a
later one (a restarted consumer would read records again). Claims are taken before the handler's
first await, so tasks started in arrival order claim in that order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable


class Turn:
    __slots__ = ("_sequencer", "_key", "_previous", "_mine")

    def __init__(
        self, sequencer: PartitionSequencer, key: Hashable, previous: asyncio.Future[None] | None
    ) -> None:
        self._sequencer = sequencer
        self._key = key
        self._previous = previous
        self._mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def key(self) -> Hashable:
        """What takes turns: a partition as its requests name it, or group_offsets(group)."""
        return self._key

    async def __aenter__(self) -> None:
        if self._previous is not None:
            await asyncio.shield(self._previous)

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        if not self._mine.done():
            self._mine.set_result(None)
        if self._sequencer._tails.get(self._key) is self._mine:
            del self._sequencer._tails[self._key]


def group_offsets(group_id: str) -> Hashable:
    """The key under which a group's offset writes (commit, transactional commit, delete) take turns."""
    return ("group offsets", group_id)


class PartitionSequencer:
    def __init__(self) -> None:
        self._tails: dict[Hashable, asyncio.Future[None]] = {}

    def claim(self, key: Hashable) -> Turn:
        turn = Turn(self, key, self._tails.get(key))
        self._tails[key] = turn._mine
        return turn
