"""Topic configs: names, types, defaults and validation. Pure; read by the broker and the sweeper."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..offsets import DEFAULT_SEQUENCE_BITS, MAX_SEQUENCE_BITS

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

SEQUENCE_BITS = "schooner.sequence.bits"
TRIM_APPROXIMATE = "schooner.trim.approximate"


class InvalidConfig(ValueError):
    pass


def valid_topic_name(name: str) -> bool:
    return bool(TOPIC_NAME.match(name)) and name not in (".", "..")


def _long(low: int, high: int = 2**63 - 1) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            number = int(value)
        except ValueError:
            raise InvalidConfig(f"{value!r} is not an integer") from None
        if not low <= number <= high:
            raise InvalidConfig(f"{number} is outside [{low}, {high}]")

    return check


def _one_of(*choices: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in choices:
            raise InvalidConfig(f"{value!r} is not one of {', '.join(choices)}")

    return check


def _boolean(value: str) -> None:
    if value.lower() not in ("true", "false"):
        raise InvalidConfig(f"{value!r} is not true or false")


def _double(value: str) -> None:
    try:
        float(value)
    except ValueError:
        raise InvalidConfig(f"{value!r} is not a number") from None


def _anything(value: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    default: str
    check: Callable[[str], None]
    effective: bool  # False: accepted and described for compatibility, but has no effect here
    read_only: bool = False


_DEFS = [
    ConfigDef("retention.ms", "604800000", _long(-1), True),
    ConfigDef("retention.bytes", "-1", _long(-1), True),
    ConfigDef("cleanup.policy", "delete", _one_of("delete"), True),
    ConfigDef(
        "compression.type",
        "producer",
        _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
        True,
    ),
    ConfigDef("max.message.bytes", "1048588", _long(0, 2**31 - 1), True),
    ConfigDef("message.timestamp.type", "CreateTime", _one_of("CreateTime", "LogAppendTime"), True),
    ConfigDef(SEQUENCE_BITS, str(DEFAULT_SEQUENCE_BITS), _long(0, MAX_SEQUENCE_BITS), True, read_only=True),
    ConfigDef(TRIM_APPROXIMATE, "false", _boolean, True),
    # Accepted so that tools which set them keep working; storage in Redis gives them no meaning.
    ConfigDef("segment.bytes", "1073741824", _long(14), False),
    ConfigDef("segment.ms", "604800000", _long(1), False),
    ConfigDef("segment.index.bytes", "10485760", _long(4), False),
    ConfigDef("segment.jitter.ms", "0", _long(0), False),
    ConfigDef("min.insync.replicas", "1", _long(1, 2**31 - 1), False),
    ConfigDef("unclean.leader.election.enable", "false", _boolean, False),
    ConfigDef("index.interval.bytes", "4096", _long(0), False),
    ConfigDef("flush.messages", str(2**63 - 1), _long(1), False),
    ConfigDef("flush.ms", str(2**63 - 1), _long(0), False),
    ConfigDef("delete.retention.ms", "86400000", _long(0), False),
    ConfigDef("file.delete.delay.ms", "60000", _long(0), False),
    ConfigDef("min.compaction.lag.ms", "0", _long(0), False),
    ConfigDef("max.compaction.lag.ms", str(2**63 - 1), _long(1), False),
    ConfigDef("min.cleanable.dirty.ratio", "0.5", _double, False),
    ConfigDef("preallocate", "false", _boolean, False),
    ConfigDef("message.timestamp.before.max.ms", str(2**63 - 1), _long(0), False),
    ConfigDef("message.timestamp.after.max.ms", str(2**63 - 1), _long(0), False),
    ConfigDef("message.timestamp.difference.max.ms", str(2**63 - 1), _long(0), False),
    ConfigDef("leader.replication.throttled.replicas", "", _anything, False),
    ConfigDef("follower.replication.throttled.replicas", "", _anything, False),
    ConfigDef("local.retention.ms", "-2", _long(-2), False),
    ConfigDef("local.retention.bytes", "-2", _long(-2), False),
    ConfigDef("remote.storage.enable", "false", _one_of("false"), False),
]

CONFIG_DEFS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}


def validate(name: str, value: str | None) -> None:
    """Raises InvalidConfig for an unknown name or a bad value."""
    definition = CONFIG_DEFS.get(name)
    if definition is None:
        raise InvalidConfig(f"unknown topic config {name!r}")
    if value is None:
        raise InvalidConfig(f"config {name!r} needs a value")
    definition.check(value)


def effective(overrides: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """Every config's value: the topic's override, else the broker's default, else Kafka's."""
    values = {name: d.default for name, d in CONFIG_DEFS.items()}
    values.update({k: v for k, v in defaults.items() if k in CONFIG_DEFS})
    values.update(overrides)
    return values
