"""The shape of aiokafka that protocol/aiokafka_internals.py assumes, and that it is the one door to it.

An aiokafka release that moves its compiled codec, changes the builder's arguments or a record's
fields fails here, by name, with a round trip through each part the broker uses.
"""

from __future__ import annotations

import ast
import gzip
import struct
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from aiokafka.codec import lz4_decode, snappy_decode, zstd_decode
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
from packaging.requirements import Requirement

from schooner.protocol import aiokafka_internals as ak

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = "schooner/protocol/aiokafka_internals.py"
TS = 1_700_000_000_000


def test_the_installed_version_is_within_the_bounds() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    requirement = next(r for r in map(Requirement, deps) if r.name == "aiokafka")
    assert any(spec.operator == "<" for spec in requirement.specifier), "aiokafka has no upper bound"
    assert requirement.specifier.contains(version("aiokafka"))
    assert requirement.specifier.contains(ak.AIOKAFKA_CHECKED)


def test_the_codec_is_the_compiled_one() -> None:
    # The pure-Python classes of aiokafka.record.default_records have the same names but cost several
    # times as much per record: the adapter must give the Cython ones.
    assert ak.DefaultRecordBatch.__module__ == "aiokafka.record._crecords.default_records"
    assert ak.DefaultRecordBatchBuilder.__module__ == "aiokafka.record._crecords.default_records"


def test_a_v2_batch_round_trip() -> None:
    builder = ak.DefaultRecordBatchBuilder(2, 0, 1, 77, 3, 12, 2**31 - 1)
    builder.append(0, TS, b"k", b"v", [("h", b"x"), ("n", None)])
    builder.append(2, TS + 5, None, None, [])
    assert builder.size() > 61
    built = builder.build()
    assert isinstance(built, bytearray)
    struct.pack_into(">q", built, 0, 1000)  # the base offset: the broker sets it, as records.py does
    batch = ak.DefaultRecordBatch(bytes(built))
    assert batch.validate_crc()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 12)
    assert batch.is_transactional and not batch.is_control_batch
    records = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch]
    assert records == [(1000, TS, b"k", b"v", [("h", b"x"), ("n", None)]), (1002, TS + 5, None, None, [])]


def test_the_crc_is_crc32c() -> None:
    assert ak.crc32c_cython(b"123456789") == 0xE3069283


def test_a_legacy_message_round_trip() -> None:
    builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
    builder.append(0, TS, b"k", b"v")
    batch = ak.LegacyRecordBatch(bytes(builder.build()), 1)
    assert batch.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == [(0, TS, b"k", b"v")]


@pytest.mark.parametrize(
    "encode, decode",
    [
        (lambda b: ak.gzip_encode(b, compresslevel=1), gzip.decompress),
        (lambda b: ak.lz4_encode(b, level=1), lz4_decode),
        (ak.snappy_encode, snappy_decode),
        (ak.zstd_encode, zstd_decode),
    ],
    ids=["gzip", "lz4", "snappy", "zstd"],
)
def test_the_codecs_round_trip(encode: object, decode: object) -> None:
    data = b"record " * 1000
    packed = encode(data)  # type: ignore[operator]
    assert len(packed) < len(data) and decode(packed) == data  # type: ignore[operator]


def test_no_other_module_imports_aiokafka() -> None:
    found = []
    for path in sorted((ROOT / "schooner").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if name == ADAPTER:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules = [node.module]
            else:
                continue
            found += [f"{name}:{node.lineno} imports {m}" for m in modules if m.split(".")[0] == "aiokafka"]
    assert not found, "\n".join(found)
