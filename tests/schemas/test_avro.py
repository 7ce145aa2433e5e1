"""Avro schemas (schooner/schemas/avro.py): parsing with references, canonical texts, decoding, compatibility.

Payloads are written by fastavro itself, so a round trip checks decode against an independent writer.
"""

from __future__ import annotations

import io
import json
import time
from typing import Any

import fastavro
import pytest

from schooner.schemas import avro as avro_format
from schooner.schemas.parsed import AVRO, Dependency, ParsedSchema, SchemaError

ADDRESS = json.dumps(
    {
        "type": "record",
        "name": "Address",
        "namespace": "com.acme",
        "fields": [{"name": "city", "type": "string"}],
    }
)
REF = [Dependency("com.acme.Address", ADDRESS)]


def record(name: str, *fields: dict[str, Any], **props: Any) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields), **props})


def encode(schema: Any, datum: object, named: dict[str, Any] | None = None) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema, named_schemas=named), datum)
    return buf.getvalue()


# --- parsing and texts


def test_a_record_round_trips_through_fastavro() -> None:
    schema = {
        "type": "record",
        "name": "Order",
        "namespace": "com.acme",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "prices", "type": {"type": "map", "values": "double"}},
            {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
            {"name": "blob", "type": "bytes"},
        ],
    }
    datum = {
        "id": 2**40,
        "note": "fragile",
        "state": "PAID",
        "tags": ["a", "b"],
        "prices": {"x": 1.5},
        "digest": b"\x00\x01\x02\x03",
        "blob": b"\xff",
    }
    parsed: ParsedSchema = avro_format.parse(json.dumps(schema))  # mypy checks that it is one
    assert parsed.schema_type == AVRO
    assert parsed.decode(encode(schema, datum)) == datum
    assert parsed.record_names() == ["com.acme.Order"]


@pytest.mark.parametrize("text", ['"string"', '{"type": "string"}', ' { "type" : "string" } '])
def test_a_primitive_schema_is_valid_and_written_bare(text: str) -> None:
    parsed = avro_format.parse(text)
    assert parsed.canonical() == parsed.normalized() == '"string"'
    assert parsed.record_names() == []
    assert parsed.decode(encode("string", "héllo")) == "héllo"


def test_record_names_are_those_of_a_named_top_level_type_only() -> None:
    assert avro_format.parse('{"type":"enum","name":"a.E","symbols":["X"]}').record_names() == ["a.E"]
    assert avro_format.parse('{"type":"fixed","name":"F","size":2}').record_names() == ["F"]
    assert avro_format.parse('{"type":"array","items":"int"}').record_names() == []
    assert avro_format.parse('["null","int"]').record_names() == []


def test_canonical_text_ignores_layout_and_the_order_of_the_reserved_keys() -> None:
    compact = '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"id","type":"int"}]}'
    spaced = """{
        "fields": [ {"type": "int", "name": "id"} ],
        "namespace": "com.acme",   "name": "User",
        "type": "record"
    }"""
    full_name = '{"type":"record","name":"com.acme.User","fields":[{"name":"id","type":{"type":"int"}}]}'
    texts = {avro_format.parse(t).canonical() for t in (compact, spaced, full_name)}
    assert len(texts) == 1
    (text,) = texts
    assert " " not in text and json.loads(text)["namespace"] == "com.acme"
    assert avro_format.parse(compact).fingerprint_text() == text


def test_normalized_text_also_ignores_the_order_of_other_properties() -> None:
    one = record("R", {"name": "a", "type": "int", "x-owner": "me", "x-pii": False}, doc="d", **{"x-team": 1})
    two = json.dumps(json.loads(one), sort_keys=True)
    two = two.replace('"x-owner": "me", "x-pii": false', '"x-pii": false, "x-owner": "me"')
    assert two != one
    assert avro_format.parse(one).normalized() == avro_format.parse(two).normalized()
    # the canonical text keeps the author's order of the properties Avro does not define
    assert avro_format.parse(one).canonical() != avro_format.parse(two).canonical()


def test_a_referenced_type_is_written_by_name_only() -> None:
    text = record(
        "User",
        {"name": "home", "type": "Address"},  # resolved in the enclosing namespace
        {"name": "work", "type": ["null", "com.acme.Address"], "default": None},
        namespace="com.acme",
    )
    parsed = avro_format.parse(text, REF)
    canonical = json.loads(parsed.canonical())
    assert [f["type"] for f in canonical["fields"]] == ["com.acme.Address", ["null", "com.acme.Address"]]
    assert "city" not in parsed.canonical() and "city" not in parsed.normalized()
    assert parsed.record_names() == ["com.acme.User"]
    # the canonical text parses again, with the same references, to itself
    assert avro_format.parse(parsed.canonical(), REF).canonical() == parsed.canonical()
    resolved = parsed.formatted("resolved")
    assert resolved is not None and json.loads(resolved)["fields"][0]["type"]["fields"][0]["name"] == "city"
    assert avro_format.parse(resolved).canonical() != parsed.canonical()
    assert parsed.formatted("serialized") is None and parsed.formatted("default") is None

    named: dict[str, Any] = {}
    fastavro.parse_schema(json.loads(ADDRESS), named_schemas=named)
    datum = {"home": {"city": "Lyon"}, "work": {"city": "Paris"}}
    assert parsed.decode(encode(json.loads(text), datum, named)) == datum


def test_references_chain_dependencies_first() -> None:
    city = '{"type":"enum","name":"geo.City","symbols":["LYON","PARIS"]}'
    place = record("geo.Place", {"name": "city", "type": "geo.City"})
    refs = [Dependency("geo.City", city), Dependency("geo.Place", place)]
    parsed = avro_format.parse(record("Trip", {"name": "to", "type": "geo.Place"}), refs)
    assert parsed.canonical() == '{"type":"record","name":"Trip","fields":[{"name":"to","type":"geo.Place"}]}'
    assert parsed.decode(b"\x02") == {"to": {"city": "PARIS"}}


def test_a_top_level_union_or_name_of_referenced_types_decodes() -> None:
    union = avro_format.parse('["null", "com.acme.Address"]', REF)
    assert union.canonical() == '["null","com.acme.Address"]'
    assert union.decode(b"\x02\x08Lyon") == {"city": "Lyon"}
    assert union.decode(b"\x00") is None
    alias = avro_format.parse('"com.acme.Address"', REF)
    assert alias.record_names() == ["com.acme.Address"]
    assert alias.decode(b"\x08Lyon") == {"city": "Lyon"}


def _fails(text: str, refs: list[Dependency] | None = None) -> str:
    with pytest.raises(SchemaError) as caught:
        avro_format.parse(text, refs or [])
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"type": "record", "name": "R",', "not JSON"),
        ('{"type": "strin"}', "Undefined type: strin"),
        ('"strin"', "strin"),
        ('{"type": "record", "name": "R"}', "fields"),
        ('{"type": "record", "fields": []}', "Name"),
        (record("R", {"name": "a"}), '"None"'),
        (
            record("R", {"name": "a", "type": "int", "default": "x"}),
            "field 'a' of R: default \"x\" does not fit type int",
        ),
        (record("R", {"name": "a", "type": "int", "default": 2**31}), "field 'a'"),
        (record("R", {"name": "a", "type": "string", "default": None}), "field 'a'"),
        (record("R", {"name": "a", "type": ["null", "int"], "default": "x"}), "field 'a'"),
        (
            record("R", {"name": "a", "type": {"type": "array", "items": "int"}, "default": [1, "2"]}),
            "field 'a'",
        ),
        (
            record(
                "R",
                {"name": "a", "type": json.loads(record("S", {"name": "b", "type": "int"})), "default": {}},
            ),
            "'a'",
        ),
        ('{"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}', "B"),
        (record("R", {"name": "a", "type": "com.acme.Missing"}), "com.acme.Missing"),
        (record("R", {"name": "a", "type": "int"}, {"name": "a", "type": "int"}), "already in use"),
        # avro's library takes "E" for the type of no namespace, fastavro (and the specification) for a.E
        (
            record(
                "a.R",
                {"name": "x", "type": json.loads(record("E", namespace=""))},
                {"name": "y", "type": "E"},
            ),
            "a.E",
        ),
    ],
)
def test_a_malformed_schema_is_refused_with_the_parsers_reason(text: str, reason: str) -> None:
    message = _fails(text)
    assert message.startswith("Invalid schema: ")
    assert reason in message


def test_defaults_that_fit_are_accepted() -> None:
    sub = {"type": "record", "name": "S", "fields": [{"name": "b", "type": "int", "default": 1}]}
    avro_format.parse(
        record(
            "R",
            {"name": "a", "type": ["null", "int"], "default": None},
            {"name": "b", "type": ["int", "null"], "default": 3},
            {"name": "c", "type": "bytes", "default": "\u00ff"},
            {"name": "d", "type": "double", "default": 1},
            {"name": "e", "type": sub, "default": {}},
            {"name": "f", "type": {"type": "map", "values": "long"}, "default": {"k": 2}},
        )
    )


def test_a_reference_is_needed_and_must_itself_be_valid() -> None:
    text = record("User", {"name": "home", "type": "com.acme.Address"})
    assert "com.acme.Address" in _fails(text)
    message = _fails(text, [Dependency("com.acme.Address", '{"type": "record"')])
    assert message.startswith("Invalid reference 'com.acme.Address': not JSON")
    # a schema may not define again a type its reference defines
    assert "already in use" in _fails(ADDRESS, REF)


# --- decoding


def test_bytes_that_are_not_a_datum_of_the_schema_are_refused() -> None:
    parsed = avro_format.parse(
        record("R", {"name": "s", "type": "string"}, {"name": "u", "type": ["null", "int"]})
    )
    good = encode(json.loads(parsed.canonical()), {"s": "abc", "u": 7})
    assert parsed.decode(good) == {"s": "abc", "u": 7}
    with pytest.raises(SchemaError, match="ends within"):
        parsed.decode(good[:-1])
    with pytest.raises(SchemaError, match="ends within"):
        parsed.decode(b"")
    with pytest.raises(SchemaError, match="2 bytes left"):
        parsed.decode(good + b"\x00\x00")
    with pytest.raises(SchemaError, match="Invalid payload"):
        parsed.decode(b"\x02a\x08")  # union branch 4 of 2
    with pytest.raises(SchemaError, match="Invalid payload"):
        parsed.decode(b"\x02\xff\x00")  # not UTF-8


def test_a_recursive_schema_decodes_and_refuses_a_payload_nested_too_deeply() -> None:
    parsed = avro_format.parse(record("List", {"name": "next", "type": ["null", "List"]}))
    assert parsed.decode(b"\x02\x02\x00") == {"next": {"next": {"next": None}}}
    with pytest.raises(SchemaError, match="nests too deeply"):
        parsed.decode(b"\x02" * 20_000 + b"\x00")  # fastavro's compiled reader would crash the process


def test_an_array_of_items_of_no_bytes_cannot_be_made_endless() -> None:
    parsed = avro_format.parse('{"type": "array", "items": "null"}')
    assert parsed.decode(b"\x06\x00") == [None, None, None]
    started = time.monotonic()
    with pytest.raises(SchemaError, match="Invalid payload"):
        parsed.decode(b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f\x00")  # 2**62 nulls in 10 bytes
    assert time.monotonic() - started < 5


# --- compatibility


def issues(reader: str, writer: str, refs: list[Dependency] | None = None) -> list[str]:
    return avro_format.parse(reader, refs or []).read_issues(avro_format.parse(writer, refs or []))


V1 = record("User", {"name": "id", "type": "int"}, {"name": "name", "type": "string"})
WITH_DEFAULT = record(
    "User",
    {"name": "id", "type": "int"},
    {"name": "name", "type": "string"},
    {"name": "a", "type": "int", "default": 0},
)
WITHOUT_DEFAULT = record(
    "User", {"name": "id", "type": "int"}, {"name": "name", "type": "string"}, {"name": "a", "type": "int"}
)


def test_a_schema_reads_itself() -> None:
    assert issues(V1, V1) == []


def test_adding_a_field_is_backward_compatible_only_with_a_default() -> None:
    assert issues(WITH_DEFAULT, V1) == []  # the new schema reads old data
    assert issues(V1, WITH_DEFAULT) == []  # and old readers skip the new field
    assert issues(WITHOUT_DEFAULT, V1) == [
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/2: "
        "the reader's field 'a' has no default and the writer has no such field"
    ]


def test_removing_a_field_is_forward_compatible_only_when_it_had_a_default() -> None:
    only_id = record("User", {"name": "id", "type": "int"})
    assert issues(only_id, V1) == []  # backward: the new schema ignores the removed field
    (issue,) = issues(V1, only_id)  # forward: old readers lack a value for it
    assert issue.startswith("READER_FIELD_MISSING_DEFAULT_VALUE at /fields/1: ")
    assert issues(record("User", {"name": "id", "type": "int"}), WITH_DEFAULT) == []
    assert issues(WITH_DEFAULT, only_id) == [
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/1: "
        "the reader's field 'name' has no default and the writer has no such field"
    ]


def test_promoted_types_are_readable_one_way() -> None:
    as_long = record("User", {"name": "id", "type": "long"}, {"name": "name", "type": "bytes"})
    assert issues(as_long, V1) == []
    assert issues(V1, as_long) == [
        "TYPE_MISMATCH at /fields/0/type: the reader's int cannot read the writer's long",
    ]
    assert issues('"double"', '"float"') == issues('"float"', '"long"') == []


def test_every_issue_is_paired_with_its_own_location() -> None:
    writer = record("User", {"name": "id", "type": "string"}, {"name": "name", "type": "int"})
    assert issues(WITHOUT_DEFAULT, writer) == [
        "TYPE_MISMATCH at /fields/0/type: the reader's int cannot read the writer's string",
        "TYPE_MISMATCH at /fields/1/type: the reader's string cannot read the writer's int",
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/2: "
        "the reader's field 'a' has no default and the writer has no such field",
    ]


def test_an_added_enum_symbol_is_readable_by_the_new_schema_only() -> None:
    old = '{"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}'
    new = '{"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}'
    assert issues(new, old) == []
    assert issues(old, new) == [
        "MISSING_ENUM_SYMBOLS at /symbols: the reader has no default for the writer's symbols BLUE"
    ]
    with_default = '{"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"], "default": "RED"}'
    assert issues(with_default, new) == []


def test_a_renamed_record_is_readable_through_an_alias() -> None:
    old = record("Old", {"name": "id", "type": "int"}, namespace="com.acme")
    short_alias = record("New", {"name": "id", "type": "int"}, namespace="com.acme", aliases=["Old"])
    full_alias = record("New", {"name": "id", "type": "int"}, namespace="com.acme", aliases=["com.acme.Old"])
    no_alias = record("New", {"name": "id", "type": "int"}, namespace="com.acme")
    assert issues(short_alias, old) == issues(full_alias, old) == []
    assert issues(no_alias, old) == [
        "NAME_MISMATCH at /name: the reader's com.acme.New is neither named nor aliased com.acme.Old"
    ]
    assert issues(old, short_alias) != []  # the writer's aliases do not count


def test_a_renamed_field_is_readable_through_an_alias() -> None:
    renamed = record(
        "User", {"name": "ident", "type": "int", "aliases": ["id"]}, {"name": "name", "type": "string"}
    )
    assert issues(renamed, V1) == []
    assert issues(V1, renamed)[0].startswith("READER_FIELD_MISSING_DEFAULT_VALUE at /fields/0: ")


def test_unions_need_a_branch_for_each_type_written() -> None:
    optional = record("R", {"name": "a", "type": ["null", "string"], "default": None})
    required = record("R", {"name": "a", "type": "string"})
    assert issues(optional, required) == []
    assert issues(required, optional) == [
        "TYPE_MISMATCH at /fields/0/type: the reader's string cannot read the writer's null"
    ]
    wider = record("R", {"name": "a", "type": ["null", "string", "int"], "default": None})
    assert issues(wider, optional) == []
    assert issues(optional, wider) == [
        "MISSING_UNION_BRANCH at /fields/0/type/2: the reader's union has no branch for the writer's int"
    ]
    assert issues('["null", "long"]', '"int"') == []
    assert issues('["null", "string"]', '"int"') == [
        "MISSING_UNION_BRANCH at /: the reader's union has no branch for the writer's int"
    ]


def test_nested_types_report_their_path() -> None:
    def wrap(items: str, size: int) -> str:
        fixed = {"type": "fixed", "name": "F", "size": size}
        return record(
            "R", {"name": "xs", "type": {"type": "array", "items": items}}, {"name": "f", "type": fixed}
        )

    assert issues(wrap("long", 4), wrap("int", 4)) == []
    assert issues(wrap("int", 4), wrap("string", 8)) == [
        "TYPE_MISMATCH at /fields/0/type/items: the reader's int cannot read the writer's string",
        "FIXED_SIZE_MISMATCH at /fields/1/type/size: the reader's size is 4, the writer's 8",
    ]
    assert issues('{"type":"map","values":"int"}', '{"type":"map","values":"string"}') == [
        "TYPE_MISMATCH at /values: the reader's int cannot read the writer's string"
    ]
    assert issues('"int"', '{"type":"array","items":"int"}') == [
        "TYPE_MISMATCH at /: the reader's int cannot read the writer's array"
    ]


def test_referenced_types_are_compared_by_their_definitions_both_ways() -> None:
    user = record("User", {"name": "home", "type": "com.acme.Address"})
    fields = [{"name": "city", "type": "string"}]
    with_zip = {**json.loads(ADDRESS), "fields": [*fields, {"name": "zip", "type": "string", "default": ""}]}
    zip_required = {**json.loads(ADDRESS), "fields": [*fields, {"name": "zip", "type": "string"}]}
    new_ref = [Dependency("com.acme.Address", json.dumps(with_zip))]
    required_ref = [Dependency("com.acme.Address", json.dumps(zip_required))]
    old = avro_format.parse(user, REF)
    assert old.canonical() == avro_format.parse(user, new_ref).canonical()  # the same text, by name
    assert avro_format.parse(user, new_ref).read_issues(old) == []
    assert old.read_issues(avro_format.parse(user, new_ref)) == []
    assert avro_format.parse(user, required_ref).read_issues(old) == [
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/0/type/fields/1: "
        "the reader's field 'zip' has no default and the writer has no such field"
    ]
    assert old.read_issues(avro_format.parse(user, required_ref)) == []
    # a referenced type and the same type written inline are the same to read
    assert old.read_issues(avro_format.parse(old.formatted("resolved") or "")) == []


def test_recursive_schemas_are_compared_without_end() -> None:
    v1 = record("List", {"name": "next", "type": ["null", "List"]})
    v2 = record(
        "List", {"name": "next", "type": ["null", "List"]}, {"name": "n", "type": "int", "default": 0}
    )
    v3 = record("List", {"name": "next", "type": ["null", "List"]}, {"name": "n", "type": "int"})
    assert issues(v2, v1) == issues(v1, v2) == []
    assert issues(v3, v1) == [
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/1: "
        "the reader's field 'n' has no default and the writer has no such field"
    ]
