"""Protobuf schemas through a real protoc and the protobuf runtime: parsing text and base64 descriptors,
references, the printer, fingerprints, decoding framed payloads and compatibility."""

from __future__ import annotations

import base64
import importlib.util
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.message import Message

from schooner.schemas.parsed import PROTOBUF, Dependency, SchemaError
from schooner.schemas.protobuf import ProtobufSchema, parse
from schooner.schemas.protobuf_text import render

ORDER = """
syntax = "proto3";
package com.acme;

import "google/protobuf/timestamp.proto";

option java_package = "com.acme.orders";
option go_package = "example.com/acme/orders";

// An order, with a line per product.
message Order {
  message Line {
    string sku = 1;
    int32 quantity = 2;
  }
  int64 id = 1;
  repeated Line lines = 2;
  map<string, string> tags = 3;
  google.protobuf.Timestamp placed_at = 4;
  optional string note = 5;
  oneof payment {
    string card = 6;
    bytes token = 7;
  }
  Status status = 8;
  reserved 20 to 25, 30;
  reserved "legacy";
}

enum Status {
  STATUS_UNKNOWN = 0;
  STATUS_PAID = 1;
}

message Refund {
  int64 order_id = 1;
}

service Orders {
  rpc Place(Order) returns (Refund);
  rpc Watch(stream Order) returns (stream Order);
}
"""

PROTO2 = r"""
syntax = "proto2";
package legacy.v1;

option java_package = "legacy.v1";
option optimize_for = SPEED;

message Item {
  required int64 id = 1 [default = -5];
  optional string name = 2 [default = "a \"quoted\"\nname é"];
  optional bytes blob = 3 [default = "\001\377ab"];
  optional double ratio = 4 [default = inf];
  optional Kind kind = 5 [default = BIG];
  optional bool on = 6 [default = true];
  repeated int32 sizes = 7 [packed = true, deprecated = true];
  optional group Extra = 8 {
    optional string url = 9;
  }
  message Part { optional int32 n = 1; }
  map<int64, Part> parts = 10;
  oneof pick { int32 a = 11; string b = 12; }
  optional int32 renamed = 13 [json_name = "other"];
  extensions 100 to 199, 1000 to max;
  reserved 50, 60 to 70;
}

enum Kind {
  option allow_alias = true;
  SMALL = 1;
  BIG = 2;
  LARGE = 2 [deprecated = true];
  reserved 10 to 20, 40 to max;
  reserved "HUGE";
}

extend Item {
  optional int32 weight = 100;
  repeated string labels = 101;
}

message Holder {
  extend Item { optional Holder back = 102; }
  optional int32 v = 1;
}

service Legacy {
  option deprecated = true;
  rpc Get(Item) returns (Item) { option idempotency_level = NO_SIDE_EFFECTS; }
}
"""

EDITIONS = """
edition = "2023";
package ed;

option features.field_presence = IMPLICIT;

message M {
  int32 a = 1 [features.field_presence = EXPLICIT];
  M child = 2 [features.message_encoding = DELIMITED];
  repeated int32 r = 3 [features.repeated_field_encoding = EXPANDED];
  reserved old, older;
}

enum E {
  option features.enum_type = CLOSED;
  E_ZERO = 0;
  E_ONE = 1;
}
"""

CUSTOM_OPTIONS = """
syntax = "proto3";
package opts;

import "google/protobuf/descriptor.proto";
import "confluent/meta.proto";

extend google.protobuf.FieldOptions {
  string label = 50001;
  repeated int32 codes = 50002;
}

message Tagged {
  string email = 1 [(label) = "pii", (codes) = 1, (codes) = 2, (confluent.field_meta).doc = "an address"];
  string plain = 2 [(confluent.field_meta) = { tags: "PII" tags: "GDPR" }];
}
"""


def b64(file: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(file.SerializeToString()).decode("ascii")


def comparable(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor without what a round trip through text may change: name, source info, json names."""
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    copy.ClearField("name")
    copy.ClearField("source_code_info")

    def clear(messages: object) -> None:
        for message in messages:  # type: ignore[attr-defined]
            for field in [*message.field, *message.extension]:
                field.ClearField("json_name")
            clear(message.nested_type)

    clear(copy.message_type)
    for field in copy.extension:
        field.ClearField("json_name")
    return copy


def message_class(schema: ProtobufSchema, name: str) -> type[Message]:
    return message_factory.GetMessageClass(schema.pool.FindMessageTypeByName(name))


def zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def indexes(path: list[int]) -> bytes:
    """The message-index prefix as confluent-kafka writes it."""
    if path == [0]:
        return b"\x00"
    return zigzag(len(path)) + b"".join(zigzag(i) for i in path)


# --- parsing ---


def test_parse_text() -> None:
    schema = parse(ORDER)
    assert schema.schema_type == PROTOBUF
    assert schema.canonical() == ORDER.strip()
    assert schema.record_names() == ["com.acme.Order", "com.acme.Refund"]
    assert schema.file.package == "com.acme"
    assert list(schema.file.dependency) == ["google/protobuf/timestamp.proto"]
    assert schema.formatted("ignore_extensions") == schema.canonical()
    assert schema.formatted("avro") is None


def test_parse_base64_from_protoc_output(tmp_path: Path) -> None:
    (tmp_path / "order.proto").write_text(ORDER)
    out = tmp_path / "set.pb"
    well_known = importlib.util.find_spec("grpc_tools")
    assert well_known is not None and well_known.origin is not None
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{tmp_path}",
            f"-I{Path(well_known.origin).parent / '_proto'}",
            f"--descriptor_set_out={out}",
            "order.proto",
        ],
        check=True,
    )
    (file,) = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    schema = parse(b64(file))
    assert schema.record_names() == ["com.acme.Order", "com.acme.Refund"]
    assert schema.file.name == "order.proto"
    # Registered as base64, its text is the printed descriptor, which compiles back to the same descriptor.
    assert schema.canonical() == schema.normalized()
    assert "message Order {" in schema.canonical()
    assert comparable(parse(schema.canonical()).file) == comparable(file)


def test_parse_base64_built_by_hand() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="point.proto", package="geo", syntax="proto3")
    point = file.message_type.add(name="Point")
    point.field.add(name="x", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE)
    point.field.add(name="y", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE)
    schema = parse(b64(file))
    assert schema.record_names() == ["geo.Point"]
    assert (
        schema.canonical()
        == 'syntax = "proto3";\n\npackage geo;\n\nmessage Point {\n  double x = 1;\n  double y = 2;\n}\n'
    )
    assert schema.decode(b"\x00" + message_class(schema, "geo.Point")(x=1.5).SerializeToString()) == {
        "x": 1.5
    }


def test_base64_with_an_unresolvable_type_is_rejected() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="bad.proto", syntax="proto3")
    file.message_type.add(name="A").field.add(
        name="b", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, type_name=".Missing"
    )
    with pytest.raises(SchemaError, match="Missing"):
        parse(b64(file))


def test_references_as_text_and_as_base64() -> None:
    money = (
        'syntax = "proto3";\npackage com.acme.common;\nmessage Money { string currency = 1; int64 n = 2; }\n'
    )
    address = (
        'syntax = "proto3";\npackage com.acme.common;\nimport "com/acme/money.proto";\n'
        "message Address { string city = 1; Money fee = 2; }\n"
    )
    main = (
        'syntax = "proto3";\npackage com.acme;\nimport "com/acme/money.proto";\nimport "address.proto";\n'
        "message Invoice { com.acme.common.Money total = 1; com.acme.common.Address to = 2; }\n"
    )
    as_text = parse(main, [Dependency("com/acme/money.proto", money), Dependency("address.proto", address)])
    assert list(as_text.file.dependency) == ["com/acme/money.proto", "address.proto"]
    # The same dependencies registered as base64 descriptors, as confluent-kafka registers them.
    money_b64 = parse(money).formatted("serialized")
    address_b64 = parse(address, [Dependency("com/acme/money.proto", money)]).formatted("serialized")
    assert money_b64 is not None and address_b64 is not None
    refs = [Dependency("com/acme/money.proto", money_b64), Dependency("address.proto", address_b64)]
    as_base64 = parse(main, refs)
    assert as_base64.fingerprint_text() == as_text.fingerprint_text()
    # And the main file as base64 too, importing base64 dependencies.
    main_b64 = as_text.formatted("serialized")
    assert main_b64 is not None
    all_base64 = parse(main_b64, refs)
    assert all_base64.fingerprint_text() == as_text.fingerprint_text()
    invoice = message_class(all_base64, "com.acme.Invoice")()
    invoice.total.currency = "EUR"
    invoice.to.fee.n = 3
    assert all_base64.decode(b"\x00" + invoice.SerializeToString()) == {
        "total": {"currency": "EUR"},
        "to": {"fee": {"n": "3"}},
    }


def test_well_known_imports_need_no_reference() -> None:
    schema = parse(ORDER)
    order = message_class(schema, "com.acme.Order")()
    order.placed_at.FromSeconds(1_700_000_000)
    assert schema.decode(b"\x00" + order.SerializeToString()) == {"placed_at": "2023-11-14T22:13:20Z"}
    assert schema.pool.FindFileByName("google/protobuf/timestamp.proto").package == "google.protobuf"


def test_confluent_and_google_type_imports_need_no_reference() -> None:
    pytest.importorskip("confluent_kafka.schema_registry.confluent.meta_pb2")
    pytest.importorskip("google.type.date_pb2")
    text = """
syntax = "proto3";
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "google/type/date.proto";
message Payment {
  option (confluent.message_meta).doc = "a payment";
  confluent.type.Decimal amount = 1 [(confluent.field_meta).tags = "PII"];
  google.type.Date day = 2;
}
"""
    schema = parse(text)
    payment = message_class(schema, "Payment")()
    payment.day.year = 2024
    payment.amount.precision = 5
    assert schema.decode(b"\x00" + payment.SerializeToString()) == {
        "amount": {"precision": 5},
        "day": {"year": 2024},
    }
    # A message-valued custom option with a repeated field prints in the aggregate syntax.
    assert '[(.confluent.field_meta) = { tags: "PII" }]' in schema.normalized()
    assert 'option (.confluent.message_meta).doc = "a payment";' in schema.normalized()


def test_a_reference_replaces_a_builtin_of_its_name() -> None:
    meta = 'syntax = "proto3";\npackage mine;\nmessage Meta { string note = 1; }\n'
    schema = parse(
        'syntax = "proto3";\nimport "confluent/meta.proto";\nmessage A { mine.Meta m = 1; }\n',
        [Dependency("confluent/meta.proto", meta)],
    )
    assert list(schema.pool.FindMessageTypeByName("mine.Meta").fields_by_name) == ["note"]


# --- errors ---


def test_syntax_error_reads_as_protoc_reports_it() -> None:
    with pytest.raises(SchemaError) as caught:
        parse('syntax = "proto3";\nmessage A {\n  int32 x = 1\n}\n')
    assert str(caught.value) == 'schema.proto:4:1: Expected ";".'


def test_missing_import_and_unknown_type() -> None:
    with pytest.raises(SchemaError) as caught:
        parse('syntax = "proto3";\nimport "nope.proto";\nmessage A { Foo x = 1; }\n')
    reason = str(caught.value)
    assert "nope.proto: File not found." in reason
    assert 'schema.proto:3:13: "Foo" is not defined.' in reason
    assert "/tmp" not in reason


def test_error_in_a_text_reference_names_it() -> None:
    with pytest.raises(SchemaError, match=r"^other\.proto:1:"):
        parse(
            'syntax = "proto3";\nimport "other.proto";\nmessage A {}\n',
            [Dependency("other.proto", "mesage B {}")],
        )


@pytest.mark.parametrize("text", ["", "   \n", "not a schema at all"])
def test_not_a_schema(text: str) -> None:
    with pytest.raises(SchemaError):
        parse(text)


@pytest.mark.parametrize("name", ["../escape.proto", "/abs.proto", "a//b.proto", "a/./b.proto", ""])
def test_reference_names_that_leave_the_folder_are_refused(name: str) -> None:
    with pytest.raises(SchemaError, match="not a relative import path"):
        parse('syntax = "proto3";\nmessage A {}\n', [Dependency(name, 'syntax = "proto3";')])


# --- the printer ---


@pytest.mark.parametrize(
    "text", [ORDER, PROTO2, EDITIONS, CUSTOM_OPTIONS], ids=["proto3", "proto2", "editions", "options"]
)
def test_printed_text_compiles_to_the_same_descriptor(text: str) -> None:
    schema = parse(text)
    printed = render(schema.file, schema.pool)
    again = parse(printed)
    assert comparable(again.file) == comparable(schema.file)
    assert render(again.file, again.pool) == printed  # printing is stable


def test_printer_output() -> None:
    schema = parse(PROTO2)
    printed = schema.normalized()
    for expected in (
        'syntax = "proto2";',
        "package legacy.v1;",
        'option java_package = "legacy.v1";',
        "option optimize_for = SPEED;",
        "required int64 id = 1 [default = -5];",
        'optional string name = 2 [default = "a \\"quoted\\"\\nname é"];',
        'optional bytes blob = 3 [default = "\\001\\377ab"];',
        "optional double ratio = 4 [default = inf];",
        "optional .legacy.v1.Kind kind = 5 [default = BIG];",
        "repeated int32 sizes = 7 [packed = true, deprecated = true];",
        "optional group Extra = 8 {",
        "map<int64, .legacy.v1.Item.Part> parts = 10;",
        "oneof pick {",
        'optional int32 renamed = 13 [json_name = "other"];',
        "extensions 1000 to max;",
        "reserved 50, 60 to 70;",
        "reserved 10 to 20, 40 to max;",
        'reserved "HUGE";',
        "LARGE = 2 [deprecated = true];",
        "extend .legacy.v1.Item {",
        "rpc Get(.legacy.v1.Item) returns (.legacy.v1.Item) {",
        "option idempotency_level = NO_SIDE_EFFECTS;",
    ):
        assert expected in printed, expected
    assert "json_name" not in parse(ORDER).normalized()  # only json names that differ from the default
    order = parse(ORDER).normalized()
    assert (
        "optional string note = 5;" in order and "rpc Watch(stream .com.acme.Order) returns (stream" in order
    )


def test_custom_options_print_by_name() -> None:
    printed = parse(CUSTOM_OPTIONS).normalized()
    assert '(.opts.label) = "pii", (.opts.codes) = 1, (.opts.codes) = 2' in printed
    assert '(.confluent.field_meta).doc = "an address"' in printed
    assert '(.confluent.field_meta) = { tags: "PII" tags: "GDPR" }' in printed


def test_printer_keeps_nested_type_order_for_message_indexes() -> None:
    text = 'syntax = "proto3";\nmessage A {\n  message B {}\n  map<string, int32> m = 1;\n  message C {}\n}\n'
    schema = parse(text)
    again = parse(schema.normalized())
    assert [n.name for n in again.file.message_type[0].nested_type] == ["B", "MEntry", "C"]


# --- texts and fingerprints ---


def test_layout_and_comments_do_not_change_normalized_or_fingerprint() -> None:
    compact = 'syntax="proto3";package p;message A{int32 a=1;/* c */string b=2;}'
    spread = (
        'syntax = "proto3";\n\npackage p;\n\n// A thing.\nmessage A {\n  int32 a = 1;\n  string b = 2;\n}\n'
    )
    assert parse(compact).normalized() == parse(spread).normalized()
    assert parse(compact).fingerprint_text() == parse(spread).fingerprint_text()
    assert parse(compact).canonical() != parse(spread).canonical()


def test_fingerprint_equal_for_text_and_base64() -> None:
    text = parse(ORDER)
    serialized = text.formatted("serialized")
    assert serialized is not None
    assert parse(serialized).fingerprint_text() == text.fingerprint_text()
    assert parse(ORDER.replace("int64 id = 1", "int32 id = 1")).fingerprint_text() != text.fingerprint_text()


def test_fingerprint_equal_for_text_and_generated_code(tmp_path: Path) -> None:
    """What confluent-kafka's serializer registers: the generated module's DESCRIPTOR.serialized_pb, which
    (unlike protoc's descriptor set) has no json names."""
    name = f"fp_{uuid.uuid4().hex}"
    text = 'syntax = "proto3";\npackage fp;\nmessage Thing { string long_name = 1; repeated int32 many = 2; }'
    (tmp_path / f"{name}.proto").write_text(text)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{tmp_path}",
            f"--python_out={tmp_path}",
            f"{name}.proto",
        ],
        check=True,
    )
    spec = importlib.util.spec_from_file_location(f"{name}_pb2", tmp_path / f"{name}_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    registered = base64.b64encode(module.DESCRIPTOR.serialized_pb).decode("ascii")
    assert parse(registered).fingerprint_text() == parse(text).fingerprint_text()


def test_formatted_serialized_is_the_file_descriptor() -> None:
    schema = parse(ORDER)
    serialized = schema.formatted("serialized")
    assert serialized is not None
    file = descriptor_pb2.FileDescriptorProto.FromString(
        base64.standard_b64decode(serialized.encode("ascii"))
    )
    assert file == schema.file
    assert file.dependency == ["google/protobuf/timestamp.proto"]


# --- decoding ---


def test_decode_top_level_message_by_index() -> None:
    schema = parse(ORDER)
    refund = message_class(schema, "com.acme.Refund")(order_id=42)
    assert indexes([1]) == b"\x02\x02"
    assert schema.decode(indexes([1]) + refund.SerializeToString()) == {"order_id": "42"}


def test_decode_first_message_with_the_single_zero_shortcut() -> None:
    schema = parse(ORDER)
    order = message_class(schema, "com.acme.Order")(id=7, note="n", card="4111", status=1)
    order.tags["k"] = "v"
    line = order.lines.add()
    line.sku, line.quantity = "abc", 2
    expected = {
        "id": "7",
        "lines": [{"sku": "abc", "quantity": 2}],
        "tags": {"k": "v"},
        "note": "n",
        "card": "4111",
        "status": "STATUS_PAID",
    }
    assert schema.decode(b"\x00" + order.SerializeToString()) == expected
    # The long form of [0] reads the same.
    assert schema.decode(b"\x02\x00" + order.SerializeToString()) == expected


def test_decode_nested_message() -> None:
    schema = parse(ORDER)
    line = message_class(schema, "com.acme.Order.Line")(sku="x", quantity=3)
    assert schema.decode(indexes([0, 0]) + line.SerializeToString()) == {"sku": "x", "quantity": 3}


def test_index_encoding_matches_confluent_kafka() -> None:
    protobuf_module = pytest.importorskip("confluent_kafka.schema_registry._sync.protobuf")
    import io

    for path in ([0], [1], [0, 0], [3, 1, 2], [200]):
        buffer = io.BytesIO()
        protobuf_module.ProtobufSerializer._encode_varints(buffer, path)
        assert buffer.getvalue() == indexes(path)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (indexes([5]), "out of range"),
        (indexes([0, 3]), "out of range"),
        (indexes([1, 0]), "out of range"),
        (b"", "ends inside"),
        (b"\x02\x80", "ends inside"),
        (b"\x04\x02", "not valid"),
        (b"\x03", "not valid"),
        (b"\x00\xff\xff", "not a com.acme.Order"),
        (b"\x00\x0a\x05ab", "not a com.acme.Order"),
    ],
)
def test_decode_errors(payload: bytes, reason: str) -> None:
    with pytest.raises(SchemaError, match=reason):
        parse(ORDER).decode(payload)


# --- compatibility ---

BASE = """
syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string name = 2;
  Item item = 3;
  Color color = 4;
  repeated int32 counts = 5;
  oneof contact { string email = 6; string phone = 7; }
  string loose = 8;
  string other = 9;
  map<string, int32> stock = 10;
  message Item { string code = 1; }
}
message Item { string sku = 1; }
enum Color { RED = 0; BLUE = 1; }
enum Shade { DARK = 0; }
"""


def issues(reader_text: str, writer_text: str = BASE) -> list[str]:
    return parse(reader_text).read_issues(parse(writer_text))


def kinds(reader_text: str, writer_text: str = BASE) -> list[str]:
    return [issue.split(" ")[0] for issue in issues(reader_text, writer_text)]


def test_same_schema_is_compatible() -> None:
    assert issues(BASE) == []


@pytest.mark.parametrize(
    "change",
    [
        ("  string other = 9;\n", ""),  # an optional field removed
        ("  string other = 9;\n", "  string other = 9;\n  string added = 11;\n"),  # one added
        ("string other = 9", "string renamed = 9"),  # renamed
        ("int64 id = 1", "uint64 id = 1"),  # same varint group
        ("int64 id = 1", "bool id = 1"),
        ("string name = 2", "bytes name = 2"),
        ("Color color = 4", "int32 color = 4"),  # enum and int
        ("Item item = 3", "bytes item = 3"),  # a message and bytes
        ("enum Color { RED = 0; BLUE = 1; }", "enum Color { RED = 0; BLUE = 1; GREEN = 2; }"),
        ("message Item { string sku = 1; }\n", "message Item { string sku = 1; }\nmessage New {}\n"),
        ("  string loose = 8;\n", "  oneof single { string loose = 8; }\n"),  # one field into a new oneof
        ("string name = 2", "repeated string name = 2"),  # strings may become repeated
    ],
)
def test_compatible_changes(change: tuple[str, str]) -> None:
    old, new = change
    assert old in BASE
    assert issues(BASE.replace(old, new)) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("package shop;", "package store;", "PACKAGE_CHANGED at #/"),
        ("message Item { string sku = 1; }\n", "", "MESSAGE_REMOVED at #/Item"),
        ("  message Item { string code = 1; }\n", "", "MESSAGE_REMOVED at #/Order/Item"),
        ("string name = 2", "int32 name = 2", "FIELD_SCALAR_KIND_CHANGED at #/Order/2"),
        ("int64 id = 1", "sint64 id = 1", "FIELD_SCALAR_KIND_CHANGED at #/Order/1"),
        ("int64 id = 1", "fixed64 id = 1", "FIELD_SCALAR_KIND_CHANGED at #/Order/1"),
        ("int64 id = 1", "double id = 1", "FIELD_SCALAR_KIND_CHANGED at #/Order/1"),
        ("string name = 2", "Item name = 2", "FIELD_KIND_CHANGED at #/Order/2"),
        ("Color color = 4", "string color = 4", "FIELD_KIND_CHANGED at #/Order/4"),
        ("Item item = 3", "Color item = 3", "FIELD_KIND_CHANGED at #/Order/3"),
        ("Item item = 3", ".shop.Item item = 3", "FIELD_NAMED_TYPE_CHANGED at #/Order/3"),
        ("Color color = 4", "Shade color = 4", "FIELD_NAMED_TYPE_CHANGED at #/Order/4"),
        ("map<string, int32> stock", "map<string, string> stock", "FIELD_SCALAR_KIND_CHANGED at #/Order/10"),
        ("repeated int32 counts = 5", "int32 counts = 5", "FIELD_NUMERIC_LABEL_CHANGED at #/Order/5"),
        (
            "oneof contact { string email = 6; string phone = 7; }",
            "oneof contact { string email = 6; }",
            "ONEOF_FIELD_REMOVED at #/Order/7",
        ),
        (
            "oneof contact { string email = 6; string phone = 7; }\n  string loose = 8;",
            "oneof contact { string email = 6; string phone = 7; string loose = 8; }",
            "FIELD_MOVED_TO_EXISTING_ONEOF at #/Order/8",
        ),
        (
            "  string loose = 8;\n  string other = 9;\n",
            "  oneof fresh { string loose = 8; string other = 9; }\n",
            "MULTIPLE_FIELDS_MOVED_TO_ONEOF at #/Order/fresh",
        ),
    ],
)
def test_incompatible_changes(old: str, new: str, expected: str) -> None:
    assert old in BASE
    found = issues(BASE.replace(old, new))
    assert any(issue.startswith(expected + ":") for issue in found), found


def test_syntax_changed() -> None:
    proto3 = 'syntax = "proto3";\nmessage A { int32 a = 1; }\n'
    proto2 = 'syntax = "proto2";\nmessage A { optional int32 a = 1; }\n'
    assert kinds(proto2, proto3) == ["SYNTAX_CHANGED"]
    assert kinds(proto3, proto2) == ["SYNTAX_CHANGED"]


def test_issues_name_the_change() -> None:
    (issue,) = issues(BASE.replace("string name = 2", "int32 name = 2"))
    assert issue == "FIELD_SCALAR_KIND_CHANGED at #/Order/2: field 'name' was string and is int32"


PROTO2_BASE = """
syntax = "proto2";
message Account {
  required string id = 1;
  optional string owner = 2;
}
"""


def test_required_fields() -> None:
    added = PROTO2_BASE.replace(
        "optional string owner = 2;", "optional string owner = 2;\n  required int32 age = 3;"
    )
    assert kinds(added, PROTO2_BASE) == ["REQUIRED_FIELD_ADDED"]
    removed = PROTO2_BASE.replace("  required string id = 1;\n", "")
    assert kinds(removed, PROTO2_BASE) == ["REQUIRED_FIELD_REMOVED"]
    relaxed = PROTO2_BASE.replace("required string id", "optional string id")
    assert kinds(relaxed, PROTO2_BASE) == ["REQUIRED_FIELD_REMOVED"]
    tightened = PROTO2_BASE.replace("optional string owner", "required string owner")
    assert kinds(tightened, PROTO2_BASE) == ["REQUIRED_FIELD_ADDED"]
    # Optional fields come and go freely in proto2 as well.
    assert kinds(PROTO2_BASE.replace("  optional string owner = 2;\n", ""), PROTO2_BASE) == []
    extra = PROTO2_BASE.replace(
        "optional string owner = 2;", "optional string owner = 2;\n  optional int32 n = 4;"
    )
    assert kinds(extra, PROTO2_BASE) == []


def test_compatibility_is_directional() -> None:
    grown = BASE.replace(
        "message Item { string sku = 1; }\n", "message Item { string sku = 1; }\nmessage Extra {}\n"
    )
    assert issues(grown, BASE) == []  # the new reader knows every message the writer had
    assert kinds(BASE, grown) == ["MESSAGE_REMOVED"]


def test_text_and_base64_forms_compare_equal() -> None:
    text = parse(BASE)
    serialized = text.formatted("serialized")
    assert serialized is not None
    assert parse(serialized).read_issues(text) == []
    assert text.read_issues(parse(serialized)) == []
