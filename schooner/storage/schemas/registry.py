"""The schema registry's keys (all under the tag {schemas}, docs/key-layout.md), as Calls.

A schema is stored once, by id, as the JSON document {"schemaType", "schema", "references"}; a subject's
versions map a version number to that id. Ids come from one counter and are never reused; a schema keeps its
id (and its fingerprint) after every version naming it is deleted, so registering it again gives it back.
Parsing and compatibility are the registry's (schooner/registry); this layer only keeps the state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, Steps, command, script, text

DELETED = ":deleted"


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    subject: str
    version: int

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class StoredSchema:
    schema_type: str
    schema: str
    references: tuple[Reference, ...] = ()

    def encode(self) -> str:
        return json.dumps(
            {
                "schemaType": self.schema_type,
                "schema": self.schema,
                "references": [r.as_json() for r in self.references],
            },
            separators=(",", ":"),
        )


def decode_schema(raw: bytes | str) -> StoredSchema:
    doc = json.loads(raw)
    refs = tuple(Reference(r["name"], r["subject"], int(r["version"])) for r in doc.get("references") or ())
    return StoredSchema(doc["schemaType"], doc["schema"], refs)


@dataclass(frozen=True, slots=True)
class Version:
    version: int
    schema_id: int
    deleted: bool


@dataclass(frozen=True, slots=True)
class Registered:
    """What schema_register.lua answered: outcome "exists" or "new" with the version and id; "moved" (a
    version was added since the caller looked; `version` is the latest), "id-taken" or "version-taken"."""

    outcome: str
    version: int = 0
    schema_id: int = 0


def _parse_versions(reply: Any) -> list[Version]:
    found = []
    items = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
    for version, value in items:
        value = text(value)
        deleted = value.endswith(DELETED)
        found.append(Version(int(version), int(value.removesuffix(DELETED)), deleted))
    return sorted(found, key=lambda v: v.version)


def versions(ks: Keyspace, subject: str) -> Call[list[Version]]:
    """Every version of the subject, soft-deleted ones included, oldest first."""
    return command("HGETALL", ks.schema_versions(subject), parse=_parse_versions)


def subjects(ks: Keyspace) -> Call[list[str]]:
    return command("SMEMBERS", ks.schema_subjects, parse=lambda reply: sorted(text(s) for s in reply))


def every_version(ks: Keyspace) -> Steps[dict[str, list[Version]]]:
    """Every subject's versions (soft-deleted ones included), in two round trips whatever their number."""
    (names,) = yield [subjects(ks)]
    if not names:
        return {}
    held = yield [versions(ks, name) for name in names]
    return dict(zip(names, held, strict=True))


def schemas(ks: Keyspace, ids: Sequence[int]) -> Call[dict[int, StoredSchema]]:
    """The schemas of the ids that have one, in one round trip."""
    wanted = list(dict.fromkeys(ids))

    def parse(reply: Any) -> dict[int, StoredSchema]:
        return {i: decode_schema(raw) for i, raw in zip(wanted, reply, strict=True) if raw is not None}

    return command("HMGET", ks.schema_texts, *map(str, wanted), parse=parse)


def schema(ks: Keyspace, schema_id: int) -> Call[StoredSchema | None]:
    return command(
        "HGET", ks.schema_texts, str(schema_id), parse=lambda raw: None if raw is None else decode_schema(raw)
    )


def uses(ks: Keyspace, schema_id: int) -> Call[int]:
    """How many versions (soft-deleted ones included) hold the schema: 0 once all were deleted for good."""
    return command("HGET", ks.schema_uses, str(schema_id), parse=lambda r: 0 if r is None else int(r))


def max_id(ks: Keyspace) -> Call[int]:
    return command("GET", ks.schema_next_id, parse=lambda r: 0 if r is None else int(r))


def all_schemas(ks: Keyspace) -> Call[dict[int, StoredSchema]]:
    def parse(reply: Any) -> dict[int, StoredSchema]:
        items = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
        return {int(k): decode_schema(v) for k, v in items}

    return command("HGETALL", ks.schema_texts, parse=parse)


class MissingReference(LookupError):
    """A reference names a subject version that does not exist."""


def dependencies(ks: Keyspace, references: Sequence[Reference]) -> Steps[list[tuple[str, str]]]:
    """The schemas the references name, transitively, as (reference name, schema text), dependencies first
    and each once: what a parser needs beside the schema. Soft-deleted versions still count (a schema that
    refers to one keeps reading). MissingReference for a version that is gone."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()

    def walk(refs: Sequence[Reference]) -> Steps[None]:
        for ref in refs:
            if ref.name in seen:
                continue
            seen.add(ref.name)
            (held,) = yield [versions(ks, ref.subject)]
            chosen = next((v for v in held if v.version == ref.version), None)
            stored = None
            if chosen is not None:
                (stored,) = yield [schema(ks, chosen.schema_id)]
            if stored is None:
                raise MissingReference(f"subject {ref.subject!r} has no version {ref.version}")
            yield from walk(stored.references)
            found.append((ref.name, stored.schema))

    yield from walk(references)
    return found


def id_of(ks: Keyspace, fingerprint: str) -> Call[int | None]:
    return command("HGET", ks.schema_fingerprints, fingerprint, parse=lambda r: None if r is None else int(r))


def register(
    ks: Keyspace,
    subject: str,
    fingerprint: str,
    stored: StoredSchema,
    checked_latest: int,
    schema_id: int | None = None,
    version: int | None = None,
) -> Call[Registered]:
    """The subject's next version (or `version`), holding the schema's id (or `schema_id`), unless it has the
    schema already. `checked_latest` is the latest version compatibility was checked against (-1: none)."""

    def parse(reply: Any) -> Registered:
        outcome = text(reply[0])
        numbers = [int(n) for n in reply[1:]]
        if outcome in ("exists", "new"):
            return Registered(outcome, numbers[0], numbers[1])
        if outcome == "id-taken":
            return Registered(outcome, schema_id=numbers[0])
        return Registered(outcome, version=numbers[0])

    keys = (
        ks.schema_next_id,
        ks.schema_texts,
        ks.schema_fingerprints,
        ks.schema_versions(subject),
        ks.schema_subjects,
        ks.schema_uses,
    )
    args = (
        subject,
        fingerprint,
        stored.encode(),
        checked_latest,
        "" if schema_id is None else str(schema_id),
        "" if version is None else str(version),
    )
    return script("schema_register", keys, args, parse=parse)


def delete(
    ks: Keyspace, subject: str, permanent: bool, version: int | None = None
) -> Call[tuple[str, list[int]]]:
    """Soft or permanent deletion of a version (or of every version): ("deleted", versions) or an outcome
    of schema_delete.lua ("no-subject", "no-version", "already-deleted", "not-soft-deleted")."""

    def parse(reply: Any) -> tuple[str, list[int]]:
        return text(reply[0]), [int(v) for v in reply[1:]]

    args = (subject, "permanent" if permanent else "soft", "" if version is None else str(version))
    return script(
        "schema_delete", (ks.schema_versions(subject), ks.schema_subjects, ks.schema_uses), args, parse=parse
    )


def _settings_key(ks: Keyspace, kind: str) -> str:
    return ks.schema_configs if kind == "config" else ks.schema_modes


def setting(ks: Keyspace, kind: str, subject: str) -> Call[str | None]:
    """The subject's ("" the global) config (a JSON document) or mode; None when unset."""
    return command("HGET", _settings_key(ks, kind), subject, parse=lambda r: None if r is None else text(r))


def settings(ks: Keyspace, kind: str, subjects: Sequence[str]) -> Call[list[str | None]]:
    return command(
        "HMGET",
        _settings_key(ks, kind),
        *subjects,
        parse=lambda reply: [None if r is None else text(r) for r in reply],
    )


def put_setting(ks: Keyspace, kind: str, subject: str, value: str) -> Call[int]:
    return command("HSET", _settings_key(ks, kind), subject, value, parse=int)


def delete_setting(ks: Keyspace, kind: str, subject: str) -> Call[int]:
    return command("HDEL", _settings_key(ks, kind), subject, parse=int)
