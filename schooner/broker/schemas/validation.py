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

    async def _allowed(self, subject: str, schema_id: int) -> bool:
        return schema_id in await self._subject_ids(subject, False) or schema_id in await self._subject_ids(
            subject, True
        )

    async def _subject(self, topic: Topic, is_key: bool, schema_id: int) -> str | None:
        name = config.KEY_SUBJECT_STRATEGY if is_key else config.VALUE_SUBJECT_STRATEGY
        strategy = wire.strategy(topic.configs.get(name, wire.TOPIC_NAME))
        if strategy == wire.TOPIC_NAME:
            return wire.topic_subject(topic.name, is_key)
        try:
            names = (await self.registry.parsed(schema_id)).record_names()
        except RegistryError:
            return None
        return wire.record_subject(strategy, topic.name, names[0]) if names else None

    async def _why(self, topic: Topic, is_key: bool, data: bytes | None) -> str | None:
        part = "key" if is_key else "value"
        schema_id = wire.schema_id(data)
        if schema_id is None:
            return f"the record's {part} has no schema id (magic byte 0 and a 4-byte id)"
        subject = await self._subject(topic, is_key, schema_id)
        if subject is None:
            return (
                f"schema id {schema_id} of the record's {part} names no registered schema with a record name"
            )
        if not await self._allowed(subject, schema_id):
            return f"schema id {schema_id} of the record's {part} is not a version of subject {subject!r}"
        return None

    async def check(self, topic: Topic, batches: Sequence[ProducedBatch]) -> Refusal | None:
        """Why the batches' records may not be stored, or None when every one may."""
        keys = topic.configs.get(config.KEY_SCHEMA_VALIDATION) == "true"
        values = topic.configs.get(config.VALUE_SCHEMA_VALIDATION) == "true"
        refused: list[tuple[int, str]] = []
        for batch in batches:
            for index, record in enumerate(batch.records):
                why = (await self._why(topic, True, record.key)) if keys else None
                if why is None and values:
                    why = await self._why(topic, False, record.value)
                if why is not None:
                    refused.append((index, why))
        if not refused:
            return None
        first = refused[0][1]
        message = f"{len(refused)} record(s) refused by schema validation; the first: {first}"
        return Refusal(message, refused)
