"""Server-side Lua scripts: one file per round trip in scripts/, loaded once and called by name.

A script whose first line is "-- uses: NAME[, NAME]" gets scripts/NAME.lua prepended (shared helpers).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str


def _read(name: str) -> str:
    return resources.files("schooner.storage").joinpath(f"scripts/{name}.lua").read_text()


@cache
def script(name: str) -> Script:
    body = _read(name)
    first = body.split("\n", 1)[0]
    parts: list[str] = []
    if first.startswith("-- uses:"):
        parts = [_read(dep.strip()) for dep in first[len("-- uses:") :].split(",")]
    source = "\n".join([*parts, body])
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())
