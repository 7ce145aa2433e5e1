"""The compiled record-batch encoder of the fetch path (_batch.c) and reader of the produce path
(_produce.c), each None where it was not built, or where SCHOONER_COMPILED=0 turns them off
(schooner.config.compiled_enabled).

`make install` builds them (setup.py). A checkout without a C compiler runs the Python encoder of
broker/partitions/fetch_codec.py, which builds the same bytes (tests/broker/partitions/test_fetch_codec.py
compares the two), and decodes every produced batch with aiokafka (tests/protocol/test_plain_records.py
compares the two). Both tests also feed each pair hostile input, on which the compiled module declines
what it does not take, so that the two answer alike: the same records, or a refusal.
"""

from __future__ import annotations

from types import ModuleType

from ..config import compiled_enabled

_batch: ModuleType | None = None
_produce: ModuleType | None = None
if compiled_enabled():
    try:
        from . import _batch
    except ImportError:  # not built: the Python encoder does all of it
        _batch = None
    try:
        from . import _produce
    except ImportError:  # not built: every produced batch is decoded by aiokafka
        _produce = None

encode_plain = _batch.encode_plain if _batch is not None else None
encode_resp = _batch.encode_resp if _batch is not None else None
crc32c = _batch.crc32c if _batch is not None else None
plain_records = _produce.plain_records if _produce is not None else None

__all__ = ["crc32c", "encode_plain", "encode_resp", "plain_records"]
