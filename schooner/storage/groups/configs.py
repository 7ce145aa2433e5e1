"""Group configs (the GROUP config resource): one hash per group id, config name -> value, in the group's
own slot. Only overrides are stored; defaults come from the broker's settings.

The hash is independent of the group's state: configs may be set before the group exists, and
deleting the group leaves them (as in Kafka), unless the caller also runs delete_all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script, text


def _text_map(raw: Any) -> dict[str, str]:
    if isinstance(raw, dict):
        return {text(k): text(v) for k, v in raw.items()}
    return {text(raw[i]): text(raw[i + 1]) for i in range(0, len(raw), 2)}


def get(ks: Keyspace, group_id: str) -> Call[dict[str, str]]:
    """The group's overrides."""
    return command("HGETALL", ks.group_configs(group_id), parse=_text_map)


def alter(
    ks: Keyspace,
    group_id: str,
    set_configs: Mapping[str, str],
    delete_configs: Iterable[str] = (),
    replace: bool = False,
    expected: Mapping[str, str] | None = None,
) -> Call[bool]:
    """Sets and deletes overrides in one script; replace drops every other override first. With
    expected (the overrides as the caller read them), nothing is written and the answer is False when
    the hash holds anything else by then."""
    args: list[Any] = [-1] if expected is None else [len(expected)]
    for name, value in (expected or {}).items():
        args += [name, value]
    args += ["1" if replace else "0", len(set_configs)]
    for name, value in set_configs.items():
        args += [name, value]
    args += list(delete_configs)
    return script("group_configs_alter", [ks.group_configs(group_id)], args, bool)


def delete_all(ks: Keyspace, group_id: str) -> Call[bool]:
    """Drops every override of the group; True when it had any."""
    return command("DEL", ks.group_configs(group_id), parse=bool)
