"""Confluent's compatibility levels, over a subject's live versions.

BACKWARD: the new schema reads data written with the latest version; FORWARD: the latest reads data written
with the new one; FULL: both. The _TRANSITIVE levels ask the same of every live version, not only the latest.
NONE checks nothing. Schemas of different types are never compatible.
"""

from __future__ import annotations

from collections.abc import Sequence

from .parsed import ParsedSchema

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
DEFAULT_LEVEL = "BACKWARD"


def against(level: str, previous: Sequence[ParsedSchema]) -> Sequence[ParsedSchema]:
    """The versions (oldest first) a new schema is checked against under the level."""
    if level == "NONE" or not previous:
        return ()
    return previous if level.endswith("_TRANSITIVE") else previous[-1:]


def issues(level: str, new: ParsedSchema, previous: Sequence[ParsedSchema]) -> list[str]:
    """Why the new schema may not follow the previous versions (oldest first) under the level; empty when
    it may."""
    found: list[str] = []
    backward = level.startswith(("BACKWARD", "FULL"))
    forward = level.startswith(("FORWARD", "FULL"))
    for old in reversed(against(level, previous)):
        if old.schema_type != new.schema_type:
            found.append(
                f"SCHEMA_TYPE_CHANGED: the new schema is {new.schema_type}, an older one {old.schema_type}"
            )
            continue
        if backward:
            found += [
                f"{issue} (the new schema cannot read data written with an older one)"
                for issue in new.read_issues(old)
            ]
        if forward:
            found += [
                f"{issue} (an older schema cannot read data written with the new one)"
                for issue in old.read_issues(new)
            ]
    return found
