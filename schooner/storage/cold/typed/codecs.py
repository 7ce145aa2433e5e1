"""A registered schema as the cold table sees it: its Arrow type, and a decoder of payloads to values that
pa.array takes for that type. Parsed once per schema document and kept (ids never change meaning, and the
document itself is the key, so two registries' equal ids cannot mix)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from .... import schemas as parsing
from ...schemas.registry import StoredSchema
from .avro_types import AvroColumns
from .fits import Fit
from .json_types import json_schema_type
from .proto_types import message_type

Decode = Callable[[bytes], Any]
CACHE_SIZE = 512


class UndecodableSchema(ValueError):
    """The schema cannot type a column (it does not parse, or its references are missing)."""


class Codec:
    """One schema: `arrow_type` (None when `error` says why it has none) and `decode(payload)`, where the
    payload is what follows the 5-byte wire header (for Protobuf, the message indexes first)."""

    def __init__(self, stored: StoredSchema, references: Sequence[tuple[str, str]]) -> None:
        self.schema_type = stored.schema_type
        self.error: str | None = None
        self.arrow_type: pa.DataType | None = None
        self.avro: AvroColumns | None = None
        self._resolving: dict[int, Decode] = {}
        try:
            deps = [parsing.Dependency(name, text) for name, text in references]
            if len(deps) < len(stored.references):
                raise UndecodableSchema("its references are not all registered")
            self.parsed = parsing.parse(stored.schema_type, stored.schema, deps)
            self.decode = self._decoder()
        except (parsing.SchemaError, UndecodableSchema) as exc:
            self.error = f"the schema does not parse: {exc}"
            self.decode = self._refuse
        except Exception as exc:  # a parser's own failure on an odd schema
            self.error = f"the schema cannot type a column: {type(exc).__name__}: {exc}"
            self.decode = self._refuse

    def _refuse(self, payload: bytes) -> Any:
        raise UndecodableSchema(self.error)

    def _decoder(self) -> Decode:
        parsed = self.parsed
        fit: Fit
        if self.schema_type == parsing.AVRO:
            resolved = parsed.formatted("resolved")
            self.avro = AvroColumns(json.loads(resolved or parsed.canonical()))
            self.arrow_type, fit = self.avro.arrow_type, self.avro.fit
            if not self.avro.risky:
                return self.avro.decoder()
        elif self.schema_type == parsing.JSON:
            self.arrow_type, fit = json_schema_type(getattr(parsed, "schema", True))
        elif self.schema_type == parsing.PROTOBUF:
            names = parsed.record_names()
            if not names:
                raise UndecodableSchema("it has no message")
            self.arrow_type, fit = message_type(parsed.pool.FindMessageTypeByName(names[0]))  # type: ignore[attr-defined]
            first = parsed.decode

            def decode_first(payload: bytes) -> Any:
                if payload[:1] != b"\x00":
                    raise ValueError(
                        "the record is not of the schema's first message (only that one is typed)"
                    )
                return first(payload)

            return _fitted(decode_first, fit)
        else:
            raise UndecodableSchema(f"unknown schema type {self.schema_type}")
        return _fitted(parsed.decode, fit)

    def reading(self, writer_id: int, writer: Codec) -> Decode:
        """Payloads written with `writer` read as this schema (Avro's resolution; other types, and schemas
        fastavro cannot read safely, decode by this schema as they are)."""
        if writer is self or self.avro is None or writer.avro is None or self.avro.risky or writer.avro.risky:
            return self.decode
        found = self._resolving.get(writer_id)
        if found is None:
            found = self._resolving[writer_id] = self.avro.decoder(writer.avro)
        return found


def _fitted(decode: Decode, fit: Fit) -> Decode:
    if fit is None:
        return decode
    return lambda payload: fit(decode(payload))


_cache: dict[tuple[StoredSchema, tuple[tuple[str, str], ...]], Codec] = {}
_lock = threading.Lock()


def codec(stored: StoredSchema, references: Sequence[tuple[str, str]] = ()) -> Codec:
    """The schema's codec, parsed once while kept (CACHE_SIZE documents, oldest out first)."""
    key = (stored, tuple(references))
    found = _cache.get(key)
    if found is not None:
        return found
    made = Codec(stored, references)
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        return _cache.setdefault(key, made)
