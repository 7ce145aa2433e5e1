"""The error codes in a response, found without walking all of it.

Each response class gets a plan once: the fields that hold an error code and the nested entities that
lead to one. Counting a response then reads only those fields: for Fetch or Produce one error code per
partition, never the records, offsets or names beside them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

# (error-code field names, (nested field name, is a tuple of entities, the entity's plan) ...)
Plan = tuple[tuple[str, ...], tuple[tuple[str, bool, "Plan"], ...]]

_EMPTY: Plan = ((), ())
_plans: dict[type, Plan] = {}


def error_codes(response: Any) -> list[int]:
    """The non-zero error codes anywhere in the response (a kio message), outermost first."""
    cls = type(response)
    plan = _plans.get(cls)
    if plan is None:
        plan = _plans[cls] = _plan(cls, set())
    found: list[int] = []
    if plan is not _EMPTY:
        _walk(response, plan, found)
    return found


def _walk(entity: Any, plan: Plan, found: list[int]) -> None:
    codes, nested = plan
    for name in codes:
        code = getattr(entity, name)
        if code:
            found.append(code)
    for name, many, inner in nested:
        value = getattr(entity, name)
        if value is None:
            continue
        if many:
            for item in value:
                _walk(item, inner, found)
        else:
            _walk(value, inner, found)


def _plan(cls: type, seen: set[type]) -> Plan:
    if not dataclasses.is_dataclass(cls) or cls in seen:
        return _EMPTY
    seen = seen | {cls}
    hints = typing.get_type_hints(cls)
    codes: list[str] = []
    nested: list[tuple[str, bool, Plan]] = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("kafka_type") == "error_code":
            codes.append(f.name)
            continue
        entity, many = _entity_of(hints.get(f.name))
        if entity is None:
            continue
        inner = _plan(entity, seen)
        if inner is not _EMPTY:  # a branch with no error code below it is never walked
            nested.append((f.name, many, inner))
    if not codes and not nested:
        return _EMPTY
    return tuple(codes), tuple(nested)


def _entity_of(hint: Any) -> tuple[type | None, bool]:
    """The nested entity class a field holds, and whether it holds a tuple of them."""
    if hint is None:
        return None, False
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is tuple and args and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
        return args[0], True
    if origin in (typing.Union, types.UnionType):  # X | None
        for arg in args:
            if arg is not type(None):
                return _entity_of(arg)
        return None, False
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint, False  # a single nested entity
    return None, False
