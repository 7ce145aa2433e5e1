"""What every schema format gives the registry: a parsed schema, its texts, its compatibility with another.

A format module (avro.py, json_schema.py, protobuf.py) has one entry point, `parse(text, references)`, which
returns a ParsedSchema or raises SchemaError with the parser's reason. `references` are the schemas the text
refers to, already resolved by the registry, dependencies first, each as (name, text): the name is the
reference's `name` (an Avro full name, a JSON Schema `$ref` URL, a Protobuf import path).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

AVRO = "AVRO"
JSON = "JSON"
PROTOBUF = "PROTOBUF"
SCHEMA_TYPES = (AVRO, JSON, PROTOBUF)


class SchemaError(ValueError):
    """The text is not a valid schema of its type; str() is the parser's reason."""


@dataclass(frozen=True, slots=True)
class Dependency:
    """A referenced schema, resolved: its reference name and its text."""

    name: str
    text: str


class ParsedSchema(Protocol):
    schema_type: str  # AVRO, JSON or PROTOBUF

    def canonical(self) -> str:
        """The text the registry stores and serves for this schema: the same for two texts that differ only
        in layout (whitespace), so that registering either finds the other's id."""
        ...

    def normalized(self) -> str:
        """The canonical text further normalized (the registry's `normalize=true`): for two schemas that
        mean the same but are written differently (key order, defaults spelled out, ...)."""
        ...

    def fingerprint_text(self) -> str:
        """What identifies the schema for "the same schema gets the same id" (the canonical text, or for
        Protobuf the compiled descriptor)."""
        ...

    def record_names(self) -> Sequence[str]:
        """Fully qualified names of the schema's top-level records or messages, first the one a
        RecordNameStrategy subject is named after."""
        ...

    def formatted(self, fmt: str) -> str | None:
        """The schema in a named format of its type (Protobuf's "serialized": a base64 FileDescriptorProto,
        which confluent-kafka's Protobuf clients ask for); None for a format the type does not have."""
        ...

    def decode(self, payload: bytes) -> object:
        """A record's payload (the bytes after the magic byte and the schema id) as plain Python data
        (dicts, lists, str, int, ...); SchemaError when the bytes are not of this schema."""
        ...

    def read_issues(self, writer: ParsedSchema) -> list[str]:
        """Why data written with `writer` cannot be read with this schema, as Confluent's registry words
        its compatibility messages; empty when it can. Both are of the same type."""
        ...


class SchemaFormat(Protocol):
    def __call__(self, text: str, references: Sequence[Dependency] = ()) -> ParsedSchema: ...
