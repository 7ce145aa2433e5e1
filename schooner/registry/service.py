"""The schema registry's operations, as Confluent's REST API names them, over the state in Redis.

One SchemaRegistry per keyspace (the deployment's, or a tenant's). Every broker runs one on the same Redis,
so nothing is remembered between requests but parsed schemas by id (an id's schema never changes). A
registration checks compatibility against the versions it read, and schema_register.lua takes the next
version only if no version was added meanwhile; otherwise it reads and checks again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..schemas import SCHEMA_TYPES, Dependency, ParsedSchema, SchemaError, compatibility, parse
from ..storage.keys import Keyspace
from ..storage.redis.calls import Call, Steps, together
from ..storage.schemas import registry as state
from ..storage.schemas.registry import Reference, StoredSchema, Version
from . import errors

T = TypeVar("T")

MODES = ("READWRITE", "READONLY", "IMPORT")
DEFAULT_MODE = "READWRITE"
GLOBAL = ""  # the subject of the global config and mode
_ATTEMPTS = 20  # registrations racing on one subject each retry after the other's version landed
_PARSED_KEPT = 4096


class Runs(Protocol):
    """What the registry needs of storage: Store and its tenants' stores have it."""

    ks: Keyspace

    async def run(self, call: Call[T]) -> T: ...

    async def drive(self, steps: Steps[T]) -> T: ...


@dataclass(frozen=True, slots=True)
class SubjectVersion:
    subject: str
    version: int
    schema_id: int
    stored: StoredSchema
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class Config:
    compatibility: str
    normalize: bool = False

    def encode(self) -> str:
        return json.dumps({"compatibilityLevel": self.compatibility, "normalize": self.normalize})


def _decode_config(raw: str) -> Config:
    doc = json.loads(raw)
    return Config(doc["compatibilityLevel"], bool(doc.get("normalize", False)))


def check_subject(subject: str) -> str:
    # Confluent refuses empty subjects and those with control characters; any other text may name one.
    if not subject or any(ord(c) < 32 for c in subject) or len(subject) > 1024:
        raise errors.invalid_subject(subject)
    return subject


def parse_version(text: str | int) -> int | None:
    """A version number, or None for the latest ("latest" or -1); 42202 otherwise."""
    if text in ("latest", "-1", -1):
        return None
    try:
        version = int(text)
    except ValueError:
        raise errors.invalid_version(str(text)) from None
    if not 1 <= version <= 2**31 - 1:
        raise errors.invalid_version(str(text))
    return version


def fingerprint(schema_type: str, text: str, references: Sequence[Reference]) -> str:
    doc = json.dumps([schema_type, text, [r.as_json() for r in references]], separators=(",", ":"))
    return hashlib.sha256(doc.encode()).hexdigest()


class SchemaRegistry:
    def __init__(self, store: Runs) -> None:
        self.store = store
        self.ks = store.ks
        self._parsed: OrderedDict[int, ParsedSchema] = OrderedDict()

    # -- reading -----------------------------------------------------------------------------------
    async def _run(self, call: Call[T]) -> T:
        return await self.store.run(call)

    async def schema(self, schema_id: int) -> StoredSchema:
        calls: list[Call[Any]] = [state.schema(self.ks, schema_id), state.uses(self.ks, schema_id)]
        stored, uses = await self.store.drive(together(calls))  # one round trip
        if stored is None or uses <= 0:
            raise errors.schema_not_found(f"Schema {schema_id} not found")
        return stored

    async def parsed(self, schema_id: int) -> ParsedSchema:
        """The schema of the id, parsed (kept: an id's schema never changes)."""
        found = self._parsed.get(schema_id)
        if found is None:
            stored = await self._run(state.schema(self.ks, schema_id))
            if stored is None:
                raise errors.schema_not_found(f"Schema {schema_id} not found")
            found = await self._parse(stored)
            self._parsed[schema_id] = found
            if len(self._parsed) > _PARSED_KEPT:
                self._parsed.popitem(last=False)
        return found

    async def max_id(self) -> int:
        return await self._run(state.max_id(self.ks))

    async def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        every = await self.store.drive(state.every_version(self.ks))
        return [
            subject
            for subject, versions in sorted(every.items())
            if subject.startswith(prefix) and (deleted or any(not v.deleted for v in versions))
        ]

    async def _schemas(self, ids: Sequence[int]) -> dict[int, StoredSchema]:
        return await self._run(state.schemas(self.ks, ids)) if ids else {}

    async def _versions(self, subject: str) -> list[Version]:
        return await self._run(state.versions(self.ks, subject))

    async def versions_of(self, subject: str) -> list[Version]:
        """Every version of the subject as stored, soft-deleted ones included (none: an empty list)."""
        return await self._versions(subject)

    async def versions(self, subject: str, deleted: bool = False) -> list[int]:
        found = [v.version for v in await self._versions(subject) if deleted or not v.deleted]
        if not found:
            raise errors.subject_not_found(subject)
        return found

    async def version(self, subject: str, version: int | None, deleted: bool = False) -> SubjectVersion:
        """The subject's version (None: the latest live one)."""
        every = await self._versions(subject)
        shown = [v for v in every if deleted or not v.deleted]
        if not shown:
            raise errors.subject_not_found(subject)
        if version is None:
            chosen = [v for v in shown if not v.deleted][-1:] or shown[-1:]
        else:
            chosen = [v for v in shown if v.version == version]
        if not chosen:
            raise errors.version_not_found(version)
        v = chosen[0]
        stored = await self._run(state.schema(self.ks, v.schema_id))
        if stored is None:
            raise errors.schema_not_found(f"Schema {v.schema_id} not found")
        return SubjectVersion(subject, v.version, v.schema_id, stored, v.deleted)

    async def uses_of(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """(subject, version) of every version holding the schema."""
        every = await self.store.drive(state.every_version(self.ks))
        found = [
            (subject, v.version)
            for subject, versions in sorted(every.items())
            for v in versions
            if v.schema_id == schema_id and (deleted or not v.deleted)
        ]
        if not found and not deleted:
            await self.schema(schema_id)  # 40403 for an id no version holds
        return found

    async def referenced_by(self, subject: str, version: int | None) -> list[int]:
        """Ids of the live schemas whose references name this version."""
        target = await self.version(subject, version)
        return (await self._referrers(subject)).get(target.version, [])

    async def _referrers(self, subject: str) -> dict[int, list[int]]:
        """For each version of the subject that live schemas refer to, their ids: every subject and schema
        read once, in three round trips."""
        every = await self.store.drive(state.every_version(self.ks))
        live = {v.schema_id for versions in every.values() for v in versions if not v.deleted}
        found: dict[int, set[int]] = {}
        for schema_id, schema in (await self._schemas(sorted(live))).items():
            for ref in schema.references:
                if ref.subject == subject:
                    found.setdefault(ref.version, set()).add(schema_id)
        return {version: sorted(ids) for version, ids in found.items()}

    async def every_schema(
        self, prefix: str = "", deleted: bool = False, latest_only: bool = False
    ) -> list[SubjectVersion]:
        every = await self.store.drive(state.every_version(self.ks))
        chosen: list[tuple[str, Version]] = []
        for subject, versions in sorted(every.items()):
            shown = [v for v in versions if deleted or not v.deleted]
            if subject.startswith(prefix):
                chosen += [(subject, v) for v in (shown[-1:] if latest_only else shown)]
        stored = await self._schemas([v.schema_id for _, v in chosen])
        return [
            SubjectVersion(subject, v.version, v.schema_id, stored[v.schema_id], v.deleted)
            for subject, v in chosen
            if v.schema_id in stored
        ]

    # -- parsing -----------------------------------------------------------------------------------
    async def _dependencies(self, references: Sequence[Reference]) -> list[Dependency]:
        """The referenced schemas, dependencies first, each once."""
        try:
            found = await self.store.drive(state.dependencies(self.ks, references))
        except state.MissingReference as e:
            raise errors.invalid_schema(f"a reference cannot be resolved: {e}") from None
        return [Dependency(name, text) for name, text in found]

    async def _parse(self, stored: StoredSchema) -> ParsedSchema:
        dependencies = await self._dependencies(stored.references)
        try:
            # A parser may take milliseconds (protoc runs as a process): not on the event loop.
            return await asyncio.to_thread(parse, stored.schema_type, stored.schema, dependencies)
        except SchemaError as e:
            raise errors.invalid_schema(str(e)) from None
        except RecursionError:
            raise errors.invalid_schema("the schema nests too deeply") from None

    async def parse_new(self, schema_type: str, text: str, references: Sequence[Reference]) -> ParsedSchema:
        if schema_type not in SCHEMA_TYPES:
            raise errors.invalid_schema(
                f"unknown schema type {schema_type!r}: one of {', '.join(SCHEMA_TYPES)}"
            )
        return await self._parse(StoredSchema(schema_type, text, tuple(references)))

    # -- registering -------------------------------------------------------------------------------
    async def register(
        self,
        subject: str,
        schema_type: str,
        text: str,
        references: Sequence[Reference],
        normalize: bool = False,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> tuple[int, int]:
        """(id, version) of the schema under the subject, registering it as the next version unless the
        subject has it."""
        check_subject(subject)
        mode = await self.mode(subject)
        if mode == "READONLY":
            raise errors.not_permitted(f"Subject {subject} is in read-only mode")
        if (schema_id is not None or version is not None) and mode != "IMPORT":
            raise errors.not_permitted(
                f"Subject {subject} is not in import mode: only IMPORT mode takes a schema id or version"
            )
        config = await self.config(subject)
        references = await self._pinned(references)
        parsed = await self.parse_new(schema_type, text, references)
        normalize = normalize or config.normalize
        stored = StoredSchema(
            schema_type, parsed.normalized() if normalize else parsed.canonical(), tuple(references)
        )
        print_ = parsed.normalized() if normalize else parsed.fingerprint_text()
        fp = fingerprint(schema_type, print_, references)
        if mode == "IMPORT":
            reply = await self._run(state.register(self.ks, subject, fp, stored, -1, schema_id, version))
            return self._registered(reply, subject)
        for _ in range(_ATTEMPTS):
            every = await self._versions(subject)
            live = [v for v in every if not v.deleted]
            known = await self._run(state.id_of(self.ks, fp))
            for v in live:
                if v.schema_id == known:
                    return v.schema_id, v.version
            previous = [await self.parsed(v.schema_id) for v in live]
            problems = compatibility.issues(config.compatibility, parsed, previous)
            if problems:
                raise errors.incompatible(problems)
            latest = every[-1].version if every else 0
            reply = await self._run(state.register(self.ks, subject, fp, stored, latest))
            if reply.outcome != "moved":
                return self._registered(reply, subject)
        raise errors.store_error(f"subject {subject} kept changing while the schema was registered")

    async def _pinned(self, references: Sequence[Reference]) -> list[Reference]:
        """The references, each to a version number: one to version -1 names the subject's latest live
        version, and is kept as that version (a later version of the subject changes nothing)."""
        pinned = []
        for ref in references:
            if ref.version == -1:
                try:
                    ref = Reference(ref.name, ref.subject, (await self.version(ref.subject, None)).version)
                except errors.RegistryError as e:
                    raise errors.invalid_schema(f"reference {ref.name!r}: {e.message}") from None
            pinned.append(ref)
        return pinned

    def _registered(self, reply: state.Registered, subject: str) -> tuple[int, int]:
        if reply.outcome == "id-taken":
            raise errors.id_in_use(reply.schema_id)
        if reply.outcome == "version-taken":
            raise errors.not_permitted(f"Subject {subject} has version {reply.version} already")
        return reply.schema_id, reply.version

    async def lookup(
        self,
        subject: str,
        schema_type: str,
        text: str,
        references: Sequence[Reference],
        normalize: bool = False,
        deleted: bool = False,
    ) -> SubjectVersion:
        """The subject's version holding this schema (POST /subjects/{subject})."""
        every = [v for v in await self._versions(subject) if deleted or not v.deleted]
        if not every:
            raise errors.subject_not_found(subject)
        references = await self._pinned(references)
        parsed = await self.parse_new(schema_type, text, references)
        prints = (
            {parsed.fingerprint_text(), parsed.normalized()} if normalize else {parsed.fingerprint_text()}
        )
        ids = set()
        for print_ in prints:
            found = await self._run(state.id_of(self.ks, fingerprint(schema_type, print_, references)))
            if found is not None:
                ids.add(found)
        for v in reversed(every):
            if v.schema_id in ids:
                return await self.version(subject, v.version, deleted=True)
        # Written differently (another key order, say), the same schema: its normalized text says so.
        wanted = parsed.normalized()
        for v in reversed(every):
            held = await self.parsed(v.schema_id)
            if held.schema_type == schema_type and held.normalized() == wanted:
                return await self.version(subject, v.version, deleted=True)
        raise errors.schema_not_found()

    async def check(
        self,
        subject: str,
        version: int | None,
        schema_type: str,
        text: str,
        references: Sequence[Reference],
        every_version: bool,
    ) -> list[str]:
        """Why the schema may not be registered after the subject's version (or after each version its
        level names, when every_version); empty when it may."""
        parsed = await self.parse_new(schema_type, text, await self._pinned(references))
        level = (await self.config(subject)).compatibility
        live = [v for v in await self._versions(subject) if not v.deleted]
        if every_version:
            previous = [await self.parsed(v.schema_id) for v in live]
            return compatibility.issues(level, parsed, previous)
        if not live:
            if version is None:
                return []
            raise errors.version_not_found(version)
        chosen = live[-1:] if version is None else [v for v in live if v.version == version]
        if not chosen:
            raise errors.version_not_found(version)
        plain = level.removesuffix("_TRANSITIVE")
        return compatibility.issues(plain, parsed, [await self.parsed(chosen[0].schema_id)])

    # -- deleting ----------------------------------------------------------------------------------
    async def delete_version(self, subject: str, version: int | None, permanent: bool) -> int:
        every = await self._versions(subject)
        if not every:
            raise errors.subject_not_found(subject)
        if version is None:
            live = [v for v in every if not v.deleted]
            if not live:
                raise errors.subject_not_found(subject)
            version = live[-1].version
        await self._refuse_if_referenced(subject, [version])
        outcome, done = await self._run(state.delete(self.ks, subject, permanent, version))
        self._raise_for(outcome, subject, version)
        return done[0]

    async def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        every = await self._versions(subject)
        await self._refuse_if_referenced(subject, [v.version for v in every])
        outcome, done = await self._run(state.delete(self.ks, subject, permanent))
        self._raise_for(outcome, subject, None)
        if permanent:
            await self._run(state.delete_setting(self.ks, "config", subject))
            await self._run(state.delete_setting(self.ks, "mode", subject))
        return done

    async def _refuse_if_referenced(self, subject: str, versions: Sequence[int]) -> None:
        """42206 when a live version among these is referred to by a live schema."""
        live = {v.version for v in await self._versions(subject) if not v.deleted}
        referrers = await self._referrers(subject)
        for version in versions:
            users = referrers.get(version) if version in live else None
            if users:
                raise errors.reference_exists(
                    f"One or more references exist to the schema {{subject={subject},version={version}}}: "
                    f"schema ids {users}"
                )

    @staticmethod
    def _raise_for(outcome: str, subject: str, version: int | None) -> None:
        if outcome == "deleted":
            return
        if outcome == "no-subject":
            raise errors.subject_not_found(subject)
        if outcome == "no-version":
            raise errors.version_not_found(version)
        if outcome == "already-deleted":
            if version is None:
                raise errors.subject_soft_deleted(subject)
            raise errors.version_soft_deleted(subject, version)
        if version is None:
            raise errors.subject_not_soft_deleted(subject)
        raise errors.version_not_soft_deleted(subject, version)

    # -- config and mode ---------------------------------------------------------------------------
    async def config(self, subject: str) -> Config:
        """The subject's config, else the global one, else the default (BACKWARD)."""
        own, overall = await self._run(state.settings(self.ks, "config", [subject, GLOBAL]))
        for raw in (own, overall):
            if raw is not None:
                return _decode_config(raw)
        return Config(compatibility.DEFAULT_LEVEL)

    async def own_config(self, subject: str) -> Config | None:
        raw = await self._run(state.setting(self.ks, "config", subject))
        return None if raw is None else _decode_config(raw)

    async def set_config(self, subject: str, level: Any, normalize: Any = None) -> Config:
        if not isinstance(level, str) or level.upper() not in compatibility.LEVELS:
            raise errors.invalid_compatibility_level(level)
        if subject:
            check_subject(subject)
        config = Config(level.upper(), bool(normalize))
        await self._run(state.put_setting(self.ks, "config", subject, config.encode()))
        return config

    async def delete_config(self, subject: str) -> Config:
        before = await self.config(subject)
        await self._run(state.delete_setting(self.ks, "config", subject))
        return before

    async def mode(self, subject: str) -> str:
        own, overall = await self._run(state.settings(self.ks, "mode", [subject, GLOBAL]))
        return own or overall or DEFAULT_MODE

    async def own_mode(self, subject: str) -> str | None:
        return await self._run(state.setting(self.ks, "mode", subject))

    async def set_mode(self, subject: str, mode: Any, force: bool = False) -> str:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()
        if subject:
            check_subject(subject)
        # Importing keeps the ids it is given, so it starts on an empty subject (or registry).
        if mode == "IMPORT" and not force and await self._holds_versions(subject):
            raise errors.not_permitted(
                f"Cannot import since found existing subjects{' ' + subject if subject else ''}: "
                "set force=true to import anyway"
            )
        await self._run(state.put_setting(self.ks, "mode", subject, mode))
        return mode

    async def _holds_versions(self, subject: str) -> bool:
        """Whether the subject (the registry, for GLOBAL) has any version, soft-deleted ones included."""
        if subject:
            return bool(await self._versions(subject))
        return bool(await self.subjects(True))

    async def delete_mode(self, subject: str) -> str:
        before = await self.mode(subject)
        await self._run(state.delete_setting(self.ks, "mode", subject))
        return before
