"""FileCache: data files of the cold tier, decoded once and kept while consumers read through them.

A consumer catching up reads a file's offsets a fetch at a time (about 1 MiB each), and a Delta data file
holds an archive step's records (tens of thousands). Decoding the file for every fetch would inflate and
parse it many times over; Delta data files never change once written (a delete writes new files), so a
file's decoded rows stay right for as long as they are kept. The cache holds whole files, sorted by offset,
within a byte budget, least recently used first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from . import layout

CACHE_BYTES = 64 << 20


class FileCache:
    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._files: OrderedDict[str, tuple[pa.Table, np.ndarray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def rows_from(self, path: str, offset: int, decode: Callable[[], pa.Table]) -> pa.Table:
        """The file's rows at or after `offset`, in offset order; decode() reads the whole file when it is
        not kept (a zero-copy slice of the kept rows otherwise)."""
        rows, offsets = self._get(path, decode)
        return rows.slice(int(np.searchsorted(offsets, offset, side="left")))

    def _get(self, path: str, decode: Callable[[], pa.Table]) -> tuple[pa.Table, np.ndarray]:
        with self._lock:
            kept = self._files.get(path)
            if kept is not None:
                self._files.move_to_end(path)
                return kept
        rows = decode().cast(layout.READ_SCHEMA).sort_by(layout.OFFSET).combine_chunks()
        kept = rows, rows.column(layout.OFFSET).to_numpy()
        size = rows.nbytes
        with self._lock:
            if path not in self._files and size <= self.max_bytes:
                self._files[path] = kept
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, (old, _) = self._files.popitem(last=False)
                    self._bytes -= old.nbytes
        return kept
