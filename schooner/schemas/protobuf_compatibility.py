"""Whether data written with one Protobuf schema can be read with another, over their FileDescriptorProtos.

Each issue reads "KIND at PATH: detail", KIND being the name Confluent's registry gives that difference and
PATH a JSON-pointer-like place: "#/" then the message path below the package ("#/Order/Line"), then a field
number or a oneof name. Messages match by name, fields by number (the wire identity). Reported, as Confluent
treats them as breaking:

- PACKAGE_CHANGED, SYNTAX_CHANGED (proto2/proto3/editions): the file's package or syntax differs.
- MESSAGE_REMOVED: a message (top-level or nested) of the writer is not in the reader.
- FIELD_KIND_CHANGED: a field went between scalar, message and enum. Wire-compatible pairs are allowed: an
  enum and int32/uint32/int64/uint64, and bytes and an embedded message (bytes holding the encoded message).
- FIELD_SCALAR_KIND_CHANGED: a scalar field left its wire-compatible group. The groups are int32, uint32,
  int64, uint64, bool; sint32, sint64; fixed32, sfixed32; fixed64, sfixed64; string, bytes; float; double.
- FIELD_NAMED_TYPE_CHANGED: a message or enum field names another type (map fields compare their key and
  value types instead, since the entry type's name follows the field's name).
- FIELD_NUMERIC_LABEL_CHANGED: a numeric or enum field went between singular and repeated (packed numbers do
  not read as one value); strings, bytes and messages may change so.
- REQUIRED_FIELD_ADDED, REQUIRED_FIELD_REMOVED (proto2): a required field is new to the reader, or was in
  the writer and is gone or no longer required.
- FIELD_MOVED_TO_EXISTING_ONEOF: a field joined a oneof that the writer already had.
- MULTIPLE_FIELDS_MOVED_TO_ONEOF: more than one of the writer's fields joined a new oneof.
- ONEOF_FIELD_REMOVED: a field left a oneof the reader still has.

Compatible, so not reported: adding or removing optional and repeated fields, renaming fields, adding
messages and enums, adding, removing or changing enum values, adding or removing a whole oneof, a single field
moving into a new oneof, reordering declarations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from google.protobuf import descriptor_pb2

_F = descriptor_pb2.FieldDescriptorProto
_MessageMap = dict[str, descriptor_pb2.DescriptorProto]

_SCALAR_GROUPS: tuple[frozenset[int], ...] = (
    frozenset({_F.TYPE_INT32, _F.TYPE_UINT32, _F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_BOOL}),
    frozenset({_F.TYPE_SINT32, _F.TYPE_SINT64}),
    frozenset({_F.TYPE_FIXED32, _F.TYPE_SFIXED32}),
    frozenset({_F.TYPE_FIXED64, _F.TYPE_SFIXED64}),
    frozenset({_F.TYPE_STRING, _F.TYPE_BYTES}),
    frozenset({_F.TYPE_FLOAT}),
    frozenset({_F.TYPE_DOUBLE}),
)
_ENUM_LIKE = frozenset({_F.TYPE_INT32, _F.TYPE_UINT32, _F.TYPE_INT64, _F.TYPE_UINT64})
_LENGTH_DELIMITED = frozenset({_F.TYPE_STRING, _F.TYPE_BYTES, _F.TYPE_MESSAGE, _F.TYPE_GROUP})

__all__ = ["read_issues"]


def read_issues(
    reader: descriptor_pb2.FileDescriptorProto, writer: descriptor_pb2.FileDescriptorProto
) -> list[str]:
    """Why data written with `writer` cannot be read with `reader`; empty when it can."""
    issues: list[str] = []
    if reader.package != writer.package:
        issues.append(f"PACKAGE_CHANGED at #/: package {writer.package!r} became {reader.package!r}")
    if (reader.syntax or "proto2") != (writer.syntax or "proto2"):
        issues.append(f"SYNTAX_CHANGED at #/: {writer.syntax or 'proto2'} became {reader.syntax or 'proto2'}")
    reader_messages = dict(_messages(reader.message_type, ""))
    writer_messages = dict(_messages(writer.message_type, ""))
    for name, written in writer_messages.items():
        path = "#/" + name.replace(".", "/")
        read = reader_messages.get(name)
        if read is None:
            issues.append(f"MESSAGE_REMOVED at {path}: the reader has no message {name}")
        else:
            _Message(reader, writer, reader_messages, writer_messages, read, written, path).compare(issues)
    return issues


def _messages(
    messages: Iterable[descriptor_pb2.DescriptorProto], prefix: str
) -> Iterator[tuple[str, descriptor_pb2.DescriptorProto]]:
    """Every message, nested ones too, by its name below the package; map entries left out (their field
    stands for them)."""
    for message in messages:
        if message.options.map_entry:
            continue
        name = f"{prefix}{message.name}"
        yield name, message
        yield from _messages(message.nested_type, name + ".")


class _Message:
    def __init__(
        self,
        reader_file: descriptor_pb2.FileDescriptorProto,
        writer_file: descriptor_pb2.FileDescriptorProto,
        reader_messages: _MessageMap,
        writer_messages: _MessageMap,
        reader: descriptor_pb2.DescriptorProto,
        writer: descriptor_pb2.DescriptorProto,
        path: str,
    ):
        self.reader_file, self.writer_file = reader_file, writer_file
        self.reader_messages, self.writer_messages = reader_messages, writer_messages
        self.reader, self.writer = reader, writer
        self.path = path

    def compare(self, issues: list[str]) -> None:
        reader_fields = {f.number: f for f in self.reader.field}
        writer_fields = {f.number: f for f in self.writer.field}
        writer_oneofs = {
            o.name for i, o in enumerate(self.writer.oneof_decl) if _is_real_oneof(self.writer, i)
        }
        reader_oneofs = {
            o.name for i, o in enumerate(self.reader.oneof_decl) if _is_real_oneof(self.reader, i)
        }
        moved_to_new: dict[str, list[int]] = {}
        for number, written in writer_fields.items():
            at = f"{self.path}/{number}"
            read = reader_fields.get(number)
            written_oneof = _oneof_name(self.writer, written)
            if read is None:
                if written.label == _F.LABEL_REQUIRED:
                    issues.append(
                        f"REQUIRED_FIELD_REMOVED at {at}: required field {written.name!r} was removed"
                    )
                elif written_oneof is not None and written_oneof in reader_oneofs:
                    issues.append(
                        f"ONEOF_FIELD_REMOVED at {at}: field {written.name!r} left oneof {written_oneof!r}"
                    )
                continue
            self.compare_field(read, written, at, issues)
            read_oneof = _oneof_name(self.reader, read)
            if read_oneof is not None and read_oneof != written_oneof:
                if read_oneof in writer_oneofs:
                    issues.append(
                        f"FIELD_MOVED_TO_EXISTING_ONEOF at {at}: field {read.name!r} moved into the existing "
                        f"oneof {read_oneof!r}"
                    )
                else:
                    moved_to_new.setdefault(read_oneof, []).append(number)
        for oneof, numbers in moved_to_new.items():
            if len(numbers) > 1:
                listed = ", ".join(str(n) for n in numbers)
                issues.append(
                    f"MULTIPLE_FIELDS_MOVED_TO_ONEOF at {self.path}/{oneof}: fields {listed} moved into the "
                    f"new oneof {oneof!r}"
                )
        for number, read in reader_fields.items():
            if number not in writer_fields and read.label == _F.LABEL_REQUIRED:
                issues.append(
                    f"REQUIRED_FIELD_ADDED at {self.path}/{number}: required field {read.name!r} was added"
                )

    def compare_field(
        self,
        read: descriptor_pb2.FieldDescriptorProto,
        written: descriptor_pb2.FieldDescriptorProto,
        at: str,
        issues: list[str],
    ) -> None:
        read_map = self.map_entry(self.reader_file, self.reader_messages, read)
        written_map = self.map_entry(self.writer_file, self.writer_messages, written)
        if read_map is not None and written_map is not None:
            # Maps compare by what they hold; the entry type's name only follows the field's name.
            for number in (1, 2):
                read_part = next(f for f in read_map.field if f.number == number)
                written_part = next(f for f in written_map.field if f.number == number)
                self.compare_type(read_part, written_part, at, issues)
            return
        self.compare_type(read, written, at, issues)
        if (read.label == _F.LABEL_REPEATED) != (written.label == _F.LABEL_REPEATED) and not (
            read.type in _LENGTH_DELIMITED and written.type in _LENGTH_DELIMITED
        ):
            issues.append(
                f"FIELD_NUMERIC_LABEL_CHANGED at {at}: field {read.name!r} went between singular and repeated"
            )
        if written.label == _F.LABEL_REQUIRED and read.label != _F.LABEL_REQUIRED:
            issues.append(f"REQUIRED_FIELD_REMOVED at {at}: field {read.name!r} is no longer required")
        elif read.label == _F.LABEL_REQUIRED and written.label != _F.LABEL_REQUIRED:
            issues.append(f"REQUIRED_FIELD_ADDED at {at}: field {read.name!r} became required")

    def compare_type(
        self,
        read: descriptor_pb2.FieldDescriptorProto,
        written: descriptor_pb2.FieldDescriptorProto,
        at: str,
        issues: list[str],
    ) -> None:
        read_kind, written_kind = _kind(read), _kind(written)
        if read_kind == written_kind == "SCALAR":
            if not any(read.type in group and written.type in group for group in _SCALAR_GROUPS):
                issues.append(
                    f"FIELD_SCALAR_KIND_CHANGED at {at}: field {read.name!r} was {_type_word(written)} "
                    f"and is {_type_word(read)}"
                )
        elif read_kind == written_kind:
            read_name = _local_name(read.type_name, self.reader_file.package)
            written_name = _local_name(written.type_name, self.writer_file.package)
            if read_name != written_name:
                issues.append(
                    f"FIELD_NAMED_TYPE_CHANGED at {at}: field {read.name!r} was of type {written_name} "
                    f"and is of type {read_name}"
                )
        elif not _wire_compatible_kinds(read, written):
            issues.append(
                f"FIELD_KIND_CHANGED at {at}: field {read.name!r} was a {written_kind.lower()} "
                f"and is a {read_kind.lower()}"
            )

    @staticmethod
    def map_entry(
        file: descriptor_pb2.FileDescriptorProto,
        messages: _MessageMap,
        field: descriptor_pb2.FieldDescriptorProto,
    ) -> descriptor_pb2.DescriptorProto | None:
        if field.type != _F.TYPE_MESSAGE or field.label != _F.LABEL_REPEATED:
            return None
        local = _local_name(field.type_name, file.package)
        parent, _, entry_name = local.rpartition(".")
        owner = messages.get(parent)
        if owner is None:
            return None
        for nested in owner.nested_type:
            if nested.name == entry_name and nested.options.map_entry:
                return nested
        return None


def _kind(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        return "MESSAGE"
    if field.type == _F.TYPE_ENUM:
        return "ENUM"
    return "SCALAR"


def _wire_compatible_kinds(
    a: descriptor_pb2.FieldDescriptorProto, b: descriptor_pb2.FieldDescriptorProto
) -> bool:
    pair = {a.type, b.type}
    if _F.TYPE_ENUM in pair:
        return bool(pair & _ENUM_LIKE)
    return pair == {_F.TYPE_BYTES, _F.TYPE_MESSAGE}


def _type_word(field: descriptor_pb2.FieldDescriptorProto) -> str:
    return _F.Type.Name(field.type).removeprefix("TYPE_").lower()


def _local_name(type_name: str, package: str) -> str:
    """A type name without its leading dot, and without the file's package when the type is in it (so that a
    package change, reported once, does not also change every field's type)."""
    name = type_name.removeprefix(".")
    return name.removeprefix(package + ".") if package else name


def _is_real_oneof(message: descriptor_pb2.DescriptorProto, index: int) -> bool:
    """False for the synthetic oneof protoc gives a proto3 `optional` field."""
    members = [f for f in message.field if f.HasField("oneof_index") and f.oneof_index == index]
    return not (len(members) == 1 and members[0].proto3_optional)


def _oneof_name(
    message: descriptor_pb2.DescriptorProto, field: descriptor_pb2.FieldDescriptorProto
) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return message.oneof_decl[field.oneof_index].name
