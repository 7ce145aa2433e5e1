"""JSON Schema for the schema registry, as Confluent's registry treats it.

`parse(text, references)` checks a schema against its meta-schema (the dialect its "$schema" names, draft 7
when it names none, as Confluent's registry assumes) with the jsonschema library, and resolves its "$ref"s
among the schema itself and the references, each registered under its name (the URL or file name a "$ref"
uses: {"$ref": "other.json"}, {"$ref": "other.json#/definitions/X"}) and, when the schema has an "$id", under
that name resolved against it too. A "$ref" that resolves nowhere is a parse error, as is a malformed
schema.

- canonical(): compact JSON, keys in the order written; normalized(): keys sorted as well;
  fingerprint_text() is the canonical text.
- record_names(): the schema's "title", which Confluent's RecordNameStrategy names JSON subjects after.
- decode(payload): the payload's JSON, validated against the schema ("format" is an annotation: not
  asserted, as the specification's default).
- read_issues(writer): see json_compatibility.py, which lists the compatibility rules covered and not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import referencing.jsonschema
from jsonschema import Draft3Validator, Draft4Validator, Draft6Validator, Draft7Validator
from jsonschema import exceptions as jsonschema_exceptions
from jsonschema.validators import validator_for
from jsonschema_specifications import REGISTRY as META_SCHEMAS
from referencing import Registry, Resource
from referencing.exceptions import CannotDetermineSpecification, Unresolvable

from schooner.schemas import json_compatibility
from schooner.schemas.json_compatibility import Node, Side
from schooner.schemas.parsed import JSON, Dependency, ParsedSchema, SchemaError

if TYPE_CHECKING:
    from referencing._core import Resolver

# Dialects in which keywords beside "$ref" are ignored.
_LEGACY_REF = (Draft3Validator, Draft4Validator, Draft6Validator, Draft7Validator)


class JsonSchema:
    """A parsed JSON Schema with its references resolved; immutable."""

    schema_type: str = JSON

    def __init__(self, schema: dict[str, Any] | bool, side: Side) -> None:
        self.schema = schema
        self._side = side
        self._canonical = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)

    def canonical(self) -> str:
        return self._canonical

    def normalized(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    def fingerprint_text(self) -> str:
        return self._canonical

    def record_names(self) -> Sequence[str]:
        title = self.schema.get("title") if isinstance(self.schema, dict) else None
        return [title] if isinstance(title, str) else []

    def formatted(self, fmt: str) -> str | None:
        return None  # JSON Schema has no other format

    def decode(self, payload: bytes) -> object:
        try:
            value = json.loads(payload.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            raise SchemaError(f"the payload is not JSON: {error}") from None
        invalid = jsonschema_exceptions.best_match(self._side.validator.iter_errors(value))
        if invalid is not None:
            raise SchemaError(f"{invalid.message} (at {_pointer(invalid.absolute_path)})")
        return value

    def read_issues(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, JsonSchema):
            return [f"TYPE_CHANGED at #: the writer is a {writer.schema_type} schema"]
        if writer is self:
            return []
        return json_compatibility.read_issues(self._side, writer._side)


def parse(text: str, references: Sequence[Dependency] = ()) -> JsonSchema:
    """The schema of `text`, whose "$ref"s may name `references`; SchemaError when it is not valid."""
    schema = _load(text, "the schema")
    if not isinstance(schema, dict | bool):
        raise SchemaError(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    cls = validator_for(schema, default=Draft7Validator)
    try:
        cls.check_schema(schema)
    except jsonschema_exceptions.SchemaError as error:
        where = _pointer(error.absolute_path)
        raise SchemaError(f"invalid JSON Schema: {error.message} (at {where})") from None
    except RecursionError:
        raise SchemaError("invalid JSON Schema: nested too deeply") from None
    specification = referencing.jsonschema.specification_with(cls.ID_OF(cls.META_SCHEMA) or "")
    root = specification.create_resource(schema)
    registry = _registry(root, references, specification)
    resolver = registry.resolver_with_root(root)
    missing = next(_unresolvable_refs(root, resolver), None)
    if missing is not None:
        names = ", ".join(repr(d.name) for d in references) or "none"
        raise SchemaError(
            f'"$ref" {missing!r} resolves neither within the schema nor to one of its references ({names})'
        )
    validator = cls(schema, registry=registry)
    return JsonSchema(schema, Side(Node(schema, resolver), validator, specification, cls in _LEGACY_REF))


def _registry(
    root: Resource[Any], references: Sequence[Dependency], specification: referencing.Specification[Any]
) -> Registry[Any]:
    base = root.id() or ""
    resources: list[tuple[str, Resource[Any]]] = []
    for dependency in references:
        contents = _load(dependency.text, f"reference {dependency.name!r}")
        try:
            resource = Resource.from_contents(contents, default_specification=specification)
        except CannotDetermineSpecification as error:
            raise SchemaError(f"reference {dependency.name!r} is not a JSON Schema: {error}") from None
        # A "$ref" names a reference as written, relative to the schema's "$id", or by the reference's own id.
        uris = {dependency.name, urljoin(base, dependency.name), resource.id() or dependency.name}
        resources.extend((uri, resource) for uri in uris)
    # The meta-schemas too, so that a schema may refer to them as validation allows; crawled once here
    # rather than at each lookup that misses.
    return META_SCHEMAS.combine(Registry().with_resources(resources)).crawl()


def _unresolvable_refs(root: Resource[Any], resolver: Resolver[Any]) -> Iterator[str]:
    """The "$ref"s of the schema that resolve nowhere; the dialect knows which keywords hold subschemas."""
    stack = [(root, resolver)]
    while stack:
        resource, current = stack.pop()
        ref = resource.contents.get("$ref") if isinstance(resource.contents, dict) else None
        if isinstance(ref, str):
            try:
                current.lookup(ref)
            except Unresolvable:
                yield ref
        stack.extend((sub, current.in_subresource(sub)) for sub in resource.subresources())


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise SchemaError(f"{what} is not JSON: {error}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")  # json.loads takes NaN and Infinity by default


def _pointer(path: Sequence[str | int] | Any) -> str:
    return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)
