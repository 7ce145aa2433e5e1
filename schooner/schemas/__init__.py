"""Schemas, pure: Avro, JSON Schema and Protobuf parsed by their maintained parsers, with compatibility
between versions and Confluent's wire format of schema-encoded records. No I/O: the registry
(schooner/registry) keeps them in Redis and serves them over HTTP; the broker validates records with them;
the Spark source and the CLI decode with them.

- parsed.py: what every format gives (ParsedSchema, SchemaError, Dependency);
- avro.py, json_schema.py, protobuf.py: the formats;
- compatibility.py: Confluent's compatibility levels over a subject's versions;
- wire.py: the magic byte, the schema id and the subject name strategies.
"""

from __future__ import annotations

from collections.abc import Sequence

from .parsed import AVRO, JSON, PROTOBUF, SCHEMA_TYPES, Dependency, ParsedSchema, SchemaError

__all__ = ["AVRO", "JSON", "PROTOBUF", "SCHEMA_TYPES", "Dependency", "ParsedSchema", "SchemaError", "parse"]


def parse(schema_type: str, text: str, references: Sequence[Dependency] = ()) -> ParsedSchema:
    """The schema of that type (AVRO, JSON or PROTOBUF); SchemaError when the text is not one."""
    # Each format is imported when first used: protoc and the Avro library cost start-up time.
    if schema_type == AVRO:
        from . import avro

        return avro.parse(text, references)
    if schema_type == JSON:
        from . import json_schema

        return json_schema.parse(text, references)
    if schema_type == PROTOBUF:
        from . import protobuf

        return protobuf.parse(text, references)
    raise SchemaError(f"unknown schema type {schema_type!r}: one of {', '.join(SCHEMA_TYPES)}")
