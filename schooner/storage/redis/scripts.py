"""Server-side Lua scripts: one file per round trip in scripts/, loaded once and called by name.

A script whose first line is "-- uses: NAME[, NAME]" gets scripts/NAME.lua prepended (shared helpers).
A script may start with Redis' shebang line, "#!lua flags=...", before that line: it stays first.
The one flag used is allow-oom, on the scripts that free memory or write a few bytes of bookkeeping
(the archiver's, trims, the broker's registration): each says why in its header. Redis refuses every
other write while used memory is over maxmemory, and a flagged script runs then all the same.
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
    shebang: list[str] = []
    if body.startswith("#!"):  # Redis reads the flags from the very first line only
        line, body = body.split("\n", 1)
        shebang = [line]
    first = body.split("\n", 1)[0]
    parts: list[str] = []
    if first.startswith("-- uses:"):
        parts = [_read(dep.strip()) for dep in first[len("-- uses:") :].split(",")]
    source = "\n".join([*shebang, *parts, body])
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())
