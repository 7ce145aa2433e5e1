"""Records checked against the schema registry on produce, with Confluent Server's topic configs.

With confluent.value.schema.validation (or .key.) true, each record's value (key) must carry the wire
format's magic byte and a schema id that is a live version of its subject, named by the topic's
confluent.value.subject.name.strategy (TopicNameStrategy: "<topic>-value"; RecordNameStrategy and
TopicRecordNameStrategy: after the full name of the record the id's schema defines). A record that does not is
refused with INVALID_RECORD, named in record_errors, and nothing of its batch is stored. The payload itself is
not decoded: a client's serializer wrote it from that schema, and checking the id costs a set lookup, where
decoding would cost a parse of every record.

A subject's ids are kept for a second; an id not among them is looked up again at once, so a schema just
registered on another broker is accepted on its first record.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ...protocol.records import ProducedBatch
from ...registry.errors import RegistryError
from ...registry.service import SchemaRegistry
from ...schemas import wire
from ...storage.topics import config
from ...storage.topics.metadata import Topic

KEPT_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Refusal:
    message: str
    records: Sequence[tuple[int, str]]  # (index in its batch, why)


def validated(topic: Topic) -> bool:
    configs = topic.configs
    return (
        configs.get(config.VALUE_SCHEMA_VALIDATION) == "true"
        or configs.get(config.KEY_SCHEMA_VALIDATION) == "true"
    )


def _columns(batch: ProducedBatch) -> tuple[Sequence[bytes | None], Sequence[bytes | None]]:
    """The batch's keys and values, read from the compiled reader's columns where it made them (decoding
    the records into objects would cost more than the checks)."""
    plain = batch.plain
    if plain is not None:
        if plain.keyed:
            return plain.fields[0::2], plain.fields[1::2]
        return [None] * len(plain.fields), plain.fields
    records = batch.records
    return [r.key for r in records], [r.value for r in records]


class SchemaValidation:
    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry
        self._ids: dict[str, tuple[float, frozenset[int]]] = {}

    async def _subject_ids(self, subject: str, fresh: bool) -> frozenset[int]:
        kept = self._ids.get(subject)
        now = time.monotonic()
        if kept is not None and not fresh and now - kept[0] < KEPT_SECONDS:
            return kept[1]
        try:
            versions = await self.registry.versions_of(subject)
        except RegistryError:
            versions = []
        ids = frozenset(v.schema_id for v in versions if not v.deleted)
        self._ids[subject] = (now, ids)
        return ids

    async def _allowed(self, subject: str, schema_id: int, refreshed: set[str]) -> bool:
        """Whether the id is a live version of the subject; an id not among the kept ones is looked up again,
        once per subject and request (a batch of bad records costs one read, not one per record)."""
        if schema_id in await self._subject_ids(subject, False):
            return True
        if subject in refreshed:
            return False
        refreshed.add(subject)
        return schema_id in await self._subject_ids(subject, True)

    @staticmethod
    def _strategy(topic: Topic, is_key: bool) -> str:
        name = config.KEY_SUBJECT_STRATEGY if is_key else config.VALUE_SUBJECT_STRATEGY
        return wire.strategy(topic.configs.get(name, wire.TOPIC_NAME))

    async def _subject(self, topic: Topic, is_key: bool, schema_id: int) -> str | None:
        strategy = self._strategy(topic, is_key)
        if strategy == wire.TOPIC_NAME:
            return wire.topic_subject(topic.name, is_key)
        try:
            names = (await self.registry.parsed(schema_id)).record_names()
        except RegistryError:
            return None
        return wire.record_subject(strategy, topic.name, names[0]) if names else None

    async def _why(self, topic: Topic, is_key: bool, data: bytes | None, refreshed: set[str]) -> str | None:
        part = "key" if is_key else "value"
        schema_id = wire.schema_id(data)
        if schema_id is None:
            return f"the record's {part} has no schema id (magic byte 0 and a 4-byte id)"
        subject = await self._subject(topic, is_key, schema_id)
        if subject is None:
            return (
                f"schema id {schema_id} of the record's {part} names no registered schema with a record name"
            )
        if not await self._allowed(subject, schema_id, refreshed):
            return f"schema id {schema_id} of the record's {part} is not a version of subject {subject!r}"
        return None

    async def check(self, topic: Topic, batches: Sequence[ProducedBatch]) -> Refusal | None:
        """Why the batches' records may not be stored, or None when every one may. The common case (every id
        among the subject's kept ids, TopicNameStrategy) is one set lookup per record, no await."""
        parts = [is_key for is_key, name in ((True, config.KEY_SCHEMA_VALIDATION),
                 (False, config.VALUE_SCHEMA_VALIDATION)) if topic.configs.get(name) == "true"]  # fmt: skip
        # The 5-byte headers (magic byte and id) of the subject's kept ids, where the subject does not depend
        # on the id (TopicNameStrategy): a record whose bytes start with one passes with no further work.
        headers: dict[bool, frozenset[bytes]] = {}
        for is_key in parts:
            if self._strategy(topic, is_key) == wire.TOPIC_NAME:
                ids = await self._subject_ids(wire.topic_subject(topic.name, is_key), False)
                headers[is_key] = frozenset(wire.header(i) for i in ids)
        doubtful: list[tuple[int, bool, bytes | None]] = []
        for batch in batches:
            columns = _columns(batch)
            for is_key in parts:
                column = columns[0] if is_key else columns[1]
                known = headers.get(is_key, frozenset())
                # The hot loop of a validated produce: the set of the records' first 5 bytes (one id, mostly)
                # among the known ones. Only a batch where that fails is looked at record by record.
                if None in column or not known.issuperset({d[:5] for d in column if d is not None}):
                    doubtful += [
                        (i, is_key, d) for i, d in enumerate(column) if d is None or d[:5] not in known
                    ]
        refused: dict[int, str] = {}
        refreshed: set[str] = set()
        for index, is_key, data in doubtful:
            if index not in refused:
                why = await self._why(topic, is_key, data, refreshed)
                if why is not None:
                    refused[index] = why
        if not refused:
            return None
        first = next(iter(refused.values()))
        message = f"{len(refused)} record(s) refused by schema validation; the first: {first}"
        return Refusal(message, sorted(refused.items()))
