"""The GROUP config resource (type 32) of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs:
admin_configs.py hands each group resource here. The configs and their rules are in
coordinators/groups/config_defs.py; ctx.group_configs reads and stores them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from ...coordinators.groups.config_defs import GROUP_CONFIG_DEFS
from ...coordinators.groups.configs import ConcurrentAlter
from ...storage.topics.config import ConfigValue, InvalidConfig
from ..context import BrokerContext
from .common import ADMIN_UNAVAILABLE, STORAGE_ERRORS

GROUP = 32

# IncrementalAlterConfigs operations.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Change = tuple[str, int, str | None]  # config name, operation, value

EMPTY_NAME = "Group name must not be empty"


async def describe_group(
    ctx: BrokerContext, group_id: str
) -> tuple[ErrorCode, str | None, list[ConfigValue]]:
    """Every group config of the group id, whether or not the group exists (as Kafka answers)."""
    if not group_id:
        return ErrorCode.invalid_request, EMPTY_NAME, []
    try:
        return ErrorCode.none, None, await ctx.group_configs.describe(group_id)
    except STORAGE_ERRORS as exc:
        return ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}", []


async def alter_group(
    ctx: BrokerContext, group_id: str, changes: Sequence[Change], replace: bool, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    """Applies one resource's changes; replace (AlterConfigs): they become all the group's configs."""
    if not group_id:
        return ErrorCode.invalid_request, EMPTY_NAME
    repeated = sorted(n for n, count in Counter(name for name, _, _ in changes).items() if count > 1)
    if repeated:
        return ErrorCode.invalid_request, f"Duplicate config keys: {', '.join(repeated)}"
    sets: dict[str, str | None] = {}
    deletes: list[str] = []
    for name, op, value in changes:
        if op == DELETE:
            deletes.append(name)
        elif op == SET:
            sets[name] = value
        elif op in (APPEND, SUBTRACT):  # no group config is a list
            if name not in GROUP_CONFIG_DEFS:
                return ErrorCode.invalid_config, f"Unknown group config name: {name}"
            return ErrorCode.invalid_config, f"Config value append or subtract is not allowed for {name}"
        else:
            return ErrorCode.invalid_request, f"Unknown config operation {op} for {name}"
    try:
        await ctx.group_configs.alter(group_id, sets, deletes, replace, validate_only)
    except InvalidConfig as exc:
        return ErrorCode.invalid_config, str(exc)
    except ConcurrentAlter as exc:
        return ADMIN_UNAVAILABLE, str(exc)
    except STORAGE_ERRORS as exc:
        return ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}"
    return ErrorCode.none, None
