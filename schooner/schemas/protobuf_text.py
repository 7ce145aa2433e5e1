"""A FileDescriptorProto printed as .proto source.

Written by hand: no maintained Python library renders a descriptor as .proto text (protobuf's runtime only
goes the other way, through protoc). The output is meant to compile back, with protoc, to the same descriptor
(source info and default json names aside), so it favours exactness over looks: type names are written fully
qualified with a leading dot, and declarations keep the descriptor's order (nested messages interleaved with
the map and group fields whose synthetic entry types sit among them), so message indexes survive a round trip.

Covered: proto2, proto3 and editions files; package, imports (public, weak), options (standard ones and
custom options whose extensions the given pool knows), messages with nested messages and enums, fields with
labels, proto3 `optional`, map fields, groups, oneofs, proto2 defaults, json_name when it is not the default,
extension ranges, extend blocks, reserved ranges and names, enums and services.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_encoding, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

_FIELD = descriptor_pb2.FieldDescriptorProto
_MAX_FIELD = 536870911  # the largest field number (2**29 - 1), spelled `max` in ranges
_MAX_ENUM = 2147483647  # the largest enum value, spelled `max` in enum reserved ranges

__all__ = ["default_json_name", "render"]


def default_json_name(name: str) -> str:
    """The json_name protoc derives from a name: underscores dropped, each letter after one capitalized."""
    out: list[str] = []
    upper_next = False
    for char in name:
        if char == "_":
            upper_next = True
        elif upper_next:
            out.append(char.upper())
            upper_next = False
        else:
            out.append(char)
    return "".join(out)


def render(
    file: descriptor_pb2.FileDescriptorProto, pool: descriptor_pool.DescriptorPool | None = None
) -> str:
    """`file` as .proto source. `pool` (one holding the file's imports) lets custom options print by name;
    without it only the standard options print."""
    return _Printer(file, pool).file_text()


class _Printer:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto, pool: descriptor_pool.DescriptorPool | None):
        self.file = file
        self.pool = pool
        self.editions = file.syntax == "editions"
        self.proto3 = file.syntax == "proto3"
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def open(self, text: str) -> None:
        self.line(text + " {")
        self.depth += 1

    def close(self) -> None:
        self.depth -= 1
        self.line("}")

    def file_text(self) -> str:
        f = self.file
        if self.editions:
            self.line(f'edition = "{descriptor_pb2.Edition.Name(f.edition).removeprefix("EDITION_")}";')
        else:
            self.line(f'syntax = "{f.syntax or "proto2"}";')
        if f.package:
            self.line("")
            self.line(f"package {f.package};")
        if f.dependency:
            self.line("")
            for i, dep in enumerate(f.dependency):
                kind = "public " if i in f.public_dependency else "weak " if i in f.weak_dependency else ""
                self.line(f"import {kind}{_quote(dep)};")
        self.option_statements(f.options, blank_before=True)
        scope = f".{f.package}" if f.package else ""
        for message in f.message_type:
            self.line("")
            self.message(message, scope)
        for enum in f.enum_type:
            self.line("")
            self.enum(enum)
        if f.extension:
            self.line("")
            self.extensions(f.extension, scope)
        for service in f.service:
            self.line("")
            self.service(service)
        return "\n".join(self.lines) + "\n"

    # Options

    def option_pairs(self, options: Message) -> list[tuple[str, str]]:
        return _option_pairs(self.with_extensions(options))

    def with_extensions(self, options: Message) -> Message:
        """The options re-read through the pool's copy of descriptor.proto, so that custom options, unknown
        fields to the generated descriptor_pb2 classes, become named extensions."""
        if self.pool is None:
            return options
        try:
            descriptor = self.pool.FindMessageTypeByName(options.DESCRIPTOR.full_name)
        except KeyError:
            return options  # the files never import descriptor.proto, so they cannot have custom options
        return message_factory.GetMessageClass(descriptor).FromString(options.SerializeToString())

    def option_statements(self, options: Message, blank_before: bool = False) -> None:
        pairs = self.option_pairs(options)
        if pairs and blank_before:
            self.line("")
        for name, value in pairs:
            self.line(f"option {name} = {value};")

    def bracket(self, pairs: Sequence[tuple[str, str]]) -> str:
        return " [" + ", ".join(f"{name} = {value}" for name, value in pairs) + "]" if pairs else ""

    # Messages

    def message(self, message: descriptor_pb2.DescriptorProto, scope: str) -> None:
        self.open(f"message {message.name}")
        self.message_body(message, f"{scope}.{message.name}")
        self.close()

    def message_body(self, message: descriptor_pb2.DescriptorProto, full_name: str) -> None:
        self.option_statements(message.options)
        owned = self.owned_types(message, full_name)
        done: set[int] = set()  # indexes of fields already printed (a oneof prints all its fields at once)

        def fields_up_to(end: int) -> None:
            for i in range(end):
                if i not in done:
                    self.field_or_oneof(message, i, full_name, owned, done)

        for nested in message.nested_type:
            owner = owned.get(nested.name)
            if owner is None:
                self.message(nested, full_name)
            else:
                # A map entry or group type: its field declares it, so print the fields up to that one here
                # to keep the nested types' order.
                fields_up_to(owner + 1)
        fields_up_to(len(message.field))
        for enum in message.enum_type:
            self.enum(enum)
        if message.extension:
            self.extensions(message.extension, full_name)
        for ext_range in message.extension_range:
            span = _span(ext_range.start, ext_range.end - 1, _MAX_FIELD)
            self.line(f"extensions {span}{self.bracket(self.option_pairs(ext_range.options))};")
        if message.reserved_range:
            spans = ", ".join(_span(r.start, r.end - 1, _MAX_FIELD) for r in message.reserved_range)
            self.line(f"reserved {spans};")
        self.reserved_names(message.reserved_name)

    def owned_types(self, message: descriptor_pb2.DescriptorProto, full_name: str) -> dict[str, int]:
        """Nested types that a field declares (map entries, groups), by name, with that field's index."""
        owned: dict[str, int] = {}
        nested = {n.name: n for n in message.nested_type}
        for i, field in enumerate(message.field):
            name = field.type_name.removeprefix(full_name + ".")
            if name == field.type_name or name not in nested:
                continue
            if nested[name].options.map_entry or (field.type == _FIELD.TYPE_GROUP and not self.editions):
                owned[name] = i
        return owned

    def field_or_oneof(
        self,
        message: descriptor_pb2.DescriptorProto,
        index: int,
        full_name: str,
        owned: dict[str, int],
        done: set[int],
    ) -> None:
        field = message.field[index]
        if not field.HasField("oneof_index") or field.proto3_optional:
            done.add(index)
            self.field(field, message, full_name, owned, in_oneof=False)
            return
        oneof = message.oneof_decl[field.oneof_index]
        self.open(f"oneof {oneof.name}")
        self.option_statements(oneof.options)
        for i, member in enumerate(message.field):
            if member.HasField("oneof_index") and member.oneof_index == field.oneof_index and i not in done:
                done.add(i)
                self.field(member, message, full_name, owned, in_oneof=True)
        self.close()

    def field(
        self,
        field: descriptor_pb2.FieldDescriptorProto,
        message: descriptor_pb2.DescriptorProto | None,
        full_name: str,
        owned: dict[str, int],
        in_oneof: bool,
    ) -> None:
        label = "" if in_oneof else self.label(field)
        type_name = field.type_name.removeprefix(full_name + ".")
        entry = None
        if message is not None and type_name in owned:
            entry = next(n for n in message.nested_type if n.name == type_name)
        suffix = f"{field.name} = {field.number}{self.bracket(self.field_pairs(field))}"
        if entry is not None and entry.options.map_entry:
            key, value = (next(f for f in entry.field if f.number == n) for n in (1, 2))
            self.line(f"map<{self.type_text(key)}, {self.type_text(value)}> {suffix};")
        elif entry is not None:
            # A group: field and message in one declaration; the field's name is the type's, lowercased.
            self.open(f"{label}group {entry.name} = {field.number}{self.bracket(self.field_pairs(field))}")
            self.message_body(entry, f"{full_name}.{entry.name}")
            self.close()
        else:
            self.line(f"{label}{self.type_text(field)} {suffix};")

    def label(self, field: descriptor_pb2.FieldDescriptorProto) -> str:
        if field.label == _FIELD.LABEL_REPEATED:
            return "repeated "
        if self.editions:
            return ""  # presence lives in features, printed with the options
        if field.label == _FIELD.LABEL_REQUIRED:
            return "required "
        if self.proto3:
            return "optional " if field.proto3_optional else ""
        return "optional "

    def type_text(self, field: descriptor_pb2.FieldDescriptorProto) -> str:
        if field.type_name:
            return field.type_name
        return _FIELD.Type.Name(field.type).removeprefix("TYPE_").lower()

    def field_pairs(self, field: descriptor_pb2.FieldDescriptorProto) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        if field.HasField("default_value"):
            pairs.append(("default", _default_text(field)))
        if field.HasField("json_name") and field.json_name != default_json_name(field.name):
            pairs.append(("json_name", _quote(field.json_name)))
        return pairs + self.option_pairs(field.options)

    def extensions(self, fields: Iterable[descriptor_pb2.FieldDescriptorProto], scope: str) -> None:
        extendee = None
        for field in fields:
            # One extend block per run of the same extendee, so the extensions keep their order.
            if field.extendee != extendee:
                if extendee is not None:
                    self.close()
                extendee = field.extendee
                self.open(f"extend {extendee}")
            self.field(field, None, scope, {}, in_oneof=False)
        if extendee is not None:
            self.close()

    # Enums and services

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto) -> None:
        self.open(f"enum {enum.name}")
        self.option_statements(enum.options)
        for value in enum.value:
            self.line(f"{value.name} = {value.number}{self.bracket(self.option_pairs(value.options))};")
        if enum.reserved_range:
            self.line(f"reserved {', '.join(_span(r.start, r.end, _MAX_ENUM) for r in enum.reserved_range)};")
        self.reserved_names(enum.reserved_name)
        self.close()

    def reserved_names(self, names: Sequence[str]) -> None:
        if names:
            # Editions write reserved names as identifiers, the older syntaxes as strings.
            spelled = names if self.editions else [_quote(name) for name in names]
            self.line(f"reserved {', '.join(spelled)};")

    def service(self, service: descriptor_pb2.ServiceDescriptorProto) -> None:
        self.open(f"service {service.name}")
        self.option_statements(service.options)
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            head = f"rpc {method.name}({request}) returns ({response})"
            pairs = self.option_pairs(method.options)
            if pairs:
                self.open(head)
                for name, value in pairs:
                    self.line(f"option {name} = {value};")
                self.close()
            else:
                self.line(head + ";")
        self.close()


def _span(start: int, end: int, largest: int) -> str:
    """An inclusive range as .proto writes it."""
    if start == end:
        return str(start)
    return f"{start} to {'max' if end >= largest else end}"


def _quote(text: str) -> str:
    return '"' + text_encoding.CEscape(text, as_utf8=True) + '"'


def _default_text(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type == _FIELD.TYPE_STRING:
        return _quote(field.default_value)
    if field.type == _FIELD.TYPE_BYTES:
        return f'"{field.default_value}"'  # descriptors keep bytes defaults C-escaped already
    return field.default_value  # numbers, bools, enum value names and inf/nan as written


def _option_pairs(options: Message) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for field, value in options.ListFields():
        if field.name == "uninterpreted_option" and not field.is_extension:
            continue  # protoc has interpreted these already
        pairs.extend(_assignments(_option_name(field), field, value))
    return pairs


def _option_name(field: FieldDescriptor) -> str:
    # Absolute names for extensions, so that no enclosing scope can shadow them.
    return f"(.{field.full_name})" if field.is_extension else field.name


def _assignments(name: str, field: FieldDescriptor, value: object) -> list[tuple[str, str]]:
    if field.is_repeated:
        return [(name, _value_text(field, item)) for item in value]  # type: ignore[attr-defined]
    if field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        assert isinstance(value, Message)
        if _has_repeated(value):
            return [(name, _value_text(field, value))]
        # A message of singular values prints as one assignment per leaf (`features.field_presence = ...`).
        pairs: list[tuple[str, str]] = []
        for sub, sub_value in value.ListFields():
            pairs.extend(_assignments(f"{name}.{_option_name(sub)}", sub, sub_value))
        return pairs or [(name, "{}")]
    return [(name, _value_text(field, value))]


def _has_repeated(message: Message) -> bool:
    for field, value in message.ListFields():
        if field.is_repeated:
            return True
        if field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE and _has_repeated(value):
            return True
    return False


def _value_text(field: FieldDescriptor, value: object) -> str:
    if isinstance(value, Message):
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert isinstance(value, int) and field.enum_type is not None
        known = field.enum_type.values_by_number.get(value)
        return known.name if known is not None else str(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, bytes):
        return '"' + text_encoding.CEscape(value, as_utf8=False) + '"'
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    return str(value)
