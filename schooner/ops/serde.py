"""Schema-encoded keys and values for `schooner produce` and `schooner consume`: Confluent's wire format
(magic byte, schema id, payload) in Avro, JSON Schema or Protobuf.

Producing, a JSON text becomes a record's key or value through confluent-kafka's serializers, with the
schema of a file (registered under the topic's subject, TopicNameStrategy) or the subject's latest version.
Consuming, the schema id a key or value names is fetched from the registry once and the bytes decoded with
schooner.schemas, the parsers the registry itself uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ..schemas import AVRO, JSON, PROTOBUF, Dependency, ParsedSchema, SchemaError, parse, wire
from .registry_client import (
    RegistryFailure,
    RegistrySettings,
    dependencies,
    registry_errors,
    schema_type,
    transport_errors,
)

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import RegisteredSchema, SchemaRegistryClient

RAW = "raw"
FORMATS = (RAW, "avro", "json", "protobuf")
_TYPES = {"avro": AVRO, "json": JSON, "protobuf": PROTOBUF}


class EncodeError(ValueError):
    """One record's JSON could not be encoded (not JSON, not of the schema); the others go on."""


class DecodeError(ValueError):
    """One record's key or value could not be decoded; the others go on."""


def format_option(field: str) -> Callable[[Any], Any]:
    return click.option(
        f"--{field}-format",
        type=click.Choice(FORMATS, case_sensitive=False),
        default=RAW,
        show_default=True,
        help=f"How {field}s are encoded: raw bytes, or a schema registry's Avro, JSON Schema or Protobuf.",
    )


@dataclass(frozen=True)
class Field:
    """Which part of the records of which topic: its subject by TopicNameStrategy."""

    topic: str
    is_key: bool

    @property
    def name(self) -> str:
        return "key" if self.is_key else "value"

    @property
    def subject(self) -> str:
        return wire.topic_subject(self.topic, self.is_key)


class Encoder:
    """One JSON text at a time into Confluent's wire format, for one field of one topic. Building it
    registers the schema file (or finds the latest version), so that a registry's refusal (an incompatible
    schema, no subject) stops the command before any record is sent."""

    def __init__(self, registry: RegistrySettings, field: Field, fmt: str, schema_text: str | None) -> None:
        from confluent_kafka.serialization import MessageField, SerializationContext

        self.registry = registry
        self.field = field
        self.schema_type = _TYPES[fmt]
        self.context = SerializationContext(
            field.topic, MessageField.KEY if field.is_key else MessageField.VALUE
        )
        self.client = registry.client()
        self.message: Any = None  # Protobuf's message class
        with registry_errors(registry):
            self.used = self._schema(schema_text)
            self._serialize = self._serializer(schema_text)

    def _schema(self, text: str | None) -> RegisteredSchema:
        """The registered schema the records are written with: the file's, registered now, or the latest."""
        from confluent_kafka.schema_registry import RegisteredSchema, Schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        subject = self.field.subject
        if text is not None:
            schema = Schema(text, self.schema_type)
            if self.schema_type == PROTOBUF:  # a .proto that does not compile fails before it is registered
                what = f"--{self.field.name}-schema"
                self.message = _message_class(_parse(PROTOBUF, text, [], what), what)
            done = self.client.register_schema_full_response(subject, schema)
            # The registry answers the id and version only: the text is the file's.
            return RegisteredSchema(
                schema_id=done.schema_id, guid=None, subject=subject, version=done.version, schema=schema
            )
        try:
            # Not get_latest_version: its cache is by subject alone, whatever the format asked, so the
            # Protobuf serializer's own call (format=serialized) would get this text instead.
            latest = self.client.get_version(subject, "latest")
        except SchemaRegistryError as exc:
            raise RegistryFailure(
                f"no --{self.field.name}-schema, and no schema for {subject}: {exc.error_message}",
                exc.http_status_code,
                exc.error_code,
            ) from None
        found = schema_type(latest.schema)
        if found != self.schema_type:
            raise RegistryFailure(f"the latest schema of {subject} is {found}, not {self.schema_type}")
        return latest

    def _serializer(self, text: str | None) -> Callable[[Any], bytes | None]:
        # The schema is registered already (self.used): with a file the serializer looks it up, registering
        # nothing more; without one it takes the latest version, as Confluent's use.latest.version does.
        conf: dict[str, Any] = {"auto.register.schemas": False, "use.latest.version": text is None}
        if self.schema_type == AVRO:
            from confluent_kafka.schema_registry.avro import AvroSerializer

            avro = AvroSerializer(self.client, text, conf=conf)
            return lambda obj: avro(obj, self.context)
        if self.schema_type == JSON:
            from confluent_kafka.schema_registry.json_schema import JSONSerializer

            js = JSONSerializer(text, self.client, conf=conf)
            return lambda obj: js(obj, self.context)
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
        from google.protobuf import json_format

        # The message class is built from the schema as schooner.schemas compiles it (its descriptor pool):
        # the file's first message, the one Confluent's message index 0 names.
        if self.message is None:
            schema, what = self.used.schema, f"the latest schema of {self.field.subject}"
            deps = dependencies(self.client, schema)
            self.message = _message_class(_parse(PROTOBUF, schema.schema_str or "", deps, what), what)
        message = self.message
        proto = ProtobufSerializer(message, self.client, conf=conf)
        return lambda obj: proto(json_format.ParseDict(obj, message()), self.context)

    def __call__(self, text: bytes) -> bytes | None:
        """The record's bytes; None for the JSON `null` (a tombstone). EncodeError for a record that
        cannot be encoded; RegistryFailure when the registry fails."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        fatal: tuple[type[Exception], ...] = (SchemaRegistryError, *transport_errors())
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise EncodeError(f"the {self.field.name} is not JSON: {one_line(exc)}") from None
        if obj is None:
            return None
        with registry_errors(self.registry):
            try:
                return self._serialize(obj)
            except fatal:
                raise  # registry_errors words it, and the command stops: no further record would go
            except Exception as exc:  # a serializer's refusal has no one type: SerializationError, ValueError
                why = f"the {self.field.name} does not fit schema {self.used.schema_id}: {one_line(exc)}"
                raise EncodeError(why) from None


def one_line(exc: Exception) -> str:
    """A library's reason on one line: protobuf's json_format, for one, words its errors over two."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _parse(kind: str, text: str, deps: list[Dependency], what: str) -> ParsedSchema:
    try:
        return parse(kind, text, deps)
    except SchemaError as exc:
        raise click.BadParameter(str(exc), param_hint=what) from None


def _message_class(parsed: ParsedSchema, what: str) -> Any:
    from google.protobuf import message_factory

    from ..schemas.protobuf import ProtobufSchema

    assert isinstance(parsed, ProtobufSchema)
    names = parsed.record_names()
    if not names:
        raise click.BadParameter("the .proto file has no message", param_hint=what)
    return message_factory.GetMessageClass(parsed.pool.FindMessageTypeByName(names[0]))


class Decoder:
    """Keys or values in Confluent's wire format, decoded with the schema their id names; each schema is
    fetched once (a failure too: a record naming an unknown id does not ask again)."""

    def __init__(self, registry: RegistrySettings, fmt: str) -> None:
        self.registry = registry
        self.schema_type = _TYPES[fmt]
        self.client: SchemaRegistryClient = registry.client()
        self.schemas: dict[int, ParsedSchema | DecodeError] = {}

    def _schema(self, schema_id: int) -> ParsedSchema:
        if schema_id not in self.schemas:
            try:
                self.schemas[schema_id] = self._fetch(schema_id)
            except DecodeError as exc:
                self.schemas[schema_id] = exc
        found = self.schemas[schema_id]
        if isinstance(found, DecodeError):
            raise found
        return found

    def _fetch(self, schema_id: int) -> ParsedSchema:
        try:
            with registry_errors(self.registry):
                schema = self.client.get_schema(schema_id)
                deps = dependencies(self.client, schema)
        except RegistryFailure as exc:
            if exc.fatal:  # no registry, or a refused login: no record would decode
                raise
            raise DecodeError(f"schema id {schema_id}: {exc.message}") from None
        found = schema_type(schema)
        if found != self.schema_type:
            raise DecodeError(f"schema id {schema_id} is {found}, not {self.schema_type}")
        try:
            return parse(found, schema.schema_str or "", deps)
        except SchemaError as exc:
            raise DecodeError(f"schema id {schema_id} does not parse: {one_line(exc)}") from None

    def __call__(self, data: bytes | None) -> object:
        """The data as plain Python (dicts, lists, str, ...); DecodeError when it is not."""
        if data is None:
            return None
        schema_id = wire.schema_id(data)
        if schema_id is None:
            raise DecodeError("not in the wire format (magic byte 0 and a schema id)")
        try:
            return self._schema(schema_id).decode(data[wire.HEADER :])
        except SchemaError as exc:
            raise DecodeError(f"not of schema id {schema_id}: {one_line(exc)}") from None
