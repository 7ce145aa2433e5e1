"""Protobuf schemas: .proto source or base64 FileDescriptorProtos, compiled by protoc.

A schema text is either .proto source or, as confluent-kafka's Python serializer registers it, the base64 of a
serialized FileDescriptorProto; so is each reference, whose name is the import path it stands for. Source is
compiled by a real protoc (grpc_tools') in a subprocess, over a temporary folder holding the main file and the
source references; base64 references (and the main file, when it is base64 and imports anything) reach protoc
exactly as given, through --descriptor_set_in (so protoc needs no source for them, and nothing is lost in
printing them). Imports need no reference for google/protobuf/* (grpc_tools ships their source), confluent/*
(from the descriptors the installed confluent-kafka embeds) nor google/type/* (from the sources
googleapis-common-protos ships), when those packages are installed.

read_issues follows Confluent's Protobuf compatibility rules; protobuf_compatibility lists those covered.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib.resources
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor_pb2 import FileDescriptorProto
from google.protobuf.message import DecodeError

from schooner.schemas import protobuf_compatibility, protobuf_text
from schooner.schemas.parsed import PROTOBUF, Dependency, ParsedSchema, SchemaError

__all__ = ["ProtobufSchema", "parse"]

_PROTOC_TIMEOUT = 60.0
_PROTOC_NOISE = re.compile(r"warning:|^WARNING: All log messages|^[IW]\d{4} [\d:.]+ +\d+ \S+\] ")
_BASE64 = re.compile(r"[A-Za-z0-9+/\s]+={0,2}\s*")
# Good enough to learn which builtin groups a source file may need: a commented-out import only adds a file.
_IMPORT = re.compile(r"""\bimport\s+(?:public\s+|weak\s+)?["']([^"']+)["']""")


class ProtobufSchema:
    """A compiled Protobuf schema: the main file's descriptor and a pool holding it with all it imports."""

    schema_type = PROTOBUF

    def __init__(self, text: str | None, file: FileDescriptorProto, pool: descriptor_pool.DescriptorPool):
        self._text = text  # as registered when it was .proto source, else None
        self._file = file
        self._pool = pool

    @property
    def file(self) -> FileDescriptorProto:
        """The main file's descriptor (do not modify)."""
        return self._file

    @property
    def pool(self) -> descriptor_pool.DescriptorPool:
        """A pool holding the main file and every file it imports."""
        return self._pool

    def canonical(self) -> str:
        return self._text if self._text is not None else self.normalized()

    @functools.cached_property
    def _printed(self) -> str:
        return protobuf_text.render(self._file, self._pool)

    def normalized(self) -> str:
        return self._printed

    def fingerprint_text(self) -> str:
        # Without what differs between the text and base64 forms of one schema: the file's name (the registry
        # picks it for text, the client for base64), source info and the json names protoc fills in.
        file = FileDescriptorProto()
        file.CopyFrom(self._file)
        file.ClearField("name")
        file.ClearField("source_code_info")
        _drop_default_json_names(file)
        return base64.b64encode(file.SerializeToString(deterministic=True)).decode("ascii")

    def record_names(self) -> Sequence[str]:
        prefix = f"{self._file.package}." if self._file.package else ""
        return [prefix + message.name for message in self._file.message_type]

    def formatted(self, fmt: str) -> str | None:
        if fmt == "serialized":
            return base64.b64encode(self._file.SerializeToString(deterministic=True)).decode("ascii")
        if fmt == "ignore_extensions":
            return self.canonical()
        return None

    def decode(self, payload: bytes) -> object:
        indexes, start = _message_indexes(payload)
        message_class = message_factory.GetMessageClass(
            self._pool.FindMessageTypeByName(self._message_name(indexes))
        )
        try:
            message = message_class.FromString(payload[start:])
        except DecodeError as e:
            raise SchemaError(f"the payload is not a {message_class.DESCRIPTOR.full_name}: {e}") from e
        try:
            return json_format.MessageToDict(
                message, preserving_proto_field_name=True, descriptor_pool=self._pool
            )
        except Exception as e:  # an Any naming an unknown type, for one
            raise SchemaError(f"the {message_class.DESCRIPTOR.full_name} cannot be rendered: {e}") from e

    def _message_name(self, indexes: Sequence[int]) -> str:
        """The full name of the message the indexes point at: top-level messages first, then nested ones."""
        name = self._file.package
        candidates: Sequence[descriptor_pb2.DescriptorProto] = self._file.message_type
        for depth, index in enumerate(indexes):
            if not 0 <= index < len(candidates):
                where = "the schema's top-level messages" if depth == 0 else f"the nested messages of {name}"
                raise SchemaError(f"message index {index} is out of range: {len(candidates)} in {where}")
            message = candidates[index]
            name = f"{name}.{message.name}" if name else message.name
            candidates = message.nested_type
        return name

    def read_issues(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, ProtobufSchema):
            return [f"SCHEMA_TYPE_CHANGED at #/: the writer is a {writer.schema_type} schema"]
        return protobuf_compatibility.read_issues(self._file, writer._file)


def parse(text: str, references: Sequence[Dependency] = ()) -> ProtobufSchema:
    """Compile a schema given as .proto source or base64 FileDescriptorProto; SchemaError with protoc's reason
    (or the descriptor pool's) when it does not compile."""
    stripped = text.strip()
    if not stripped:
        raise SchemaError("the Protobuf schema is empty")
    given = _from_base64(stripped)
    if given is not None and not given.dependency:
        # Nothing to import: the pool alone checks the descriptor, no protoc needed.
        given.name = given.name or _free_name(set())
        return ProtobufSchema(None, given, _pool([given]))
    sources: dict[str, str] = {}
    descriptors: dict[str, FileDescriptorProto] = {}
    for dependency in references:
        _check_path(dependency.name)
        if dependency.name in sources or dependency.name in descriptors:
            continue
        as_descriptor = _from_base64(dependency.text.strip())
        if as_descriptor is None:
            sources[dependency.name] = dependency.text
        else:
            as_descriptor.name = dependency.name  # imports find it by its reference name, whatever it says
            descriptors[dependency.name] = as_descriptor
    taken = set(sources) | set(descriptors)
    if given is not None and given.name and given.name not in taken and _safe_path(given.name):
        main_name = given.name
    else:
        main_name = _free_name(taken)
    if given is not None:
        given.name = main_name
        descriptors[main_name] = given
    else:
        sources[main_name] = text
    imports = {name for source in sources.values() for name in _IMPORT.findall(source)}
    imports.update(name for file in descriptors.values() for name in file.dependency)
    for builtin in _confluent_builtins(imports, taken | {main_name}):
        descriptors[builtin.name] = builtin
    for name, source in _google_type_sources(imports, taken | {main_name}).items():
        sources[name] = source
    compiled = _protoc(main_name, sources, descriptors.values())
    # Given descriptors stay as given (protoc's copy of them could differ, in json names for one).
    files = [descriptors.get(file.name, file) for file in compiled]
    main = next(file for file in files if file.name == main_name)
    return ProtobufSchema(stripped if given is None else None, main, _pool(files))


def _from_base64(text: str) -> FileDescriptorProto | None:
    """The FileDescriptorProto a base64 text holds; None when the text is not one (so it is .proto source)."""
    if not _BASE64.fullmatch(text):
        return None
    try:
        raw = base64.b64decode("".join(text.split()), validate=True)
        file = FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return file if raw else None


def _check_path(name: str) -> None:
    if not _safe_path(name):
        raise SchemaError(f"reference name {name!r} is not a relative import path")


def _safe_path(name: str) -> bool:
    # Reference names become paths in the temporary folder: nothing that could leave it.
    parts = PurePosixPath(name).parts
    return (
        bool(parts)
        and "\\" not in name
        and "\0" not in name
        and not name.startswith("/")
        and all(part not in ("", ".", "..") for part in parts)
        and name == "/".join(parts)
    )


def _free_name(taken: set[str]) -> str:
    name, n = "schema.proto", 0
    while name in taken:
        n += 1
        name = f"schema_{n}.proto"
    return name


def _pool(files: Iterable[FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for file in files:
        try:
            pool.Add(file)
        except Exception as e:  # the pool reports a bad descriptor as TypeError, ValueError or its own errors
            raise SchemaError(f"{file.name or 'the schema'}: {e}") from e
    return pool


def _protoc(
    main_name: str, sources: dict[str, str], descriptors: Iterable[FileDescriptorProto]
) -> list[FileDescriptorProto]:
    """Compile `main_name` (one of `sources` or of `descriptors`) with protoc; the main file and all it
    imports, dependencies first."""
    with tempfile.TemporaryDirectory(prefix="schooner-proto-") as temp:
        root = Path(temp)
        tree = root / "src"
        tree.mkdir()
        for name, source in sources.items():
            path = tree / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source, encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "--proto_path=.",
            f"--proto_path={_well_known_root()}",
            "--include_imports",
            f"--descriptor_set_out={root / 'out.pb'}",
        ]
        given = descriptor_pb2.FileDescriptorSet(file=list(descriptors))
        if given.file:
            (root / "in.pb").write_bytes(given.SerializeToString())
            command.append(f"--descriptor_set_in={root / 'in.pb'}")
        command.append(main_name)
        try:
            done = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=_PROTOC_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            raise SchemaError(f"protoc took more than {_PROTOC_TIMEOUT:.0f}s") from e
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).replace(f"{tree}/", "").replace(f"{root}/", "").strip()
            # Keep protoc's errors; drop its warnings and absl's log lines ("W0000 00:00:... parser.cc:659]").
            errors = [line for line in reason.splitlines() if not _PROTOC_NOISE.search(line)]
            raise SchemaError("\n".join(errors) or reason or f"protoc failed with status {done.returncode}")
        return list(descriptor_pb2.FileDescriptorSet.FromString((root / "out.pb").read_bytes()).file)


@functools.cache
def _well_known_root() -> str:
    """The folder holding google/protobuf/*.proto as grpc_tools ships them."""
    return str(importlib.resources.files("grpc_tools") / "_proto")


def _confluent_builtins(imports: set[str], taken: set[str]) -> list[FileDescriptorProto]:
    """confluent-kafka's embedded descriptors of Confluent's own files, when `imports` reach into confluent/
    (all of them: they import each other); none that a reference of the same name replaces."""
    if not any(name.startswith("confluent/") for name in imports):
        return []
    files = (FileDescriptorProto.FromString(raw) for raw in _confluent_descriptors())
    return [file for file in files if file.name not in taken]


@functools.cache
def _confluent_descriptors() -> tuple[bytes, ...]:
    # Package data, the same for the life of the process: safe to keep (unlike schemas, which the registry
    # caches itself). Imported here, and each on its own, as confluent-kafka is optional and its versions
    # ship different files.
    found: list[bytes] = []
    try:
        from confluent_kafka.schema_registry.confluent import meta_pb2

        found.append(meta_pb2.DESCRIPTOR.serialized_pb)
    except ImportError:
        return ()
    try:
        from confluent_kafka.schema_registry.confluent.type import decimal_pb2

        found.append(decimal_pb2.DESCRIPTOR.serialized_pb)
    except ImportError:
        pass
    try:
        from confluent_kafka.schema_registry.confluent.type import variant_pb2

        found.append(variant_pb2.DESCRIPTOR.serialized_pb)
    except ImportError:
        pass
    try:
        # The old path of confluent.type.Decimal, a stub that imports the new one publicly.
        from confluent_kafka.schema_registry.confluent.types import decimal_pb2 as legacy_decimal_pb2

        found.append(legacy_decimal_pb2.DESCRIPTOR.serialized_pb)
    except ImportError:
        pass
    return tuple(found)


def _google_type_sources(imports: set[str], taken: set[str]) -> dict[str, str]:
    """The google/type/*.proto sources googleapis-common-protos ships, when `imports` reach into google/type/
    (all of them: they import each other); none that a reference of the same name replaces."""
    if not any(name.startswith("google/type/") for name in imports):
        return {}
    return {name: text for name, text in _google_type_files().items() if name not in taken}


@functools.cache
def _google_type_files() -> dict[str, str]:
    # Package data, like _confluent_descriptors.
    try:
        import google.type as google_type
    except ImportError:
        return {}
    files: dict[str, str] = {}
    for folder in google_type.__path__:
        for path in sorted(Path(folder).glob("*.proto")):
            files.setdefault(f"google/type/{path.name}", path.read_text(encoding="utf-8"))
    return files


def _drop_default_json_names(file: FileDescriptorProto) -> None:
    def fields(
        messages: Iterable[descriptor_pb2.DescriptorProto],
    ) -> Iterable[descriptor_pb2.FieldDescriptorProto]:
        for message in messages:
            yield from message.field
            yield from message.extension
            yield from fields(message.nested_type)

    for field in [*fields(file.message_type), *file.extension]:
        if field.json_name == protobuf_text.default_json_name(field.name):
            field.ClearField("json_name")


def _message_indexes(payload: bytes) -> tuple[list[int], int]:
    """The message indexes at the start of a payload and where the message bytes begin. confluent-kafka writes
    a count then that many indexes, all zigzag varints; a lone 0 (a count of 0) stands for [0]."""
    count, position = _zigzag_varint(payload, 0)
    if count == 0:
        return [0], position
    if count < 0 or count > len(payload) - position:
        raise SchemaError(f"the payload's message index count {count} is not valid")
    indexes: list[int] = []
    for _ in range(count):
        index, position = _zigzag_varint(payload, position)
        indexes.append(index)
    return indexes, position


def _zigzag_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(data):
            raise SchemaError("the payload ends inside its message indexes")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), position
        shift += 7
        if shift >= 64:
            raise SchemaError("a message index in the payload is longer than a varint")
