"""JSON Schema for the registry (schooner/schemas/json_schema.py and json_compatibility.py): parsing with
references, decoding, the canonical texts and the compatibility rules, read as a reader/writer check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schooner.schemas.json_schema import JsonSchema, parse
from schooner.schemas.parsed import JSON, Dependency, SchemaError

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
NUMBER = {"type": "number"}
NULL = {"type": "null"}


def schema(value: Any, references: tuple[Dependency, ...] = ()) -> JsonSchema:
    return parse(json.dumps(value), references)


def issues(writer: Any, reader: Any, references: tuple[Dependency, ...] = ()) -> list[str]:
    """Why data written with `writer` may not be read with `reader`."""
    return schema(reader, references).read_issues(schema(writer, references))


def obj(properties: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **keywords}


def compatible(writer: Any, reader: Any) -> bool:
    return issues(writer, reader) == []


# Parsing.


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "object or a boolean"),
        ("42", "object or a boolean"),
        ('{"type": "nope"}', "'nope' is not valid"),
        ('{"type": "string", "minLength": -1}', "minLength"),
        ('{"type": "string", "pattern": "("}', "regex"),
        ('{"type": "number", "maximum": NaN}', "NaN"),
        ('{"$ref": "other.json"}', "'other.json'"),
        ('{"properties": {"a": {"$ref": "#/definitions/missing"}}}', "'#/definitions/missing'"),
    ],
)
def test_malformed_schemas_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(SchemaError) as caught:
        parse(text)
    first_line = str(caught.value).splitlines()[0]
    assert reason in first_line


def test_a_malformed_reference_is_refused() -> None:
    with pytest.raises(SchemaError, match="reference 'other.json' is not JSON"):
        parse('{"$ref": "other.json"}', [Dependency("other.json", "{oops")])


def test_boolean_and_dialect_schemas_parse() -> None:
    assert parse("true").decode(b"[1]") == [1]
    with pytest.raises(SchemaError):
        parse("false").decode(b"1")
    draft2020 = schema({"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [STRING]})
    assert draft2020.decode(b'["a", 1]') == ["a", 1]
    with pytest.raises(SchemaError):
        draft2020.decode(b"[1]")
    # draft 4's boolean exclusiveMaximum is valid there and not in the default draft 7
    schema({"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3, "exclusiveMaximum": True})
    with pytest.raises(SchemaError):
        schema({"maximum": 3, "exclusiveMaximum": True})


def test_the_schema_as_parsed_schema() -> None:
    parsed = schema({"title": "Customer", "type": "object"})
    assert parsed.schema_type == JSON
    assert parsed.record_names() == ["Customer"]
    assert schema({"type": "object"}).record_names() == []
    assert parsed.formatted("serialized") is None


# References.

OTHER = Dependency(
    "other.json",
    json.dumps(
        {"type": "integer", "minimum": 0, "definitions": {"Name": {"type": "string", "maxLength": 5}}}
    ),
)


def test_references_resolve_by_name_and_pointer() -> None:
    parsed = schema(
        obj({"age": {"$ref": "other.json"}, "name": {"$ref": "other.json#/definitions/Name"}}), (OTHER,)
    )
    assert parsed.decode(b'{"age": 3, "name": "ann"}') == {"age": 3, "name": "ann"}
    with pytest.raises(SchemaError, match="-1"):
        parsed.decode(b'{"age": -1}')
    with pytest.raises(SchemaError, match="too long"):
        parsed.decode(b'{"name": "annabel"}')


def test_references_resolve_against_the_schema_id_and_through_each_other() -> None:
    inner = Dependency("https://example.com/name.json", json.dumps({"type": "string"}))
    outer = Dependency("https://example.com/person.json", json.dumps(obj({"name": {"$ref": "name.json"}})))
    root = {"$id": "https://example.com/root.json", "type": "array", "items": {"$ref": "person.json"}}
    parsed = schema(root, (inner, outer))
    assert parsed.decode(b'[{"name": "a"}]') == [{"name": "a"}]
    with pytest.raises(SchemaError):
        parsed.decode(b'[{"name": 1}]')
    # a reference named as written in the "$ref", the schema having an "$id"
    relative = schema({"$id": "https://example.com/root.json", "$ref": "other.json"}, (OTHER,))
    assert relative.decode(b"4") == 4


def test_a_reference_to_an_unknown_name_is_refused() -> None:
    with pytest.raises(SchemaError, match="'missing.json'.*'other.json'"):
        schema(obj({"a": {"$ref": "missing.json"}}), (OTHER,))
    with pytest.raises(SchemaError, match="'other.json#/definitions/Nope'"):
        schema({"$ref": "other.json#/definitions/Nope"}, (OTHER,))


# Decoding.


def test_decode_returns_valid_data_and_refuses_the_rest() -> None:
    parsed = schema(obj({"id": INTEGER, "email": {"type": "string", "format": "email"}}, required=["id"]))
    assert parsed.decode(b'{"id": 1, "email": "not an address"}') == {"id": 1, "email": "not an address"}
    with pytest.raises(SchemaError, match="'id' is a required property"):
        parsed.decode(b"{}")
    with pytest.raises(SchemaError, match=r"'x' is not of type 'integer' \(at #/id\)"):
        parsed.decode(b'{"id": "x"}')
    with pytest.raises(SchemaError, match="not JSON"):
        parsed.decode(b'{"id": ')
    with pytest.raises(SchemaError, match="not JSON"):
        parsed.decode(b"\xff\xfe")
    with pytest.raises(SchemaError, match="not JSON"):
        parsed.decode(b'{"id": NaN}')


# Canonical texts.


def test_canonical_and_normalized_texts() -> None:
    a = parse('{\n  "type": "object",\n  "properties": {"name": {"type": "string", "title": "Émile"}}\n}')
    b = parse('{"type":"object","properties":{"name":{"type":"string","title":"Émile"}}}')
    c = parse('{"properties": {"name": {"title": "Émile", "type": "string"}}, "type": "object"}')
    assert (
        a.canonical()
        == b.canonical()
        == '{"type":"object","properties":{"name":{"type":"string","title":"Émile"}}}'
    )
    assert a.canonical() != c.canonical()
    assert a.normalized() == c.normalized()
    assert c.normalized() == '{"properties":{"name":{"title":"Émile","type":"string"}},"type":"object"}'
    assert a.fingerprint_text() == a.canonical()


# Compatibility: types.


def test_identical_schemas_are_compatible() -> None:
    person = obj({"name": STRING, "tags": {"type": "array", "items": STRING}}, required=["name"])
    assert issues(person, person) == []


def test_type_widening_and_narrowing() -> None:
    assert compatible(INTEGER, NUMBER)
    assert issues(NUMBER, INTEGER) == ["TYPE_NARROWED at #"]
    assert issues(STRING, INTEGER) == ["TYPE_CHANGED at #"]
    assert compatible(STRING, {"type": ["string", "null"]})
    assert issues({"type": ["string", "null"]}, STRING) == ["TYPE_NARROWED at #"]
    assert issues({}, STRING) == ["TYPE_NARROWED at #"]
    assert compatible(STRING, {})
    assert compatible(obj({"a": STRING}), obj({"a": {"type": ["string", "integer"]}}))
    assert issues(obj({"a": STRING}), obj({"a": INTEGER})) == ["TYPE_CHANGED at #/properties/a"]


def test_boolean_schemas() -> None:
    assert compatible(True, True)
    assert compatible(False, STRING)
    assert issues(STRING, False) == ["TYPE_NARROWED at #"]
    assert issues(True, STRING) == ["TYPE_NARROWED at #"]


# Enums.


def test_enum_values_removed_in_the_reader() -> None:
    assert issues({"enum": ["a", "b"]}, {"enum": ["a"]}) == ["ENUM_ARRAY_NARROWED at #"]
    assert compatible({"enum": ["a"]}, {"enum": ["a", "b"]})
    assert issues(STRING, {"type": "string", "enum": ["a"]}) == ["ENUM_ARRAY_NARROWED at #"]
    assert compatible({"type": "string", "enum": ["a", "b"]}, STRING)
    assert compatible({"const": "a"}, {"enum": ["a", "b"]})
    assert issues({"const": 1}, {"const": True}) == ["ENUM_ARRAY_NARROWED at #"]


def test_enum_values_are_checked_against_the_whole_reader() -> None:
    # every value the writer can write fits the reader's bounds: compatible though maxLength was added
    assert compatible({"type": "string", "enum": ["ab", "c"]}, {"type": "string", "maxLength": 2})
    assert issues({"enum": ["ab", "abc"]}, {"type": "string", "maxLength": 2}) == ["MAX_LENGTH_ADDED at #"]
    assert issues({"enum": ["a", 1]}, STRING) == ["TYPE_NARROWED at #"]
    assert compatible({"type": "boolean"}, {"enum": [True, False]})
    assert issues({"type": "boolean"}, {"enum": [True]}) == ["ENUM_ARRAY_NARROWED at #"]


# Strings and numbers.


@pytest.mark.parametrize(
    ("writer", "reader", "expected"),
    [
        ({}, {"maxLength": 5}, ["MAX_LENGTH_ADDED at #"]),
        ({"maxLength": 6}, {"maxLength": 5}, ["MAX_LENGTH_DECREASED at #"]),
        ({"maxLength": 4}, {"maxLength": 5}, []),
        ({"maxLength": 4}, {}, []),
        ({}, {"minLength": 2}, ["MIN_LENGTH_ADDED at #"]),
        ({"minLength": 1}, {"minLength": 2}, ["MIN_LENGTH_INCREASED at #"]),
        ({"minLength": 3}, {"minLength": 2}, []),
        ({}, {"minLength": 0}, []),
        ({}, {"pattern": "^a"}, ["PATTERN_ADDED at #"]),
        ({"pattern": "^a"}, {"pattern": "^b"}, ["PATTERN_CHANGED at #"]),
        ({"pattern": "^a"}, {"pattern": "^a"}, []),
        ({"pattern": "^a"}, {}, []),
    ],
)
def test_string_bounds(writer: dict[str, Any], reader: dict[str, Any], expected: list[str]) -> None:
    assert issues({"type": "string", **writer}, {"type": "string", **reader}) == expected


@pytest.mark.parametrize(
    ("writer", "reader", "expected"),
    [
        ({}, {"maximum": 10}, ["MAXIMUM_ADDED at #"]),
        ({"maximum": 11}, {"maximum": 10}, ["MAXIMUM_DECREASED at #"]),
        ({"maximum": 9}, {"maximum": 10}, []),
        ({"maximum": 10}, {}, []),
        ({}, {"minimum": 0}, ["MINIMUM_ADDED at #"]),
        ({"minimum": -1}, {"minimum": 0}, ["MINIMUM_INCREASED at #"]),
        ({"minimum": 1}, {"minimum": 0}, []),
        ({"maximum": 10}, {"exclusiveMaximum": 10}, ["EXCLUSIVE_MAXIMUM_DECREASED at #"]),
        ({"exclusiveMaximum": 10}, {"maximum": 10}, []),
        ({}, {"exclusiveMinimum": 0}, ["EXCLUSIVE_MINIMUM_ADDED at #"]),
        ({"exclusiveMinimum": 0}, {"minimum": 0}, []),
        ({}, {"multipleOf": 2}, ["MULTIPLE_OF_ADDED at #"]),
        ({"multipleOf": 4}, {"multipleOf": 2}, []),
        ({"multipleOf": 2}, {"multipleOf": 4}, ["MULTIPLE_OF_EXPANDED at #"]),
        ({"multipleOf": 2}, {"multipleOf": 3}, ["MULTIPLE_OF_CHANGED at #"]),
        ({"multipleOf": 0.3}, {"multipleOf": 0.1}, []),
    ],
)
def test_number_bounds(writer: dict[str, Any], reader: dict[str, Any], expected: list[str]) -> None:
    assert issues({"type": "number", **writer}, {"type": "number", **reader}) == expected


def test_integers_are_multiples_of_one_and_draft4_bounds() -> None:
    assert compatible(INTEGER, {"type": "number", "multipleOf": 1})
    assert issues(NUMBER, {"type": "number", "multipleOf": 1}) == ["MULTIPLE_OF_ADDED at #"]
    draft4 = "http://json-schema.org/draft-04/schema#"
    inclusive = {"$schema": draft4, "type": "number", "maximum": 5}
    exclusive = {"$schema": draft4, "type": "number", "maximum": 5, "exclusiveMaximum": True}
    assert compatible(exclusive, inclusive)
    assert issues(inclusive, exclusive) == ["MAXIMUM_DECREASED at #"]


# Objects: the content models.


def test_property_added_to_an_open_writer() -> None:
    # an open writer may have written "b" with any value
    assert issues(obj({"a": STRING}), obj({"a": STRING, "b": STRING})) == [
        "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/properties/b"
    ]
    assert compatible(obj({"a": STRING}), obj({"a": STRING, "b": {}}))  # a property constraining nothing


def test_property_added_to_a_closed_writer() -> None:
    closed = obj({"a": STRING}, additionalProperties=False)
    assert compatible(closed, obj({"a": STRING, "b": STRING}))
    assert compatible(closed, obj({"a": STRING, "b": STRING}, additionalProperties=False))
    assert issues(closed, obj({"a": STRING, "b": STRING}, required=["b"])) == [
        "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL at #/properties/b"
    ]
    with_default = obj({"a": STRING, "b": {"type": "string", "default": "x"}}, required=["b"])
    assert compatible(closed, with_default)  # REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL


def test_property_removed_from_an_open_reader_and_a_closed_one() -> None:
    two = obj({"a": STRING, "b": STRING})
    assert compatible(two, obj({"a": STRING}))
    assert compatible(
        obj({"a": STRING}, additionalProperties=False), obj({"a": STRING}, additionalProperties=False)
    )
    closed_two = obj({"a": STRING, "b": STRING}, additionalProperties=False)
    assert issues(closed_two, obj({"a": STRING}, additionalProperties=False)) == [
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/properties/b"
    ]
    # the writer was open besides: other names it may have written are refused too
    assert issues(two, obj({"a": STRING}, additionalProperties=False)) == [
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/properties/b",
        "ADDITIONAL_PROPERTIES_REMOVED at #/additionalProperties",
    ]


def test_partially_open_content_models() -> None:
    strings = {"additionalProperties": STRING}
    writer = obj({"a": INTEGER}, **strings)
    assert compatible(writer, obj({"a": INTEGER, "b": STRING}, **strings))
    assert compatible(writer, obj({"a": INTEGER, "b": {"type": ["string", "null"]}}, **strings))
    assert issues(writer, obj({"a": INTEGER, "b": INTEGER}, **strings)) == [
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at #/properties/b"
    ]
    assert compatible(obj({"a": INTEGER, "b": STRING}, **strings), obj({"a": INTEGER}, **strings))
    assert issues(obj({"a": INTEGER, "b": INTEGER}, **strings), obj({"a": INTEGER}, **strings)) == [
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at #/properties/b"
    ]
    # patternProperties make a content model partially open as well
    patterned = obj({"a": INTEGER}, patternProperties={"^s_": STRING}, additionalProperties=False)
    assert compatible(patterned, obj({"a": INTEGER, "s_x": STRING}))
    assert issues(patterned, obj({"a": INTEGER, "s_x": INTEGER})) == [
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at #/properties/s_x"
    ]
    assert issues(
        patterned, obj({"a": INTEGER}, patternProperties={"^s_": {"type": "string", "maxLength": 1}})
    ) == ["MAX_LENGTH_ADDED at #/patternProperties/^s_"]
    # a differently written pattern may match the same names: the writer's values are taken as any
    assert issues(patterned, obj({"a": INTEGER}, patternProperties={"^s_x": STRING})) == [
        "TYPE_NARROWED at #/patternProperties/^s_x"
    ]


def test_additional_properties() -> None:
    assert issues(obj({}), obj({}, additionalProperties=False)) == [
        "ADDITIONAL_PROPERTIES_REMOVED at #/additionalProperties"
    ]
    assert compatible(obj({}, additionalProperties=False), obj({}))
    assert issues(obj({}, additionalProperties=NUMBER), obj({}, additionalProperties=INTEGER)) == [
        "ADDITIONAL_PROPERTIES_NARROWED at #/additionalProperties"
    ]
    assert compatible(obj({}, additionalProperties=INTEGER), obj({}, additionalProperties=NUMBER))
    assert issues(obj({}), obj({}, additionalProperties=STRING)) == [
        "ADDITIONAL_PROPERTIES_NARROWED at #/additionalProperties"
    ]


def test_required_properties() -> None:
    optional = obj({"a": STRING})
    required = obj({"a": STRING}, required=["a"])
    assert issues(optional, required) == ["REQUIRED_ATTRIBUTE_ADDED at #/properties/a"]
    assert compatible(required, optional)
    assert compatible(optional, obj({"a": {"type": "string", "default": ""}}, required=["a"]))
    # a name required but declared by neither side
    assert issues(obj({}), obj({}, required=["z"])) == ["REQUIRED_ATTRIBUTE_ADDED at #/properties/z"]


def test_nested_objects_are_compared_recursively() -> None:
    writer = obj({"address": obj({"city": STRING, "zip": STRING})})
    reader = obj({"address": obj({"city": STRING, "zip": INTEGER}, required=["city"])})
    assert issues(writer, reader) == [
        "REQUIRED_ATTRIBUTE_ADDED at #/properties/address/properties/city",
        "TYPE_CHANGED at #/properties/address/properties/zip",
    ]
    assert issues(reader, writer) == ["TYPE_CHANGED at #/properties/address/properties/zip"]


def test_property_counts_and_dependencies() -> None:
    assert issues(obj({}), obj({}, maxProperties=3)) == ["MAX_PROPERTIES_ADDED at #"]
    assert issues(obj({}, minProperties=1), obj({}, minProperties=2)) == ["MIN_PROPERTIES_INCREASED at #"]
    card = obj({"card": STRING, "billing": STRING})
    assert issues(card, {**card, "dependencies": {"card": ["billing"]}}) == [
        "DEPENDENCY_ARRAY_ADDED at #/dependencies/card"
    ]
    assert compatible({**card, "dependencies": {"card": ["billing"]}}, card)
    assert compatible({**card, "required": ["billing"]}, {**card, "dependencies": {"card": ["billing"]}})
    three = obj({"card": STRING, "billing": STRING, "zip": STRING})
    draft2020 = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    assert issues(
        {**three, **draft2020, "dependentRequired": {"card": ["billing"]}},
        {**three, **draft2020, "dependentRequired": {"card": ["billing", "zip"]}},
    ) == ["DEPENDENCY_ARRAY_EXTENDED at #/dependentRequired/card"]
    assert issues(card, {**card, "dependencies": {"card": {"required": ["billing"]}}}) == [
        "DEPENDENCY_SCHEMA_ADDED at #/dependencies/card"
    ]
    # a closed writer never writing "card": the dependency never applies
    assert compatible(
        obj({"billing": STRING}, additionalProperties=False), {**card, "dependencies": {"card": ["x"]}}
    )


def test_property_names() -> None:
    assert issues(obj({}), obj({}, propertyNames={"maxLength": 3})) == ["MAX_LENGTH_ADDED at #/propertyNames"]
    assert compatible(obj({}, propertyNames={"maxLength": 2}), obj({}, propertyNames={"maxLength": 3}))


# Arrays.


def test_array_items_are_compared_recursively() -> None:
    strings = {"type": "array", "items": STRING}
    assert issues(strings, {"type": "array", "items": INTEGER}) == ["TYPE_CHANGED at #/items"]
    assert compatible({"type": "array", "items": INTEGER}, {"type": "array", "items": NUMBER})
    assert issues({"type": "array"}, strings) == ["TYPE_NARROWED at #/items"]
    assert compatible(strings, {"type": "array"})
    people = {"type": "array", "items": obj({"name": STRING})}
    assert issues(people, {"type": "array", "items": obj({"name": STRING}, required=["name"])}) == [
        "REQUIRED_ATTRIBUTE_ADDED at #/items/properties/name"
    ]


def test_array_bounds_and_unique_items() -> None:
    array: dict[str, Any] = {"type": "array"}
    assert issues(array, {**array, "maxItems": 3}) == ["MAX_ITEMS_ADDED at #"]
    assert issues({**array, "maxItems": 4}, {**array, "maxItems": 3}) == ["MAX_ITEMS_DECREASED at #"]
    assert issues({**array, "minItems": 1}, {**array, "minItems": 2}) == ["MIN_ITEMS_INCREASED at #"]
    assert compatible({**array, "minItems": 2}, {**array, "minItems": 1})
    assert issues(array, {**array, "uniqueItems": True}) == ["UNIQUE_ITEMS_ADDED at #"]
    assert compatible({**array, "uniqueItems": True}, array)


def test_tuples() -> None:
    open_pair = {"type": "array", "items": [STRING, INTEGER]}
    closed_pair = {**open_pair, "additionalItems": False}
    assert issues(open_pair, {"type": "array", "items": [STRING, INTEGER, STRING]}) == [
        "ITEM_ADDED_TO_OPEN_CONTENT_MODEL at #/items/2"
    ]
    assert compatible(closed_pair, {"type": "array", "items": [STRING, INTEGER, STRING]})
    assert compatible(open_pair, {"type": "array", "items": [STRING]})
    assert issues(closed_pair, {"type": "array", "items": [STRING], "additionalItems": False}) == [
        "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/additionalItems"
    ]
    # position 1 (an integer) and later ones (anything) would now have to be strings
    assert issues(open_pair, {"type": "array", "items": [STRING], "additionalItems": STRING}) == [
        "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at #/additionalItems",
        "ADDITIONAL_ITEMS_NARROWED at #/additionalItems",
    ]
    assert compatible(closed_pair, {"type": "array", "items": [STRING], "additionalItems": NUMBER})
    assert issues(open_pair, {"type": "array", "items": [STRING, STRING]}) == ["TYPE_CHANGED at #/items/1"]
    assert issues(open_pair, {**open_pair, "additionalItems": False}) == [
        "ADDITIONAL_ITEMS_REMOVED at #/additionalItems"
    ]
    draft2020 = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array"}
    assert issues(
        {**draft2020, "prefixItems": [STRING]}, {**draft2020, "prefixItems": [STRING, INTEGER]}
    ) == ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL at #/prefixItems/1"]
    assert compatible(
        {**draft2020, "prefixItems": [STRING], "items": False},
        {**draft2020, "prefixItems": [STRING, INTEGER]},
    )


# Combinations.


def test_sum_types() -> None:
    assert compatible({"oneOf": [STRING]}, {"oneOf": [STRING, NULL]})
    assert issues({"oneOf": [STRING, NULL]}, {"oneOf": [STRING]}) == ["SUM_TYPE_NARROWED at #/oneOf"]
    assert issues({"anyOf": [STRING, NULL]}, {"anyOf": [STRING, INTEGER]}) == [
        "COMBINED_TYPE_SUBSCHEMAS_CHANGED at #/anyOf"
    ]
    assert compatible({"anyOf": [INTEGER, STRING]}, {"anyOf": [STRING, NUMBER]})  # order does not matter
    assert compatible({"oneOf": [STRING, NULL]}, {"anyOf": [STRING, NULL]})
    # a single schema becoming a sum that contains it, and back
    assert compatible(STRING, {"oneOf": [STRING, NULL]})
    assert issues({"oneOf": [STRING, NULL]}, STRING) == ["TYPE_CHANGED at #"]
    assert issues(INTEGER, {"oneOf": [STRING, NULL]}) == ["TYPE_CHANGED at #/oneOf/0"]


def test_product_types() -> None:
    assert issues({"allOf": [STRING]}, {"allOf": [STRING, {"maxLength": 3}]}) == [
        "PRODUCT_TYPE_EXTENDED at #/allOf"
    ]
    assert compatible({"allOf": [STRING, {"maxLength": 3}]}, {"allOf": [STRING]})
    assert compatible({"allOf": [STRING, {"maxLength": 3}]}, {"type": "string", "maxLength": 5})
    assert issues({"allOf": [STRING, {"maxLength": 3}]}, {"allOf": [STRING, {"maxLength": 2}]}) == [
        "MAX_LENGTH_DECREASED at #/allOf/1"
    ]


def test_not() -> None:
    assert compatible({"not": STRING}, {"not": STRING})
    assert compatible({"not": STRING}, {"not": {"type": "string", "maxLength": 3}})  # excludes less
    assert issues({"not": {"type": "string", "maxLength": 3}}, {"not": STRING}) == [
        "NOT_TYPE_NARROWED at #/not"
    ]
    assert issues({}, {"not": NULL}) == ["NOT_TYPE_NARROWED at #/not"]


# References in compatibility.


def test_local_definitions_are_followed() -> None:
    def with_name(name: dict[str, Any]) -> dict[str, Any]:
        return {**obj({"name": {"$ref": "#/definitions/Name"}}), "definitions": {"Name": name}}

    assert compatible(with_name(STRING), with_name(STRING))
    assert issues(with_name(STRING), with_name({"type": "string", "maxLength": 3})) == [
        "MAX_LENGTH_ADDED at #/properties/name"
    ]
    assert compatible(with_name({"type": "string", "maxLength": 3}), with_name(STRING))
    # a $ref on one side, the same schema inline on the other
    assert compatible(with_name(STRING), obj({"name": STRING}))
    assert issues(obj({"name": INTEGER}), with_name(STRING)) == ["TYPE_CHANGED at #/properties/name"]


def test_references_are_followed() -> None:
    v1 = Dependency("name.json", json.dumps(STRING))
    v2 = Dependency("name.json", json.dumps({"type": "string", "maxLength": 3}))
    using = obj({"name": {"$ref": "name.json"}})
    reader = parse(json.dumps(using), [v2])
    writer = parse(json.dumps(using), [v1])
    assert reader.read_issues(writer) == ["MAX_LENGTH_ADDED at #/properties/name"]
    assert writer.read_issues(reader) == []


def test_ref_siblings_count_from_draft_2019_09() -> None:
    draft2019 = "https://json-schema.org/draft/2019-09/schema"
    sibling = {"$ref": "#/$defs/S", "maxLength": 3, "$defs": {"S": STRING}}
    assert issues(STRING, {"$schema": draft2019, **sibling}) == ["MAX_LENGTH_ADDED at #"]
    assert compatible({"$schema": draft2019, **sibling}, {"type": "string", "maxLength": 3})
    # draft 7 ignores them, as validation does
    assert compatible(STRING, {**sibling, "definitions": {"S": STRING}, "$ref": "#/definitions/S"})


def test_recursive_schemas_terminate() -> None:
    def tree(value: dict[str, Any]) -> dict[str, Any]:
        return obj({"value": value, "children": {"type": "array", "items": {"$ref": "#"}}})

    assert compatible(tree(STRING), tree(STRING))
    assert compatible(tree(INTEGER), tree(NUMBER))
    found = issues(tree(STRING), tree(INTEGER))
    assert found[0] == "TYPE_CHANGED at #/properties/value"
    linked = {
        "definitions": {
            "Node": {"anyOf": [NULL, obj({"next": {"$ref": "#/definitions/Node"}, "v": STRING})]}
        },
        "$ref": "#/definitions/Node",
    }
    assert compatible(linked, linked)
